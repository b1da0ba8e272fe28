"""Hook specifications: how a package adds plugins to multikernel.

A plugin package exposes a module (or object) with functions named as below, decorated with
``multikernel.hookimpl``, and advertises it under the entry-point group ``multikernel`` in its
``pyproject.toml``::

    [project.entry-points.multikernel]
    my_plugins = "my_package.multikernel_plugins"

Every hook returns a mapping from the public name of a plugin to its implementation: a class (not an
instance) subclassing the kind's interface (:data:`COMPONENT_TYPES`), a factory function for kernel
families, a :class:`~multikernel.core.interfaces.Method` for methods, a
:class:`~multikernel.core.tasks.TaskEstimator` for task estimators.  The key is the plugin's name everywhere
(configs, reports, saved models): registration sets the class's ``name`` to it, or refuses a class whose
own ``name`` says otherwise.  The registry validates every hook when its plugin is registered (a misspelled
hook name or a malformed mapping fails there, naming the plugin), merges the mappings of all plugins and
refuses a name claimed twice.  The built-in plugins (``multikernel.plugins.*``) register through exactly
the same group.  ``docs/plugins.md`` walks through a complete plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from multikernel.core.interfaces import KernelBuilder, Method, Regularizer, SampleLoss, Solver
from multikernel.core.tasks import TaskEstimator, TaskKind

PROJECT = "multikernel"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def multikernel_kernel_builders() -> Mapping[str, type[KernelBuilder]]:
    """Kernel builder classes by name (``"rbf"``, ``"poly"``, ...).

    Each class is a :class:`~multikernel.core.interfaces.KernelBuilder`: constructed with keyword
    parameters, ``fit`` on training features, ``transform`` to cross kernels.
    """


@hookspec
def multikernel_kernel_families() -> Mapping[str, Callable[..., list[KernelBuilder]]]:
    """Named kernel families: ``factory(n_features, **params) -> list of unfitted KernelBuilder``.

    A family expands to many base kernels, as the papers build them (for example ``"simplemkl"``:
    Gaussian and polynomial kernels on all features and on each single feature).
    """


@hookspec
def multikernel_losses() -> Mapping[str, type[SampleLoss]]:
    """Sample loss classes (the inner problem over alpha) by name (``"csvc"``, ...)."""


@hookspec
def multikernel_regularizers() -> Mapping[str, type[Regularizer]]:
    """Regularizer classes (domain and penalty of the kernel weights) by name (``"simplex"``, ...).

    Which solvers can use a regularizer follows from the methods its class implements (a projection, a
    closed-form update, ...): see :mod:`multikernel.core.capabilities`.
    """


@hookspec
def multikernel_solvers() -> Mapping[str, type[Solver]]:
    """Outer solver classes by name (``"bcd"``, ``"reduced_gradient"``, ...).

    Each class declares in ``requires`` the regularizer capabilities it calls (:mod:`multikernel.core.capabilities`).
    """


@hookspec
def multikernel_methods() -> Mapping[str, Method]:
    """Named methods: presets of loss, regularizer and solver (``"sm1mkl"``, ``"average"``, ...)."""


@hookspec
def multikernel_estimators() -> Mapping[str, TaskEstimator]:
    """Named task estimators (``"mlr_gl"``, ``"mi_svm"``, ``"kmeans"``, ...), each a
    :class:`~multikernel.core.tasks.TaskEstimator`: a class or factory with default parameters, for one task kind
    (:data:`~multikernel.core.tasks.TASK_KINDS`), usable by name in experiment configurations.
    """


@hookspec
def multikernel_task_kinds() -> Mapping[str, type[TaskKind]]:
    """Task kinds (``"mil"``, ``"multilabel_ranking"``, ...), each a subclass of
    :class:`~multikernel.core.tasks.TaskKind`: how its data are read, split, fitted and measured by the experiment
    runner and the CLI.  Task estimators name their kind.
    """


KINDS: dict[str, str] = {
    "kernel": "multikernel_kernel_builders",
    "family": "multikernel_kernel_families",
    "loss": "multikernel_losses",
    "regularizer": "multikernel_regularizers",
    "solver": "multikernel_solvers",
    "method": "multikernel_methods",
    "estimator": "multikernel_estimators",
    "task": "multikernel_task_kinds",
}
"""Plugin kinds and the hook that provides each."""

COMPONENT_TYPES: dict[str, type] = {
    "kernel": KernelBuilder,
    "loss": SampleLoss,
    "regularizer": Regularizer,
    "solver": Solver,
    "task": TaskKind,
}
"""The interface that the classes of each component kind subclass (families are factories, methods presets)."""

AnyPlugin = Any
