"""
Semi-supervised IOKL against label spreading as the labels grow
===============================================================

Semi-supervised input-output kernel learning (Xu's thesis, chapter 3) learns the labels of the unlabelled points
and the kernel weights together: each candidate labelling is an output kernel, and a cutting plane adds the most
violated labelling until none is left. Like every transductive SVM it needs a **balance constraint**, the
fraction of positives among the unlabelled points (``positive_fraction``); by default it is the labelled
points' fraction, which with few labels can be far from the truth. This example compares IOKL, with the default
and with the true balance, to scikit-learn's label spreading on the g241c benchmark (two Gaussian classes in
241 dimensions; the cluster assumption holds), transductive accuracy on the unlabelled points.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.semi_supervised import LabelSpreading

from multikernel import IOKLSemiSupervisedClassifier
from multikernel.config.task_data import make_g241c

X, y = make_g241c(n_samples=400, random_state=0)
X = StandardScaler().fit_transform(X)  # transductive: every point's statistics
rng = np.random.default_rng(0)

# %%
# For each number of labels, three random draws (at least one label of each class). ``y == -1`` marks the
# unlabelled points for IOKL; label spreading takes the same convention.
rows = []
for n_labeled in [4, 8, 16, 32]:
    for _draw in range(3):
        labeled = np.concatenate([rng.choice(np.flatnonzero(y == c), 1, replace=False) for c in (-1, 1)])
        rest = np.setdiff1d(np.arange(len(y)), labeled)
        labeled = np.concatenate([labeled, rng.choice(rest, n_labeled - 2, replace=False)])
        unlabeled = np.setdiff1d(np.arange(len(y)), labeled)
        y_partial = np.full(len(y), -1)
        y_partial[labeled] = (y[labeled] > 0).astype(int)  # classes 0 / 1, -1 unlabelled
        models = {
            "IOKL-SM, balance = labelled fraction": IOKLSemiSupervisedClassifier(theta=2.0, max_iter=10),
            "IOKL-SM, balance = 0.5 (the truth)": IOKLSemiSupervisedClassifier(theta=2.0, max_iter=10,
                                                                               positive_fraction=0.5),
            "label spreading (k-NN graph)": LabelSpreading(kernel="knn", n_neighbors=10),
        }
        for name, model in models.items():
            with warnings.catch_warnings():
                # The thesis's budget of 10 cutting-plane iterations: on some draws IOKL stops there and warns
                # with the violation left; label spreading may reach its own iteration limit.
                warnings.simplefilter("ignore", RuntimeWarning)
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X, y_partial)
            predicted = model.transduction_ if hasattr(model, "transduction_") else model.predict(X)
            accuracy = np.mean(predicted[unlabeled] == (y[unlabeled] > 0))
            rows.append({"labels": n_labeled, "method": name, "accuracy": accuracy})
results = pd.DataFrame(rows)
table = results.groupby(["labels", "method"])["accuracy"].mean().unstack()
print(table.round(3).to_string())

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for name in table.columns:
    ax.plot(table.index, table[name], "o-", label=name)
ax.set_xscale("log", base=2)
ax.set_xticks(table.index, [str(n) for n in table.index])
ax.set_xlabel("labelled points (of 400)")
ax.set_ylabel("accuracy on the unlabelled points")
ax.set_title("g241c, mean of 3 draws")
ax.legend()
fig.tight_layout()
plt.show()
