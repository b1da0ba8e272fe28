"""The inner problem of the MKL methods in its general form, and its one solver entry point.

For a fixed combined kernel ``K`` every inner problem of the library is the concave quadratic program

    max_alpha  L(alpha) - 1/2 coef' K coef,    L(alpha) = -p'alpha - 1/2 sum_i D_i alpha_i^2,
    subject to lower <= alpha <= upper,   optionally  y'alpha = y_sum   and/or   1'alpha = total,

with ``coef = y * alpha`` (``signed``, the SVM forms) or ``coef = alpha``.  :class:`InnerQP` (the data of
one such QP; not to be confused with :class:`~multikernel.core.interfaces.InnerProblem`, the seam through which
the outer solvers see a whole task, whose ``solve`` may call :func:`solve_inner` once per block) holds
that data (linear term, per-sample bounds, ridge, equality constraints); :func:`solve_inner` solves it
with the SMO core of :mod:`multikernel.solve.smo` from an optional warm start and returns an
:class:`~multikernel.core.interfaces.InnerSolution` with both objectives:

* ``dual_objective`` is ``L(alpha) - 1/2 coef'K coef`` at the returned ``alpha`` (a lower bound of the
  optimum);
* ``primal_objective`` is an upper bound of the optimum, from weak duality with the solver's equality
  multipliers ``b`` (of ``y'alpha = y_sum``) and ``rho`` (of ``1'alpha = total``):

      1/2 coef'K coef + b y_sum - rho total + sum_i max_{lower_i <= a <= upper_i} (-r_i a - D_i a^2 / 2),
      r = S K coef + p + b y - rho,

  (``S = diag(y)`` when signed).  For the SVM forms this is the primal objective at the returned
  classifier: ``1/2 ||w||^2 + C sum_i max(0, 1 - y_i (f_i + b))`` for the C-SVC, the square of the hinge
  for the L2-SVM, ``1/2 ||w||^2 - rho + C sum_i max(0, rho - y_i (f_i + b))`` for the nu-form.  Both are
  computed from the solver's gradient in O(n), without another pass over the kernel.

The SVM losses are rows of a small table of forms, :data:`SVM_FORMS`; :func:`svm_problem` builds one.
New inner problems (ranking constraints, the label vectors of input-output kernels) give their own
:class:`InnerQP` and reuse :func:`solve_inner` and its certificate unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

from multikernel.core.interfaces import InnerSolution
from multikernel.core.validation import check_positive_real
from multikernel.solve.smo import KernelColumns, QPResult, solve_qp

__all__ = ["InnerQP", "SVM_FORMS", "inner_solution", "solve_inner", "svm_problem"]

Vector = float | np.ndarray


@attrs.frozen(eq=False)
class InnerQP:
    """The data of an inner problem (see the module docstring); scalars apply to every sample.

    Attributes
    ----------
    y : ndarray of shape (n,), optional
        Labels in {-1, +1}: the signs ``S`` of the kernel (when ``signed``) and of ``y'alpha = y_sum``.
    p : float or ndarray of shape (n,)
        Linear term: ``L(alpha) = -p'alpha - ...`` (the SVM forms have ``p = -1``).
    lower, upper : float or ndarray of shape (n,)
        Bounds of ``alpha``; ``lower`` finite.  An infinite ``upper`` needs a positive ridge on that
        sample or the constraint ``1'alpha = total``.
    ridge : float or ndarray of shape (n,)
        The non-negative diagonal ``D`` (``1/C`` for the square hinge).
    signed : bool
        Whether the kernel carries the label signs (``coef = y * alpha``).
    y_sum, total : float, optional
        Right-hand sides of ``y'alpha = y_sum`` and ``1'alpha = total``.
    """

    y: np.ndarray | None = None
    p: Vector = 0.0
    lower: Vector = 0.0
    upper: Vector = math.inf
    ridge: Vector = 0.0
    signed: bool = True
    y_sum: float | None = None
    total: float | None = None

    def signs(self, n: int) -> np.ndarray:
        """``S``: the labels when the kernel is signed, else ones."""
        if self.signed and self.y is not None:
            return np.asarray(self.y, dtype=np.float64)
        return np.ones(n)

    def linear_term(self, alpha: np.ndarray) -> float:
        """``L(alpha) = -p'alpha - 1/2 sum_i D_i alpha_i^2``: the part of the objective without the kernel."""
        alpha = np.asarray(alpha, dtype=np.float64)
        return float(-np.sum(np.asarray(self.p) * alpha) - 0.5 * np.sum(np.asarray(self.ridge) * alpha**2))

    def ray(self, alpha: np.ndarray) -> tuple[float, float, float] | None:
        """``(a, b, s_max)``: ``L(s alpha) = a s - b s^2``, ``s alpha`` feasible for ``0 <= s <= s_max``.

        Only when the zero vector is feasible (bounds around 0, right-hand sides 0): then the segment from 0
        to a feasible ``alpha`` is feasible, and beyond ``alpha`` until a box bound is reached (``s_max``,
        at least 1).  ``None`` otherwise (``1'alpha = 1`` of the nu-form, say).
        """
        if self.y_sum not in (None, 0.0) or self.total not in (None, 0.0):
            return None
        alpha = np.asarray(alpha, dtype=np.float64)
        lower = np.broadcast_to(np.asarray(self.lower, dtype=np.float64), alpha.shape)
        upper = np.broadcast_to(np.asarray(self.upper, dtype=np.float64), alpha.shape)
        if np.any(lower > 0) or np.any(upper < 0):
            return None
        a = float(-np.sum(np.asarray(self.p) * alpha))
        b = float(0.5 * np.sum(np.asarray(self.ridge) * alpha**2))
        pos, neg = alpha > 0, alpha < 0
        s_max = min(float(np.min(upper[pos] / alpha[pos], initial=math.inf)),
                    float(np.min(lower[neg] / alpha[neg], initial=math.inf)))
        return a, b, max(s_max, 1.0)

    def feasible_scale(self, alpha: np.ndarray) -> float | None:
        """The largest ``s`` in ``(0, 1]`` with ``s alpha`` feasible, or ``None`` when there is none.

        For a solution of the same problem at other bounds (another ``C``), whose equality constraints
        are this problem's: ``1`` when ``alpha`` lies within the bounds; otherwise, when scaling keeps the
        equalities (right-hand sides 0) and the zero vector is feasible, the scale that brings ``alpha``
        back within the bounds it exceeds.  Equalities violated beyond rounding give ``None``.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        size = float(np.abs(alpha).sum())
        rounding = 1e-9 * max(size, np.finfo(np.float64).tiny)
        if self.y_sum is not None and abs(float(np.asarray(self.y, dtype=np.float64) @ alpha) - self.y_sum) > rounding:
            return None
        if self.total is not None and abs(float(alpha.sum()) - self.total) > rounding:
            return None
        lower = np.broadcast_to(np.asarray(self.lower, dtype=np.float64), alpha.shape)
        upper = np.broadcast_to(np.asarray(self.upper, dtype=np.float64), alpha.shape)
        if np.all(alpha >= lower) and np.all(alpha <= upper):
            return 1.0
        if self.y_sum not in (None, 0.0) or self.total not in (None, 0.0) or np.any(lower > 0) or np.any(upper < 0):
            return None
        pos, neg = alpha > 0, alpha < 0
        s = min(float(np.min(upper[pos] / alpha[pos], initial=math.inf)),
                float(np.min(lower[neg] / alpha[neg], initial=math.inf)))
        return s if 0.0 < s <= 1.0 else None


def _box_maximum(r: np.ndarray, D: np.ndarray, lo: np.ndarray, up: np.ndarray, scale: float) -> np.ndarray:
    """``max over lo <= a <= up of (-r a - D a^2 / 2)`` per sample (``inf`` when unbounded above).

    Without a ridge the maximum is at a bound; an infinite upper bound makes it infinite when ``r < 0``,
    beyond a rounding tolerance relative to ``scale`` (the size of the multipliers in ``r``).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.clip(-r / D, lo, up)
        quadratic = np.where(a == -r / D, r**2 / (2.0 * D), -r * a - 0.5 * D * a**2)
    negligible = np.abs(r) <= 1e-9 * scale
    linear = np.where(r > 0, -r * lo, np.where(np.isinf(up) & negligible, 0.0, -r * up))
    return np.where(D > 0, quadratic, np.where(r == 0, 0.0, linear))


