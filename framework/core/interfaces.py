"""The four plugin kinds of multikernel, as abstract base classes.

Nearly every method of the library is

    min over mu in a domain D   of   Omega(mu) + max over alpha in A   L(alpha) - 1/2 sum_m mu_m q_m(alpha)

with q_m(alpha) = (alpha*y)' K_m (alpha*y).  The four parts are

* a :class:`KernelBuilder` (features -> one base kernel K_m, fitted on training data only),
* a :class:`SampleLoss` (the inner problem over alpha for a fixed combined kernel),
* a :class:`Regularizer` (the domain D and penalty Omega of the kernel weights mu),
* a :class:`Solver` (the outer loop over mu).

Every part is a scikit-learn style object (``get_params``/``set_params``), so an estimator holding one
exposes its parameters as nested parameters (``regularizer__theta``) to ``GridSearchCV``.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import numpy as np
from sklearn.base import BaseEstimator

if TYPE_CHECKING:
    from multikernel.stack.storage import KernelStack

__all__ = [
    "Component",
    "KernelBuilder",
    "SampleLoss",
    "InnerSolution",
    "InnerProblem",
    "KernelColumns",
    "LossBlocks",
    "Regularizer",
    "Solver",
    "MKLProblem",
    "MKLResult",
    "Method",
]


class Component(BaseEstimator):
    """Base of every plugin object: scikit-learn parameter handling and a registry name.

    Subclasses set the class attribute ``name`` (the name under which the plugin is registered) and take
    their parameters as keyword arguments of ``__init__``, stored unchanged as attributes, exactly as
    scikit-learn estimators do.
    """

    name: str = ""


# --------------------------------------------------------------------------------------------------
# Kernel builders
# --------------------------------------------------------------------------------------------------
class KernelBuilder(Component, abc.ABC):
    """Turns features into one base kernel.

    ``fit(X)`` learns everything the kernel depends on from the training features only (the columns it
    uses, a bandwidth relative to a training statistic, normalization constants) and keeps the training
    features it needs.  ``transform(Z)`` returns the cross kernel between ``Z`` and the training features,
    shape ``(len(Z), n_train)``, computed with the fitted parameters.
    """

    @abc.abstractmethod
    def fit(self, X: np.ndarray, y: np.ndarray | None = None) -> KernelBuilder:
        """Learn the kernel's parameters from training features ``X`` of shape (n_train, n_features)."""

    @abc.abstractmethod
    def transform(self, X: np.ndarray) -> np.ndarray:
        """Cross kernel between ``X`` (n, n_features) and the training features: shape (n, n_train)."""

    def fit_transform(self, X: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
        """``fit(X)`` then the train x train kernel."""
        return self.fit(X, y).transform(X)

    def describe(self) -> str:
        """A short human-readable label, used in reports (for example ``rbf(gamma=0.5)[3]``)."""
        import inspect

        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        params = self.get_params(deep=False)
        columns = params.pop("columns", None)
        def label(v: Any) -> str:
            if isinstance(v, np.ndarray):  # a matrix parameter (a precomputed or distance builder): its shape
                return f"<array {'x'.join(map(str, v.shape))}>"
            return f"{v:.4g}" if isinstance(v, float) else repr(v)

        def is_default(k: str, v: Any) -> bool:
            d = defaults.get(k, object())
            return d is v if isinstance(v, np.ndarray) or isinstance(d, np.ndarray) else bool(d == v)

        shown = ", ".join(f"{k}={label(v)}" for k, v in sorted(params.items()) if not is_default(k, v))
        subset = "" if columns is None else f"[{','.join(map(str, np.atleast_1d(columns)))}]"
        return f"{self.name}({shown}){subset}"


# --------------------------------------------------------------------------------------------------
# Kernels served by columns (the contract between a lazy stack and the SMO)
# --------------------------------------------------------------------------------------------------
class KernelColumns(abc.ABC):
    """A symmetric ``n x n`` kernel served one column at a time, for kernels never formed densely.

    :func:`solve_qp` keeps the columns it uses in a least-recently-used cache of ``cache_size``
    megabytes (like libsvm's ``cache_size``), so that the memory of a solve is bounded by the cache, not
    by ``n**2``.
    """

    n: int
    #: Megabytes of columns :func:`solve_qp` may cache for this kernel.
    cache_size: float = 200.0

    @abc.abstractmethod
    def column(self, i: int, out: np.ndarray) -> None:
        """Write column ``i`` (equal to row ``i``) into ``out``, a float64 array of shape (n,)."""

    def columns(self, idx: np.ndarray, out: np.ndarray) -> None:
        """Write the columns ``idx`` into the rows of ``out``, a float64 array of shape (len(idx), n).

        The solver asks for blocks when it builds a gradient from the rows of the support; a provider
        that computes a block faster than its columns one by one overrides this.
        """
        for r, i in enumerate(idx):
            self.column(int(i), out[r])

    @abc.abstractmethod
    def diagonal(self) -> np.ndarray:
        """The diagonal of the kernel, shape (n,)."""


# --------------------------------------------------------------------------------------------------
# Sample losses: the inner problem
# --------------------------------------------------------------------------------------------------
@attrs.define(slots=False)
class InnerSolution:
    """What an inner solve returns for a fixed combined kernel.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        The dual variables.
    coef : ndarray of shape (n,)
        The expansion coefficients of the decision function, ``alpha * y`` for the SVM losses:
        ``f(x) = sum_i coef_i k(x, x_i) + bias``.
    bias : float
        The offset ``b`` (0 for the forms without bias).
    dual_objective : float
        ``L(alpha) - 1/2 coef' K coef``: a lower bound of the inner optimum (the inner problem is a
        maximisation over alpha).
    primal_objective : float
        The primal objective of the same inner problem at the classifier defined by ``coef`` and ``bias``:
        an upper bound of the inner optimum.  ``primal - dual`` certifies the inner solve.
    n_iter : int
        Iterations of the inner solver.
    at_bound : ndarray of bool, shape (n,), optional
        Which entries of ``alpha`` sit at a bound of the inner problem (``None`` if unknown).  A warm start
        from this solution may then take its starting gradient from products the outer loop already has
        (:mod:`multikernel.stack.products`).
    """

    alpha: np.ndarray
    coef: np.ndarray
    bias: float
    dual_objective: float
    primal_objective: float
    n_iter: int = 0
    at_bound: np.ndarray | None = None


class SampleLoss(Component, abc.ABC):
    """The inner problem: the maximisation over alpha for a fixed combined kernel ``K``.

    The outer loop only ever needs ``L(alpha)`` (``linear_term``), the coefficients ``coef`` that enter
    ``q_m = coef' K_m coef``, and a solve that can start from the previous ``alpha``.

    Attributes
    ----------
    target_kind : str
        What the targets ``y`` of :meth:`solve` are: ``"labels"`` (in {-1, +1}, the SVM losses),
        ``"continuous"`` (real numbers, the regression losses) or ``"one_class"`` (all +1, one-class
        novelty detection); an estimator refuses a loss of another kind than its task.
    """

    target_kind: ClassVar[str] = "labels"

    def dual_size(self, n_samples: int) -> int:
        """Length of ``alpha`` for ``n_samples`` targets (``n_samples`` for every SVM form; ``2 n_samples`` for
        the epsilon-SVR, whose dual has a variable for each side of the tube)."""
        return n_samples

    @abc.abstractmethod
    def solve(
        self,
        K: np.ndarray,
        y: np.ndarray,
        alpha0: np.ndarray | None = None,
        tol: float = 1e-3,
    ) -> InnerSolution:
        """Solve the inner problem for the combined kernel ``K`` (n, n) and labels ``y`` in {-1, +1}.

        ``alpha0`` is a warm start (made feasible if it is not); ``tol`` bounds the inner KKT violation.
        """

    @abc.abstractmethod
    def linear_term(self, alpha: np.ndarray, y: np.ndarray) -> float:
        """``L(alpha)``: the part of the inner dual objective that does not depend on the kernel."""

    def ray(self, alpha: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
        """``(a, b, s_max)`` with ``L(s alpha) = a s - b s^2`` and ``s alpha`` feasible for ``0 <= s <= s_max``.

        Where the plain lower bound at ``alpha`` is infinite (GMKL's pure l1 near its optimum), the outer loop
        certifies the best bound on the ray ``s * alpha`` instead (:mod:`multikernel.solve.scaling`).  ``None``
        (the default) when scaling leaves the feasible set or the loss does not say: the plain bound is used.
        """
        return None

    def feasible_scale(self, alpha: np.ndarray, y: np.ndarray) -> float | None:
        """The largest ``s`` in ``(0, 1]`` with ``s alpha`` feasible for this loss (at its ``C``) and labels ``y``.

        ``alpha`` is a solution of the same loss at another ``C``: an outer solver that keeps what it learnt
        from it (the level method's cuts along a path of ``C``) rescales it by ``s``.  ``None`` (the default)
        when no scale is feasible or the loss does not say: the solver then drops it.
        """
        return None


# --------------------------------------------------------------------------------------------------
# Regularizers: the domain and penalty of the kernel weights
# --------------------------------------------------------------------------------------------------
class Regularizer(Component, abc.ABC):
    """The domain ``D`` of the kernel weights ``mu`` and a penalty ``Omega(mu)``.

    The outer problem is ``min_{mu in D} Omega(mu) + J(mu)`` with ``J(mu) = max_alpha L(alpha) -
    1/2 sum_m mu_m q_m(alpha)``.  ``dual_bound`` gives, for any alpha, the certified lower bound
    ``L(alpha) - dual_bound(q(alpha)/2)`` of the optimum, hence a duality gap for every solver.

    Only ``check``, ``initial`` and ``dual_bound`` are required.  What else a regularizer offers
    (a closed-form update, a projection, the gradient of its penalty, ...) decides which solvers can use
    it; :mod:`multikernel.core.capabilities` derives this from the methods a class overrides and from ``domain``,
    and names the missing pieces when a solver cannot run with it (see ``docs/plugins.md``).

    Attributes
    ----------
    domain : str
        The shape of ``D``, the one capability that cannot be read off the code: ``"simplex"`` (the unit
        simplex: the reduced-gradient solver), ``"box_simplex"`` (``{sum mu = 1, 0 <= mu <= cap(M)}``, with
        a ``cap(n_kernels)`` method) or ``"point"`` (the single point ``1/M``); these three are the polyhedral
        domains of the level method.  Any other value (``"lp_ball"``, ``"elastic_net"``) or ``""``
        (unknown, the default) promises nothing.
    """

    domain: ClassVar[str] = ""

    @abc.abstractmethod
    def check(self, n_kernels: int) -> None:
        """Raise ``ValueError`` if the parameters make the domain empty for ``n_kernels`` kernels."""

    @abc.abstractmethod
    def initial(self, n_kernels: int) -> np.ndarray:
        """A feasible starting point (the uniform weights scaled into ``D`` for every built-in)."""

    def penalty(self, mu: np.ndarray) -> float:
        """``Omega(mu)``; zero for the pure constraint domains."""
        return 0.0

    def penalty_gradient(self, mu: np.ndarray) -> np.ndarray:
        """Gradient of ``Omega`` at ``mu``."""
        return np.zeros_like(mu)

    @abc.abstractmethod
    def dual_bound(self, g: np.ndarray) -> float:
        """``max_{mu in D} mu'g - Omega(mu)`` (the convex conjugate of ``Omega`` + indicator of ``D``)."""

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray | None:
        """Block coordinate descent step: ``argmin_{nu in D} 1/2 sum_m mu_m^2 q_m / nu_m + Omega(nu)``.

        ``mu_m^2 q_m = ||f_m||^2`` are the squared norms of the per-kernel components of the current
        classifier, so this minimises the MKL primal ``1/2 sum_m ||f_m||^2 / nu_m + Omega(nu)`` over the
        weights with the classifier fixed (the factor 1/2 matters only when ``Omega`` is not zero).
        Return ``None`` when the regularizer has no closed form (the solver then needs another strategy).
        """
        return None

    def project(self, v: np.ndarray) -> np.ndarray:
        """Euclidean projection of ``v`` onto ``D``."""
        raise NotImplementedError(f"regularizer {self.name!r} offers no Euclidean projection")

    def onto_boundary(self, v: np.ndarray) -> np.ndarray:
        """``v >= 0`` (not zero) scaled onto the part of ``D``'s boundary where the optimum lies, for example
        ``v / sum v`` on the simplex: where the extrapolated step of block coordinate descent puts its trials
        (a scaled multiplicative update is in ``D`` once scaled back).  Only for domains where a scaling
        reaches the boundary in closed form; a box-constrained domain cannot offer it."""
        raise NotImplementedError(f"regularizer {self.name!r} cannot scale a point onto its boundary")

    def strong_convexity(self) -> float:
        """A modulus ``sigma >= 0`` such that ``Omega - sigma/2 ||mu||^2`` is convex on ``D``; 0 if none is known.

        No built-in solver needs it; a solver that takes steps of length ``1/sigma`` can require it.
        """
        return 0.0


# --------------------------------------------------------------------------------------------------
# Solvers: the outer loop
# --------------------------------------------------------------------------------------------------
class InnerCapability(enum.Enum):
    """What an inner problem offers a solver beyond ``solve``, ``linear_term`` and the quadratic forms.

    A solver declares what it needs in :attr:`Solver.requires_inner`; :meth:`Solver.check_parts` compares it with
    :meth:`InnerProblem.capabilities` before the solve, so no solver tests the inner problem's class itself.
    """

    #: A sample loss (``loss``) on rows of labels in {-1, +1} (``targets``): :class:`LossBlocks`.
    LABELLED_BLOCKS = "labelled_blocks"
    #: One block (a binary problem), not several blocks sharing the weights.
    SINGLE_BLOCK = "single_block"
    #: :meth:`InnerProblem.split` gives independent blocks (derived: the class overrides ``split``).
    SEPARABLE = "separable"


class InnerProblem(abc.ABC):
    """The inner maximisation over ``alpha`` for a fixed combined kernel, over ``T`` coefficient blocks.

    This is the seam between the outer solvers and every learning task.  For weights ``mu`` the outer
    solvers need only three things from the inner problem:

    * ``solve(K, alpha0, tol)``: an :class:`InnerSolution` on the combined kernel ``K`` whose ``coef`` holds
      the coefficient blocks ``c_t`` (shape (n,) for one block, (T, n) for several);
    * ``linear_term(alpha)``: ``L(alpha)``, the part of the inner dual that does not depend on the kernel;
    * the quadratic forms ``q_m = sum_t c_t' K_m c_t``, which :meth:`MKLProblem.quad_forms` computes from the
      blocks, so that certificates and weight updates are the same code for every task.

    Binary classification is one block; multi-class with shared weights and multi-label MKL (the sum form)
    are T independent SVMs on one kernel (:class:`LossBlocks`); a multi-label ranking problem or an
    input-output kernel problem returns its own blocks (one per label, one per label vector) from its own
    solver, with whatever linear term, per-sample bounds and equality constraints its dual has.
    """

    @abc.abstractmethod
    def solve(self, K: Any, alpha0: np.ndarray | None, tol: float) -> InnerSolution:
        """Solve for the combined kernel ``K`` (an (n, n) array or a column provider), warm-started at ``alpha0``."""

    @abc.abstractmethod
    def linear_term(self, alpha: np.ndarray) -> float:
        """``L(alpha)`` summed over the blocks."""

    def ray(self, alpha: np.ndarray) -> tuple[float, float, float] | None:
        """``(a, b, s_max)``: ``L(s alpha) = a s - b s^2`` with ``s alpha`` feasible for ``0 <= s <= s_max``
        (see :meth:`SampleLoss.ray`); ``None`` (the default) keeps the plain certificate at ``alpha``."""
        return None

    def feasible_scale(self, alpha: np.ndarray) -> float | None:
        """The largest ``s`` in ``(0, 1]`` with ``s alpha`` feasible here, for ``alpha`` solved at another ``C``
        (see :meth:`SampleLoss.feasible_scale`); ``None`` (the default) when there is none or it is unknown."""
        return None

    @property
    @abc.abstractmethod
    def alpha_shape(self) -> tuple[int, ...]:
        """Shape of the dual variables ``alpha`` (a warm start of another shape is ignored)."""

    def split(self) -> list[InnerProblem] | None:
        """The independent blocks whose objectives add up to this problem, one inner problem each.

        A stochastic solver (ML-MKL-SA) solves one sampled block per step; it needs blocks whose dual
        variables are not coupled, so that ``alpha`` is the stack of the blocks' ``alpha`` (in order) and
        ``linear_term`` and the quadratic forms are the sums of the blocks', and whose ``coef`` is linear in
        ``alpha`` (``coef = y * alpha`` for the SVMs), so that averaged ``alpha`` and ``coef`` match.  ``None``
        (the default) says the blocks are coupled (a ranking problem's balance constraints, say) and cannot be
        sampled.
        """
        return None

    def capabilities(self) -> frozenset[InnerCapability]:
        """What this inner problem offers (:class:`InnerCapability`): ``SEPARABLE`` when the class overrides
        :meth:`split`; a subclass adds what it declares."""
        return frozenset({InnerCapability.SEPARABLE}) if type(self).split is not InnerProblem.split else frozenset()


class LossBlocks(InnerProblem):
    """One :class:`SampleLoss` problem per row of ``targets`` on the same combined kernel.

    ``targets`` of shape (n,) is one block (binary); of shape (T, n) it is T blocks (one-vs-rest problems or
    labels sharing the kernel weights), whose objectives add up.  The solution's ``coef`` has the shape of
    ``targets``, ``bias`` one entry per block, and ``alpha`` the loss's :meth:`~SampleLoss.dual_size` per block.
    """

    def __init__(self, loss: SampleLoss, targets: np.ndarray) -> None:
        self.loss = loss
        self.targets = np.asarray(targets, dtype=np.float64)
        if self.targets.ndim not in (1, 2):
            raise ValueError(f"targets must have shape (n,) or (T, n); got {self.targets.shape}")

    def solve(self, K: Any, alpha0: np.ndarray | None, tol: float) -> InnerSolution:
        if self.targets.ndim == 1:
            return self.loss.solve(K, self.targets, alpha0=alpha0, tol=tol)
        sols = [self.loss.solve(K, y, alpha0=None if alpha0 is None else alpha0[t], tol=tol)
                for t, y in enumerate(self.targets)]
        return InnerSolution(
            alpha=np.array([s.alpha for s in sols]), coef=np.array([s.coef for s in sols]),
            bias=np.array([s.bias for s in sols]),  # type: ignore[arg-type]
            dual_objective=float(sum(s.dual_objective for s in sols)),
            primal_objective=float(sum(s.primal_objective for s in sols)),
            n_iter=int(sum(s.n_iter for s in sols)),
        )

    @property
    def alpha_shape(self) -> tuple[int, ...]:
        return self.targets.shape[:-1] + (self.loss.dual_size(self.targets.shape[-1]),)

    def split(self) -> list[InnerProblem]:
        if self.targets.ndim == 1:
            return [self]
        return [LossBlocks(self.loss, y) for y in self.targets]

    def capabilities(self) -> frozenset[InnerCapability]:
        single = {InnerCapability.SINGLE_BLOCK} if self.targets.ndim == 1 else set()
        return super().capabilities() | {InnerCapability.LABELLED_BLOCKS} | single

    def linear_term(self, alpha: np.ndarray) -> float:
        if self.targets.ndim == 1:
            return self.loss.linear_term(alpha, self.targets)
        return float(sum(self.loss.linear_term(a, y) for a, y in zip(alpha, self.targets, strict=True)))

    def ray(self, alpha: np.ndarray) -> tuple[float, float, float] | None:
        if self.targets.ndim == 1:
            return self.loss.ray(alpha, self.targets)
        rays = [self.loss.ray(a, y) for a, y in zip(alpha, self.targets, strict=True)]
        if any(r is None for r in rays):
            return None
        # one scale for every block: the linear terms add up, the feasible scales intersect
        return (float(sum(r[0] for r in rays)), float(sum(r[1] for r in rays)),  # type: ignore[index]
                float(min(r[2] for r in rays)))  # type: ignore[index]

    def feasible_scale(self, alpha: np.ndarray) -> float | None:
        if self.targets.ndim == 1:
            return self.loss.feasible_scale(alpha, self.targets)
        # one scale for every block (the forms add up over the blocks): only when each is feasible as it is
        scales = [self.loss.feasible_scale(a, y) for a, y in zip(alpha, self.targets, strict=True)]
        return 1.0 if all(s == 1.0 for s in scales) else None


@attrs.define(slots=False)
class MKLProblem:
    """Everything an outer solver needs.

    ``stack`` provides ``combine(mu)`` and ``quad_forms(v)``; ``y`` holds the targets in {-1, +1}, shape (n,)
    for one binary problem or (T, n) for T problems that share the kernel weights (their objectives add up),
    or ``None`` when ``inner`` is given;
    ``warm_start`` may carry a previous :class:`MKLResult` (for example from the neighbouring point of a
    hyper-parameter grid).  ``inner`` replaces the default inner problem (``loss`` solved on each row of
    ``y``) by another one: a ranking or input-output kernel problem brings its own.

    Solvers talk to the inner problem only through :meth:`solve_inner`, :meth:`linear_term` and
    :meth:`quad_forms`, so they serve every task unchanged.

    Two settings choose how the shared outer loop computes, not what it computes:

    - ``ray_search``: when the certified lower bound is maximised along the ray ``s * alpha``: ``"infinite"``
      (the default) only where the plain bound at ``alpha`` is infinite, ``"always"``, or ``"never"``.  Searching
      always tightens finite bounds too, but its ~40 ``dual_bound`` evaluations per certificate make small fits
      slower for few saved iterations (docs/methods/gmkl.md).
    - ``one_pass``: whether an iteration reads a whole dense stack once (the products ``K_m v`` give the
      quadratic forms and the next solve's gradient, see :class:`multikernel.solve.outer.Evaluator`) where that
      applies; ``False`` combines, then forms the quadratic forms (two reads).

    ``keep_cuts`` asks a cutting-plane solver to return its last active cuts with the result
    (:attr:`MKLResult.cuts`), so that the next fit on the same stack and targets (a neighbouring ``C`` of a
    path) starts its model from them, rescaled into its own feasible set; off by default, since a fitted
    model need not hold them.
    """

    stack: KernelStack
    y: np.ndarray | None
    loss: SampleLoss | None
    regularizer: Regularizer
    tol: float = 1e-3
    max_iter: int = 100
    inner_tol: float = 1e-3
    stopping: str = "gap"  # "gap" (certified relative duality gap) or "relative_change" (authors' rule)
    warm_start: MKLResult | None = None
    callback: Callable[[dict[str, Any]], None] | None = None
    inner: InnerProblem | None = None
    ray_search: str = attrs.field(default="infinite", validator=attrs.validators.in_(("infinite", "always", "never")))
    one_pass: bool = True
    keep_cuts: bool = False

    def __attrs_post_init__(self) -> None:
        if self.inner is None:
            if self.loss is None or self.y is None:
                raise ValueError("an MKLProblem needs a loss and targets y, or an inner problem")
            self.inner = LossBlocks(self.loss, self.y)

    @property
    def block_shape(self) -> tuple[int, ...]:
        """Shape of ``alpha``: (n,) for one binary block, (T, n) for T blocks, the inner problem's own otherwise."""
        return self.inner.alpha_shape  # type: ignore[union-attr]

    def solve_inner(self, K: Any, alpha0: np.ndarray | None, tol: float) -> InnerSolution:
        """The inner solution on the combined kernel ``K``, warm-started at ``alpha0``."""
        return self.inner.solve(K, alpha0, tol)  # type: ignore[union-attr]

    def linear_term(self, alpha: np.ndarray) -> float:
        """``L(alpha)``, summed over the blocks."""
        return self.inner.linear_term(alpha)  # type: ignore[union-attr]

    def ray(self, alpha: np.ndarray) -> tuple[float, float, float] | None:
        """The inner problem's ray through ``alpha`` (:meth:`InnerProblem.ray`), or ``None``."""
        return self.inner.ray(alpha)  # type: ignore[union-attr]

    def feasible_scale(self, alpha: np.ndarray) -> float | None:
        """The inner problem's :meth:`InnerProblem.feasible_scale` of ``alpha``."""
        return self.inner.feasible_scale(alpha)  # type: ignore[union-attr]

    def quad_forms(self, coef: np.ndarray, kernels: np.ndarray | None = None) -> np.ndarray:
        """``q_m = sum_t c_t' K_m c_t`` over the coefficient blocks (all kernels, or only ``kernels``)."""
        coef = np.asarray(coef)
        if coef.ndim == 1:
            return self.stack.quad_forms(coef, kernels)
        return np.sum([self.stack.quad_forms(c, kernels) for c in coef], axis=0)


@attrs.define(slots=False)
class MKLResult:
    """The outcome of an outer solve.

    ``objective`` is the primal objective at ``weights`` (an upper bound of the optimum),
    ``lower_bound`` the best certified lower bound found, and ``dual_gap`` their difference relative to
    ``max(|objective|, 1e-12)``.  ``interrupted`` is True when Ctrl-C stopped the solve: the weights are then
    the best found so far (and a :class:`~multikernel.errors.FitInterruptedWarning` was issued).
    """

    weights: np.ndarray
    alpha: np.ndarray
    coef: np.ndarray
    bias: float | np.ndarray
    objective: float
    lower_bound: float
    dual_gap: float
    n_iter: int
    converged: bool
    history: list[dict[str, float]] = attrs.Factory(list)
    interrupted: bool = False
    #: A cutting-plane solver's last active cuts, with ``MKLProblem(keep_cuts=True)`` (else ``None``).
    cuts: Any = attrs.field(default=None, repr=False, eq=False)


class Solver(Component, abc.ABC):
    """An outer loop over the kernel weights.

    Attributes
    ----------
    requires : frozenset of multikernel.core.capabilities.Capability
        What the solver calls on the regularizer beyond ``check``, ``initial``, ``penalty`` and
        ``dual_bound`` (for example ``{Capability.PROJECTION}``).  Building a method checks it against the
        regularizer (:func:`multikernel.core.capabilities.check_compatible`).
    replaces_objective : str or None
        ``None`` for a solver of the problem's objective ``F = Omega + J``; else what the solver computes instead
        (:func:`multikernel.core.capabilities.replaced_objective`), so that comparisons on ``F`` leave it out.
    requires_inner : frozenset of InnerCapability
        What the solver needs of the inner problem (for example ``{InnerCapability.SEPARABLE}`` to sample its
        blocks); checked by :meth:`check_parts`.
    loss_forms : frozenset of str or None
        The sample losses' ``form`` the solver can solve (``{"csvc"}`` for SMO-MKL's joint SMO); ``None`` for any.
        Checked where a method's parts are built and by :meth:`check_parts`.
    samples_blocks : bool
        The solver samples the blocks of one shared-weight problem (ML-MKL-SA): with one weight vector per block
        (one-vs-rest) there is nothing to sample, so the estimator refuses that combination.
    """

    requires: ClassVar[frozenset[str]] = frozenset()
    replaces_objective: ClassVar[str | None] = None
    requires_inner: ClassVar[frozenset[InnerCapability]] = frozenset()
    loss_forms: ClassVar[frozenset[str] | None] = None
    samples_blocks: ClassVar[bool] = False

    @abc.abstractmethod
    def solve(self, problem: MKLProblem) -> MKLResult:
        """Minimise the MKL objective of ``problem``; stop on ``problem.tol`` or ``problem.max_iter``.

        The first call of every implementation is :meth:`check_parts`.
        """

    def check_parts(self, problem: MKLProblem) -> None:
        """Raise if ``problem``'s regularizer lacks a capability in :attr:`requires`, its inner problem one in
        :attr:`requires_inner`, or its loss is not of :attr:`loss_forms`.

        Building a method checks the regularizer and the loss at once; this guards a solver called directly on a
        problem, so that no solver repeats these tests in its own checks.

        Raises
        ------
        multikernel.core.capabilities.IncompatiblePartsError
            Naming what is missing and the registered solvers that would work.
        """
        from multikernel.core.capabilities import check_compatible, check_inner  # (capabilities imports this module)

        check_compatible(problem.regularizer, self)
        check_inner(problem.inner, self)


# --------------------------------------------------------------------------------------------------
# Methods: named presets
# --------------------------------------------------------------------------------------------------
@attrs.define(frozen=True)
class Method:
    """A named preset: a loss, a regularizer and a solver, each by registered name with parameters.

    A config or an estimator names a method and may override any of its parts; the parts' parameters
    given here are the method's defaults.
    """

    name: str
    summary: str
    loss: str
    regularizer: str
    solver: str
    loss_params: dict[str, Any] = attrs.Factory(dict)
    regularizer_params: dict[str, Any] = attrs.Factory(dict)
    solver_params: dict[str, Any] = attrs.Factory(dict)
    citation: str = ""
