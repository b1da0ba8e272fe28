"""
Cross-modal retrieval on mfeat
==============================

Two modalities describe the same classes but share no samples: here the pixel view and the Fourier view of UCI
Multiple Features, learnt from *different* digits. Kobayashi (2014, section 5.2) maps both into one common space
with the trace-norm bilinear model, whose rank (at most the number of classes) the optimisation finds; a probe of
one modality then retrieves gallery items of the other by nearest neighbours. This example trains on 300 pixel
digits and 300 other Fourier digits, and retrieves across the 1000 test digits of each modality.
"""

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from multikernel.bilinear import CrossModalEmbedding, cmc_curve, retrieval_ranks

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
frame = pd.read_csv(DATA / "mfeat.csv")
pix = frame[[c for c in frame.columns if c.startswith("pix:")]].to_numpy(float)
fou = frame[[c for c in frame.columns if c.startswith("fou:")]].to_numpy(float)
y = frame["label"].to_numpy()
train, test = train_test_split(np.arange(len(y)), test_size=1000, random_state=0, stratify=y)
train_a, train_b = train_test_split(train, train_size=300, test_size=300, random_state=0, stratify=y[train])
scale_a, scale_b = StandardScaler().fit(pix[train_a]), StandardScaler().fit(fou[train_b])
A_train, A_test = scale_a.transform(pix[train_a]), scale_a.transform(pix[test])
B_train, B_test = scale_b.transform(fou[train_b]), scale_b.transform(fou[test])

# %%
embedding = CrossModalEmbedding(kernel_a="linear", kernel_b="linear", C=1.0)
embedding.fit(A_train, y[train_a], B_train, y[train_b])
Za, Zb = embedding.transform(A_test, "a"), embedding.transform(B_test, "b")
print(f"common space of dimension {embedding.n_components_}")
ranks_ab = retrieval_ranks(Za, y[test], Zb, y[test])  # pixel probes, Fourier gallery
ranks_ba = retrieval_ranks(Zb, y[test], Za, y[test])
print(f"rank-1 accuracy: pixels -> Fourier {np.mean(ranks_ab == 1):.3f}, Fourier -> pixels {np.mean(ranks_ba == 1):.3f}"
      " (chance 0.100)")

# %%
# The cumulative match characteristic (fraction of probes whose class appears among the ``k`` nearest gallery
# items), and the first two coordinates of the common space for both modalities.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
k = np.arange(1, 11)
ax1.plot(k, cmc_curve(ranks_ab, 10), "o-", label="pixel probes, Fourier gallery")
ax1.plot(k, cmc_curve(ranks_ba, 10), "s-", label="Fourier probes, pixel gallery")
ax1.set_xlabel("rank k")
ax1.set_ylabel("fraction retrieved within rank k")
ax1.set_title("CMC curve")
ax1.legend()
for Z, marker, name in [(Za, "o", "pixels"), (Zb, "x", "Fourier")]:
    ax2.scatter(Z[:300, 0], Z[:300, 1], c=y[test][:300], cmap="tab10", marker=marker, s=14, label=name)
ax2.set_title("common space, first two coordinates")
ax2.legend()
fig.tight_layout()
plt.show()
