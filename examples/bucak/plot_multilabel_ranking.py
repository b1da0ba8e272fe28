"""
Multi-label ranking on yeast: MLR-L1 against one-vs-rest
========================================================

A multi-label ranker orders the labels of each sample so that its relevant labels come before the irrelevant
ones. One-vs-rest trains one SVM per label and ranks by the SVMs' scores; MLR (Bucak's thesis, chapters 4-5)
trains all labels together on the pairwise ranking constraints of each sample, "relevant above irrelevant",
with one dual block per sample. This example compares them on the MULAN *yeast* set (gene functions, 14
labels) over the training size.
"""

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import train_test_split

from multikernel import MultiLabelRanker
from multikernel.ranking import OneVsRestRanker, ranking_scores

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
frame = pd.read_csv(DATA / "yeast.csv")
labels = [c for c in frame.columns if c.startswith("label:")]
X, Y = frame.drop(columns=labels).to_numpy(float), frame[labels].to_numpy(int)
X_pool, X_test, Y_pool, Y_test = train_test_split(X, Y, test_size=800, random_state=0)
print(f"{X.shape[0]} samples, {X.shape[1]} features, {Y.shape[1]} labels, {Y.mean(axis=0).sum():.1f} relevant "
      "per sample on average")

# %%
# The same RBF kernel (bandwidth from the mean squared training distance) and C for both; ranking loss (the
# fraction of relevant / irrelevant pairs ordered wrongly) and one-error on the held-out 800 samples.
sizes = [100, 200, 400, 800]
rows = []
for n in sizes:
    for name, model in [("MLR-L1", MultiLabelRanker(method="mlr_l1", C=1.0, standardize=True)),
                        ("one-vs-rest SVM", OneVsRestRanker(C=1.0, standardize=True))]:
        model.fit(X_pool[:n], Y_pool[:n])
        scores = ranking_scores(Y_test, model.decision_function(X_test))
        rows.append({"n_train": n, "method": name, **scores})
results = pd.DataFrame(rows)
print(results.pivot(index="n_train", columns="method", values="ranking_loss").round(4))

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for ax, measure, title in [(axes[0], "ranking_loss", "ranking loss"), (axes[1], "one_error", "one-error")]:
    for name, part in results.groupby("method"):
        ax.plot(part["n_train"], part[measure], "o-", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("training samples")
    ax.set_ylabel(f"{title} (lower is better)")
    ax.set_xticks(sizes, [str(n) for n in sizes])
axes[0].legend()
fig.suptitle("yeast, 14 labels, 800 test samples")
fig.tight_layout()
plt.show()
