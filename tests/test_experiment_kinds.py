"""Every task kind through ``multikernel validate`` and ``multikernel experiment`` on tiny data, with resume, and a
bad configuration of each kind refused with exit 2 at the key path at fault.

The data are generated (the library's generators) or small CSV files written here in the layouts of
``../shared/data``: a ``bag`` column, ``label:<name>`` columns, two views by column prefix, matrix samples
reshaped by a data set's ``shape``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from multikernel.cli import main
from multikernel.experiments.runner import UNITS_FILE


def _csv(path: Path, columns: dict[str, np.ndarray]) -> str:
    names = list(columns)
    rows = np.column_stack([np.asarray(columns[n], dtype=object) for n in names])
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(str(v) for v in r) for r in rows) + "\n")
    return path.name


def _views(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two noisy views of three classes (the class means differ in both)."""
    y = np.arange(n) % 3
    a = y[:, None] * 2.0 + rng.normal(size=(n, 3))
    b = -y[:, None] * 2.0 + rng.normal(size=(n, 4))
    return y, a, b


def _write_files(folder: Path) -> None:
    rng = np.random.default_rng(0)
    # multiple instances: 12 bags of 3; a positive bag holds one instance far from the others
    bags = np.repeat(np.arange(12), 3)
    label = np.where(bags % 2 == 0, 1, -1)
    X = rng.normal(size=(36, 2))
    X[::6] += 4.0  # the first instance of every positive bag
    _csv(folder / "bags.csv", {"bag": bags, "x0": X[:, 0], "x1": X[:, 1], "label": label})
    # two views of the same samples (a:, b:)
    y, a, b = _views(rng, 36)
    _csv(folder / "views.csv", {**{f"a:{j}": a[:, j] for j in range(3)}, **{f"b:{j}": b[:, j] for j in range(4)},
                                "label": y})
    # continuous target
    Z = rng.normal(size=(40, 3))
    _csv(folder / "regression.csv", {**{f"x{j}": Z[:, j] for j in range(3)}, "label": Z @ [1.0, -2.0, 0.5]})
    # matrix samples as 12 columns "pix:*" (3 x 4 images: a bright row for class 1, a bright column for -1)
    images = rng.normal(scale=0.3, size=(30, 3, 4))
    cls = np.where(np.arange(30) % 2 == 0, 1, -1)
    images[cls == 1, 0, :] += 2.0
    images[cls == -1, :, 0] += 2.0
    flat = images.reshape(30, 12)
    _csv(folder / "images.csv", {**{f"pix:{j}": flat[:, j] for j in range(12)}, "label": cls})
    # multi-label data with label:<name> columns
    Y = (rng.random((50, 3)) < 0.4).astype(int)
    Y[Y.sum(axis=1) == 0, 0] = 1
    F = Y @ rng.normal(size=(3, 5)) + 0.3 * rng.normal(size=(50, 5))
    _csv(folder / "multilabel.csv", {**{f"f{j}": F[:, j] for j in range(5)},
                                     **{f"label:{k}": Y[:, k] for k in range(3)}})


HEAD = """[experiment]
output = "out"
repeats = 1
cv_folds = 0
seed = 0
test_fraction = 0.3

[preprocessing]
standardize = true
"""

