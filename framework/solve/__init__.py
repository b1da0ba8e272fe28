"""Layer 3, solving: the fit core, the outer loop's bookkeeping, the inner problems and the SMO bindings.

:mod:`~multikernel.solve.fit` turns (kernel stack, targets, parts) into a fitted model for every task;
:mod:`~multikernel.solve.outer` keeps the certified bounds and stopping rules of every outer solver;
:mod:`~multikernel.solve.svm` and :mod:`~multikernel.solve.smo` solve the inner problems; the outer solvers
themselves are plugins (``multikernel.plugins.solvers``).
"""

from multikernel.solve.fit import (
    FittedMKL,
    Parts,
    SolveSettings,
    Targets,
    UnknownParameterError,
    build_parts,
    decision_values,
    encode_targets,
    fit_mkl,
)

__all__ = ["Targets", "encode_targets", "Parts", "build_parts", "UnknownParameterError", "SolveSettings",
           "FittedMKL", "decision_values", "fit_mkl"]
