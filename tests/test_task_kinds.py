"""Task kinds are plugins: a third party adds one (here: regression, measured by R^2) with a hook, and the
experiment runner, ``validate`` and the report use it with no change of their own.  The same example is the one
docs/plugins.md walks through ("A task kind")."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_absolute_error, r2_score

from multikernel import TaskEstimator, hookimpl
from multikernel.cli import main
from multikernel.core.registry import Registry, get_registry
from multikernel.core.tasks import TASK_KINDS, TaskKind
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.runner import run_experiment


class Regression(TaskKind):
    """Regression of a continuous target: fit(X, y), predict; R^2 (chooses grid points) and mean absolute error."""

    description = "regression (fit(X, y), predict; R^2)"
    labels = "continuous"
    measures = (("r2", True), ("mae", False))

    def evaluate(self, estimator, data, train, test, *, setting=None, neighbors=3, seed=0):
        estimator.fit(data.X[train], data.y[train])
        predicted = estimator.predict(data.X[test])
        return {"r2": float(r2_score(data.y[test], predicted)),
                "mae": float(mean_absolute_error(data.y[test], predicted))}


class RegressionPlugin:
    @hookimpl
    def multikernel_task_kinds(self):
        return {"toy_regression": Regression}

    @hookimpl
    def multikernel_estimators(self):
        return {"toy_ridge": TaskEstimator("toy_ridge", "toy_regression", Ridge, summary="Ridge regression.")}


@pytest.fixture
def regression_plugin():
    plugin = RegressionPlugin()
    get_registry().register(plugin, name="toy-regression")
    yield
    get_registry().unregister(plugin)


CONFIG = """
[experiment]
repeats = 1
cv_folds = 3

[task]
kind = "toy_regression"
folds = 3

[[datasets]]
name = "linear"
source = "linear.csv"

[[estimators]]
name = "toy_ridge"
grid = { alpha = [0.01, 100.0] }
"""


def _files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=60)
    rows = [",".join(f"{v:.6f}" for v in (*x, t)) for x, t in zip(X, y, strict=True)]
    (tmp_path / "linear.csv").write_text("x0,x1,x2,label\n" + "\n".join(rows) + "\n")
    config = tmp_path / "regression.toml"
    config.write_text(CONFIG.replace("[experiment]", f'[experiment]\noutput = "{tmp_path / "out"}"'))
    return config


def test_a_third_party_task_kind_runs_an_experiment(regression_plugin, tmp_path, capsys):
    assert "toy_regression" in TASK_KINDS
    config = _files(tmp_path)
    assert main(["validate", str(config)]) == 0
    assert main(["experiment", str(config), "--out", str(tmp_path / "out")]) == 0
    import json

    summary = json.loads((tmp_path / "out" / "results.json").read_text())
    units = summary["units"]
    assert len(units) == 3 and not summary["errors"]
    for unit in units:
        assert unit["r2"] > 0.9 and unit["mae"] < 0.5  # a learnable linear target
        assert unit["best_params"] == {"alpha": 0.01} and unit["selected_by"] == "r2"
    assert summary["tasks"]["measures"] == ["r2", "mae"]


def test_a_third_party_task_kind_runs_through_run(regression_plugin, tmp_path, capsys):
    """`multikernel run` uses the kind's data checks, splits, evaluation and measures too: the kind is the
    estimator's, the grid is chosen by its first measure, and the table shows its measures."""
    _files(tmp_path)
    config = tmp_path / "run.toml"
    config.write_text("[data]\nsource = 'linear.csv'\n[evaluation]\ncv_folds = 3\nfolds = 3\n"
                      "[[models]]\nestimator = 'toy_ridge'\ngrid = { alpha = [0.01, 100.0] }\n")
    assert main(["validate", str(config)]) == 0
    assert "toy_regression task" in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert main(["run", str(config), "--json", str(out)]) == 0
    assert "r2" in capsys.readouterr().out
    import json

    (model,) = json.loads(out.read_text())["models"]
    assert len(model["repeats"]) == 3 and model["r2_mean"] > 0.9
    assert all(r["best_params"] == {"alpha": 0.01} for r in model["repeats"])
    config.write_text("[data]\nsource = 'linear.csv'\n[task]\nkind = 'toy_regression'\nlabeled = 5\n"
                      "[[models]]\nestimator = 'toy_ridge'\n")
    assert main(["run", str(config)]) == 2
    assert "task.labeled: a setting of ssl tasks; this run's task is toy_regression" in capsys.readouterr().err


def test_the_kind_checks_its_data(regression_plugin, tmp_path):
    config = _files(tmp_path)
    text = config.read_text()
    config.write_text(text.replace('kind = "toy_regression"', 'kind = "toy_regression"\nlabeled = [5]'))
    with pytest.raises(ConfigError, match=r"task\.labeled: a setting of ssl tasks; this task is toy_regression"):
        run_experiment(config, progress=False)
    (tmp_path / "matrix.csv").write_text("x0,label:a,label:b\n" + "\n".join(f"{i},{i % 2},1" for i in range(30)))
    config.write_text(text.replace("linear.csv", "matrix.csv"))
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.source: a toy_regression task needs one label per "
                                          r"sample; .* has a label matrix"):
        run_experiment(config, progress=False)


class NotAKind:
    pass


@pytest.mark.parametrize(("kinds", "fragment"), [
    ({"nope": NotAKind}, r"'nope' maps to the class .*NotAKind, which is not a subclass of multikernel.TaskKind"),
    ({"regression": Regression()}, r"'regression' maps to .*, not a class"),
])
def test_malformed_task_kind_hooks_fail_at_registration(kinds, fragment):
    class Bad:
        @hookimpl
        def multikernel_task_kinds(self):
            return kinds

    registry = Registry()
    with pytest.raises(PluginError, match=r"plugin 'bad' .*hook multikernel_task_kinds: " + fragment):
        registry.register(Bad(), name="bad")
    assert "nope" not in registry.names("task")
