"""
MKL solvers: certified gap against time
=======================================

Every outer solver of the library minimises the same objective over the kernel weights and reports the same
certified relative duality gap, so solvers can be compared on one axis: how fast the gap falls. This example
solves one L1-MKL problem (the simplex of weights, C-SVC loss) on UCI Heart with SimpleMKL's kernel family
by the solvers of the Bucak et al. review and the classic ones: the level method, SILP (Sonnenburg et al.),
mirror descent, SimpleMKL's reduced gradient, projected gradient and block coordinate descent (the group-lasso
alternation). Which solver to choose for which problem: ``docs/solvers/choosing.md``.
"""

# %%
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from multikernel import MKLProblem, create
from multikernel.plugins.kernels import simplemkl_family
from multikernel.stack.kernelset import KernelSet

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
table = np.loadtxt(DATA / "heart.csv", delimiter=",", skiprows=1)
X, y = table[:, :-1], table[:, -1]
X_train, _, y_train, _ = train_test_split(X, y, train_size=0.7, random_state=0, stratify=y)

# Gaussian kernels at ten bandwidths and polynomial kernels of degree 1-3, on all features and on each feature.
kernels = KernelSet(simplemkl_family(X.shape[1]), normalize="trace", standardize=True)
stack = kernels.fit_stack(X_train)
print(f"{stack.n_kernels} kernels on {stack.n_rows} training samples")

# %%
# Each solver runs to a certified gap of 1e-3 (or 2 CPU seconds); a callback records the gap after every outer
# iteration. CPU time, not wall time: on a shared machine it is the steadier measure.
solvers = ["level", "silp", "mirror_descent", "reduced_gradient", "projected_gradient", "bcd"]
traces = {}
for name in solvers:
    trace = []
    start = time.process_time()

    def record(entry, trace=trace, start=start):
        trace.append((time.process_time() - start, entry["gap"]))
        if trace[-1][0] > 2.0:
            raise KeyboardInterrupt  # returns the best certified iterate so far

    problem = MKLProblem(stack=stack, y=y_train, loss=create("loss", "csvc", C=10.0),
                         regularizer=create("regularizer", "simplex"), tol=1e-3, max_iter=500, callback=record)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an interrupted solve warns; its trace is what we plot
        result = create("solver", name).solve(problem)
    traces[name] = np.array(trace)
    print(f"{name:<20} {result.n_iter:>4} iterations  gap {result.dual_gap:.1e}  {trace[-1][0]:.2f} CPU s")

# %%
fig, ax = plt.subplots(figsize=(7, 4.5))
for name, trace in traces.items():
    ax.step(trace[:, 0], trace[:, 1], where="post", label=name)
ax.axhline(1e-3, color="grey", lw=0.8, ls=":")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("CPU time (s)")
ax.set_ylabel("certified relative duality gap")
ax.set_title(f"L1-MKL on Heart, {stack.n_kernels} kernels, C = 10")
ax.legend()
fig.tight_layout()
plt.show()
