"""The plugin registry's first load imports no package that only some task estimators use: they are deferred
(:class:`multikernel.core.tasks.DeferredFactory`) until the estimator is created."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import multikernel
from multikernel.core.registry import get_registry
from multikernel.core.tasks import DeferredFactory, TaskEstimator

#: Packages the registry loaded eagerly for the task estimators' baselines (a tenth of a second together).
DEFERRED = ("sklearn.cluster", "sklearn.manifold", "sklearn.semi_supervised", "sklearn.kernel_ridge",
            "sklearn.calibration", "sklearn.tree", "multikernel.ranking")


def test_loading_the_registry_imports_none_of_the_deferred_packages():
    code = ("import json, sys, multikernel\n"
            "from multikernel.core.registry import get_registry\n"
            "registry = get_registry()\n"
            "assert registry.names('estimator')\n"
            f"print(json.dumps([m for m in {list(DEFERRED)!r} if m in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_every_builtin_task_estimator_is_created_with_its_defaults():
    for info in get_registry().plugins("estimator"):
        entry = info.obj
        est = entry.create()
        factory = entry.factory.resolve() if isinstance(entry.factory, DeferredFactory) else entry.factory
        if isinstance(factory, type):  # (a function factory passes its defaults on in its own way)
            assert isinstance(est, factory), entry.name
            assert {k: est.get_params()[k] for k in entry.params} == entry.params, entry.name


def test_a_deferred_factory_is_its_class_for_callers():
    kmeans = multikernel.create("estimator", "kmeans", n_clusters=3)
    from sklearn.cluster import KMeans

    assert isinstance(kmeans, KMeans) and kmeans.n_clusters == 3 and kmeans.n_init == 10
    entry = TaskEstimator("mine", "clustering", DeferredFactory("sklearn.cluster", "KMeans"), {"n_clusters": 2})
    assert entry.problems() == [] and "n_clusters" in entry.parameters()
    assert repr(entry.factory) == "sklearn.cluster.KMeans"


def test_a_bad_default_of_a_deferred_factory_is_named_at_create():
    entry = TaskEstimator("mine", "clustering", DeferredFactory("sklearn.cluster", "KMeans"), {"clusters": 2})
    assert entry.problems() == []  # not inspected at registration: that would import it
    with pytest.raises(TypeError, match=r"'clusters' is not a parameter of the clustering estimator 'mine'"):
        entry.create()
