"""Dask as the engine: a real LocalCluster with two worker processes, started here.

An experiment on the cluster gives the local run's results; a worker killed while it runs a unit loses
nothing (the scheduler reruns the unit elsewhere, each unit is written once); per-class fits run under
``joblib.parallel_config(backend="dask")``; kernel stacks are sized for scattering; engine settings are
checked by the configuration loader (what ``validate`` and ``run`` both use).
"""

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

from multikernel.errors import ConfigError
from multikernel.experiments.runner import UNITS_FILE, experiment_config_from_dict, run_experiment

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                  "(pip install 'multikernel[dask]'); the Dask engine tests need a real cluster")


def _config(out, **experiment):
    """Small and deterministic: 4 splits x 2 methods of generated ringnorm, each unit under a second."""
    return {
        "experiment": {"name": "dask", "output": str(out), "repeats": 4, "cv_folds": 2, "n_jobs": 1, **experiment},
        "kernels": {"family": "simplemkl",
                    "family_params": {"sigmas": [0.5, 2.0, 8.0], "degrees": [1, 2], "single_features": False}},
        "solver": {"tol": 1e-3, "max_iter": 50},
        "datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_samples": 120, "n_features": 4}}],
        "methods": [{"method": "average", "grid": {"C": [0.1, 1.0, 10.0]}},
                    {"method": "l1mkl", "label": "L1", "grid": {"C": [0.1, 1.0, 10.0]}}],
    }


def _records(out):
    return [json.loads(line) for line in (out / UNITS_FILE).read_text().splitlines()]


def _comparable(rec):
    return {k: rec[k] for k in ("key", "fingerprint", "accuracy", "best_params", "cv_scores", "n_iter")}


@pytest.fixture(scope="module")
def cluster():
    # Processes (not threads): a worker can then be killed like a lost machine.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as lc, distributed.Client(lc) as client:
        yield lc, client


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    summary = run_experiment(_config(out), progress=False)
    assert summary["errors"] == []
    return {r["key"]: r for r in _records(out)}


def test_experiment_on_cluster_matches_local_run(cluster, local_run, tmp_path):
    lc, _ = cluster
    summary = run_experiment(_config(tmp_path, engine="dask", scheduler=lc.scheduler_address), progress=False)
    assert summary["errors"] == [] and summary["finished_units"] == summary["planned_units"] == 8
    records = {r["key"]: r for r in _records(tmp_path)}
    assert records.keys() == local_run.keys()
    for key, rec in records.items():
        expected = _comparable(local_run[key])
        got = _comparable(rec)
        assert got["fingerprint"] == expected["fingerprint"] and got["best_params"] == expected["best_params"]
        np.testing.assert_allclose(got["cv_scores"], expected["cv_scores"], atol=1e-12)
        assert got["accuracy"] == pytest.approx(expected["accuracy"], abs=1e-12)
        np.testing.assert_allclose(rec["weights"], local_run[key]["weights"], rtol=1e-6, atol=1e-9)


def test_rerun_on_cluster_skips_finished_units(cluster, tmp_path):
    lc, _ = cluster
    cfg = _config(tmp_path, engine="dask", scheduler=lc.scheduler_address, repeats=1)
    run_experiment(cfg, progress=False)
    before = (tmp_path / UNITS_FILE).read_text()
    summary = run_experiment(cfg, progress=False)
    assert (tmp_path / UNITS_FILE).read_text() == before and summary["finished_units"] == 2


