"""MKLRegressor against scikit-learn's SVR on the average kernel, in one run, on the diabetes data set.

scikit-learn's diabetes data (442 samples, 10 features; shipped with scikit-learn), features standardized and
targets standardized on the training part of a 70/30 split (seed 0).  The base kernels (Gaussian kernels of
five bandwidths and polynomial kernels of degrees 1-3 on all features, trace-normalized) are computed once by
multikernel and both sides fit on exactly these precomputed kernels:

* ``SVR(kernel="precomputed")`` on their average (libsvm; tol 1e-3, its default);
* ``MKLRegressor(kernels="precomputed")`` with ``average`` (the same SVR through the fit core: the SMO on the
  doubled kernel), ``l1mkl`` and ``lpmkl`` to a certified gap of 1e-3.

Fit times are the best of ``--repeats`` fits; ratios are against SVR's time in the same process; test R^2 on
the held-out 30%.  Run from the repository root with one thread::

    OMP_NUM_THREADS=1 python benchmarks/bench_regression.py [--C 10] [--epsilon 0.1] [--repeats 5]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.svm import SVR

from multikernel import MKLRegressor, create


def _kernels(Xtr: np.ndarray, Xte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    builders = [create("kernel", "rbf", gamma=g) for g in (0.01, 0.03, 0.1, 0.3, 1.0)]
    builders += [create("kernel", "poly", degree=d) for d in (1, 2, 3)]
    train, test = [], []
    for b in builders:
        K = b.fit_transform(Xtr)
        scale = len(Xtr) / np.trace(K)
        train.append(K * scale)
        test.append(b.transform(Xte) * scale)
    return np.array(train), np.array(test)


def _best(fit, repeats: int) -> tuple[float, object]:
    best, model = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        model = fit()
        best = min(best, time.perf_counter() - start)
    return best, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    mean, std = Xtr.mean(0), Xtr.std(0)
    Xtr, Xte = (Xtr - mean) / std, (Xte - mean) / std
    ym, ys = ytr.mean(), ytr.std()
    ytr, yte = (ytr - ym) / ys, (yte - ym) / ys
    Ktr, Kte = _kernels(Xtr, Xte)
    print(f"diabetes: {len(ytr)} training / {len(yte)} test samples, {len(Ktr)} kernels, C={args.C}, "
          f"epsilon={args.epsilon}; {platform.processor() or platform.machine()}, best of {args.repeats}")
    t_svr, svr = _best(lambda: SVR(kernel="precomputed", C=args.C, epsilon=args.epsilon).fit(Ktr.mean(0), ytr),
                       args.repeats)
    rows = [("SVR (scikit-learn), average kernel", t_svr, r2_score(yte, svr.predict(Kte.mean(0))), "", "")]
    layout = np.ascontiguousarray(np.moveaxis(Ktr, 0, -1)), np.ascontiguousarray(np.moveaxis(Kte, 0, -1))
    for method in ("average", "l1mkl", "lpmkl"):
        t, reg = _best(lambda m=method: MKLRegressor(kernels="precomputed", method=m, C=args.C,
                                                     epsilon=args.epsilon).fit(layout[0], ytr), args.repeats)
        rows.append((f"MKLRegressor {method}", t, r2_score(yte, reg.predict(layout[1])), f"{reg.dual_gap_:.1e}",
                     " ".join(f"{w:.2f}" for w in reg.weights_)))
    print(f"{'model':38s} {'fit s':>8s} {'ratio':>7s} {'test R2':>8s} {'gap':>8s}  weights")
    for name, t, r2, gap, w in rows:
        print(f"{name:38s} {t:8.4f} {t / t_svr:7.2f} {r2:8.4f} {gap:>8s}  {w}")


if __name__ == "__main__":
    main()
