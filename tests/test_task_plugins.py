"""Task estimators as plugins: the registry, task experiment configurations, and their runs through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.svm import SVC

import multikernel
from multikernel import TaskEstimator, hookimpl
from multikernel.cli import main
from multikernel.config.task_data import TaskData
from multikernel.core.registry import Registry, get_registry
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.config import DatasetSpec, ExperimentSettings, TaskSettings
from multikernel.experiments.runner import UNITS_FILE, run_experiment
from multikernel.experiments.tasks import clustering_accuracy, evaluation_splits
from multikernel.iokl import IOKLMultipleInstanceClassifier
from multikernel.plugins.tasks import LabeledPart
from multikernel.ranking import MLkNN, MultiLabelRanker, OneVsRestRanker

# --------------------------------------------------------------------------------------------------
# data files
# --------------------------------------------------------------------------------------------------


def _ranking_csv(path: Path, n: int = 60, seed: int = 0) -> Path:
    """Four labels that depend on the signs of the features (learnable), as label:<name> columns."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] > 0, X[:, 0] + X[:, 2] > 0, X[:, 2] < 0]).astype(int)
    Y[Y.sum(axis=1) == 0, 0] = 1
    header = "x0,x1,x2,label:a,label:b,label:c,label:d"
    rows = [",".join(f"{v:.6f}" for v in x) + "," + ",".join(map(str, y)) for x, y in zip(X, Y, strict=True)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _mil_csv(path: Path, n_bags: int = 16, seed: int = 0) -> Path:
    """Bags of 3-4 instances; a positive bag holds one instance shifted by +3 in both features."""
    rng = np.random.default_rng(seed)
    lines = ["bag,x0,x1,label"]
    for b in range(n_bags):
        label = 1 if b % 2 == 0 else -1
        X = rng.normal(size=(3 + b % 2, 2))
        if label > 0:
            X[0] += 3.0
        lines += [f"{b},{x[0]:.6f},{x[1]:.6f},{label}" for x in X]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


RANKING = """
[experiment]
name = "tiny-ranking"
output = "out"
repeats = 2
cv_folds = 2
test_fraction = 0.3

[task]
kind = "multilabel_ranking"
missing = [0.0, 0.4]

[[datasets]]
name = "toy"
source = "ranking.csv"

[[estimators]]
name = "mlr_l1"
grid = { C = [0.1, 1.0] }

[[estimators]]
name = "mlr_gl"
label = "MLR-GL"

[[estimators]]
name = "mlknn"
params = { k = 5 }
"""

MIL = """
[experiment]
name = "tiny-mil"
output = "out"
repeats = 1
cv_folds = 2

[task]
kind = "mil"
folds = 2

[[datasets]]
name = "bags"
source = "mil.csv"

[[estimators]]
name = "mi_kernel"
grid = { C = [1.0, 10.0] }

[[estimators]]
name = "sil_svm"

[[estimators]]
name = "iokl_mil"
params = { max_iter = 2, kernels = [{ name = "rbf" }] }
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    _ranking_csv(tmp_path / "ranking.csv")
    _mil_csv(tmp_path / "mil.csv")
    return tmp_path


# --------------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------------
def test_builtin_estimators_are_registered_by_task_kind():
    registry = get_registry()
    kinds = {info.name: info.obj.task for info in registry.plugins("estimator")}
    expected = {
        "multilabel_ranking": {"mlr_l1", "mlr_gl", "mk_mlr", "avg_mlr", "ovr_svm", "ovr_platt", "mlknn"},
        "ssl": {"iokl_ssl", "ssl_svm", "ssl_l2mkl", "label_spreading", "self_training_svc"},
        "mil": {"iokl_mil", "ki_svm", "sil_svm", "mi_svm", "mi_svm_bag", "mi_kernel"},
        "clustering": {"iokl_clustering", "kmeans", "spectral"},
        "classification": {"mkl", "hmkl", "svc"},
        "crossmodal": {"crossmodal"},
        "bilinear": {"bilinear", "bilinear_svm"},
        "metric": {"itml", "itml_plus", "itml_s", "euclidean"},
    }
    for kind, names in expected.items():
        assert {n for n, k in kinds.items() if k == kind} >= names, kind
    assert set(kinds.values()) <= set(multikernel.TASK_KINDS)


def test_create_applies_defaults_then_overrides():
    est = multikernel.create("estimator", "mlr_gl", C=10.0)
    assert isinstance(est, MultiLabelRanker) and (est.method, est.C) == ("mlr_gl", 10.0)
    platt = multikernel.create("estimator", "ovr_platt")
    assert isinstance(platt, OneVsRestRanker) and platt.platt
    mk = multikernel.create("estimator", "mk_mlr")
    assert (mk.kernels, mk.regularizer) == ("rbf_poly", "simplex")
    ki = multikernel.create("estimator", "ki_svm", C=3.0)
    assert isinstance(ki, IOKLMultipleInstanceClassifier) and ki.C == 3.0 and len(ki.kernels) == 1
    with pytest.raises(PluginError, match=r"bad parameters for estimator 'mlknn': 'C' is not a parameter of the "
                                          r"multilabel_ranking estimator 'mlknn'; its parameters: k, s, metric"):
        multikernel.create("estimator", "mlknn", C=1.0)
    with pytest.raises(PluginError, match=r"unknown estimator 'mlr-gl'\. Did you mean 'mlr_gl'\?"):
        multikernel.create("estimator", "mlr-gl")


def _plugin(**hooks):
    return type("Plugin", (), {name: staticmethod(hookimpl(fn)) for name, fn in hooks.items()})()


@pytest.mark.parametrize("entries, fragment", [
    ({"mine": MLkNN}, r"'mine' maps to .*MLkNN.*; a task estimator is a multikernel\.TaskEstimator"),
    ({"mine": TaskEstimator("other", "mil", MLkNN)}, r"the key 'mine' maps to the task estimator named 'other'"),
    ({"mine": TaskEstimator("mine", "regresion", MLkNN)},
     r"task estimator 'mine': task 'regresion' is not a registered task kind. Did you mean 'regression'\? Kinds: "
     r"bilinear, classification"),
    ({"mine": TaskEstimator("mine", "mil", 3)}, r"task estimator 'mine': factory 3 is not callable"),
    ({"mine": TaskEstimator("mine", "mil", MLkNN, {"C": 1.0})},
     r"task estimator 'mine': default parameter\(s\) 'C' not taken by 'MLkNN' \(it takes k, s, metric\)"),
])
def test_malformed_estimator_hooks_fail_at_registration_naming_the_plugin(entries, fragment):
    registry = Registry()
    before = registry.names("estimator")
    with pytest.raises(PluginError, match=r"plugin 'bad' .*hook multikernel_estimators: " + fragment):
        registry.register(_plugin(multikernel_estimators=lambda: entries), name="bad")
    assert registry.names("estimator") == before  # left as it was


def test_a_name_claimed_twice_is_refused():
    registry = Registry()
    clash = {"mlknn": TaskEstimator("mlknn", "multilabel_ranking", MLkNN)}
    with pytest.raises(PluginError, match="two plugins provide the estimator 'mlknn'"):
        registry.register(_plugin(multikernel_estimators=lambda: clash), name="clash")


# --------------------------------------------------------------------------------------------------
# a third-party estimator plugin, used by name in a configuration and listed by the CLI
# --------------------------------------------------------------------------------------------------
class LabelFrequencyRanker(BaseEstimator):
    """Ranks every sample's labels by their training frequency (a floor any ranker should beat)."""

    def __init__(self, smoothing: float = 1.0) -> None:
        self.smoothing = smoothing

    def fit(self, X, Y):
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be >= 0; got {self.smoothing!r}")
        Y = np.nan_to_num(np.asarray(Y, dtype=float))
        self.frequency_ = (Y.sum(axis=0) + self.smoothing) / (len(Y) + 2 * self.smoothing)
        return self

    def decision_function(self, X):
        return np.tile(self.frequency_, (len(X), 1))


class FrequencyPlugin:
    @hookimpl
    def multikernel_estimators(self):
        return {"label_frequency": TaskEstimator("label_frequency", "multilabel_ranking", LabelFrequencyRanker,
                                                 summary="Labels ranked by training frequency.")}


@pytest.fixture
def frequency_plugin():
    plugin = FrequencyPlugin()
    get_registry().register(plugin, name="frequency")
    yield
    get_registry().unregister(plugin)


def test_third_party_estimator_by_name_in_config_and_cli(files, frequency_plugin, capsys):
    config = _write(files / "freq.toml", RANKING.replace('name = "mlknn"\nparams = { k = 5 }',
                                                         'name = "label_frequency"\ngrid = { smoothing = [0, 1] }'))
    assert main(["plugins", "--json"]) == 0
    listed = {(p["kind"], p["name"]): p for p in json.loads(capsys.readouterr().out)}
    assert listed[("estimator", "label_frequency")]["task"] == "multilabel_ranking"
    assert listed[("estimator", "label_frequency")]["origin"] == "frequency"
    assert main(["plugins"]) == 0
    assert "[multilabel_ranking] Labels ranked by training frequency." in capsys.readouterr().out
    assert main(["experiment", str(config), "-q", "--json", str(files / "s.json")]) == 0
    summary = json.loads((files / "s.json").read_text())
    cell = summary["tasks"]["table"]["toy"]["missing=0"]
    # a learnt ranker beats the constant ranking by label frequency
    assert cell["mlr_l1"]["example_auc"] > cell["label_frequency"]["example_auc"] + 0.1


# --------------------------------------------------------------------------------------------------
# validate rejects exactly what experiment rejects
# --------------------------------------------------------------------------------------------------
BAD = [
    ('name = "mlr_gl"\nlabel = "MLR-GL"', 'name = "mlr-gl"\nlabel = "MLR-GL"', "estimators[1].name",
     "unknown estimator 'mlr-gl'. Did you mean 'mlr_gl'?"),
    ('name = "mlr_gl"\nlabel = "MLR-GL"', 'name = "mi_kernel"', "estimators[1].name",
     "'mi_kernel' is a mil estimator; this experiment's task is multilabel_ranking"),
    ("params = { k = 5 }", "params = { C = 5 }", "estimators[2].params.C", "'C' is not a parameter of the "
     "estimator 'mlknn'; its parameters: k, s, metric"),
    ("grid = { C = [0.1, 1.0] }", "grid = { C = [0.1, -1.0] }", "estimators[0].grid.C[1]",
     "estimator 'mlr_l1' refuses C=-1.0: MultiLabelRanker: C must be a positive"),
    ("params = { k = 5 }", "params = { k = 0 }", "estimators[2].params", "estimator 'mlknn' refuses its parameters"),
    ('source = "ranking.csv"', 'source = "iris"', "datasets[0].source",
     "a multilabel_ranking task needs a label matrix"),
    ('kind = "multilabel_ranking"', 'kind = "multilabel_rankin"', "task.kind",
     "unknown task kind 'multilabel_rankin'. Did you mean 'multilabel_ranking'?"),
    ("[task]", "[solver]\ntol = 1e-3\n\n[task]", "solver", "a task experiment compares [[estimators]] by name"),
    ("missing = [0.0, 0.4]", "missing = [0.0, 0.4]\nneighbors = 5", "task.neighbors",
     "a setting of metric tasks; this task is multilabel_ranking"),
]


@pytest.mark.parametrize("old, new, where, message", BAD)
def test_validate_rejects_exactly_what_experiment_rejects(files, capsys, old, new, where, message):
    assert old in RANKING
    config = _write(files / "bad.toml", RANKING.replace(old, new, 1))
    errors = []
    for command in (["validate", str(config)], ["experiment", str(config), "-q"],
                    ["experiment", str(config), "--dry-run"]):
        assert main(command) == 2
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] == errors[2]
    assert f"configuration error: {where}: " in errors[0] and message in errors[0], errors[0]
    assert not (files / "out" / UNITS_FILE).exists()  # rejected before anything ran


