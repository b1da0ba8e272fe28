"""Every configuration committed under docs/experiments/ validates from a fresh clone, strictly.

An experiment configuration goes through the same checks as ``multikernel validate`` (its data, every kernel
builder, every model at every grid point) and pins every result-deciding part (``validate --strict``: a change of
a default must not change a committed result); the configurations of the metric-learning script
(``itml_mfeat.py``, which has its own format) through that script's plan and data path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from multikernel.experiments.runner import check_experiment, load_experiment_config
from multikernel.experiments.strict import strict_source, unpinned

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

EXPERIMENTS = Path(__file__).resolve().parents[1] / "docs" / "experiments"
CONFIGS = sorted(EXPERIMENTS.glob("*.toml"))
SCRIPT_CONFIGS = {"itml-mfeat.toml", "itml-mfeat-few-pairs.toml"}  # run by itml_mfeat.py


def test_the_configurations_are_found() -> None:
    assert {p.name for p in CONFIGS} >= SCRIPT_CONFIGS | {"soft-margin-mkl.toml", "iokl-ssl.toml"}


@pytest.mark.parametrize("path", [p for p in CONFIGS if p.name not in SCRIPT_CONFIGS], ids=lambda p: p.stem)
def test_experiment_configuration_validates(path: Path) -> None:
    config = load_experiment_config(path)
    check_experiment(config)  # raises ConfigError naming the key path on any problem


@pytest.mark.parametrize("path", [p for p in CONFIGS if p.name not in SCRIPT_CONFIGS], ids=lambda p: p.stem)
def test_experiment_configuration_pins_every_result_deciding_part(path: Path) -> None:
    assert [str(u) for u in unpinned(strict_source(path))] == []


@pytest.mark.parametrize("name", sorted(SCRIPT_CONFIGS))
def test_metric_learning_configuration_plans(name: str) -> None:
    spec = importlib.util.spec_from_file_location("_itml_mfeat", EXPERIMENTS / "itml_mfeat.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = EXPERIMENTS / name
    conf = tomllib.loads(path.read_text())
    assert (path.parent / conf["experiment"]["data"]).resolve().is_file()
    units = script.plan(conf["experiment"], conf["grid"])
    assert len(units) > 0