#: kind -> (the [task] table, [[datasets]] and [[estimators]] entries, a measure every unit records)
KINDS = {
    "classification": ("""
[task]
kind = "classification"
[[datasets]]
name = "ring"
source = "ringnorm"
params = { n_samples = 60, n_features = 4 }
[[estimators]]
name = "svc"
[[estimators]]
name = "mkl"
params = { method = "sm1mkl", kernels = [{ name = "rbf" }, { name = "linear" }] }
""", "accuracy"),
    "bilinear": ("""
[task]
kind = "bilinear"
[[datasets]]
name = "toy"
source = "toy_bilinear"
params = { n_per_class = 12, size = 10, block = 5 }
[[datasets]]
name = "images"
source = "images.csv"
features = ["pix"]
shape = [3, 4]
[[estimators]]
name = "bilinear"
params = { C = 1.0, max_iter = 50 }
""", "accuracy"),
    "multilabel_ranking": ("""
[task]
kind = "multilabel_ranking"
missing = [0.0, 0.4]
[[datasets]]
name = "generated"
source = "multilabel"
params = { n_samples = 50, n_features = 6, n_labels = 3 }
[[datasets]]
name = "csv"
source = "multilabel.csv"
[[estimators]]
name = "ml_mkl_sum"
params = { C = 1.0, kernels = [{ name = "rbf" }, { name = "linear" }] }
[[estimators]]
name = "ml_mkl_sa"
[estimators.params]
C = 1.0
kernels = [{ name = "rbf" }, { name = "linear" }]
solver = { name = "ml_mkl_sa", random_state = 0 }
[[estimators]]
name = "mkl"
label = "ovr-l1mkl"
params = { method = "l1mkl", kernels = [{ name = "rbf" }, { name = "linear" }] }
[[estimators]]
name = "mlknn"
params = { k = 5 }
""", "example_auc"),
    "ssl": ("""
[task]
kind = "ssl"
labeled = [8]
[[datasets]]
name = "g241c"
source = "g241c"
params = { n_samples = 60, n_features = 5 }
[[estimators]]
name = "ssl_svm"
[[estimators]]
name = "label_spreading"
""", "accuracy"),
    "mil": ("""
[task]
kind = "mil"
folds = 3
[[datasets]]
name = "bags"
source = "bags.csv"
[[estimators]]
name = "mi_kernel"
[[estimators]]
name = "sil_svm"
""", "accuracy"),
    "clustering": ("""
[task]
kind = "clustering"
[[datasets]]
name = "g241d"
source = "g241d"
params = { n_samples = 40, n_features = 3 }
[[estimators]]
name = "kmeans"
""", "nmi"),
    "crossmodal": ("""
[task]
kind = "crossmodal"
[[datasets]]
name = "views"
source = "views.csv"
features = ["a:"]
privileged = ["b:"]
[[estimators]]
name = "crossmodal"
params = { max_iter = 50 }
""", "rank1"),
    "metric": ("""
[task]
kind = "metric"
neighbors = 3
[[datasets]]
name = "views"
source = "views.csv"
features = ["a:"]
privileged = ["b:"]
[[estimators]]
name = "euclidean"
[[estimators]]
name = "itml_plus"
params = { max_iter = 20, random_state = 0 }
""", "accuracy"),
    "regression": ("""
[task]
kind = "regression"
[[datasets]]
name = "linear"
source = "regression.csv"
[[estimators]]
name = "kernel_ridge"
params = { alpha = 0.1 }
""", "r2"),
    "outlier_detection": ("""
[task]
kind = "outlier_detection"
[[datasets]]
name = "ring"
source = "ringnorm"
params = { n_samples = 60, n_features = 3 }
[[estimators]]
name = "one_class_svm"
""", "auc"),
}

