"""
A low-rank bilinear classifier on digits
========================================

When each sample is a matrix (an image, a time-by-channel recording), a linear classifier ``f(X) = <W, X> + b``
has a weight matrix ``W`` of the same shape. Kobayashi (2014) regularizes it by its trace norm (the sum of its
singular values), which makes ``W`` low-rank: a few row and column patterns instead of one weight per pixel.
The problem is solved by projected gradient on its dual with a certified duality gap. This example separates
the digits 3 and 8 of scikit-learn's 8 x 8 digits and compares the weight matrix with a linear SVM's on the
flattened image.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from multikernel import BilinearClassifier

digits = load_digits()
keep = np.isin(digits.target, [3, 8])
X, y = digits.images[keep] / 16.0, np.where(digits.target[keep] == 8, 1, -1)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
print(f"{len(X_train)} training images of shape {X.shape[1:]}")

# %%
bilinear = BilinearClassifier(C=1.0, tol=1e-2).fit(X_train, y_train)
svm = LinearSVC(C=1.0, max_iter=20000).fit(X_train.reshape(len(X_train), -1), y_train)
W_bilinear = bilinear.coef_.reshape(X.shape[1:])
W_svm = svm.coef_.reshape(X.shape[1:])
print(f"trace-norm bilinear: test accuracy {bilinear.score(X_test, y_test):.3f}, rank {bilinear.rank_[0]}, "
      f"certified gap {bilinear.dual_gap_[0]:.1e}")
print(f"linear SVM on vec(X): test accuracy {svm.score(X_test.reshape(len(X_test), -1), y_test):.3f}, "
      f"rank {np.linalg.matrix_rank(W_svm)}")

# %%
# The two weight matrices and their singular values: the trace norm concentrates ``W`` on a few of them.
fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
for ax, W, title in [(axes[0], W_bilinear, "trace-norm bilinear W"), (axes[1], W_svm, "linear SVM W")]:
    bound = np.abs(W).max()
    image = ax.imshow(W, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.colorbar(image, ax=ax, fraction=0.046)
for W, label in [(W_bilinear, "trace-norm bilinear"), (W_svm, "linear SVM")]:
    s = np.linalg.svd(W, compute_uv=False)
    axes[2].semilogy(np.arange(1, len(s) + 1), s / s[0], "o-", label=label)
axes[2].set_xlabel("singular value index")
axes[2].set_ylabel("relative singular value")
axes[2].set_ylim(1e-6, 2)
axes[2].legend()
fig.suptitle("digits 3 against 8")
fig.tight_layout()
plt.show()
