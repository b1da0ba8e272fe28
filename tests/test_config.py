"""Declarative configuration: defaults, TOML round trip, and an error naming the key path for each
kind of mistake."""

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from multikernel.config.schema import (
    RunConfig,
    config_from_dict,
    config_to_toml,
    default_config,
    load_config,
)
from multikernel.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_default_config_is_valid_and_round_trips():
    config = default_config()
    assert config.data.source == "breast_cancer"
    assert [m.method for m in config.models] == ["average", "l1mkl", "sm1mkl"]
    assert config_from_dict(tomllib.loads(config_to_toml(config))) == config


@given(
    C=st.floats(1e-3, 1e3),
    tol=st.floats(1e-8, 1e-1),
    repeats=st.integers(1, 20),
    test_fraction=st.floats(0.05, 0.95),
    normalize=st.sampled_from(["none", "trace", "unit_diagonal", "center"]),
    columns=st.one_of(st.just("all"), st.just("each"), st.lists(st.integers(0, 9), min_size=1, max_size=4)),
)
def test_round_trip(C, tol, repeats, test_fraction, normalize, columns):
    config = config_from_dict({
        "kernels": {"builders": [{"name": "rbf", "params": {"gamma": 0.5}, "columns": columns}],
                    "normalize": normalize},
        "models": [{"method": "l1mkl", "C": C, "regularizer": {"name": "simplex"}}],
        "solver": {"tol": tol},
        "evaluation": {"repeats": repeats, "test_fraction": test_fraction, "cv_folds": 3,
                       "grid": {"C": [0.1, 1.0]}},
    })
    assert isinstance(config, RunConfig)
    assert config_from_dict(tomllib.loads(config_to_toml(config))) == config


@pytest.mark.parametrize("data, path, fragment", [
    ({"modles": []}, "(top level)", "unknown key(s) 'modles'"),
    ({"models": [{"C": -1}]}, "models[0].C", "must be a positive finite number"),
    ({"models": [{"C": float("inf")}]}, "models[0].C", "must be a positive finite number"),
    ({"models": [{"C": float("nan")}]}, "models[0].C", "must be a positive finite number"),
    ({"evaluation": {"n_jobs": 0}}, "evaluation.n_jobs", "0 would run nothing"),
    ({"evaluation": {"grid": {"C": [1, 10]}}}, "evaluation.grid.C", "no cross-validation"),
    ({"evaluation": {"cv_folds": 3, "grid": {"theta": [1]}}}, "evaluation.grid.theta", "not a parameter name"),
    ({"evaluation": {"cv_folds": 3, "grid": {"C": [1, "1/x"]}}}, "evaluation.grid.C[1]", "only numbers, M"),
    ({"models": [{"C": "big"}]}, "models[0].C", "expected a number"),
    ({"models": []}, "models", "at least one"),
    ({"models": [{"regularizer": {"nam": "simplex"}}]}, "models[0].regularizer", "unknown key(s) 'nam'"),
    ({"models": [{"regularizer": {}}]}, "models[0].regularizer", "missing required key(s) 'name'"),
    ({"kernels": {"normalize": "l2"}}, "kernels.normalize", "allowed: 'none'"),
    ({"kernels": {"family": None, "builders": []}}, "kernels", "give a kernel 'family'"),
    ({"kernels": {"builders": [{"name": "rbf", "columns": "some"}]}}, "kernels.builders[0].columns", "'each'"),
    ({"evaluation": {"test_fraction": 1.5}}, "evaluation.test_fraction", "between 0 and 1"),
    ({"evaluation": {"cv_folds": 1}}, "evaluation.cv_folds", "at least 2"),
    ({"evaluation": {"grid": {"C": 1.0}}}, "evaluation.grid.C", "expected a list"),
    ({"preprocessing": {"standardize": "yes"}}, "preprocessing.standardize", "true or false"),
    ({"solver": {"max_iter": 2.5}}, "solver.max_iter", "expected an integer"),
    ({"data": []}, "data", "expected a table"),
    ({"model": {}, "models": [{}]}, "model", "not both"),
    ({"models": [{"method": "l1mkl"}, {"method": "l1mkl", "C": 10}]}, "models[1].label", "duplicate model label"),
])
def test_errors_name_the_key_path(data, path, fragment):
    with pytest.raises(ConfigError) as info:
        config_from_dict(data)
    assert info.value.path == path
    assert fragment in str(info.value)


def test_single_model_table_is_accepted():
    config = config_from_dict({"model": {"method": "average", "C": 2.0}})
    assert len(config.models) == 1 and config.models[0].C == 2.0


def test_malformed_and_missing_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[data\nsource = 'x'\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_example_in_docs_is_valid():
    """The complete example of docs/config.md parses."""
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "config.md").read_text()
    block = text.split("```toml", 1)[1].split("```", 1)[0]
    config = config_from_dict(tomllib.loads(block))
    assert config.evaluation.cv_folds == 5


def test_relative_data_paths_are_relative_to_the_config_file(tmp_path, monkeypatch):
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "run.toml").write_text("[data]\nsource = 'data/x.csv'\n")
    monkeypatch.chdir(tmp_path)
    assert load_config("configs/run.toml").data.source == str(folder / "data" / "x.csv")
    # a dict has no file: its relative paths follow the working directory (or base_dir); built-ins stay names
    assert config_from_dict({"data": {"source": "x.csv"}}).data.source == str(tmp_path / "x.csv")
    assert config_from_dict({"data": {"source": "x.csv"}}, base_dir=folder).data.source == str(folder / "x.csv")
    assert config_from_dict({"data": {"source": "wine"}}, base_dir=folder).data.source == "wine"


def test_integers_stay_integers():
    config = config_from_dict({"models": [{"C": 8}], "solver": {"tol": 1}})
    assert type(config.models[0].C) is int and type(config.solver.tol) is int
    assert "C = 8 }" in config_to_toml(config)
