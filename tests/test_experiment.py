"""The experiment runner, on tiny generated data: outputs, resuming, ranks, model selection against
scikit-learn's GridSearchCV, kernel reuse, and configuration errors with key paths."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold

import multikernel.experiments.model_selection as stackcv
import multikernel.experiments.runner as experiment
import multikernel.experiments.units as units
from multikernel import MKLClassifier
from multikernel.cli import main
from multikernel.config.datasets import make_ringnorm
from multikernel.config.schema import SolverConfig
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method
from multikernel.core.registry import get_registry
from multikernel.errors import ConfigError
from multikernel.experiments.config import MethodSpec, evaluate_value
from multikernel.experiments.model_selection import cross_validate, resolve_grid, select_best
from multikernel.experiments.report import competition_ranks, count_selected, summarize_benchmark, truncate
from multikernel.experiments.runner import check_experiment, experiment_config_from_dict, run_experiment
from multikernel.plugins.kernels import PolynomialKernel, RBFKernel
from multikernel.plugins.regularizers import Simplex
from multikernel.stack.kernelset import KernelSet

DOCS = Path(__file__).resolve().parent.parent / "docs" / "experiments"


def _config(tmp_path, **sections):
    """A tiny experiment: generated ringnorm (48 x 2), 3 kernels, average and L1-MKL over a C grid."""
    cfg = {
        "experiment": {"name": "tiny", "output": str(tmp_path / "out"), "repeats": 2, "cv_folds": 3, "n_jobs": 1},
        "kernels": {"family": "simplemkl",
                    "family_params": {"sigmas": [1.0, 4.0], "degrees": [1], "single_features": False}},
        "solver": {"tol": 1e-2, "max_iter": 15},
        "datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_samples": 48, "n_features": 2}}],
        "methods": [{"method": "average", "grid": {"C": [0.1, 10.0]}},
                    {"method": "l1mkl", "label": "L1", "grid": {"C": [0.1, 1.0, 10.0]}}],
    }
    for key, value in sections.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return cfg


def test_runner_writes_tables_json_and_figure_data(tmp_path):
    cfg = _config(tmp_path, noisy_kernels={"dataset": "ring", "ratios": [0.0, 1.0], "methods": ["average"]},
                  paths=[{"dataset": "ring", "method": "L1", "param": "C", "values": [0.1, 10.0]}])
    summary = run_experiment(cfg, progress=False)
    out = tmp_path / "out"
    assert summary["finished_units"] == summary["planned_units"] == 2 * 2 + 2 + 1
    assert summary["errors"] == []
    md = (out / "results.md").read_text()
    assert "| ring (n=48, d=2, M=3) |" in md and "| average rank |" in md and "Training time" in md
    saved = json.loads((out / "results.json").read_text())
    row = saved["benchmark"]["table"]["ring"]
    for label in ("average", "L1"):
        assert len(row[label]["accuracy"]) == 2 and 0.0 <= row[label]["accuracy_mean"] <= 100.0
        assert row[label]["rank"] in (1, 2)
        assert all(p["C"] in (0.1, 1.0, 10.0) for p in row[label]["best_params"])
    assert row["average"]["n_selected"] == [3, 3]  # the average kernel uses every kernel
    noisy = saved["noisy_kernels"]["rows"]
    assert [r["n_noise_features"] for r in noisy] == [0, 2] and [r["n_kernels"] for r in noisy] == [3, 3]
    path = saved["paths"][0]
    assert [p["value"] for p in path["points"]] == [0.1, 10.0]
    assert all(abs(sum(p["weights"]) - 1.0) < 1e-9 for p in path["points"])  # simplex weights
    assert len((out / "units.jsonl").read_text().splitlines()) == summary["planned_units"]
    pytest.importorskip("matplotlib")
    assert {"figures/accuracy.png", "figures/noisy_kernels.png", "figures/path_0_L1.png"} <= set(saved["figures"])
    assert (out / "figures" / "accuracy.png").stat().st_size > 0


def test_rerun_skips_finished_units_and_reruns_changed_ones(tmp_path, monkeypatch):
    calls = []
    real = units.fit_point
    monkeypatch.setattr(units, "fit_point", lambda *a, **k: calls.append(1) or real(*a, **k))
    cfg = _config(tmp_path)
    first = run_experiment(cfg, progress=False)
    assert first["finished_units"] == 4 and len(calls) == 4  # one refit per unit (CV fits go through stackcv)
    calls.clear()
    again = run_experiment(cfg, progress=False)
    assert calls == [] and again["finished_units"] == 4
    assert again["benchmark"]["table"] == first["benchmark"]["table"]
    cfg["methods"][0]["grid"]["C"] = [1.0]  # a changed grid changes the fingerprint of that method's units only
    run_experiment(cfg, progress=False)
    assert len(calls) == 2


def test_interrupt_keeps_finished_units(tmp_path, monkeypatch):
    real = experiment.run_unit
    seen = []

    def flaky(task):  # the second split is interrupted
        if seen:
            raise KeyboardInterrupt
        seen.extend(m.key for m in task.members)
        return real(task)

    monkeypatch.setattr(experiment, "run_unit", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(_config(tmp_path), progress=False)
    lines = (tmp_path / "out" / "units.jsonl").read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == seen == ["benchmark/ring/0/average", "benchmark/ring/0/L1"]
    monkeypatch.setattr(experiment, "run_unit", lambda task: seen.extend(m.key for m in task.members) or real(task))
    summary = run_experiment(_config(tmp_path), progress=False)
    assert summary["finished_units"] == 4
    assert seen[2:] == ["benchmark/ring/1/average", "benchmark/ring/1/L1"]  # only the missing units ran


@pytest.mark.parametrize("stage", ["refit", "cross-validation"])
def test_a_failing_unit_is_reported_and_retried(tmp_path, monkeypatch, capsys, stage):
    module = units if stage == "refit" else stackcv
    real = module.fit_point

    def broken(stack, targets, spec, *args, **kwargs):
        if spec.method == "l1mkl":
            raise FloatingPointError("solver exploded")
        return real(stack, targets, spec, *args, **kwargs)

    monkeypatch.setattr(module, "fit_point", broken)
    cfg = _config(tmp_path)
    summary = run_experiment(cfg, progress=False)
    assert [e["key"] for e in summary["errors"]] == ["benchmark/ring/0/L1", "benchmark/ring/1/L1"]
    assert "FloatingPointError: solver exploded" in summary["errors"][0]["error"]
    assert summary["finished_units"] == 2 and "L1" not in summary["benchmark"]["table"]["ring"]
    assert "**Failed units**" in (tmp_path / "out" / "results.md").read_text()
    monkeypatch.setattr(module, "fit_point", real)
    again = run_experiment(cfg, progress=False)
    assert again["errors"] == [] and again["finished_units"] == 4


def test_competition_ranks_with_ties_and_truncated_average():
    assert competition_ranks([90.0, 85.0, 90.0, 80.0]) == [1, 3, 1, 4]
    assert competition_ranks([1.0, 1.0 + 1e-12, 2.0], higher_is_better=False) == [1, 1, 3]
    assert truncate(44 / 7) == 6.28 and truncate(2.0 - 1e-15) == 2.0 and truncate(2.999) == 2.99
    records = [{"dataset": ds, "method": m, "repeat": 0, "accuracy": acc, "fit_time": t, "weights": [0.5, 0.5],
                "n_iter": 1, "dual_gap": 0.0, "kernel_time": 0.0, "best_params": {}, "n_kernels": 2,
                "n_train": 10, "n_test": 5}
               for ds, m, acc, t in [("a", "x", 0.9, 1.0), ("a", "y", 0.9, 2.0), ("a", "z", 0.8, 3.0),
                                     ("b", "x", 0.7, 1.0), ("b", "y", 0.8, 1.0), ("b", "z", 0.9, 1.0)]]
    summary = summarize_benchmark(records, ["a", "b"], ["x", "y", "z"], 1e-5)
    assert [summary["table"]["a"][m]["rank"] for m in "xyz"] == [1, 1, 3]
    assert summary["average_rank"] == {"x": 2.0, "y": 1.5, "z": 2.0}
    assert [summary["table"]["b"][m]["time_rank"] for m in "xyz"] == [1, 1, 1]
    assert count_selected([0.5, 0.5 - 1e-7, 1e-7], 1e-5) == 2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["average", "l1mkl"])
def test_grid_search_matches_sklearn_gridsearchcv(method):
    X, y = make_ringnorm(60, 3, random_state=1)
    X = (X - X.mean(0)) / X.std(0)
    builders = [RBFKernel(sigma=1.0), RBFKernel(sigma=3.0), PolynomialKernel(degree=2, columns=[0])]
    grid = {"C": [0.01, 0.1, 1.0, 10.0]}
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    solver = SolverConfig(tol=1e-3, max_iter=30, inner_tol=1e-6)
    reference = GridSearchCV(MKLClassifier(kernels=builders, normalize="none", method=method, tol=solver.tol,
                                           max_iter=solver.max_iter, inner_tol=solver.inner_tol), grid, cv=folds,
                             refit=False).fit(X, y)
    stack = KernelSet([b for b in builders], normalize="none").fit_stack(X)
    points = resolve_grid(grid, stack.n_kernels)
    for warm in (False, True):
        scores, info = cross_validate(stack, y, list(folds.split(X, y)), MethodSpec(method=method), points, solver,
                                      warm_start=warm)
        assert points[select_best(scores)] == reference.best_params_
        assert info["cv_fits"] == len(points) * 3
        if not warm:  # the very same fits: the same fold scores, to the bit
            np.testing.assert_array_equal(scores.mean(axis=1), reference.cv_results_["mean_test_score"])


def test_kernels_are_built_once_per_unit(tmp_path, monkeypatch):
    counts = {"fit_stack": 0, "cross_stack": 0, "rbf_fit": 0}

    class CountingKernelSet(KernelSet):
        def fit_stack(self, X):
            counts["fit_stack"] += 1
            return super().fit_stack(X)

        def cross_stack(self, X):
            counts["cross_stack"] += 1
            return super().cross_stack(X)

    real_fit = RBFKernel.fit
    monkeypatch.setattr(units, "KernelSet", CountingKernelSet)
    monkeypatch.setattr(RBFKernel, "fit", lambda self, X, y=None: counts.__setitem__("rbf_fit", counts["rbf_fit"] + 1)
                        or real_fit(self, X, y))
    summary = run_experiment(_config(tmp_path), progress=False)
    n_units = summary["finished_units"]
    cv_fits = sum(r["cv_fits"] for r in summary["units"])
    assert n_units == 4 and cv_fits == 2 * 3 * 2 + 2 * 3 * 3  # 2 repeats x 3 folds x grid sizes 2 and 3
    # one training stack and one (single-block) cross stack per split, shared by the methods, whatever the
    # grid and the folds: 2 splits here (and one fit of each builder on a few rows by the configuration check)
    assert counts == {"fit_stack": 2, "cross_stack": 2, "rbf_fit": 2 * 2 + 2}


class ToySimplex(Simplex):
    """The simplex with a cap parameter that only has to be feasible (``theta >= 1/M``): enough to exercise
    ``regularizer__theta`` grids and ``1/M`` expressions on a method the runner does not know."""

    name = "toy_simplex"

    def __init__(self, theta: float = 1.0) -> None:
        self.theta = theta

    def check(self, n_kernels: int) -> None:
        if self.theta < 1.0 / n_kernels - 1e-12:
            raise ValueError(f"theta={self.theta} < 1/M")


class ToyPlugin:
    @hookimpl
    def multikernel_regularizers(self):
        return {"toy_simplex": ToySimplex}

    @hookimpl
    def multikernel_methods(self):
        return {"toy": Method(name="toy", summary="test method", loss="csvc", regularizer="toy_simplex",
                              solver="bcd")}


@pytest.fixture
def toy_method():
    plugin = ToyPlugin()
    get_registry().register(plugin)
    yield
    get_registry().unregister(plugin)


def test_a_new_method_works_by_name_with_regularizer_grid(tmp_path, toy_method):
    cfg = _config(tmp_path, methods=[{"method": "toy", "grid": {"C": [1.0], "regularizer__theta": ["1/M", 1.0]}}])
    cfg["experiment"]["repeats"] = 1
    summary = run_experiment(cfg, progress=False)
    rec = summary["units"][0]
    assert [p["regularizer__theta"] for p in rec["grid"]] == [pytest.approx(1 / 3), 1.0]
    assert rec["best_params"]["regularizer__theta"] in (pytest.approx(1 / 3), 1.0)
    cfg["methods"][0]["grid"]["regularizer__theta"] = [0.1]
    with pytest.raises(ConfigError, match=r"^methods\[0\]\.grid\.regularizer__theta\[0\]: infeasible for M=3 "
                                          r"kernels: theta=0.1 < 1/M"):
        check_experiment(experiment_config_from_dict(cfg))
    # only what runs is checked: without the benchmark, the method's grid is not used, the path's values are
    cfg["experiment"]["benchmark"] = False
    cfg["paths"] = [{"dataset": "ring", "method": "toy", "param": "regularizer__theta", "values": ["1/M", 1]}]
    assert set(check_experiment(experiment_config_from_dict(cfg))) == {"ring"}
    cfg["paths"][0]["values"] = [0.2]
    with pytest.raises(ConfigError, match=r"^paths\[0\]\.values\[0\]: infeasible for M=3"):
        check_experiment(experiment_config_from_dict(cfg))


@pytest.mark.parametrize("change, fragment", [
    ({"methods": [{"method": "average", "grid": {"gamma": [1]}}]}, "methods[0].grid.gamma: 'gamma' is not a parameter"),
    ({"methods": [{"method": "average", "grid": {"C": [1, "1/x"]}}]}, "methods[0].grid.C[1]: "),
    ({"methods": [{"method": "average", "grid": {"C": []}}]}, "methods[0].grid.C: needs at least one value"),
    ({"methods": [{"method": "average"}, {"method": "average"}]}, "methods[1].label: duplicate method label"),
    ({"datasets": [{"name": "d", "source": "nope.csv"}]}, "datasets[0].source: 'nope.csv' is neither"),
    ({"datasets": [{"name": "d", "source": "wine", "params": {"a": 1}}]}, "datasets[0].params: "),
    ({"datasets": [{"name": "d", "source": "ringnorm", "train_size": -1}]},
     "datasets[0].train_size: train_size must be a positive integer"),
    ({"experiment": {"cv_folds": 1}}, "experiment.cv_folds: must be 0"),
    ({"experiment": {"repeats": "3"}}, "experiment.repeats: got '3'; expected an integer"),
    ({"experiment": {"colour": 1}}, "experiment: unknown key(s) 'colour'"),
    ({"noisy_kernels": {"dataset": "ring", "methods": ["SM9"]}}, "noisy_kernels.methods[0]: unknown method label"),
    ({"paths": [{"dataset": "x", "method": "L1", "param": "C", "values": [1]}]}, "paths[0].dataset: unknown data set"),
])
def test_config_errors_name_the_key_path(tmp_path, change, fragment):
    with pytest.raises(ConfigError) as info:
        experiment_config_from_dict(_config(tmp_path, **change))
    assert str(info.value).startswith(fragment)


@pytest.mark.parametrize("change, fragment", [
    ({"methods": [{"method": "simplemkl9"}]}, "methods[0].method: unknown method 'simplemkl9'"),
    ({"methods": [{"method": "l1mkl", "grid": {"regularizer__nu": [0.5]}}]},
     "methods[0].grid.regularizer__nu: 'nu' is not a parameter of regularizer 'simplex'"),
    ({"datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_sample": 5}}]},
     "datasets[0].params.n_sample: 'n_sample' is not a parameter of the generator 'ringnorm'"),
    ({"kernels": {"family": "nope"}}, "kernels.family: unknown family 'nope'"),
])
def test_semantic_errors_name_the_key_path(tmp_path, change, fragment):
    with pytest.raises(ConfigError) as info:
        check_experiment(experiment_config_from_dict(_config(tmp_path, **change)))
    assert str(info.value).startswith(fragment)


def test_cli_experiment(tmp_path, capsys):
    import tomli_w

    cfg = _config(tmp_path)
    cfg["experiment"]["repeats"] = 1
    cfg["methods"] = cfg["methods"][:1]
    path = tmp_path / "exp.toml"
    path.write_text(tomli_w.dumps(cfg))
    assert main(["experiment", str(path), "--dry-run"]) == 0
    assert "valid; 1 units (1 benchmark) in 1 splits" in capsys.readouterr().out
    assert main(["experiment", str(path), "-q", "--out", str(tmp_path / "o2"), "--json", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["finished_units"] == 1
    assert (tmp_path / "o2" / "results.md").exists() and not (tmp_path / "out").exists()
    path.write_text("[experiment]\nrepeats = 0\n")
    assert main(["experiment", str(path)]) == 2
    assert "experiment.repeats: repeats must be a positive integer" in capsys.readouterr().err


def test_grid_expressions():
    assert evaluate_value("1/M", 4) == 0.25 and evaluate_value("32/31") == pytest.approx(32 / 31)
    assert evaluate_value("inf") == float("inf") and evaluate_value(3) == 3
    for bad in ("__import__('os')", "M.x", "1/0", True):
        with pytest.raises(ValueError):
            evaluate_value(bad, 3)


def test_make_ringnorm():
    X, y = make_ringnorm(4000, 5, random_state=0)
    assert X.shape == (4000, 5) and set(np.unique(y)) == {-1.0, 1.0} and (y == 1).sum() == 2000
    np.testing.assert_allclose(X[y == 1].var(axis=0), 4.0, rtol=0.1)
    np.testing.assert_allclose(X[y == -1].mean(axis=0), 2 / np.sqrt(5), atol=0.07)
    np.testing.assert_allclose(X[y == -1].var(axis=0), 1.0, rtol=0.1)
    np.testing.assert_array_equal(make_ringnorm(50, 3, random_state=1)[0], make_ringnorm(50, 3, random_state=1)[0])


def test_figure_experiments_as_functions():
    from multikernel.experiments.kinds import noisy_kernel_curve, parameter_path
    from multikernel.experiments.units import append_noise

    X, y = make_ringnorm(48, 2, random_state=3)
    kernels = {"family": "simplemkl", "family_params": {"sigmas": [1.0, 4.0], "degrees": [1]}}
    curve = noisy_kernel_curve(X, y, ["average", {"method": "l1mkl", "label": "L1", "grid": {"C": [0.1, 10.0]}}],
                               ratios=[0.0, 1.0], kernels=kernels, solver={"max_iter": 10}, cv_folds=3)
    assert [row["n_kernels"] for row in curve["rows"]] == [3 * 3, 3 * 5]  # (2 + 1) (d + 1) kernels, d = 2 then 4
    assert all(0 <= row["methods"][m]["accuracy"] <= 100 for row in curve["rows"] for m in ("average", "L1"))
    path = parameter_path(X, y, "l1mkl", "C", [0.1, "10/M"], kernels=kernels, solver={"max_iter": 10})
    assert [p["value"] for p in path["points"]] == [0.1, pytest.approx(10 / 9)] and path["n_kernels"] == 9
    nested = append_noise(X, 0.5, 1.0, seed=0)
    np.testing.assert_array_equal(nested, append_noise(X, 1.0, 1.0, seed=0)[:, :3])


def test_warm_starts_walk_the_grid_as_a_snake_and_stay_feasible():
    from multikernel.experiments.model_selection import fit_point, warm_chains
    from multikernel.solve.fit import SolveSettings, encode_targets
    from multikernel.stack.storage import DenseStack

    points = resolve_grid({"C": [10.0, 0.1, 1.0], "regularizer__theta": [0.5, 1.0]}, 3)
    (order,) = warm_chains(points)
    walk = [(points[i]["regularizer__theta"], points[i]["C"]) for i in order]
    assert walk == [(0.5, 0.1), (0.5, 1.0), (0.5, 10.0), (1.0, 10.0), (1.0, 1.0), (1.0, 0.1)]
    # A warm start from a larger box (theta = 1, the simplex) is projected onto the smaller one (theta = 0.4):
    # the fit is the same as a cold one.
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(30, 3))
    y = np.where(Z[:, 0] + 0.3 * rng.normal(size=30) > 0, 1, -1)
    stack = DenseStack(np.array([np.outer(Z[:, m], Z[:, m]) + 0.1 * np.eye(30) for m in range(3)]))
    targets, spec = encode_targets(y), MethodSpec(method="sm1mkl")
    settings = SolveSettings(tol=1e-7, inner_tol=1e-9, max_iter=500)
    wide = fit_point(stack, targets, spec, {"regularizer__nu": None, "regularizer__theta": 1.0}, settings)
    assert wide.weights.max() > 0.4  # outside the narrower box
    warm = fit_point(stack, targets, spec, {"regularizer__nu": None, "regularizer__theta": 0.4}, settings, warm=wide)
    cold = fit_point(stack, targets, spec, {"regularizer__nu": None, "regularizer__theta": 0.4}, settings)
    assert warm.weights.max() <= 0.4 + 1e-12
    assert float(warm.objective[0]) == pytest.approx(float(cold.objective[0]), rel=1e-6)


def test_figures_are_skipped_with_a_message_without_matplotlib(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # makes the import fail as if not installed
    cfg = _config(tmp_path)
    cfg["experiment"]["repeats"] = 1
    summary = run_experiment(cfg, progress=False)
    assert summary["figures"] == [] and "matplotlib is not installed" in summary["figures_note"]
    assert "matplotlib is not installed" in (tmp_path / "out" / "results.md").read_text()
    assert not (tmp_path / "out" / "figures").exists()


@pytest.mark.parametrize("change, fragment", [
    ({"methods": [{"method": "average", "grid": {"C": [1, -1]}}]},
     "methods[0].grid.C[1]: C must be a positive finite number; got -1"),
    ({"methods": [{"method": "average", "grid": {"C": [0.0]}}]}, "methods[0].grid.C[0]: C must be a positive"),
    ({"methods": [{"method": "l1mkl", "solver": {"name": "bcd"}, "grid": {"solver__certify_every": [1, 0]}}]},
     "methods[0].grid.solver__certify_every[1]: certify_every must be a positive integer"),
    ({"methods": [{"method": "sm1mkl", "regularizer": {"name": "box_simplex"}, "grid": {"C": [1, 10]}}]},
     "methods[0].regularizer: infeasible for M=3 kernels: box_simplex needs exactly one of theta"),
    ({"kernels": {"family": "simplemkl", "family_params": {"sigma": [1.0]}}},
     "kernels.family_params.sigma: 'sigma' is not a parameter of kernel family 'simplemkl'"),
    ({"kernels": {"family": "simplemkl", "family_params": {"sigmas": [1.0, -1.0], "single_features": False}}},
     "kernels.family_params: kernel rbf(sigma=-1): sigma must be a positive"),
    ({"paths": [{"dataset": "ring", "method": "L1", "param": "C", "values": [1, "-1/M"]}]},
     "paths[0].values[1]: C must be a positive finite number"),
])
def test_dry_run_checks_every_grid_value_and_kernel_parameter(tmp_path, capsys, change, fragment):
    """The experiment's check (run before fitting, by --dry-run and by validate) builds every part at every
    grid value and fits every kernel builder; the CLI exits 2 with the key path."""
    import tomli_w

    cfg = _config(tmp_path, **change)
    with pytest.raises(ConfigError) as info:
        check_experiment(experiment_config_from_dict(cfg))
    assert str(info.value).startswith(fragment)
    path = tmp_path / "exp.toml"
    path.write_text(tomli_w.dumps(cfg))
    for argv in (["experiment", str(path), "--dry-run"], ["validate", str(path)], ["experiment", str(path), "-q"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"multikernel: configuration error: {info.value}\n"
    assert not (tmp_path / "out").exists()  # nothing was run


def test_experiment_refuses_non_integer_labels_and_zero_jobs(tmp_path, capsys):
    csv = tmp_path / "half.csv"
    csv.write_text("a,b,label\n" + "".join(f"{i % 5},{i % 3},{0.5 if i % 2 else 1}\n" for i in range(30)))
    cfg = _config(tmp_path, datasets=[{"name": "half", "source": str(csv)}])
    with pytest.raises(ConfigError, match=r"^datasets\[0\]\.source: the labels in .* found the non-integer label 0.5"):
        check_experiment(experiment_config_from_dict(cfg))
    with pytest.raises(ConfigError, match=r"^experiment\.n_jobs: must be a positive number of parallel jobs"):
        experiment_config_from_dict(_config(tmp_path, experiment={"n_jobs": 0}))
    with pytest.raises(ConfigError, match=r"^n_jobs: must be a positive number"):
        run_experiment(_config(tmp_path), n_jobs=0)
    with pytest.raises(SystemExit) as exit_info:
        main(["experiment", "x.toml", "--n-jobs", "0"])
    assert exit_info.value.code == 2
    assert "argument --n-jobs: 0 must be a positive number of parallel jobs" in capsys.readouterr().err


def test_single_repeat_tables_have_no_spread_and_progress_is_logged(tmp_path, capsys):
    cfg = _config(tmp_path)
    cfg["experiment"]["repeats"] = 1
    summary = run_experiment(cfg, progress=True, json_path=tmp_path / "new" / "folder" / "s.json")
    err = capsys.readouterr().err.strip().splitlines()  # stderr is not a terminal here: one line per unit
    assert len(err) == summary["planned_units"] == 2
    assert err[0].startswith("experiment [1/2] benchmark/ring/0/average: accuracy ")
    row = next(line for line in (tmp_path / "out" / "results.md").read_text().splitlines()
               if line.startswith("| ring (n=48"))
    assert "±" not in row and "(1)" in row
    kernels = next(line for line in (tmp_path / "out" / "results.md").read_text().splitlines()
                   if line.startswith("| ring |") and " it; gap " in line)
    assert kernels.startswith("| ring | 3 / 3; 1 it; gap ")  # counts of a single repeat: no "3.0", "1.0"
    assert (tmp_path / "new" / "folder" / "s.json").exists()


# The configs of `multikernel experiment` (others, such as the metric-learning script's, have their own reader).
# Task experiments ([task], [[estimators]]) have their own test in test_task_plugins.py.
@pytest.mark.parametrize("name", sorted(p.name for p in DOCS.glob("*.toml") if "[[methods]]" in p.read_text()))
def test_paper_configs_validate_from_any_directory(name, tmp_path, monkeypatch, capsys):
    """Every committed protocol config validates from another working directory: its data files are looked
    for relative to the config file (``../../../shared/data`` beside the repository; small stand-ins when
    that folder is absent)."""
    import tomllib

    shared = DOCS.parent.parent.parent / "shared" / "data"
    config = tomllib.loads((DOCS / name).read_text())
    if not config["methods"] or not {m["method"] for m in config["methods"]} <= set(get_registry().names("method")):
        pytest.skip("some of its methods are not registered")
    folder = tmp_path / "repo" / "docs" / "experiments"
    folder.mkdir(parents=True)
    (folder / name).write_text((DOCS / name).read_text())
    for ds in config["datasets"]:
        target = (folder / ds["source"]).resolve()
        if ds["source"] in ("ringnorm",) or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = shared / target.name
        if source.exists():
            target.symlink_to(source)
        else:
            X, y = make_ringnorm(60 + ds.get("train_size", 0), 3, random_state=0)  # a test part beside train_size
            rows = [f"{a},{b},{c},{int(t)}" for (a, b, c), t in zip(X, y, strict=True)]
            target.write_text("\n".join(["a,b,c,label", *rows]) + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(folder / name)]) == 0, capsys.readouterr().err
    assert f"output {folder / config['experiment']['output']}" in capsys.readouterr().out


def test_results_json_names_no_path_of_the_machine(tmp_path):
    rng = np.random.default_rng(0)
    csv = tmp_path / "data" / "two.csv"
    csv.parent.mkdir()
    X = rng.normal(size=(40, 2))
    csv.write_text("a,b,label\n" + "".join(f"{a:.6f},{b:.6f},{int(a + b > 0)}\n" for a, b in X))
    cfg = _config(tmp_path, datasets=[{"name": "two", "source": str(csv)},
                                      {"name": "ring", "source": "ringnorm",
                                       "params": {"n_samples": 48, "n_features": 2}}])
    cfg["experiment"]["repeats"] = 1
    summary = run_experiment(cfg, progress=False)
    text = (tmp_path / "out" / "results.json").read_text()
    assert str(tmp_path) not in text
    saved = json.loads(text)
    sources = [ds["source"] for ds in saved["config"]["datasets"]]
    assert sources == [str(Path("..") / "data" / "two.csv"), "ringnorm"]  # relative to the results' folder
    assert saved["config"]["experiment"]["output"] == "."
    assert Path(summary["config"]["experiment"]["output"]) == tmp_path / "out"  # the caller's summary keeps it
