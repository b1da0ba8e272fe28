"""``experiment.warm_order``: the warm-started walk over a grid with ``C`` inside (the default) or outside."""

from __future__ import annotations

import numpy as np
import pytest
from _mkl_testing import random_problem

from multikernel.errors import ConfigError
from multikernel.experiments.config import MethodSpec
from multikernel.experiments.model_selection import cross_validate, resolve_grid, warm_chains
from multikernel.experiments.runner import check_experiment, experiment_config_from_dict, plan_experiment
from multikernel.solve.fit import SolveSettings
from multikernel.stack.storage import DenseStack

GRID = {"C": [0.1, 1.0, 10.0], "regularizer__theta": [1e-2, 1.0, 1e2, 1e4]}


def _steps(points, chain):
    """For each consecutive pair: the parameters that changed and by how many grid positions."""
    out = []
    for a, b in zip(chain, chain[1:], strict=False):
        changed = {k: abs(GRID[k].index(points[a][k]) - GRID[k].index(points[b][k]))
                   for k in GRID if points[a][k] != points[b][k]}
        out.append(changed)
    return out


@pytest.mark.parametrize("order, inner", [("C", "C"), ("parameters", "regularizer__theta")])
def test_both_orders_are_snakes_over_the_whole_grid(order, inner):
    points = resolve_grid(GRID, 5)
    (chain,) = warm_chains(points, order)
    assert sorted(chain) == list(range(len(points)))
    steps = _steps(points, chain)
    assert all(len(s) == 1 and next(iter(s.values())) == 1 for s in steps)  # one step of one parameter
    # The inner parameter moves at every step but (number of outer values - 1).
    outer = "regularizer__theta" if inner == "C" else "C"
    assert sum(inner in s for s in steps) == len(points) - len(GRID[outer])
    # "parameters": C increases from group to group.
    if order == "parameters":
        assert [points[i]["C"] for i in chain] == sorted(points[i]["C"] for i in chain)


def test_unknown_order_is_refused():
    with pytest.raises(ValueError, match="'C' or 'parameters'"):
        warm_chains(resolve_grid(GRID, 5), "theta")


def test_every_fit_of_either_order_meets_the_tolerance():
    Ks, y = random_problem(2, n=36, M=4)
    order = np.random.default_rng(1).permutation(len(y))
    folds = [(np.sort(order[12:]), np.sort(order[:12]))]
    spec = MethodSpec(method="sm2mkl")
    points = resolve_grid({"C": [0.1, 10.0], "regularizer__theta": [0.01, 1.0, 100.0]}, 4)
    settings = SolveSettings(tol=1e-3, max_iter=500)
    for order_name in ("C", "parameters"):
        scores, info = cross_validate(DenseStack(Ks), y, folds, spec, points, settings, warm_order=order_name)
        assert np.all(np.isfinite(scores)) and info["cv_fits"] == len(points)
        assert info["cv_gap_max"] <= 1e-3


def _config(tmp_path, **experiment):
    return {
        "experiment": {"name": "order", "output": str(tmp_path), "repeats": 1, "cv_folds": 2, **experiment},
        "kernels": {"family": "simplemkl", "family_params": {"sigmas": [1.0], "degrees": [1],
                                                             "single_features": False}},
        "datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_samples": 40, "n_features": 3}}],
        "methods": [{"method": "l1mkl", "grid": {"C": [0.1, 10.0]}}],
    }


def test_config_key_and_fingerprint(tmp_path):
    def fingerprint(**experiment):
        config = experiment_config_from_dict(_config(tmp_path, **experiment))
        assert config.experiment.warm_order == experiment.get("warm_order", "C")
        return plan_experiment(config, check_experiment(config))[0].members[0].fingerprint

    # The default keeps the fingerprints of existing results; the other order is another protocol run.
    assert fingerprint() == fingerprint(warm_order="C") != fingerprint(warm_order="parameters")
    with pytest.raises(ConfigError, match="warm_order"):
        experiment_config_from_dict(_config(tmp_path, warm_order="theta"))


def test_a_method_can_have_its_own_order(tmp_path):
    from multikernel.experiments.model_selection import cross_validate_methods

    cfg = _config(tmp_path, warm_order="parameters")
    cfg["methods"] = [{"method": "l1mkl", "label": "own", "grid": {"C": [0.1, 10.0]}, "warm_order": "C"},
                      {"method": "l1mkl", "label": "experiment's", "grid": {"C": [0.1, 10.0]}}]
    config = experiment_config_from_dict(cfg)
    assert [m.warm_order for m in config.methods] == ["C", None]
    # A method without the key keeps the fingerprint it had before the key existed: the field is left out.
    from multikernel.experiments.runner import _method_fields

    assert _method_fields(config.methods[0])["warm_order"] == "C"
    assert "warm_order" not in _method_fields(config.methods[1])
    with pytest.raises(ConfigError, match="warm_order"):
        bad = _config(tmp_path)
        bad["methods"][0]["warm_order"] = "theta"
        experiment_config_from_dict(bad)
    # The method's order is the one its folds walk: with one C-only grid both orders give the same fits.
    Ks, y = random_problem(4, n=30, M=3)
    folds = [(np.arange(10, 30), np.arange(10))]
    results = cross_validate_methods(DenseStack(Ks), y, folds, [(m, resolve_grid(m.grid, 3)) for m in config.methods],
                                     SolveSettings(tol=1e-3), warm_order="parameters", share=False)
    np.testing.assert_array_equal(results[0][0], results[1][0])
