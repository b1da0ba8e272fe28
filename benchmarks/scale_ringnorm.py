"""Scale check: one SM1MKL fit on Ringnorm at the 70/30 size with the lazy kernel stack.

Ringnorm (Breiman) with 7400 samples and 20 features, a stratified 70/30 split (5180 training points),
features standardized on the training part, the ``simplemkl`` family (273 kernels; 26 GiB if stored
densely in float32), SM1MKL at fixed hyper-parameters.  Reports the wall time, the outer iterations, the
test accuracy and the peak resident memory of the process.

    python benchmarks/scale_ringnorm.py [--max-iter 10] [--nu 0.5] [--C 1]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from sklearn.model_selection import train_test_split

from multikernel import MKLClassifier, create
from multikernel.config.datasets import make_ringnorm
from multikernel.stack.memory import estimate_stack_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--nu", type=float, default=0.5)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--budget", default="4GB")
    args = parser.parse_args()

    X, y = make_ringnorm(7400, 20, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    est = MKLClassifier(kernels="simplemkl", standardize=True, kernel_backend="lazy", memory_budget=args.budget,
                        kernel_dtype="float32", method="sm1mkl", C=args.C,
                        regularizer=create("regularizer", "box_simplex", nu=args.nu),
                        stopping="relative_change", max_iter=args.max_iter, verbose=1)
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    fit_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    accuracy = est.score(Xte, yte)
    predict_time = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    M = len(est.kernel_names_)
    dense = estimate_stack_memory(M, len(ytr), len(ytr), "float32")
    print(f"| n_train | kernels | dense float32 stack (GiB) | fit (s) | outer iterations | predict {len(yte)} (s) | "
          f"test accuracy | peak RSS (GiB) |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {len(ytr)} | {M} | {dense.storage / 2**30:.1f} | {fit_time:.1f} | {est.n_iter_} | {predict_time:.1f} | "
          f"{accuracy:.4f} | {peak:.2f} |")
    print(f"selected kernels: {np.count_nonzero(est.weights_ > 1e-5)}; relative change rule, max_iter={args.max_iter}")


if __name__ == "__main__":
    main()
