"""Inner cross-validation of MIL estimators in a task experiment: grid points are chosen
on folds of whole training bags, and the choice equals a hand-written grouped cross-validation loop."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _iokl_testing import drawn_bags as _drawn_bags
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from multikernel import create
from multikernel.cli import main
from multikernel.config.task_data import TaskData
from multikernel.core.tasks import task_kind
from multikernel.experiments.runner import UNITS_FILE
from multikernel.iokl import IOKLMultipleInstanceClassifier

CONFIG = """
[experiment]
name = "tiny-mil-cv"
output = "out"
repeats = 1
cv_folds = 3
seed = 5

[task]
kind = "mil"
folds = 2

[preprocessing]
standardize = true

[[datasets]]
name = "bags"
source = "mil.csv"

[[estimators]]
name = "iokl_mil"
label = "IOKL-HM (CV)"
params = { max_iter = 3, kernels = [{ name = "rbf" }] }
grid = { C = [0.01, 1.0, 100.0] }
"""


def _grouped_folds(groups: np.ndarray, y: np.ndarray, rows: np.ndarray, k: int, seed: int
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The hand-written grouped split: stratified k-fold over the bags of ``rows`` (bag labels), each bag's
    instances following it."""
    bags = np.unique(groups[rows])
    labels = np.array([y[rows][groups[rows] == b][0] for b in bags])
    out = []
    for tr, te in StratifiedKFold(k, shuffle=True, random_state=seed).split(bags, labels):
        out.append((rows[np.isin(groups[rows], bags[tr])], rows[np.isin(groups[rows], bags[te])]))
    return out


def _bag_accuracy(C: float, X: np.ndarray, y: np.ndarray, groups: np.ndarray, tr: np.ndarray, te: np.ndarray
                  ) -> float:
    scaler = StandardScaler().fit(X[tr])
    clf = IOKLMultipleInstanceClassifier(C=C, max_iter=3, kernels=[create("kernel", "rbf")])
    clf.fit(scaler.transform(X[tr]), y[tr], groups[tr])
    bags = np.unique(groups[te])
    truth = np.array([y[te][groups[te] == b][0] for b in bags])
    return float(np.mean(clf.predict(scaler.transform(X[te]), groups[te]) == truth))


def test_inner_folds_of_a_mil_training_part_never_split_a_bag():
    X, y, groups = _drawn_bags()
    data = TaskData(X, y, groups)
    train = np.sort(np.flatnonzero(~np.isin(groups, np.unique(groups)[::4])))  # a training part of whole bags
    folds = task_kind("mil").folds(data, train, 4, seed=11)
    assert len(folds) == 4
    seen = []
    for tr, te in folds:
        assert set(tr) | set(te) == set(train) and not set(tr) & set(te)
        assert not set(groups[tr]) & set(groups[te])  # no bag on both sides
        for bag in np.unique(groups[te]):  # a test bag comes with all of its training instances
            assert set(np.flatnonzero(groups == bag)) <= set(te)
        assert set(y[te]) == {-1, 1}  # stratified by the bag label
        seen += list(np.unique(groups[te]))
    assert sorted(seen) == sorted(np.unique(groups[train]))  # every training bag is tested exactly once
    # the same folds as the hand-written grouped split
    for (tr, te), (mtr, mte) in zip(folds, _grouped_folds(groups, y, train, 4, 11), strict=True):
        np.testing.assert_array_equal(np.sort(tr), np.sort(mtr))
        np.testing.assert_array_equal(np.sort(te), np.sort(mte))


@pytest.mark.filterwarnings("ignore:IOKL cutting plane stopped at max_iter:RuntimeWarning")
def test_experiment_grid_selection_equals_a_manual_grouped_cv_loop(tmp_path: Path):
    X, y, groups = _drawn_bags()
    rows = zip(X, groups, y, strict=True)
    lines = ["bag,x0,x1,label"] + [f"{g},{float(a)!r},{float(b)!r},{lab}" for (a, b), g, lab in rows]
    (tmp_path / "mil.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "cv.toml").write_text(CONFIG)
    assert main(["experiment", str(tmp_path / "cv.toml"), "-q"]) == 0
    units = [json.loads(line) for line in (tmp_path / "out" / UNITS_FILE).read_text().splitlines()]
    assert len(units) == 2 and all("error" not in u for u in units)
    grid = [0.01, 1.0, 100.0]
    everything = np.arange(len(y))
    outer = _grouped_folds(groups, y, everything, 2, seed=5)  # seed = experiment.seed + repeat 0
    chosen = set()
    for unit in sorted(units, key=lambda u: u["fold"]):
        train, test = outer[unit["fold"]]
        inner = _grouped_folds(groups, y, train, 3, seed=5)
        manual = np.array([[_bag_accuracy(C, X, y, groups, tr, te) for tr, te in inner] for C in grid])
        np.testing.assert_allclose(np.array(unit["cv_scores"]), manual, rtol=0, atol=1e-12)
        best = grid[int(np.argmax(manual.mean(axis=1)))]  # the first best point on ties
        assert unit["best_params"] == {"C": best}
        chosen.add(best)
        # the refit at the chosen point on the whole training part, scored on the outer test bags
        assert unit["accuracy"] == pytest.approx(_bag_accuracy(best, X, y, groups, train, test), abs=1e-12)
        assert unit["n_train"] == len(train) and unit["n_test"] == len(test)
    # the grid matters on this draw: the scores are not all equal (else the check of the choice is empty)
    assert any(len(set(np.array(u["cv_mean"]).round(12))) > 1 for u in units), chosen
