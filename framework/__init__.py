"""multikernel: learning with multiple kernels.

The import package ``multikernel`` is built from three folders of the source tree: ``framework/`` (this
package: interfaces, registry, kernel stack, estimators, configuration, CLI), ``plugins/`` (installed as
``multikernel.plugins``: every built-in kernel builder, loss, regularizer, solver and method) and ``_ext/``
(installed as ``multikernel._ext``: the Cython hot loops).
"""

from multikernel._version import __version__
from multikernel.bilinear import BilinearClassifier, BilinearSVMClassifier, CrossModalEmbedding, HMKLClassifier
from multikernel.config.schema import RunConfig, config_from_dict, load_config
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import (
    Component,
    InnerCapability,
    InnerProblem,
    InnerSolution,
    KernelBuilder,
    LossBlocks,
    Method,
    MKLProblem,
    MKLResult,
    Regularizer,
    SampleLoss,
    Solver,
)
from multikernel.core.registry import get_registry, register_plugin
from multikernel.core.tasks import TASK_KINDS, TaskEstimator
from multikernel.errors import (
    ConfigError,
    FitInterruptedWarning,
    InvalidParameterError,
    MemoryBudgetError,
    ModelFormatError,
    PluginError,
)
from multikernel.estimators.classifier import MKLClassifier
from multikernel.estimators.classifier_cv import MKLClassifierCV
from multikernel.estimators.one_class import MKLOneClass
from multikernel.estimators.regressor import MKLRegressor
from multikernel.iokl import IOKLClustering, IOKLMultipleInstanceClassifier, IOKLSemiSupervisedClassifier
from multikernel.metric import ITML, ITMLS, ITML_Supervised, ITMLPlus, ITMLPlus_Supervised, ITMLS_Supervised
from multikernel.solve.fit import FittedMKL, Parts, SolveSettings, Targets, build_parts, encode_targets, fit_mkl
from multikernel.stack.storage import DenseStack, KernelStack

__all__ = [
    "__version__",
    "MKLClassifier",
    "MKLRegressor",
    "MKLOneClass",
    "MKLClassifierCV",
    "ITML",
    "ITML_Supervised",
    "ITMLPlus",
    "ITMLPlus_Supervised",
    "ITMLS",
    "ITMLS_Supervised",
    "BilinearClassifier",
    "BilinearSVMClassifier",
    "HMKLClassifier",
    "CrossModalEmbedding",
    "IOKLSemiSupervisedClassifier",
    "IOKLMultipleInstanceClassifier",
    "IOKLClustering",
    "MultiLabelRanker",
    "RunConfig",
    "load_config",
    "config_from_dict",
    "create",
    "hookimpl",
    "get_registry",
    "register_plugin",
    "ConfigError",
    "InvalidParameterError",
    "PluginError",
    "ModelFormatError",
    "MemoryBudgetError",
    "FitInterruptedWarning",
    # the plugin contracts (see docs/plugins.md)
    "Component",
    "KernelBuilder",
    "SampleLoss",
    "Regularizer",
    "Solver",
    "Method",
    "TaskEstimator",
    "TASK_KINDS",
    "InnerProblem",
    "InnerCapability",
    "InnerSolution",
    "LossBlocks",
    "MKLProblem",
    "MKLResult",
    # the fit core and the kernel stack
    "KernelStack",
    "DenseStack",
    "Targets",
    "encode_targets",
    "Parts",
    "build_parts",
    "SolveSettings",
    "FittedMKL",
    "fit_mkl",
]


def create(kind: str, name: str, **params):  # noqa: ANN201 (returns the plugin's own type)
    """Instantiate a registered plugin: ``create("regularizer", "box_simplex", theta=0.2)``; a task estimator by
    name with its defaults overridden: ``create("estimator", "mlr_gl", C=10)``."""
    return get_registry().create(kind, name, **params)


def __getattr__(name: str):  # noqa: ANN202
    # multikernel.ranking imports this package's names, so it loads on first use instead of here (no cycle).
    if name == "MultiLabelRanker":
        from multikernel.ranking import MultiLabelRanker

        return MultiLabelRanker
    raise AttributeError(f"module 'multikernel' has no attribute {name!r}")