#: kind -> (text replaced, replacement, key path of the error, a fragment of its message)
BAD = {
    "classification": ("n_features = 4", "n_feature = 4", "datasets[0].params.n_feature",
                       "the parameters of 'ringnorm' (with their defaults): n_samples=7400, n_features=20"),
    "bilinear": ("shape = [3, 4]", "shape = [3, 5]", "datasets[1].shape",
                 "[3, 5] holds 15 values per sample, but the columns of features = ['pix'] number 12"),
    "multilabel_ranking": ("[estimators.params]\nC = 1.0", '[estimators.params]\nmulticlass = "ovr"\nC = 1.0',
                           "estimators[1].params", "set multiclass='shared'"),
    "ssl": ("labeled = [8]", "labeled = [1]", "task.labeled[0]", "at least 2 labelled samples"),
    "mil": ('source = "bags.csv"', 'source = "regression.csv"', "datasets[0].source", "a mil task needs"),
    "clustering": ('kind = "clustering"', 'kind = "clustering"\nfolds = 3', "task.folds",
                   "clustering tasks have no evaluation folds"),
    "crossmodal": ('privileged = ["b:"]', "", "datasets[0].privileged", "a crossmodal task needs a second view"),
    "metric": ("neighbors = 3", "neighbors = 0", "task.neighbors", ""),
    "regression": ("params = { alpha = 0.1 }", "params = { alpha = 0.1, C = 1.0 }", "estimators[0].params.C",
                   "'C' is not a parameter of the estimator 'kernel_ridge'"),
    "outlier_detection": ('kind = "outlier_detection"', 'kind = "outlier_detection"\nselect_by = "r2"',
                          "task.select_by", "'r2' is not a measure of outlier_detection tasks"),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("kinds")
    _write_files(path)
    return path


def test_every_registered_kind_is_covered():
    from multikernel.core.tasks import TASK_KINDS

    assert set(KINDS) == set(BAD) == set(TASK_KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_validates_runs_and_resumes(kind, folder, capsys):
    text, measure = KINDS[kind]
    config = folder / f"{kind}.toml"
    config.write_text(HEAD.replace('"out"', f'"out-{kind}"') + text)
    assert main(["validate", str(config)]) == 0, capsys.readouterr().err
    assert "valid;" in capsys.readouterr().out
    assert main(["experiment", str(config), "-q", "--json", "-"]) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["errors"] == [] and summary["finished_units"] == summary["planned_units"] > 0
    units_file = folder / f"out-{kind}" / UNITS_FILE
    records = [json.loads(line) for line in units_file.read_text().splitlines()]
    assert all(np.isfinite(float(r[measure])) for r in records)
    # resumable: a second run finds every unit finished and appends nothing
    assert main(["experiment", str(config), "-q"]) == 0
    assert len(units_file.read_text().splitlines()) == len(records)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_config_of_each_kind_exits_2_at_its_key_path(kind, folder, capsys):
    old, new, where, message = BAD[kind]
    text = KINDS[kind][0]
    assert old in text
    config = folder / f"bad-{kind}.toml"
    config.write_text(HEAD.replace('"out"', f'"bad-out-{kind}"') + text.replace(old, new, 1))
    for command in (["validate", str(config)], ["experiment", str(config), "-q"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"configuration error: {where}: " in err and message in err, err
    assert not (folder / f"bad-out-{kind}" / UNITS_FILE).exists()


def test_multilabel_mkl_reports_the_ranking_measures_and_shares_weights(folder, capsys):
    """ML-MKL-Sum and ML-MKL-SA solve the same problem (one weight vector for every label, to the certified
    tolerance): on the same split their rankings agree closely; both beat a constant ranking."""
    config = folder / "multilabel_ranking.toml"
    if not config.exists():
        config.write_text(HEAD.replace('"out"', '"out-multilabel_ranking"') + KINDS["multilabel_ranking"][0])
    assert main(["experiment", str(config), "-q", "--json", "-"]) == 0
    table = json.loads(capsys.readouterr().out)["tasks"]["table"]
    for dataset in ("generated", "csv"):
        row = table[dataset]["missing=0"]
        assert {"ml_mkl_sum", "ml_mkl_sa", "ovr-l1mkl", "mlknn"} <= set(row)
        assert abs(row["ml_mkl_sum"]["example_auc"] - row["ml_mkl_sa"]["example_auc"]) < 0.05
        assert row["ml_mkl_sum"]["example_auc"] > 0.6


def test_every_generator_and_parameter_is_documented_with_its_default():
    from multikernel.config.generators import TASK_GENERATORS, generator_parameters

    text = (Path(__file__).resolve().parents[1] / "docs" / "config.md").read_text()
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `")}
    for name, generator in TASK_GENERATORS.items():
        assert name in rows, name
        for key, default in generator_parameters(generator).items():
            assert f"`{key}` ({default!r}" in rows[name], (name, key)


def test_an_unknown_generator_key_lists_the_parameters(folder, capsys):
    config = folder / "typo.toml"
    config.write_text(HEAD + KINDS["bilinear"][0].replace("block = 5", "blocks = 5"))
    assert main(["validate", str(config)]) == 2
    err = capsys.readouterr().err
    assert "datasets[0].params.blocks: 'blocks' is not a parameter of the generator 'toy_bilinear'" in err
    assert "n_per_class=100, size=100, support=0.3, noise=0.15, block=5" in err

