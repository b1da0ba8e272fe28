"""
Heterogeneous MKL on the six views of mfeat
===========================================

Classic MKL weights each kernel by a scalar. hMKL (Kobayashi 2014, section 4) writes each sample as the matrix of
its kernel values against the training samples, one column per kernel, and learns with the trace-norm bilinear
classifier a positive semi-definite ``w x w`` matrix ``S`` that weights the kernels *and their interactions*; a
diagonal ``S`` is classic MKL (Varma and Ray 2007) and ``S = I`` the sum of the kernels. This example uses the six
descriptions of the handwritten digits of UCI Multiple Features, one Gaussian kernel per view, and compares hMKL
with the average kernel and L1-MKL.
"""

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from multikernel import MKLClassifier, create
from multikernel.bilinear import HMKLClassifier

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
frame = pd.read_csv(DATA / "mfeat.csv")
views = ["fou", "fac", "kar", "pix", "zer", "mor"]
features = frame.drop(columns=["label"])
X, y = features.to_numpy(float), frame["label"].to_numpy()
columns = {v: [i for i, c in enumerate(features.columns) if c.startswith(v + ":")] for v in views}
X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=200, test_size=1000, random_state=0,
                                                    stratify=y)

# One Gaussian kernel per view, its bandwidth from the view's mean squared training distance.
kernels = [create("kernel", "rbf", columns=columns[v], gamma_scale=1.0) for v in views]

# %%
models = {
    "average kernel": MKLClassifier(kernels=kernels, method="average", C=10.0, standardize=True),
    "L1-MKL": MKLClassifier(kernels=kernels, method="l1mkl", C=10.0, standardize=True),
    "hMKL (proposed)": HMKLClassifier(kernels=kernels, C=10.0, standardize=True, tol=1e-2, max_iter=200),
}
accuracy = {}
for name, model in models.items():
    accuracy[name] = model.fit(X_train, y_train).score(X_test, y_test)
    print(f"{name:<16} test accuracy {accuracy[name]:.3f}")

# %%
# The learnt ``S`` of the one-vs-rest problem "digit 0 against the rest", and the accuracies. The off-diagonal
# entries are the interactions between views that scalar kernel weights cannot express.
S = models["hMKL (proposed)"].sigma_[0]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
bound = np.abs(S).max()
image = ax1.imshow(S, cmap="RdBu_r", vmin=-bound, vmax=bound)
ax1.set_xticks(range(len(views)), views)
ax1.set_yticks(range(len(views)), views)
ax1.set_title("hMKL's S, digit 0 against the rest")
fig.colorbar(image, ax=ax1, fraction=0.046)
ax2.barh(list(accuracy), list(accuracy.values()))
ax2.set_xlim(min(accuracy.values()) - 0.05, 1.0)
ax2.set_xlabel("test accuracy (1000 digits, 200 for training)")
fig.tight_layout()
plt.show()
