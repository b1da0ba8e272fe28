"""CSV loading: header detection, blank lines, file:line errors, string labels, and the runs that use it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from multikernel import MKLClassifier
from multikernel.cli import main
from multikernel.config.datasets import load_data, read_csv
from multikernel.errors import ConfigError


def _csv(tmp_path, text: str, name: str = "d.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -------------------------------------------------------------------------------------------------
# Header detection
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "names", "first_x", "first_y"), [
    # header of names, numeric labels
    ("a,b,label\n1,2,1\n3,4,-1\n", ["a", "b"], [1, 2], 1.0),
    # no header: the first row is a sample, not lost
    ("1,2,1\n3,4,-1\n", ["x0", "x1"], [1, 2], 1.0),
    # no header and string labels: still a sample
    ("1,2,cat\n3,4,dog\n", ["x0", "x1"], [1, 2], "cat"),
    # header and string labels
    ("a,b,species\n1,2,cat\n3,4,dog\n", ["a", "b"], [1, 2], "cat"),
    # numeric column names (pandas' default) and numeric labels: only the label name is text
    ("0,1,target\n1,2,1\n3,4,-1\n", ["0", "1"], [1, 2], 1.0),
    # a label:* column anywhere
    ("label:y,a,b\n1,5,6\n-1,7,8\n", ["a", "b"], [5, 6], 1.0),
    ("0,label:y,1\n5,cat,6\n7,dog,8\n", ["0", "1"], [5, 6], "cat"),
    # spaces around fields and a byte order mark (spreadsheet exports)
    ("\ufeffa, b ,label\n 1 , 2, cat \n3,4,dog\n", ["a", "b"], [1, 2], "cat"),
], ids=["names", "no-header", "no-header-strings", "names-strings", "numeric-names", "label-first",
        "label-middle-strings", "spaces-bom"])
def test_header_rule(tmp_path, text, names, first_x, first_y):
    X, y, feature_names = read_csv(_csv(tmp_path, text))
    assert feature_names == names
    assert X.shape == (2, 2)
    np.testing.assert_array_equal(X[0], first_x)
    assert y[0] == first_y
    assert X.dtype == np.float64


def test_labels_are_floats_when_all_are_numbers_else_strings(tmp_path):
    _, y, _ = read_csv(_csv(tmp_path, "a,label\n1,1\n2,2.0\n3,-1\n"))
    assert y.dtype == np.float64 and y.tolist() == [1.0, 2.0, -1.0]
    _, y, _ = read_csv(_csv(tmp_path, "a,label\n1,1\n2,two\n3,-1\n"))
    assert y.dtype.kind == "U" and y.tolist() == ["1", "two", "-1"]  # mixed: every label as given


# -------------------------------------------------------------------------------------------------
# Blank lines and bad rows
# -------------------------------------------------------------------------------------------------
def test_blank_lines_are_ignored(tmp_path):
    text = "a,b,label\n1,2,1\n\n3,4,-1\n   \n\n,,\n\n"
    X, y, _ = read_csv(_csv(tmp_path, text))
    assert X.tolist() == [[1, 2], [3, 4]] and y.tolist() == [1, -1]


@pytest.mark.parametrize(("text", "match"), [
    ("a,b,label\n1,2,1\n\n3,4\n5,6,1\n", r"d\.csv:4: 2 fields where the first row has 3"),
    ("a,b,label\n1,2,1\n3,4,1,9\n", r"d\.csv:3: 4 fields where the first row has 3"),
    ("a,b,label\n1,2,1\n3,?,1\n", r"d\.csv:3: the value '\?' of column 'b' is not a number"),
    ("1,2,1\n3,,1\n", r"d\.csv:2: the value '' of column 'x1' is not a number"),
    ("a,b,label\n1,2,1\n3,4, \n", r"d\.csv:3: the label \(column 'label'\) is empty"),
    ("", r"d\.csv: the file is empty"),
    ("\n\n", r"d\.csv: the file is empty"),
    ("a,b,label\n\n", r"d\.csv: no data rows below the header"),
    ("label:a,x,label:b\n1,2,3\n", r"2 label:\* columns"),
    ("label\n1\n2\n", r"one column only"),
    ('a,b,label\n1,2,"1\n3,4,1\n5,6,1\n', r"d\.csv:2: cannot read as CSV"),
    ('a,b,label\n1,"2\n.5",1\n3,4\n', r"d\.csv:4: 2 fields"),
], ids=["short", "long", "not-number", "empty-feature", "empty-label", "empty", "blank", "header-only",
        "two-labels", "one-column", "bad-quote", "multiline-field"])
def test_bad_rows_name_file_and_line(tmp_path, text, match):
    path = _csv(tmp_path, text)
    with pytest.raises(ValueError, match=match):
        read_csv(path)
    with pytest.raises(ConfigError, match="data.source: .*" + match):
        load_data(str(path))


def test_not_utf8(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"a,label\n\xff\xfe,1\n")
    with pytest.raises(ConfigError, match="cannot read as a UTF-8 CSV"):
        load_data(str(path))


# -------------------------------------------------------------------------------------------------
# String labels through the estimator and the runs
# -------------------------------------------------------------------------------------------------
def _two_blobs(n=40, seed=0, header=True, labels=("cat", "dog")):
    rng = np.random.default_rng(seed)
    rows = ["f1,f2,animal"] if header else []
    for i in range(n):
        k = i % 2
        x = rng.normal(loc=2.0 * k, size=2)
        rows.append(f"{x[0]:.6f},{x[1]:.6f},{labels[k]}")
    return "\n".join(rows) + "\n\n"


def test_string_labels_fit_like_scikit_learn(tmp_path):
    X, y, _ = read_csv(_csv(tmp_path, _two_blobs(header=False)))
    assert len(X) == 40  # no row taken for a header
    est = MKLClassifier(method="average").fit(X, y)
    np.testing.assert_array_equal(est.classes_, np.unique(y))
    assert set(est.predict(X)) <= {"cat", "dog"}
    assert est.score(X, y) > 0.8


def test_run_with_string_labels(tmp_path, capsys):
    data = _csv(tmp_path, _two_blobs())
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[data]\nsource = '{data}'\n[evaluation]\nrepeats = 1\n[[models]]\nmethod = 'average'\n")
    out = tmp_path / "r.json"
    assert main(["validate", str(cfg)]) == 0
    assert main(["run", str(cfg), "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert report["models"][0]["repeats"][0]["accuracy"] > 0.7


def test_bad_csv_in_run_names_the_line(tmp_path, capsys):
    data = _csv(tmp_path, "a,b,label\n1,2,x\n3,4\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[data]\nsource = '{data}'\n")
    assert main(["validate", str(cfg)]) == 2
    assert "d.csv:3: 2 fields where the header has 3" in capsys.readouterr().err


def test_experiment_with_string_labels(tmp_path):
    from multikernel.experiments.runner import run_experiment

    data = _csv(tmp_path, _two_blobs(n=48), "animals.csv")
    cfg = {"experiment": {"name": "t", "output": str(tmp_path / "out"), "repeats": 1, "cv_folds": 0, "n_jobs": 1},
           "kernels": {"family": "rbf_poly"}, "solver": {"tol": 1e-2, "max_iter": 10},
           "datasets": [{"name": "animals", "source": str(data)}], "methods": [{"method": "average"}]}
    summary = run_experiment(cfg, progress=False)
    assert summary["errors"] == [] and summary["finished_units"] == 1
    row = json.loads((tmp_path / "out" / "results.json").read_text())["benchmark"]["table"]["animals"]
    assert row["average"]["n_train"] + row["average"]["n_test"] == 48  # no sample taken for a header
    assert row["average"]["accuracy"][0] > 70
