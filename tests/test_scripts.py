"""Every script of benchmarks/ and docs/experiments/ imports and answers ``--help``.

The scripts are run by hand (their numbers go to the docs' benchmarks reference and experiment pages), so
nothing else would notice a renamed library symbol or a broken argument parser until someone needs the numbers
again.  Importing a script runs its top level only (each guards ``main()``); ``--help`` runs its parser.  No
script reaches into tests/ or docs/ through ``sys.path``: scripts use the installed package.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted([*(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "docs" / "experiments").rglob("*.py")])
SCRIPTS = [p for p in FILES if not p.name.startswith("_")]
SHARED = [p for p in FILES if p.name.startswith("_")]  # modules the scripts beside them import


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # ImportError / NameError at the top level fail the test
    return module


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_script_imports_and_answers_help(path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    source = path.read_text()
    assert 'if __name__ == "__main__":' in source, f"{path.name} would run when imported"
    for line in source.splitlines():
        if "sys.path.insert" in line:  # a script may use another script of benchmarks/, never tests/ or docs/
            assert '"tests"' not in line and '"docs"' not in line, f"{path.name} reaches into tests/ or docs/"
    monkeypatch.syspath_prepend(str(path.parent))  # a script imports the shared modules beside it
    module = _load(path)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
    monkeypatch.setattr(sys, "argv", [path.name, "--help"])
    with pytest.raises(SystemExit) as exit_info:
        module.main()
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("path", SHARED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shared_script_module_imports(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(path.parent))
    _load(path)
