"""
Multiple-instance learning on musk1: IOKL against mi-SVM
========================================================

In multiple-instance learning only bags of instances are labelled: a bag is positive when at least one of its
instances is. Input-output kernel learning (Xu's thesis, chapter 4) treats the unknown key instance of each
positive bag as a choice among candidates and learns the choice together with the kernel weights by a cutting
plane over candidate groups, each MKL problem solved to a certified gap. mi-SVM (Andrews et al. 2003)
alternates between an SVM and the instance labels. This example compares both on the Musk1 benchmark (92
molecules, 476 conformations) by bag accuracy over 5 cross-validation folds of the bags.
"""

# %%
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from multikernel import IOKLMultipleInstanceClassifier
from multikernel.iokl.baselines import miSVM

# The data sets sit in shared/data beside the repository; examples run from their folder or from the root.
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "examples" / "README.rst").is_file())
DATA = ROOT.parent / "shared" / "data"
frame = pd.read_csv(DATA / "mil" / "musk1.csv")
bags = frame["bag"].to_numpy()
X = frame.drop(columns=["bag", "label"]).to_numpy(float)
y = frame["label"].to_numpy()
bag_ids = np.unique(bags)
bag_label = np.array([y[bags == b][0] for b in bag_ids])
print(f"{len(bag_ids)} bags ({np.sum(bag_label > 0)} positive), {len(X)} instances, {X.shape[1]} features")

# %%
# IOKL-SM (``theta`` caps each candidate group's weight; ``theta=None`` is IOKL-HM) with the thesis's four
# input kernels (Gaussian, Laplacian, inverse squared distance, inverse distance), C = 10 for both methods.
models = {"IOKL-SM (bag level)": lambda: IOKLMultipleInstanceClassifier(C=10.0, theta=2.0),
          "mi-SVM": lambda: miSVM(C=10.0)}
rows = []
for fold, (train_bags, _test_bags) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0)
                                                .split(bag_ids, bag_label)):
    train = np.isin(bags, bag_ids[train_bags])
    scaler = StandardScaler().fit(X[train])
    Xtr, Xte = scaler.transform(X[train]), scaler.transform(X[~train])
    for name, make in models.items():
        start = time.process_time()
        model = make().fit(Xtr, y[train], bags[train])
        seconds = time.process_time() - start
        predicted = model.predict(Xte, bags[~train])
        truth = np.array([y[~train][bags[~train] == b][0] for b in np.unique(bags[~train])])
        rows.append({"fold": fold, "method": name, "accuracy": np.mean(predicted == truth), "cpu_s": seconds})
results = pd.DataFrame(rows)
print(results.groupby("method")[["accuracy", "cpu_s"]].agg(["mean", "std"]).round(3))

# %%
fig, ax = plt.subplots(figsize=(6, 3.8))
names = list(models)
ax.boxplot([results.loc[results["method"] == n, "accuracy"] for n in names])
ax.set_xticks(range(1, len(names) + 1), names)
for i, n in enumerate(names, start=1):
    ax.plot(np.full(5, i), results.loc[results["method"] == n, "accuracy"], "o", alpha=0.6)
ax.set_ylabel("bag accuracy (5 folds)")
ax.set_title("Musk1")
fig.tight_layout()
plt.show()

# %%
# Five folds of 92 bags are few: one bag is more than a point of accuracy per fold. Over 10 x 10 folds with the
# same settings (``docs/experiments/iokl/mil_results.md``) bag-level IOKL reaches 84.3 % on Musk1 and mi-SVM
# 85.7 %, both below the thesis's 86.9-88.0 %; C and theta here are fixed, not selected.