def test_wrong_data_kind_for_mil_and_ssl(files):
    mil = MIL.replace('source = "mil.csv"', 'source = "ranking.csv"')
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.source: a mil task needs one label per sample"):
        run_experiment(_config(files, mil))
    ssl = """
[experiment]
output = "out"
[task]
kind = "ssl"
labeled = [10]
[[datasets]]
name = "iris"
source = "iris"
[[estimators]]
name = "ssl_svm"
"""
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.source: a ssl task is binary; 'iris' has 3 classes"):
        run_experiment(_config(files, ssl))


def _config(folder: Path, text: str) -> dict:
    import tomllib

    data = tomllib.loads(text)
    data["experiment"]["output"] = str(folder / "out")
    for ds in data["datasets"]:
        if ds["source"].endswith(".csv"):
            ds["source"] = str(folder / ds["source"])
    return data


# --------------------------------------------------------------------------------------------------
# end to end through the CLI
# --------------------------------------------------------------------------------------------------
def test_tiny_ranking_config_end_to_end(files, capsys):
    config = _write(files / "ranking.toml", RANKING)
    assert main(["validate", str(config)]) == 0
    assert "valid; 12 units (12 task) in 4 splits" in capsys.readouterr().out
    assert main(["experiment", str(config), "-q", "--json", "-"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["errors"] == [] and summary["finished_units"] == summary["planned_units"] == 12
    table = summary["tasks"]["table"]["toy"]
    assert set(table) == {"missing=0", "missing=0.4"}
    for row in table.values():
        assert set(row) == {"mlr_l1", "MLR-GL", "mlknn"}
        for cell in row.values():
            assert cell["units"] == 2 and 0.5 < cell["example_auc"] <= 1.0 and 0.0 <= cell["one_error"] <= 1.0
    units = [json.loads(line) for line in (files / "out" / UNITS_FILE).read_text().splitlines()]
    assert all(u["best_params"]["C"] in (0.1, 1.0) and len(u["cv_scores"]) == 2 for u in units
               if u["method"] == "mlr_l1")
    assert "| mlr_l1 | 2 |" in (files / "out" / "results.md").read_text()
    assert summary["figures"] == ["figures/missing_toy.png"]
    assert (files / "out" / "figures" / "missing_toy.png").is_file()
    # resumable: a rerun finds every unit finished and fits nothing
    assert main(["experiment", str(config), "-q"]) == 0
    assert len((files / "out" / UNITS_FILE).read_text().splitlines()) == 12


def test_tiny_mil_config_end_to_end(files, capsys):
    config = _write(files / "mil.toml", MIL)
    assert main(["experiment", str(config), "-q", "--json", str(files / "mil.json")]) == 0
    summary = json.loads((files / "mil.json").read_text())
    assert summary["errors"] == [] and summary["finished_units"] == 6
    assert summary["data"]["bags"] == {"n_samples": 56, "n_features": 2, "n_classes": 2, "n_bags": 16}
    row = summary["tasks"]["table"]["bags"]["-"]
    assert set(row) == {"mi_kernel", "sil_svm", "iokl_mil"}
    # the positive bags' witness is far from every other instance: the set kernel separates the bags
    assert row["mi_kernel"]["accuracy"] >= 0.75
    units = [json.loads(line) for line in (files / "out" / UNITS_FILE).read_text().splitlines()]
    assert {u["n_test"] for u in units} <= {27, 28, 29}  # whole bags of 3-4 instances in each fold


# --------------------------------------------------------------------------------------------------
# pieces
# --------------------------------------------------------------------------------------------------
def test_clustering_accuracy_by_hand():
    assert clustering_accuracy([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert clustering_accuracy([0, 0, 1, 1], [5, 5, 5, 7]) == 0.75
    # three clusters for two classes: the unmatched cluster's samples are errors
    assert clustering_accuracy([0, 0, 0, 1, 1, 1], [0, 0, 2, 1, 1, 1]) == pytest.approx(5 / 6)


def test_mil_folds_keep_bags_whole_and_ssl_labels_every_class():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(10), 3)
    data = TaskData(rng.normal(size=(30, 2)), np.repeat(np.arange(10) % 2, 3), groups)
    settings = ExperimentSettings(seed=3)
    splits = evaluation_splits(TaskSettings(kind="mil", folds=5), data, DatasetSpec("d", "f"), settings, 0, None)
    assert len(splits) == 5
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test]) and len(train) + len(test) == 30
    y = np.r_[np.zeros(28), np.ones(2)]
    ssl = TaskData(rng.normal(size=(30, 2)), y)
    ((labeled, unlabeled),) = evaluation_splits(TaskSettings(kind="ssl"), ssl, DatasetSpec("d", "f"), settings, 1, 4)
    assert len(labeled) == 4 and set(y[labeled]) == {0.0, 1.0} and len(unlabeled) == 26


def test_labeled_part_is_the_classifier_on_the_labelled_samples():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    given = np.where(np.arange(40) % 4 == 0, y, -1)
    ours = LabeledPart(SVC(C=10.0)).fit(X, given)
    reference = SVC(C=10.0).fit(X[given != -1], y[given != -1])
    np.testing.assert_array_equal(ours.predict(X), reference.predict(X))
    with pytest.raises(ValueError, match="every sample is unlabelled"):
        LabeledPart(SVC()).fit(X, np.full(40, -1))


def test_platt_ranker_with_a_label_of_one_positive():
    # Regression (found by the probe fits of validate on yeast): the sigmoid of a label with one relevant sample
    # is fitted on the training decision values, and the precomputed kernel is not cut to a CV fold.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    Y = np.zeros((30, 2))
    Y[:15, 0] = 1
    Y[15:, 1] = 1
    Y[0, 1] = 1
    Y = np.column_stack([Y, np.eye(30)[0]])  # a third label, relevant for one sample only
    scores = OneVsRestRanker(platt=True).fit(X, Y).decision_function(X)
    assert scores.shape == (30, 3) and np.all((scores >= 0) & (scores <= 1))


SSL = """
[experiment]
output = "out"
repeats = 2
cv_folds = 2

[task]
kind = "ssl"
labeled = [8]

[[datasets]]
name = "g241c"
source = "g241c"
params = { n_samples = 80, n_features = 5 }

[[estimators]]
name = "ssl_svm"
grid = { C = [1.0, 100.0] }

[[estimators]]
name = "label_spreading"

[[estimators]]
name = "iokl_ssl"
params = { max_iter = 2 }
"""


def test_tiny_ssl_config_with_a_grid(tmp_path):
    summary = run_experiment(_config(tmp_path, SSL), progress=False)
    assert summary["errors"] == [] and summary["finished_units"] == 6
    row = summary["tasks"]["table"]["g241c"]["labeled=8"]
    assert set(row) == {"ssl_svm", "label_spreading", "iokl_ssl"}
    for unit in summary["units"]:
        assert unit["n_train"] == 8 and unit["n_test"] == 72 and 0.0 <= unit["accuracy"] <= 1.0
        assert ("cv_scores" in unit) == (unit["method"] == "ssl_svm")
    too_few = _config(tmp_path, SSL.replace("labeled = [8]", "labeled = [2]"))
    with pytest.raises(ConfigError, match=r"task\.labeled\[0\]: 2 labelled samples, one of each class: no "
                                          r"cross-validation can choose grid points; label at least 3"):
        run_experiment(too_few)
    clustering = _config(tmp_path, SSL.replace('kind = "ssl"', 'kind = "clustering"').replace(
        "labeled = [8]", "").replace('name = "ssl_svm"', 'name = "kmeans"').replace("C = [1.0, 100.0]",
                                                                                   "n_init = [1, 10]"))
    with pytest.raises(ConfigError,
                       match=r"estimators\[0\]\.grid\.n_init: 2 values but clustering tasks have no labels"):
        run_experiment(clustering)


DOCS = Path(__file__).resolve().parent.parent / "docs" / "experiments"


@pytest.mark.parametrize("name", sorted(p.name for p in DOCS.glob("*.toml") if "[task]" in p.read_text()))
def test_committed_task_configs_validate_from_any_directory(name, tmp_path, monkeypatch, capsys):
    """Every committed task experiment validates from another working directory, its data files looked for
    relative to the config file (small stand-ins of the kind's format here: the suite does not read
    ../shared/data, and the probe fits stay quick)."""
    import tomllib

    config = tomllib.loads((DOCS / name).read_text())
    folder = tmp_path / "repo" / "docs" / "experiments"
    folder.mkdir(parents=True)
    (folder / name).write_text((DOCS / name).read_text())
    kind = config["task"]["kind"]
    for ds in config["datasets"]:
        if not ds["source"].endswith(".csv"):
            continue
        target = (folder / ds["source"]).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "multilabel_ranking":
            _ranking_csv(target, n=120)
        elif kind == "mil":
            _mil_csv(target, n_bags=24)
        else:
            rng = np.random.default_rng(0)
            X = rng.normal(size=(60, 3))
            target.write_text("a,b,c,label\n" + "\n".join(f"{a},{b},{c},{int(a > 0)}" for a, b, c in X) + "\n")
        if "train_size" in ds:  # the stand-ins are smaller than the real data sets
            text = (folder / name).read_text().replace(f"train_size = {ds['train_size']}", "train_size = 80")
            (folder / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(folder / name)]) == 0, capsys.readouterr().err
    assert f"output {folder / config['experiment']['output']}" in capsys.readouterr().out


