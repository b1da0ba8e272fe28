"""The cutting-plane model's LP kept in one HiGHS instance across iterations (the level method and SILP).

``min t`` over ``(mu, t)`` subject to ``L_j - 1/2 q_j'mu <= t`` for every cut ``j``, ``sum mu = 1`` and
``0 <= mu <= cap``.  A new cut is one new row: the previous optimal basis stays dual feasible (the new row's
slack enters the basis), so HiGHS' dual simplex restarts from it and needs a few pivots instead of a cold solve
of the whole LP (``scipy.optimize.linprog`` rebuilds the model and its factorization at every call, which was
the level method's largest cost after the stack pass: 17-32 ms per iteration on 442 kernels and 160 cuts against
about 2 ms warm).  Dropped cuts are deleted rows; HiGHS keeps the basis of the remaining ones.

The LP's value and multipliers only steer the method (the level, the aggregate cut): the certified lower bound
is computed by the outer loop from the aggregate ``alpha``, so a loosely solved LP cannot make the duality gap
wrong.
"""

from __future__ import annotations

import os
import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import highspy

__all__ = ["MasterLP"]


def _highspy() -> ModuleType:
    """highspy, imported on first use: loading it costs a first fit ~25 ms that only the cutting-plane solvers
    need (the registry imports this module with every built-in solver)."""
    import highspy

    return highspy

_BANNER_LOCK = threading.Lock()
_banner_done = False


def _new_highs() -> highspy.Highs:
    """A HiGHS instance, without the version banner HiGHS writes to the process's stdout on the first one.

    highspy >= 1.12 prints it in the constructor, before ``output_flag`` can be set (HiGHS issues 1702, 2749):
    it would corrupt ``multikernel run --json`` and any program that pipes our stdout.  The first construction
    runs with file descriptor 1 pointed at /dev/null; HiGHS does not print it again.
    """
    global _banner_done
    highspy = _highspy()
    with _BANNER_LOCK:
        if _banner_done:
            return highspy.Highs()
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _banner_done = True
        return h


class MasterLP:
    """The master LP over ``n_weights`` weights capped at ``cap``, with rows added and deleted per cut."""

    def __init__(self, n_weights: int, cap: float) -> None:
        self.n_weights = n_weights
        self.cap = cap
        self._idx = np.arange(n_weights + 1, dtype=np.int32)
        h = _new_highs()
        h.setOptionValue("output_flag", False)
        # Presolve finds nothing to remove in this small dense LP and would discard the warm basis; the dual
        # simplex is the method that restarts from it after rows are added.
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)
        # The LP is tiny; HiGHS' threads would only wait for the cores the SVM and the stack reads use.
        h.setOptionValue("threads", 1)
        inf = _highspy().kHighsInf
        M = n_weights
        empty_i, empty_f = np.zeros(0, dtype=np.int32), np.zeros(0)
        h.addCols(M + 1, np.r_[np.zeros(M), 1.0], np.r_[np.zeros(M), -inf], np.r_[np.full(M, cap), inf],
                  0, empty_i, empty_i, empty_f)
        h.addRow(1.0, 1.0, M, self._idx[:M], np.ones(M))  # sum mu = 1 (row 0)
        self._h = h
        self.n_cuts = 0

    def add_cut(self, L: float, q: np.ndarray) -> None:
        """Append the row ``-1/2 q'mu - t <= -L`` (the cut ``L - 1/2 q'mu <= t``)."""
        row = np.empty(self.n_weights + 1)
        row[:-1] = -0.5 * np.asarray(q, dtype=np.float64)
        row[-1] = -1.0
        self._h.addRow(-_highspy().kHighsInf, -float(L), self.n_weights + 1, self._idx, row)
        self.n_cuts += 1

    def delete_cuts(self, drop: np.ndarray) -> None:
        """Delete the cuts at the positions ``drop`` (in the order the cuts were added and kept)."""
        drop = np.asarray(drop, dtype=np.int32)
        if len(drop):
            self._h.deleteRows(len(drop), drop + 1)  # row 0 is the sum
            self.n_cuts -= len(drop)

    def solve(self) -> tuple[float, np.ndarray, np.ndarray] | None:
        """The LP value, the cut rows' duals (``<= 0``) and the weights; ``None`` unless HiGHS finds the optimum.

        A failed warm solve is retried once from scratch.
        """
        h, optimal = self._h, _highspy().HighsModelStatus.kOptimal
        for _ in range(2):
            h.run()
            if h.getModelStatus() == optimal:
                sol = h.getSolution()
                value = h.getInfo().objective_function_value
                duals = np.asarray(sol.row_dual, dtype=np.float64)[1:]
                mu = np.asarray(sol.col_value, dtype=np.float64)[:-1]
                return float(value), duals, mu
            h.clearSolver()
        return None
