"""Layer 1, the contracts: the plugin interfaces, the hook specifications, the registry and the capability check.

Everything else is written against these: a plugin implements an interface of :mod:`multikernel.core.interfaces`
and returns it from a hook of :mod:`multikernel.core.hookspecs`; :mod:`multikernel.core.registry` loads plugins
from the ``multikernel`` entry-point group and validates them; :mod:`multikernel.core.capabilities` checks that a
regularizer offers what a solver needs.  This layer imports nothing else of the library but ``errors``.
"""

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import (
    Component,
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

__all__ = ["Component", "KernelBuilder", "SampleLoss", "Regularizer", "Solver", "Method", "InnerProblem",
           "InnerSolution", "LossBlocks", "MKLProblem", "MKLResult", "hookimpl", "get_registry", "register_plugin"]