CLASSIFICATION = """
[experiment]
output = "out"
repeats = 1
cv_folds = 2

[task]
kind = "classification"
folds = 3

[[datasets]]
name = "ring"
source = "ringnorm"
params = { n_samples = 60, n_features = 4 }

[[estimators]]
name = "mkl"
params = { method = "average", kernels = [{ name = "rbf", gamma_scale = 0.5 }, { name = "linear" }] }

[[estimators]]
name = "hmkl"
params = { kernels = [{ name = "rbf", gamma_scale = 0.5 }, { name = "linear" }], max_iter = 5 }

[[estimators]]
name = "svc"
grid = { C = [1.0, 10.0] }
"""


def test_tiny_classification_config_compares_mkl_hmkl_and_svc(tmp_path):
    """The classification kind: MKL presets, hMKL and a one-kernel SVC compared in one configuration."""
    summary = run_experiment(_config(tmp_path, CLASSIFICATION), progress=False)
    assert summary["errors"] == [] and summary["finished_units"] == 9
    assert set(summary["tasks"]["table"]["ring"][next(iter(summary["tasks"]["table"]["ring"]))]) == {
        "mkl", "hmkl", "svc"}
    for unit in summary["units"]:
        assert 0.0 <= unit["accuracy"] <= 1.0 and unit["n_train"] + unit["n_test"] == 60
    vectors_only = _config(tmp_path, CLASSIFICATION.replace('source = "ringnorm"', 'source = "toy_bilinear"')
                           .replace("params = { n_samples = 60, n_features = 4 }", ""))
    with pytest.raises(ConfigError, match=r"a classification task needs feature vectors"):
        run_experiment(vectors_only)


