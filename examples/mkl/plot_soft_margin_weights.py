"""
Kernel weights: average kernel, L1-MKL and soft margin MKL, and the bridge between them
=======================================================================================

Soft margin MKL (Xu, Tsang and Xu 2013) caps every kernel weight at ``theta`` on the simplex
(``sum mu = 1, 0 <= mu <= theta``). At ``theta = 1/M`` every weight is ``1/M``: the average kernel. At
``theta = 1`` the cap is inactive: L1-MKL, which keeps a few kernels. In between, SM1MKL keeps at least
``1/theta`` kernels. This example fits the three on the UCI Heart data (the LIBSVM scaling), then follows the
weights as ``theta`` grows.
"""

# %%
# The data: UCI Statlog Heart, 270 patients, 13 features, from ``../shared/data`` beside the repository.
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from multikernel import MKLClassifier, create

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
table = np.loadtxt(DATA / "heart.csv", delimiter=",", skiprows=1)
X, y = table[:, :-1], table[:, -1]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)

# %%
# Three methods, one kernel family (``rbf_poly``): Gaussian kernels at five bandwidths (multiples of the mean
# squared training distance), the linear kernel and polynomial kernels of degree 2 and 3, on all features,
# standardized on the training part.
methods = {"average": "average", "L1-MKL": "l1mkl", "SM1MKL (nu = 0.5)": "sm1mkl"}
fits = {}
for label, method in methods.items():
    clf = MKLClassifier(kernels="rbf_poly", method=method, C=10.0, standardize=True).fit(X_train, y_train)
    fits[label] = clf
    print(f"{label:<18} accuracy {clf.score(X_test, y_test):.3f}   certified gap {clf.dual_gap_:.1e}   "
          f"kernels kept {np.count_nonzero(clf.weights_ > 1e-6)} of {clf.weights_.size}")

# %%
# The weights, kernel by kernel.
fig, ax = plt.subplots(figsize=(8, 3.5))
width = 0.28
index = np.arange(fits["average"].weights_.size)
for k, (label, clf) in enumerate(fits.items()):
    ax.bar(index + (k - 1) * width, clf.weights_, width, label=label)
ax.set_xlabel("kernel")
ax.set_ylabel("weight")
ax.set_title("Kernel weights on Heart")
ax.legend()
fig.tight_layout()

# %%
# The bridge: SM1MKL's weights as the cap ``theta`` grows from ``1/M`` (the average kernel) to 1 (L1-MKL).
# Each fit starts from the previous one's weights (``warm_start``).
M = fits["average"].weights_.size
thetas = np.geomspace(1.0 / M, 1.0, 12)
clf = MKLClassifier(kernels="rbf_poly", method="sm1mkl", C=10.0, standardize=True, warm_start=True)
weights, accuracy = [], []
for theta in thetas:
    clf.set_params(regularizer=create("regularizer", "box_simplex", theta=float(theta)))
    clf.fit(X_train, y_train)
    weights.append(clf.weights_.copy())
    accuracy.append(clf.score(X_test, y_test))
weights = np.array(weights)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.stackplot(thetas, weights.T)
ax1.set_xscale("log")
ax1.set_xlabel("cap theta")
ax1.set_ylabel("weights (stacked)")
ax1.set_title("SM1MKL from the average kernel to L1-MKL")
ax2.plot(thetas, accuracy, "o-")
ax2.plot(thetas, (weights > 1e-6).sum(axis=1) / M, "s--", label="fraction of kernels kept")
ax2.set_xscale("log")
ax2.set_xlabel("cap theta")
ax2.set_ylabel("value")
ax2.plot([], [], "o-", color="C0", label="test accuracy")
ax2.legend()
fig.tight_layout()
plt.show()
