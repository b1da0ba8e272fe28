"""``experiment.cv_tol``: cross-validation fits stop at their own certified gap, the refit at ``[solver] tol``;
the records report the largest gap of each."""

import json

import pytest

from multikernel.errors import ConfigError
from multikernel.experiments.runner import UNITS_FILE, experiment_config_from_dict, plan_experiment, run_experiment


def _config(out, **experiment):
    return {
        "experiment": {"name": "cvtol", "output": str(out), "repeats": 1, "cv_folds": 3, "n_jobs": 1, **experiment},
        "kernels": {"family": "simplemkl",
                    "family_params": {"sigmas": [0.5, 2.0, 8.0], "degrees": [1, 2], "single_features": False}},
        "solver": {"tol": 1e-4, "max_iter": 300},
        "datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_samples": 90, "n_features": 3}}],
        "methods": [{"method": "l1mkl", "grid": {"C": [0.1, 10.0]}}],
    }


def test_cv_fits_stop_at_cv_tol_and_the_refit_at_solver_tol(tmp_path):
    loose, tight = tmp_path / "loose", tmp_path / "tight"
    run_experiment(_config(loose, cv_tol=5e-2), progress=False)
    run_experiment(_config(tight), progress=False)
    (rec_loose,) = [json.loads(x) for x in (loose / UNITS_FILE).read_text().splitlines()]
    (rec_tight,) = [json.loads(x) for x in (tight / UNITS_FILE).read_text().splitlines()]
    assert rec_loose["cv_gap_max"] <= 5e-2 and rec_tight["cv_gap_max"] <= 1e-4
    assert rec_loose["dual_gap"] <= 1e-4 and rec_tight["dual_gap"] <= 1e-4  # the refit keeps the solver's tol
    # A looser tolerance means fewer outer iterations in model selection, never more.
    assert rec_loose["cv_outer_iterations"] < rec_tight["cv_outer_iterations"]
    assert 0 < rec_loose["unit_cpu_time"]
    assert "(CV " in (loose / "results.md").read_text()


def test_cv_tol_is_part_of_the_fingerprint_only_when_set(tmp_path):
    def fingerprint(**experiment):
        config = experiment_config_from_dict(_config(tmp_path, **experiment))
        from multikernel.experiments.runner import check_experiment

        return plan_experiment(config, check_experiment(config))[0].members[0].fingerprint

    assert fingerprint() != fingerprint(cv_tol=1e-2) != fingerprint(cv_tol=1e-3)


@pytest.mark.parametrize("value", [0, -1e-3])
def test_cv_tol_must_be_positive(tmp_path, value):
    with pytest.raises(ConfigError, match="cv_tol"):
        experiment_config_from_dict(_config(tmp_path, cv_tol=value))