def inner_solution(problem: InnerQP, res: QPResult, n: int) -> InnerSolution:
    """Both objectives of ``problem`` at the QP solution ``res``, from its gradient ``G = Q alpha + p``."""
    alpha = res.alpha
    S = problem.signs(n)
    p = np.broadcast_to(np.asarray(problem.p, dtype=np.float64), (n,))
    D = np.broadcast_to(np.asarray(problem.ridge, dtype=np.float64), (n,))
    u = res.gradient - p - D * alpha              # S K S alpha = S K coef
    quad = float(alpha @ u)                       # coef' K coef
    b = res.bias if problem.y_sum is not None else 0.0
    rho = res.rho if problem.total is not None else 0.0
    r = u + p - rho
    if problem.y_sum is not None:
        r = r + b * np.asarray(problem.y, dtype=np.float64)
    lo = np.broadcast_to(np.asarray(problem.lower, dtype=np.float64), (n,))
    up = np.broadcast_to(np.asarray(problem.upper, dtype=np.float64), (n,))
    box = _box_maximum(r, D, lo, up, max(1.0, abs(b), abs(rho)))
    primal = 0.5 * quad + b * (problem.y_sum or 0.0) - rho * (problem.total or 0.0) + float(box.sum())
    # the offset of f = K coef + bias: b with y'alpha = y_sum; -rho when 1'alpha = total is the only equality
    # (the one-class SVM's f - rho)
    offset = b if problem.y_sum is not None else -rho
    return InnerSolution(alpha=alpha, coef=S * alpha, bias=float(offset),
                         dual_objective=problem.linear_term(alpha) - 0.5 * quad,
                         primal_objective=primal, n_iter=res.n_iter, at_bound=(alpha <= lo) | (alpha >= up))


