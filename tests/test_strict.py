"""``multikernel validate --strict``: every result-deciding part a configuration leaves to a default is reported at
its key path, and nothing else.

The expectations are written from the presets and defaults of the library as documented (the sm1mkl preset is
hinge loss, box simplex with nu = 0.5 and the level method); the property test removes any one pinned value from a
fully pinned configuration and asks for exactly that key path.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from multikernel import create
from multikernel.cli import main
from multikernel.errors import ConfigError
from multikernel.experiments.config import experiment_config_from_dict
from multikernel.experiments.strict import check_strict, unpinned

BENCHMARK = {"experiment": {"output": "out"},
             "datasets": [{"name": "ring", "source": "ringnorm"}],
             "methods": [{"method": "sm1mkl"}]}
TASK = {"experiment": {"output": "out", "cv_folds": 0},
        "task": {"kind": "mil", "folds": 3},
        "datasets": [{"name": "toy", "source": "ringnorm"}],
        "estimators": [{"name": "iokl_mil", "params": {"C": 10.0}}]}


def _paths(data: dict[str, Any]) -> dict[str, Any]:
    return {u.path: u.default for u in unpinned(data)}


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a key path such as ``methods[0].solver.params.level``."""
    keys: list[Any] = []
    for part in path.split("."):
        m = re.fullmatch(r"(\w+)((?:\[\d+\])*)", part)
        keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    node = data
    for key, nxt in zip(keys, keys[1:], strict=False):
        if isinstance(key, int):
            node = node[key]
        else:
            node = node.setdefault(key, [] if isinstance(nxt, int) else {})
    node[keys[-1]] = value


def _pinned(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for u in unpinned(out):
        _set(out, u.path, list(u.default) if isinstance(u.default, tuple) else u.default)
    return out


def test_a_benchmark_config_lists_its_defaults_by_key_path():
    found = _paths(BENCHMARK)
    expected = {
        "experiment.seed": 0, "experiment.repeats": 10, "experiment.test_fraction": 0.3,
        "experiment.selection_threshold": 1e-5, "datasets[0].params.n_samples": 7400,
        "datasets[0].params.n_features": 20, "preprocessing.standardize": True, "kernels.family": "simplemkl",
        "kernels.normalize": "trace", "kernels.dtype": "float64", "solver.tol": 1e-3, "solver.max_iter": 200,
        "methods[0].loss.name": "csvc", "methods[0].loss.params.C": 1.0,
        "methods[0].regularizer.name": "box_simplex", "methods[0].regularizer.params.nu": 0.5,
        "methods[0].solver.name": "level",
    }
    assert expected.items() <= found.items()
    assert {"kernels.family_params.sigmas", "kernels.family_params.degrees", "solver.stopping",
            "methods[0].solver.params.level"} <= set(found)
    # no grid: cross-validation and warm starts decide nothing; n_jobs and the output never do
    assert not {"experiment.cv_folds", "experiment.warm_start", "experiment.n_jobs", "experiment.output"} & set(found)


def test_a_grid_makes_the_selection_protocol_decide_and_pins_its_keys():
    data = copy.deepcopy(BENCHMARK)
    data["methods"][0]["grid"] = {"C": [1.0, 10.0], "regularizer__nu": [0.2, 0.5]}
    found = _paths(data)
    assert {"experiment.cv_folds", "experiment.warm_start", "experiment.warm_order"} <= set(found)
    assert "methods[0].loss.params.C" not in found and "methods[0].regularizer.params.nu" not in found


def test_a_part_table_replaces_the_preset_and_needs_its_own_parameters():
    data = copy.deepcopy(BENCHMARK)
    data["methods"][0]["solver"] = {"name": "bcd"}
    found = _paths(data)
    assert "methods[0].solver.name" not in found
    assert found["methods[0].solver.params.certify_every"] == 4
    assert "methods[0].solver.params.level" not in found  # a parameter of the level method, not of bcd


def test_a_task_config_lists_the_estimators_defaults_but_not_their_speed_settings():
    data = copy.deepcopy(TASK)
    data["estimators"] = [{"name": "iokl_mil", "params": {"C": 10.0}},
                          {"name": "mk_mlr", "params": {"kernels": [{"name": "poly", "degree": 2}]}}]
    found = _paths(data)
    assert found["estimators[0].params.solver"] == "projected_gradient"
    assert found["estimators[0].params.random_state"] == 0
    assert "estimators[0].params.C" not in found
    assert not {p for p in found if p.endswith((".verbose", ".kernel_backend", ".memory_budget"))}
    assert found["estimators[1].params.regularizer"] == "simplex"  # the registered entry's preset
    assert found["estimators[1].params.kernels[0].coef0"] == 1.0  # inside a kernel table
    assert "estimators[1].params.kernels[0].degree" not in found
    assert {"experiment.seed", "experiment.repeats", "datasets[0].params.n_samples"} <= set(found)
    assert "task.folds" not in found and "experiment.test_fraction" not in found  # folds = 3: no random split


@pytest.mark.parametrize("base", [BENCHMARK, TASK], ids=["benchmark", "task"])
def test_pinning_every_reported_default_leaves_nothing_and_validates(base):
    data = copy.deepcopy(base)
    if base is TASK:
        data["estimators"] = [{"name": "sil_svm", "params": {"C": 10.0}}]
    pinned = _pinned(data)
    assert unpinned(pinned) == []
    experiment_config_from_dict(pinned)  # the pinned values are valid configuration values
    check_strict(pinned)


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, f"{prefix}.{k}" if prefix else k)]
    if isinstance(node, list) and node and all(isinstance(v, dict) for v in node):
        return [p for i, v in enumerate(node) for p in _leaves(v, f"{prefix}[{i}]")]
    return [prefix]


