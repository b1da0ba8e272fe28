"""The command line: the embedded default run, JSON output, exit codes and messages."""

import json
import re
import subprocess
import sys
from pathlib import Path

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


# --------------------------------------------------------------------------------------------------
# validate and run refuse the same configurations, before fitting, with the key path
# --------------------------------------------------------------------------------------------------
def _csv(path, labels):
    """A small two-feature CSV with the given labels (cycled over 40 rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ["a,b,label"] + [f"{i % 7},{(i * 3) % 5},{labels[i % len(labels)]}" for i in range(40)]
    path.write_text("\n".join(rows) + "\n")
    return path


GRID = "[evaluation]\ncv_folds = 3\n"


@pytest.mark.parametrize("text, fragment", [
    # a typo in a kernel family's parameters (was a traceback in `run`, accepted by `validate`)
    ("[kernels]\nfamily = 'rbf_poly'\nfamily_params = { sigma = [1.0] }\n",
     "kernels.family_params.sigma: 'sigma' is not a parameter of kernel family 'rbf_poly'"),
    ("[kernels]\nfamily = 'simplemkl'\nfamily_params = { sigmaz = [1.0] }\n",
     "its parameters: sigmas, degrees, single_features"),
    # kernel parameters the builders refuse when they are fitted
    ("[kernels]\nfamily = 'simplemkl'\nfamily_params = { sigmas = [1.0, -2.0], single_features = false }\n",
     "kernels.family_params: kernel rbf(sigma=-2): sigma must be a positive"),
    ("[[kernels.builders]]\nname = 'rbf'\nparams = { gamma = -1.0 }\n",
     "kernels.builders[0].params: kernel rbf(gamma=-1): gamma must be a positive"),
    ("[[kernels.builders]]\nname = 'linear'\n[[kernels.builders]]\nname = 'poly'\nparams = { degree = 2.5 }\n",
     "kernels.builders[1].params: kernel poly(degree=2.5): degree must be a positive integer"),
    ("[[kernels.builders]]\nname = 'rbf'\nparams = { gama = 1.0 }\n",
     "kernels.builders[0].params.gama: 'gama' is not a parameter of kernel 'rbf'"),
    # C <= 0 or NaN in a grid; every value of every key is checked
    (GRID + "grid = { C = [1.0, -1.0] }\n", "evaluation.grid.C[1]: model 'l1mkl': C must be a positive finite number"),
    (GRID + "grid = { C = [0, 1] }\n", "evaluation.grid.C[0]: model 'l1mkl': C must be a positive finite number"),
    (GRID + "grid = { C = [1, nan] }\n", "evaluation.grid.C[1]: model 'l1mkl': C must be a positive finite number"),
    ("[[models]]\nmethod = 'sm1mkl'\n" + GRID + "grid = { C = [1, 10], regularizer__nu = [0.5, 1, 2.0] }\n",
     "evaluation.grid.regularizer__nu[2]: model 'sm1mkl': infeasible for M=8 kernels: nu=2.0 > 1"),
    ("[[models]]\nmethod = 'l1mkl'\nsolver = { name = 'bcd' }\n" + GRID + "grid = { solver__certify_every = [4, 0] }\n",
     "evaluation.grid.solver__certify_every[1]: model 'l1mkl': certify_every must be a positive integer"),
    ("[[models]]\nmethod = 'l1mkl'\nsolver = { name = 'bcd', params = { certify_every = 0 } }\n",
     "models[0].solver: certify_every must be a positive integer"),
    ("[[models]]\nmethod = 'l1mkl'\nC = 0\n", "models[0].C: C must be a positive finite number"),
    ("[evaluation]\nn_jobs = 0\n", "evaluation.n_jobs: must be a positive number of parallel jobs"),
    # a grid without cross-validation was silently ignored
    ("[evaluation]\ngrid = { C = [1.0, 10.0] }\n", "evaluation.grid.C: 2 values but no cross-validation"),
])
def test_validate_and_run_refuse_the_same_configs(tmp_path, capsys, text, fragment):
    """`validate` runs the checks of `run`; both exit 2 with the key path, before fitting anything."""
    config = _write(tmp_path, text)
    for command in ("validate", "run"):
        assert main([command, config]) == 2, command
        err = capsys.readouterr().err
        assert fragment in err, (command, err)


def test_non_integer_labels_are_refused_by_validate_and_run(tmp_path, capsys):
    csv = _csv(tmp_path / "half.csv", [1, 0.5])
    config = _write(tmp_path, f"[data]\nsource = '{csv}'\n[[models]]\nmethod = 'average'\n")
    for command in ("validate", "run"):
        assert main([command, config]) == 2
        assert "data.source: the labels in" in (err := capsys.readouterr().err)
        assert "found the non-integer label 0.5" in err


def test_validate_without_config_checks_the_embedded_default(capsys):
    assert main(["validate"]) == 0
    assert "the embedded default: valid (3 model(s); classification task; data 569 x 30)" in capsys.readouterr().out


def test_run_refuses_an_experiment_config(tmp_path, capsys):
    config = _write(tmp_path, "[[datasets]]\nname = 'w'\nsource = 'wine'\n[[methods]]\nmethod = 'average'\n")
    assert main(["run", config]) == 2
    assert "is an experiment configuration; run it with `multikernel experiment" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# paths: relative to the config file in configs, to the working directory on the command line
# --------------------------------------------------------------------------------------------------
def test_relative_paths_follow_the_config_file_and_outputs_are_created(tmp_path, monkeypatch, capsys):
    _csv(tmp_path / "project" / "data" / "d.csv", [1, -1])
    run_cfg = tmp_path / "project" / "run.toml"
    run_cfg.write_text("[data]\nsource = 'data/d.csv'\n[[models]]\nmethod = 'average'\n"
                       "[kernels]\nfamily = 'rbf_poly'\n[solver]\nmax_iter = 20\ntol = 1e-2\n")
    exp_cfg = tmp_path / "project" / "exp.toml"
    exp_cfg.write_text("[experiment]\noutput = 'results'\nrepeats = 1\ncv_folds = 0\n"
                       "[[datasets]]\nname = 'd'\nsource = 'data/d.csv'\n[[methods]]\nmethod = 'average'\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["validate", "../project/run.toml"]) == 0
    assert main(["show-config", str(run_cfg)]) == 0
    assert f"source = \"{tmp_path / 'project' / 'data' / 'd.csv'}\"" in capsys.readouterr().out
    assert main(["experiment", str(exp_cfg), "--dry-run"]) == 0
    assert f"output {tmp_path / 'project' / 'results'}" in capsys.readouterr().out
    # Command-line paths are relative to the working directory; missing folders are created before fitting.
    assert main(["run", "../project/run.toml", "-q", "--json", "reports/x.json", "--save", "models/m.npz"]) == 0
    assert json.loads((elsewhere / "reports" / "x.json").read_text())["data"]["n_samples"] == 40
    assert (elsewhere / "models" / "m.npz").exists()


def test_an_output_that_is_a_folder_is_refused_before_fitting(tmp_path, capsys, monkeypatch):
    import multikernel.config.runner as runner

    monkeypatch.setattr(runner, "run_config", lambda *a, **k: pytest.fail("fitted before checking --json"))
    assert main(["run", "--json", str(tmp_path)]) == 2
    assert "--json: " in capsys.readouterr().err


def _toml_blocks(path):
    return re.findall(r"```toml\n(.*?)```", path.read_text(), re.S)


DOCS_DIR = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.parametrize("doc", ["config.md", "experiments.md", "../README.md"])
def test_documented_configs_validate_from_any_directory(doc, tmp_path, monkeypatch, capsys):
    """Each complete TOML example of the docs validates from another working directory, its data files
    (stand-ins here) being looked for relative to the config file's folder."""
    import tomllib

    from multikernel.config.datasets import BUILTIN_LOADERS, GENERATORS
    from multikernel.experiments.config import is_experiment_config

    folder = tmp_path / "docs" / "examples"
    folder.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for i, block in enumerate(_toml_blocks(DOCS_DIR / doc)):
        data = tomllib.loads(block)
        if is_experiment_config(data) and "datasets" not in data:
            continue  # a fragment of an experiment configuration ([noisy_kernels], [[paths]])
        sources = [d["source"] for d in data.get("datasets", [])] + [data.get("data", {}).get("source")]
        for source in sources:
            if source and source not in BUILTIN_LOADERS and source not in GENERATORS:
                _csv(folder / source, [1, -1])
        path = folder / f"example{i}.toml"
        path.write_text(block)
        assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert main(["validate"]) == 0  # the README's quick start: the embedded default


