"""`multikernel run` and `validate` for every task kind: estimators by name, multi-label MKL, the embedded examples,
bad configurations naming their key path, and `validate` failing exactly when `run` fails before fitting."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import multikernel.config.runner as runner
from multikernel.cli import main
from multikernel.config.examples import examples


def _write(tmp_path, text, name="c.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _multilabel_csv(path, n=40):
    """Features a, b and a 0/1 label matrix of three label:* columns (each sample with one or two labels)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    Y = np.c_[X[:, 0] > 0, X[:, 1] > 0, X.sum(axis=1) < 0].astype(int)
    Y[Y.sum(axis=1) == 0, 2] = 1
    rows = ["a,b,label:x,label:y,label:z"] + [f"{a:.4f},{b:.4f},{p},{q},{r}"
                                              for (a, b), (p, q, r) in zip(X, Y, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    return path


FAST = "[solver]\ntol = 1e-2\nmax_iter = 20\n[kernels]\nfamily = 'rbf_poly'\n"


# --------------------------------------------------------------------------------------------------
# every task kind through validate and run
# --------------------------------------------------------------------------------------------------
KIND_CONFIGS = {
    "clustering": "[data]\nsource = 'iris'\nclasses = [0, 1]\n[task]\nkind = 'clustering'\n"
                  "[[models]]\nestimator = 'kmeans'\n",
    "outlier_detection": "[data]\nsource = 'ringnorm'\nparams = { n_samples = 60, n_features = 3 }\n"
                         "[task]\nkind = 'outlier_detection'\n[[models]]\nestimator = 'one_class_svm'\n",
    "classification": "[data]\nsource = 'wine'\n[[models]]\nestimator = 'svc'\ngrid = { C = [0.1, 10] }\n"
                      "[evaluation]\ncv_folds = 3\nfolds = 3\n",
}


@pytest.mark.parametrize("kind", sorted(KIND_CONFIGS))
def test_kinds_without_an_example_validate_and_run(kind, tmp_path, capsys):
    config = _write(tmp_path, KIND_CONFIGS[kind])
    assert main(["validate", config]) == 0, capsys.readouterr().err
    assert f"{kind} task" in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert main(["run", config, "-q", "--json", str(out)]) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["task"]["kind"] == kind
    measure = report["task"]["measures"][0]
    assert all(0 <= m[f"{measure}_mean"] <= 1 for m in report["models"])


def test_cross_validation_and_a_grid_for_an_estimator(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", _write(tmp_path, KIND_CONFIGS["classification"]), "-q", "--json", str(out)]) == 0
    (model,) = json.loads(out.read_text())["models"]
    assert [r["fold"] for r in model["repeats"]] == [0, 1, 2]
    assert all(r["best_params"]["C"] in (0.1, 10) and np.shape(r["cv_scores"]) == (2, 3) for r in model["repeats"])
    assert model["accuracy_mean"] > 0.9


@pytest.mark.parametrize("name", [e.name for e in examples()])
def test_each_example_runs_and_saves(name, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", "--example", name, "-q", "--json", str(out), "--save", str(tmp_path / "m.npz")]) == 0
    report = json.loads(out.read_text())
    for model in report["models"]:
        assert all(math.isfinite(model[f"{m}_mean"]) for m in report["task"]["measures"]), model
    assert len(list(tmp_path.glob("m*"))) == len(report["models"])


@pytest.mark.parametrize("name", [e.name for e in examples()])
def test_each_example_round_trips_through_toml(name):
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

    from multikernel.config.examples import load_example
    from multikernel.config.schema import config_from_dict, config_to_toml

    config = load_example(name)
    assert config_from_dict(tomllib.loads(config_to_toml(config))) == config


def test_examples_are_listed_with_their_kinds(capsys):
    assert main(["examples", "--json"]) == 0
    listed = {e["name"]: e["task"] for e in json.loads(capsys.readouterr().out)}
    assert listed == {"soft_margin": "classification", "multilabel_ranking": "multilabel_ranking", "mil": "mil",
                      "ssl": "ssl", "itml_plus": "metric", "bilinear": "bilinear", "hmkl": "classification",
                      "crossmodal": "crossmodal", "regression": "regression"}
    assert main(["examples"]) == 0
    assert "soft_margin" in capsys.readouterr().out
    assert main(["run", "--example", "nope"]) == 2
    assert "--example: no example 'nope'" in capsys.readouterr().err


def test_the_default_run_is_the_soft_margin_example(capsys):
    assert main(["show-config"]) == 0
    default = capsys.readouterr().out
    assert main(["show-config", "--example", "soft_margin"]) == 0
    assert capsys.readouterr().out == default


# --------------------------------------------------------------------------------------------------
# multi-label MKL from a configuration
# --------------------------------------------------------------------------------------------------
def test_multilabel_mkl_from_a_csv_with_label_columns(tmp_path, capsys):
    csv = _multilabel_csv(tmp_path / "ml.csv")
    text = (f"[data]\nsource = '{csv}'\n[task]\nkind = 'multilabel_ranking'\n{FAST}"
            "[[models]]\nlabel = 'sum'\nmethod = 'l1mkl'\nmulticlass = 'shared'\n"
            "[[models]]\nlabel = 'sa'\nmethod = 'ml_mkl_sa'\nmulticlass = 'shared'\n")
    config = _write(tmp_path, text)
    assert main(["validate", config]) == 0, capsys.readouterr().err
    out = tmp_path / "r.json"
    assert main(["run", config, "-q", "--json", str(out)]) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["data"]["n_labels"] == 3
    for model in report["models"]:
        assert model["example_auc_mean"] > 0.5
        assert np.shape(model["repeats"][0]["weights"])[0] == 1  # one weight vector shared by the labels
    # Without [task], the label matrix is refused with the kinds that read one.
    config = _write(tmp_path, text.replace("[task]\nkind = 'multilabel_ranking'\n", ""))
    for command in ("validate", "run"):
        assert main([command, config]) == 2
        err = capsys.readouterr().err
        assert "data.source:" in err and "kinds for such data: multilabel_ranking" in err


def test_ml_mkl_sa_needs_shared_weights_and_validate_says_so(tmp_path, capsys):
    text = f"[data]\nsource = 'iris'\n{FAST}[[models]]\nmethod = 'ml_mkl_sa'\n"
    for command in ("validate", "run"):
        assert main([command, _write(tmp_path, text)]) == 2
        assert "models[0].multiclass: " in (err := capsys.readouterr().err) and "multiclass='shared'" in err
    assert main(["validate", _write(tmp_path, text + "multiclass = 'shared'\n")]) == 0


# --------------------------------------------------------------------------------------------------
# bad configurations of each kind exit 2 naming the key path
# --------------------------------------------------------------------------------------------------
BAD = [
    ("[[models]]\nmethod = 'iokl_ssl'\n",
     "models[0].method: 'iokl_ssl' is a task estimator (ssl), not an MKL method; write estimator = 'iokl_ssl'"),
    ("[[models]]\nmethod = 'nope'\n", "estimator = NAME"),
    ("[[models]]\nestimator = 'nope'\n", "models[0].estimator: unknown estimator 'nope'"),
    ("[[models]]\nestimator = 'svc'\nC = 2\n", "models[0].C: a key of MKL method models"),
    ("[[models]]\nmethod = 'l1mkl'\nparams = { C = 2 }\n", "models[0].params: params are the parameters of a task"),
    ("[[models]]\nestimator = 'svc'\nparams = { gama = 1 }\n", "models[0].params.gama: 'gama' is not a parameter"),
    ("[[models]]\nestimator = 'svc'\nparams = { C = -1.0 }\n", "models[0].params: model 'svc' fails a fit"),
    ("[task]\nkind = 'ssl'\n[[models]]\nestimator = 'svc'\n",
     "models[0].estimator: 'svc' is a classification estimator; this run's task is ssl"),
    ("[task]\nkind = 'nope'\n", "task.kind: unknown task"),
    ("[task]\nneighbors = 3\n", "task.neighbors: a setting of metric tasks; this run's task is classification"),
    ("[task]\nkind = 'multilabel_ranking'\n[data]\nsource = 'iris'\n[[models]]\nestimator = 'mlr_l1'\n",
     "data.source: a multilabel_ranking task needs a label matrix"),
    ("[task]\nkind = 'mil'\n[data]\nsource = 'iris'\n[[models]]\nestimator = 'sil_svm'\n", "data.source: a mil task"),
    ("[task]\nkind = 'ssl'\nlabeled = 500\n[data]\nsource = 'g241c'\nparams = { n_samples = 40, n_features = 3 }\n"
     "[[models]]\nestimator = 'ssl_svm'\n", "task.labeled: 500 labelled samples of 40"),
    ("[task]\nkind = 'ssl'\n[data]\nsource = 'g241c'\nparams = { n_samples = 40, n_features = 3 }\n"
     "[evaluation]\nfolds = 3\n[[models]]\nestimator = 'ssl_svm'\n", "evaluation.folds: ssl tasks have no"),
    ("[task]\nkind = 'bilinear'\n[data]\nsource = 'iris'\n[[models]]\nestimator = 'bilinear'\n",
     "data.source: a bilinear task needs matrix samples"),
    ("[task]\nkind = 'crossmodal'\n[data]\nsource = 'iris'\n[[models]]\nestimator = 'crossmodal'\n",
     "data.privileged: a crossmodal task needs a second view"),
    ("[task]\nkind = 'metric'\nselect_by = 'r2'\n[[models]]\nestimator = 'itml'\n",
     "task.select_by: 'r2' is not a measure of metric tasks"),
    ("[task]\nkind = 'regression'\n[data]\nsource = 'friedman1'\n[[models]]\nmethod = 'l1mkl'\n",
     "data.source: the labels in 'friedman1' are not class labels"),
    ("[task]\nkind = 'clustering'\n[evaluation]\ncv_folds = 3\n[[models]]\nestimator = 'kmeans'\n"
     "grid = { n_init = [1, 5] }\n", "evaluation.cv_folds: clustering tasks have no labels"),
    ("[task]\nkind = 'outlier_detection'\n[[models]]\nestimator = 'one_class_svm'\ngrid = { nu = [0.5, 2] }\n",
     "models[0].grid.nu: 2 values but no cross-validation"),
    ("[[models]]\nestimator = 'svc'\ngrid = { C = [1, -1] }\n[evaluation]\ncv_folds = 3\n",
     "models[0].grid.C[1]: model 'svc' at C=-1 fails a fit"),
    ("[data]\nsource = 'iris'\nparams = { n = 3 }\n", "data.params: params are for generated data sets"),
    ("[evaluation]\nfolds = 1\n", "evaluation.folds: must be 0 (one held-out split per repeat"),
]


@pytest.mark.parametrize("text, fragment", BAD)
def test_bad_configs_exit_2_with_the_key_path(text, fragment, tmp_path, capsys):
    config = _write(tmp_path, text)
    for command in ("validate", "run"):
        assert main([command, config]) == 2, command
        assert fragment in (err := capsys.readouterr().err), (command, err)


def test_report_table_headers_sit_over_their_values(capsys):
    assert main(["run", "--example", "regression"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("model "))
    for name in ("r2", "mae", "fit time"):
        end = lines[header].index(name) + len(name)
        for row in lines[header + 2:header + 5]:  # right-aligned: each value ends where its header ends
            assert row[end - 1] != " " and (end == len(row) or row[end] == " "), (name, row)


# --------------------------------------------------------------------------------------------------
# validate fails if and only if run fails before fitting
# --------------------------------------------------------------------------------------------------
class _Fitting(Exception):
    """Raised by the first fit of a run: everything before it (the checks) has passed."""


def _reached_fit(*args, **kwargs):
    raise _Fitting


#: Consistent runs of several kinds: (data, [task] kind, the models a run may draw from).
_BASES = [
    ({"source": "iris"}, None, [{"method": "average"}, {"method": "ml_mkl_sa", "multiclass": "shared"},
                                {"estimator": "svc"}]),
    ({"source": "ML"}, "multilabel_ranking", [{"method": "average", "multiclass": "shared"}, {"estimator": "mlr_l1"}]),
    ({"source": "bags", "params": {"n_bags": 12, "n_features": 2}}, "mil", [{"estimator": "sil_svm"}]),
    ({"source": "g241c", "params": {"n_samples": 40, "n_features": 2}}, "ssl", [{"estimator": "ssl_svm"}]),
]

#: Ways to break a run: each edits the drawn configuration in place.
_DEFECTS = {
    "unknown top-level key": lambda c: c.update(colour=1),
    "unknown model key": lambda c: c["models"][0].update(colour=1),
    "unknown evaluation key": lambda c: c["evaluation"].update(colour=1),
    "unknown data key": lambda c: c["data"].update(colour=1),
    "unknown task kind": lambda c: c.update(task={"kind": "nope"}),
    "a setting of another kind": lambda c: c.setdefault("task", {}).update(neighbors=3),
    "an estimator of another kind": lambda c: c["models"].append({"estimator": "kmeans"}),
    "a task estimator as a method": lambda c: c["models"].append({"method": "iokl_ssl"}),
    "an unknown method": lambda c: c["models"].append({"method": "nope"}),
    "ml_mkl_sa without shared weights": lambda c: c["models"].append({"method": "ml_mkl_sa"}),
    "an estimator parameter it does not take": lambda c: c["models"].append({"estimator": "svc",
                                                                             "params": {"bogus": 1}}),
    "a negative C": lambda c: c["models"].append({"method": "average", "C": -1.0}),
    "a bad multiclass value": lambda c: c["models"].append({"method": "average", "multiclass": "both"}),
    "a grid without cross-validation": lambda c: c["models"][0].update(grid={"C": [0.5, 2.0]}),
    "a bad grid value": lambda c: (c["models"][0].update(grid={"C": [1.0, -1.0]}),
                                   c["evaluation"].update(cv_folds=3)),
    "a held-out fraction too large to stratify": lambda c: c["evaluation"].update(test_fraction=0.98),
    "a class the data do not have": lambda c: c["data"].update(classes=[7]),
    "a single class": lambda c: c["data"].update(classes=[0]),
    "evaluation folds of 1": lambda c: c["evaluation"].update(folds=1),
}


@st.composite
def run_configs(draw):
    """Run configurations of several task kinds (MKL methods with and without shared weights, estimators by
    name, grids searched or applied), valid or broken in up to two drawn ways (:data:`_DEFECTS`)."""
    data, kind, models = draw(st.sampled_from(_BASES))
    chosen = draw(st.lists(st.sampled_from(models), min_size=1, max_size=2))
    config = {"data": dict(data), "kernels": {"family": "rbf_poly"}, "solver": {"tol": 1e-2, "max_iter": 5},
              "models": [dict(m) for m in chosen], "evaluation": {"cv_folds": draw(st.sampled_from([0, 3]))}}
    if kind is not None or draw(st.booleans()):
        config["task"] = {"kind": kind or "classification"}
    if config["evaluation"]["cv_folds"] and draw(st.booleans()):
        config["models"][0]["grid"] = {"C": [0.5, 2.0]}
    for defect in draw(st.lists(st.sampled_from(sorted(_DEFECTS)), max_size=2, unique=True)):
        _DEFECTS[defect](config)
    config["models"] = [dict(m, label=f"m{i}") for i, m in enumerate(config["models"])]
    return config


def _toml(config, tmp_path):
    import tomli_w

    csv = _multilabel_csv(tmp_path / "ml.csv")
    if config["data"]["source"] == "ML":
        config = {**config, "data": {**config["data"], "source": str(csv)}}
    return _write(tmp_path, tomli_w.dumps(config), "drawn.toml")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=run_configs())
def test_validate_fails_if_and_only_if_run_fails_before_fitting(config, tmp_path, monkeypatch, capsys):
    path = _toml(config, tmp_path)
    validate_code = main(["validate", path])
    validate_err = capsys.readouterr().err
    event("valid" if validate_code == 0 else "refused")
    monkeypatch.setattr(runner, "fit_and_measure", _reached_fit)
    try:
        run_code = main(["run", "-q", path])
        reached = False
    except _Fitting:
        run_code, reached = None, True
    run_err = capsys.readouterr().err
    assert (validate_code != 0) == (not reached), (config, validate_err, run_err)
    if not reached:
        assert run_code == validate_code == 2 and run_err == validate_err, (config, validate_err, run_err)