def test_per_class_fits_under_joblib_dask_backend(cluster):
    from joblib import parallel_config
    from sklearn.datasets import load_wine

    from multikernel import MKLClassifier

    _, client = cluster
    client.wait_for_workers(2, timeout=60)  # with one worker thread joblib would run the blocks here
    X, y = load_wine(return_X_y=True)
    make = lambda: MKLClassifier(kernels="rbf_poly", standardize=True, method="l1mkl", tol=1e-3)  # noqa: E731
    local = make().fit(X, y)
    with parallel_config(backend="dask", client=client):
        remote = make().fit(X, y)
    prefixes = client.run_on_scheduler(lambda dask_scheduler: set(dask_scheduler.task_prefixes))
    # The blocks ran as Dask tasks, and the stack went to the cluster as data of its own (scattered once).
    assert any("_solve_block" in p for p in prefixes) and "DenseStack" in prefixes
    assert remote.weights_.shape == (3, local.weights_.shape[1])  # one weight vector per class
    np.testing.assert_allclose(remote.weights_, local.weights_, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(remote.predict(X), local.predict(X))


# Last of the cluster tests: the cluster has one worker fewer until its nanny restarts it.
def test_killed_worker_units_rerun_and_nothing_is_lost_or_duplicated(cluster, local_run, tmp_path):
    lc, client = cluster
    units = tmp_path / UNITS_FILE
    killed: dict = {}

    def kill_a_busy_worker():
        # Once the first split has been written, every worker is running a unit: kill one that is.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (units.exists() and units.read_text().strip()):
            time.sleep(0.05)
        while time.monotonic() < deadline:
            busy = {w: tasks for w, tasks in client.processing().items() if tasks}
            if busy:
                address, tasks = next(iter(busy.items()))
                pid = client.run(os.getpid, workers=[address])[address]
                killed.update(address=address, tasks=list(tasks), pid=pid)
                os.kill(pid, signal.SIGKILL)  # as a machine that disappears: no goodbye to the scheduler
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    summary = run_experiment(_config(tmp_path, engine="dask", scheduler=lc.scheduler_address), progress=False)
    killer.join(timeout=5)
    assert killed, "the test did not manage to kill a busy worker"
    assert summary["errors"] == [] and summary["finished_units"] == summary["planned_units"] == 8
    keys = [r["key"] for r in _records(tmp_path)]
    assert sorted(keys) == sorted(local_run)  # every unit once: none lost, none duplicated
    for rec in _records(tmp_path):
        assert rec["accuracy"] == pytest.approx(local_run[rec["key"]]["accuracy"], abs=1e-12)


def test_stacks_are_sized_for_scattering():
    from dask.sizeof import sizeof

    from multikernel.plugins.kernels import RBFKernel
    from multikernel.stack.kernelset import KernelSet

    X = np.random.default_rng(0).standard_normal((300, 5))
    dense = KernelSet([RBFKernel(gamma=g) for g in (0.1, 1.0)]).fit_stack(X)
    lazy = KernelSet([RBFKernel(gamma=g) for g in (0.1, 1.0)], backend="lazy").fit_stack(X)
    # joblib's Dask backend scatters a task argument (once per parallel call) when Dask sizes it over 1 kB.
    assert sizeof(dense) >= dense.nbytes == 2 * 300 * 300 * 8
    assert sizeof(lazy) >= X.nbytes > 1000


@pytest.mark.parametrize("experiment, fragment", [
    ({"engine": "spark"}, "experiment.engine: unknown engine 'spark'"),
    ({"engine": "dask"}, "experiment.scheduler: engine = \"dask\" needs the address of the Dask scheduler"),
    ({"engine": "dask", "scheduler": "head-node"}, "experiment.scheduler: 'head-node' is not a scheduler address"),
    ({"scheduler": "tcp://head-node:8786"}, "experiment.scheduler: a scheduler address"),
])
def test_engine_settings_are_checked_where_validate_and_run_check(tmp_path, experiment, fragment):
    cfg = _config(tmp_path, **experiment)
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        experiment_config_from_dict(cfg)
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        run_experiment(cfg, progress=False)


def test_unreachable_scheduler_is_a_config_error(tmp_path):
    import dask

    cfg = _config(tmp_path, engine="dask", scheduler="tcp://127.0.0.1:9", repeats=1)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), \
            pytest.raises(ConfigError, match="experiment.scheduler: cannot reach the Dask scheduler"):
        run_experiment(cfg, progress=False)