# --------------------------------------------------------------------------------------------------
# cosmetics
# --------------------------------------------------------------------------------------------------
def test_report_cosmetics_and_progress_lines(tmp_path, capsys):
    """No '±' for a single repeat, integers stay integers, and without a terminal one progress line per fit
    on stderr (nothing with --quiet)."""
    csv = _csv(tmp_path / "d.csv", [1, -1])
    text = (f"[data]\nsource = '{csv}'\n[kernels]\nfamily = 'rbf_poly'\n[solver]\nmax_iter = 20\ntol = 1e-2\n"
            "[[models]]\nmethod = 'average'\nC = 8\n[[models]]\nmethod = 'l1mkl'\nlabel = 'L1'\n"
            "[evaluation]\nrepeats = REPEATS\n")
    one = _write(tmp_path, text.replace("REPEATS", "1"))
    assert main(["show-config", one]) == 0
    assert '{ method = "average", C = 8 }' in capsys.readouterr().out
    assert main(["run", one, "--json", str(tmp_path / "r.json")]) == 0
    out, err = capsys.readouterr()
    assert "±" not in out and "accuracy" in out
    assert re.search(r"^average +[0-9.]+ +8 ", out, re.M)  # 8 selected kernels, not 8.0
    assert json.loads((tmp_path / "r.json").read_text())["models"][0]["C"] == 8  # not 8.0
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("fitting [1/2] repeat 1/1 average: accuracy ")
    assert lines[1].startswith("fitting [2/2] repeat 1/1 L1: accuracy ")
    two = tmp_path / "two.toml"
    two.write_text(text.replace("REPEATS", "2"))
    assert main(["run", str(two), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert main(["run", str(two)]) == 0
    out, err = capsys.readouterr()
    assert out.count(" ± ") == 2 and len(err.strip().splitlines()) == 4


def test_progress_is_a_bar_on_a_terminal():
    import io

    from multikernel.config.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    with Progress(2, "fitting", "fit", stream=stream) as bar:
        bar.done("a")
        bar.done("b")
    assert "2/2" in stream.getvalue() and "fitting [" not in stream.getvalue()  # tqdm's bar, not log lines
    quiet = Terminal()
    with Progress(2, "fitting", "fit", show=False, stream=quiet) as bar:
        bar.done("a")
    assert quiet.getvalue() == ""