PINNED = _pinned(BENCHMARK)
REPORTED = sorted(u.path for u in unpinned(BENCHMARK))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(REPORTED))
def test_removing_any_pinned_value_reports_exactly_its_key_path(path):
    data = copy.deepcopy(PINNED)
    keys = path.split(".")
    node: Any = data
    for part in keys[:-1]:
        m = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", part)
        node = node[m.group(1)]
        if m.group(2) is not None:
            node = node[int(m.group(2))]
    del node[keys[-1]]
    reported = [u.path for u in unpinned(data)]
    if keys[-2] == "params" and keys[-3] in ("loss", "regularizer", "solver"):
        part = create(keys[-3], node_name(data, keys))
        if part.get_params()[keys[-1]] is None:  # the part's own default is None: not writable in TOML
            assert reported == []
            return
    # a part's name removed leaves its parameters pinned in its table; its name alone is reported
    assert reported == [path]


def node_name(data: dict[str, Any], keys: list[str]) -> str:
    """The name of the part whose parameter ``keys`` points at (``methods[0].solver.params.level``)."""
    return data["methods"][int(keys[0][len("methods["):-1])][keys[-3]]["name"]


def test_cli_validate_strict_exits_2_with_every_key_path(tmp_path, capsys):
    loose = tmp_path / "loose.toml"
    loose.write_text(tomli_w.dumps({**copy.deepcopy(BENCHMARK), "datasets": [
        {"name": "ring", "source": "ringnorm", "params": {"n_samples": 60, "n_features": 3}}]}))
    assert main(["validate", str(loose)]) == 0  # valid as it is
    capsys.readouterr()
    assert main(["validate", "--strict", str(loose)]) == 2
    err = capsys.readouterr().err
    assert "configuration error: experiment.seed: " in err
    for path in ("methods[0].solver.name (default today: 'level')", "solver.tol (default today: 0.001)",
                 "kernels.normalize (default today: 'trace')"):
        assert path in err
    pinned = tmp_path / "pinned.toml"
    pinned.write_text(tomli_w.dumps(_pinned(tomllib_load(loose))))
    assert main(["validate", "--strict", str(pinned)]) == 0
    assert "strict: every result-deciding part is pinned" in capsys.readouterr().out


def test_the_embedded_default_run_is_checked_too(capsys):
    assert main(["validate", "--strict"]) == 2
    err = capsys.readouterr().err
    assert "models[0].solver.name (default today: 'bcd')" in err  # the average kernel's preset
    assert "models[0].C" not in err and "models[0].loss.params.C" not in err  # C = 1.0 is given
    assert "kernels.dtype" in err and "evaluation.cv_folds" not in err  # no grid: no cross-validation


def test_a_part_by_name_is_pinned_by_its_name_unless_unseeded():
    data = copy.deepcopy(TASK)
    data["task"] = {"kind": "multilabel_ranking"}
    data["estimators"] = [{"name": "ml_mkl_sum", "params": {"solver": "level"}},
                          {"name": "ml_mkl_sa", "params": {"solver": "ml_mkl_sa"}},
                          {"name": "ml_mkl_sa", "params": {"solver": {"name": "ml_mkl_sa", "random_state": 0}}}]
    found = _paths(data)
    assert not [p for p in found if p.startswith("estimators[0].params.solver")]
    assert "estimators[1].params.solver.random_state" in found
    assert "estimators[1].params.solver.eta" not in found
    assert "estimators[2].params.solver.random_state" not in found and "estimators[2].params.solver.eta" in found


def test_a_run_model_without_c_reports_its_c():
    found = _paths({"models": [{"method": "l1mkl"}]})
    assert found["models[0].C"] == 1.0 and "models[0].loss.params.C" not in found


def test_check_strict_names_the_first_path():
    with pytest.raises(ConfigError) as info:
        check_strict(BENCHMARK)
    assert info.value.path == "experiment.seed"


def tomllib_load(path):
    import tomllib

    return tomllib.loads(path.read_text())