CROSSMODAL = """
[experiment]
output = "out"
repeats = 1
cv_folds = 2

[task]
kind = "crossmodal"
folds = 2

[[datasets]]
name = "two_views"
source = "views.csv"
features = ["a"]
privileged = ["b"]

[[estimators]]
name = "crossmodal"
params = { kernel_a = "linear", kernel_b = "linear", max_iter = 20 }
"""


def test_tiny_crossmodal_config_retrieves_across_modalities(tmp_path):
    """The crossmodal kind: two views of the same classes, unpaired halves, rank-1 retrieval both ways."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    centres_a, centres_b = rng.normal(size=(3, 4)) * 3, rng.normal(size=(3, 3)) * 3
    Xa, Xb = centres_a[y] + rng.normal(size=(60, 4)), centres_b[y] + rng.normal(size=(60, 3))
    header = ",".join([f"a{j}" for j in range(4)] + [f"b{j}" for j in range(3)] + ["label"])
    rows = [",".join(map(str, [*Xa[i], *Xb[i], y[i]])) for i in range(60)]
    (tmp_path / "views.csv").write_text("\n".join([header, *rows]) + "\n")
    summary = run_experiment(_config(tmp_path, CROSSMODAL), progress=False)
    assert summary["errors"] == [] and summary["finished_units"] == 2
    for unit in summary["units"]:
        assert unit["rank1"] == pytest.approx((unit["rank1_a_to_b"] + unit["rank1_b_to_a"]) / 2)
        assert unit["rank1"] >= 0.8  # well separated classes: the common space must retrieve across modalities
    one_view = _config(tmp_path, CROSSMODAL.replace('privileged = ["b"]\n', ""))
    with pytest.raises(ConfigError, match=r"a crossmodal task needs a second view"):
        run_experiment(one_view)
