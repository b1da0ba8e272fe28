"""The command line: the embedded default run, JSON output, exit codes and messages."""

import json
import subprocess
import sys

import pytest

from multikernel.cli import main


def test_default_run_writes_report(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["run", "--quiet", "--json", str(out), "--save", str(tmp_path / "model.npz")]) == 0
    report = json.loads(out.read_text())
    labels = [m["label"] for m in report["models"]]
    assert labels == ["average", "l1mkl", "sm1mkl"]
    for m in report["models"]:
        assert m["accuracy_mean"] > 0.9
        assert m["repeats"][0]["dual_gap"] <= 1e-3
    assert report["data"]["n_samples"] == 569
    assert (tmp_path / "model-l1mkl.npz").exists()
    assert capsys.readouterr().out == ""


def test_report_is_printed(capsys):
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and "top kernels of l1mkl" in out and "gap" in out


def _write(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, fragment", [
    ("[data\n", "is not valid TOML"),
    ("[[models]]\nmethod = 'nope'\n", "models[0].method: unknown method 'nope'"),
    ("[kernels]\nfamily = 'nope'\n", "kernels.family: unknown family"),
    ("[[models]]\nC = 'x'\n", "models[0].C: got 'x'; expected a number"),
    ("[data]\nsource = 'missing.csv'\n", "data.source"),
    ("[evaluation]\ngrid = { theta = [1.0] }\n", "evaluation.grid.theta"),
])
def test_config_errors_exit_2(tmp_path, capsys, text, fragment):
    assert main(["validate", _write(tmp_path, text)]) == 2
    assert fragment in capsys.readouterr().err


def test_validate_ok_and_csv_data(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    rows = ["a,b,label"] + [f"{i % 7},{(i * 3) % 5},{1 if i % 2 else -1}" for i in range(40)]
    csv.write_text("\n".join(rows))
    cfg = _write(tmp_path, f"[data]\nsource = '{csv}'\n[[models]]\nmethod = 'average'\n")
    assert main(["validate", cfg]) == 0
    assert "valid" in capsys.readouterr().out


def test_nan_data_is_refused(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    csv.write_text("a,label\n1,1\nnan,-1\n2,1\n")
    assert main(["run", _write(tmp_path, f"[data]\nsource = '{csv}'\n")]) == 2
    assert "NaN" in capsys.readouterr().err


def test_plugins_listing(capsys):
    assert main(["plugins", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"kind": "method", "name": "l1mkl", "origin": "multikernel:methods"} in listed


def test_usage_error_exit_code():
    proc = subprocess.run([sys.executable, "-m", "multikernel", "frobnicate"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "multikernel", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "validate" in proc.stdout