def solve_inner(
    K: np.ndarray | KernelColumns,
    problem: InnerQP,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-3,
    max_iter: int | None = None,
) -> InnerSolution:
    """Solve an inner problem for the (combined) kernel ``K``.

    Parameters
    ----------
    K : ndarray of shape (n, n) or KernelColumns
        The symmetric kernel, float32 or float64, C- or F-ordered (used without a copy), or a column
        provider (a lazy stack's combined kernel, never formed densely).
    problem : InnerQP
        Linear term, bounds, ridge, labels and equality constraints (:func:`svm_problem` for the SVMs).
    alpha0 : ndarray of shape (n,), optional
        Warm start (projected on the feasible set when it is not feasible).
    tol : float
        Stopping tolerance on the maximal KKT violation (as libsvm's ``eps``).
    max_iter : int, optional
        SMO iteration limit; by default libsvm's ``max(10**7, 100 n)``
        (:func:`multikernel.solve.smo.default_max_iter`).

    Returns
    -------
    InnerSolution
        ``coef = y * alpha`` (signed) or ``alpha``; ``bias`` the multiplier of ``y'alpha = y_sum``, or
        ``-rho`` when ``1'alpha = total`` is the only equality (0 without equalities); both objectives as in
        the module docstring.

    Raises
    ------
    ValueError
        For inconsistent data or an empty feasible set (see :func:`multikernel.solve.smo.solve_qp`).
    """
    n = K.n if isinstance(K, KernelColumns) else np.shape(K)[0]
    res = solve_qp(K, problem.y, p=problem.p, lower=problem.lower, upper=problem.upper, ridge=problem.ridge,
                   signed=problem.signed, y_sum=problem.y_sum, total=problem.total, alpha0=alpha0, tol=tol,
                   max_iter=max_iter)
    return inner_solution(problem, res, n)


# --------------------------------------------------------------------------------------------------
# The SVM forms: one row per sample loss
# --------------------------------------------------------------------------------------------------
def _labels(y: np.ndarray, both_classes: bool) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64).ravel()
    if not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError("labels must be -1 or +1")
    if both_classes and not ((y > 0).any() and (y < 0).any()):
        raise ValueError("all training points are in one class; a classifier with a bias needs "
                         "samples of both classes (-1 and +1)")
    return y


def _cost(C: float | np.ndarray, n: int) -> float | np.ndarray:
    if np.ndim(C) == 0:
        return check_positive_real("C", C)  # every real number type, as everywhere in the library
    C_arr = np.asarray(C, dtype=np.float64)
    if C_arr.ndim not in (0, 1) or (C_arr.ndim == 1 and C_arr.shape != (n,)):
        raise ValueError(f"C must be a positive number or an array of shape ({n},)")
    if not (np.isfinite(C_arr).all() and (C_arr > 0).all()):
        raise ValueError(f"C must be a positive finite number; got {C!r}")
    return float(C_arr) if C_arr.ndim == 0 else C_arr


#: The SVM forms of the inner problem: ``form(y, C) -> InnerQP`` with checked labels and ``C``.
#: ``csvc``: the C-SVC dual with bias; ``csvc_nobias``: the same without bias (one class allowed, as
#: the ranking methods need); ``nu``: the nu-form of the soft margin MKL derivations
#: (``max -1/2 coef'K coef``, ``1'alpha = 1``, feasible when ``C min(n_+, n_-) >= 1/2``);
#: ``square_hinge``: the L2-SVM with bias (ridge ``1/C``, no upper bound).
SVM_FORMS: dict[str, Callable[[np.ndarray, float | np.ndarray], InnerQP]] = {
    "csvc": lambda y, C: InnerQP(y=_labels(y, True), p=-1.0, upper=_cost(C, len(y)), y_sum=0.0),
    "csvc_nobias": lambda y, C: InnerQP(y=_labels(y, False), p=-1.0, upper=_cost(C, len(y))),
    "nu": lambda y, C: InnerQP(y=_labels(y, True), p=0.0, upper=_cost(C, len(y)), y_sum=0.0, total=1.0),
    "square_hinge": lambda y, C: InnerQP(y=_labels(y, True), p=-1.0,
                                              ridge=1.0 / np.asarray(_cost(C, len(y))), y_sum=0.0),
}


def svm_problem(form: str, y: np.ndarray, C: float | np.ndarray = 1.0) -> InnerQP:
    """The inner problem of an SVM form (a key of :data:`SVM_FORMS`) for labels ``y`` and cost ``C``.

    ``C`` is a positive number or one per sample (labelled versus unlabelled points, say).
    """
    if form not in SVM_FORMS:
        raise ValueError(f"unknown SVM form {form!r}; the forms are {sorted(SVM_FORMS)}")
    return SVM_FORMS[form](np.asarray(y), C)
