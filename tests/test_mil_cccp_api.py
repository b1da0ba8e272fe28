"""MissSVM and MICA as the library's estimators: by name from Python, a task experiment configuration and the
command line, and Ctrl-C keeping the best completed step."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import multikernel
from multikernel import create
from multikernel.cli import main
from multikernel.errors import FitInterruptedWarning
from multikernel.iokl import MICA, MissSVM
from tests._mil_cccp_testing import shifted_bags
from tests.test_task_plugins import _mil_csv

CONFIG = """
[experiment]
name = "cccp-mil"
output = "out"
repeats = 1
cv_folds = 0

[task]
kind = "mil"
folds = 2

[[datasets]]
name = "bags"
source = "mil.csv"

[[estimators]]
name = "missvm"
params = { C = 1.0, kernels = [{ name = "rbf" }] }

[[estimators]]
name = "mica"
params = { C = 1.0, kernels = [{ name = "rbf" }] }

[[estimators]]
name = "mica"
label = "MICA-l2"
params = { C = 1.0, regularizer = "l2", kernels = [{ name = "rbf" }] }
"""


def test_by_name_with_defaults_and_overrides():
    assert isinstance(multikernel.create("estimator", "missvm", C=3.0), MissSVM)
    mica = multikernel.create("estimator", "mica", regularizer="l2")
    assert isinstance(mica, MICA) and mica.regularizer == "l2"


def test_a_task_experiment_runs_both_from_the_command_line(tmp_path: Path):
    _mil_csv(tmp_path / "mil.csv")
    (tmp_path / "mil.toml").write_text(CONFIG)
    assert main(["experiment", str(tmp_path / "mil.toml"), "-q", "--json", str(tmp_path / "mil.json")]) == 0
    summary = json.loads((tmp_path / "mil.json").read_text())
    assert summary["errors"] == [] and summary["finished_units"] == 6
    row = summary["tasks"]["table"]["bags"]["-"]
    assert set(row) == {"missvm", "mica", "MICA-l2"}
    # a positive bag's witness is far from every other instance: each method finds it
    assert all(row[name]["accuracy"] >= 0.75 for name in row), row


@pytest.mark.parametrize("cls, step", [(MissSVM, "multikernel.iokl.missvm.unit_svm"),
                                       (MICA, "multikernel.iokl.mica.l1_svm_lp")])
def test_ctrl_c_keeps_the_best_completed_step(cls, step, monkeypatch):
    X, y, bags = shifted_bags(shift=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = cls(kernels=[create("kernel", "rbf")], C=1.0, max_iter=100).fit(X, y, bags)
    assert full.n_iter_ >= 3
    module, name = step.rsplit(".", 1)
    real = getattr(__import__(module, fromlist=[name]), name)
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(step, interrupted)
    with pytest.warns(FitInterruptedWarning, match="interrupted after 2 iteration"):
        est = cls(kernels=[create("kernel", "rbf")], C=1.0, max_iter=100).fit(X, y, bags)
    assert est.interrupted_
    # the model is the better of the two completed steps, which the uninterrupted fit went through too
    np.testing.assert_allclose(est.objectives_, full.objectives_[:2], rtol=1e-9)
    assert est.objective_ == est.objectives_.min()
    assert est.predict(X, bags).shape == (20,)
