"""Every benchmark script imports: a benchmark that names a symbol the library no longer has fails here.

The scripts are run by hand (their timings go to docs/benchmarks.md), so nothing else would notice a rename
until someone needs the numbers again; importing a script runs its top level only (each guards ``main()``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_the_benchmark_folder_is_found() -> None:
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_script_imports(path: Path) -> None:
    source = path.read_text()
    assert 'if __name__ == "__main__":' in source, f"{path.name} would run its benchmark when imported"
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # ImportError / NameError at the top level fail the test
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
