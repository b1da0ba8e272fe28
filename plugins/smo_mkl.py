"""SMO-MKL: lp-norm MKL solved by SMO over ``alpha`` alone (Vishwanathan, Sun, Theera-Ampornpunt and Varma,
"Multiple Kernel Learning and the SMO Algorithm", NIPS 2010).

For the lp ball ``D = {mu >= 0, ||mu||_p <= 1}`` with ``p > 1`` the inner maximum over the weights has a
closed form: ``max_{mu in D} mu'q/2 = ||q||_{p*}/2`` (``1/p + 1/p* = 1``), attained at
``mu_m = (q_m / ||q||_{p*})^{p*-1}``.  The MKL problem is then the single smooth concave maximisation

    max_alpha  1'alpha - 1/2 ||q(alpha)||_{p*},    0 <= alpha <= C,  y'alpha = 0,

which :mod:`multikernel._ext._smo_mkl` solves by SMO over pairs, with a safeguarded one-dimensional Newton
step per pair (the objective along a pair is not quadratic) -- no SVM solve and no combined kernel in the
steps, O(M n) each.  Its value at any feasible ``alpha`` *is* the outer loop's certified lower bound; the upper
bound is the C-SVC primal at ``mu(alpha)`` with the best bias, so the result carries the same certified
duality gap as every other solver.  That primal is tight only once every point satisfies its KKT condition
closely, long after the dual value has converged; on a stack held in memory a round of steps whose own bound
misses ``tol`` is therefore certified by the C-SVC at ``mu(alpha)``, warm-started at ``alpha`` (one combined
kernel and one warm-started SVM per round; ``SMOMKL(svm_bounds=False)`` for the steps alone).

Correspondence with the paper's parametrisation.  The paper regularises by ``lambda/2 ||d||_p^2`` (Tikhonov)
where the library bounds ``||mu||_p <= 1`` (Ivanov); its dual is ``1'alpha - ||q||_{p*}^2 / (8 lambda)``
with ``d_m = ||q||_{p*} (q_m/||q||_{p*})^{p*-1} / (2 lambda)``.  If ``(alpha, d, b)`` solves the paper's
problem at ``(C, lambda)``, then with ``rho = ||d||_p = ||q(alpha)||_{p*} / (2 lambda)`` the library's lp-MKL
at ``C' = rho C`` is solved by ``mu = d / rho``, ``alpha' = rho alpha`` and the same bias: the same decision
function.  Both problems form one-parameter families (only ``C / lambda`` matters in the paper's), so the
regularisation paths coincide; the map from ``C'`` to ``lambda`` is implicit (it goes through the solution).
:func:`solve_lp_dual` solves either form (``lam=None``: the library's).
"""

from __future__ import annotations

import math

import numpy as np

from multikernel._ext import _smo_mkl, _stack
from multikernel.core.capabilities import Capability
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerCapability, InnerSolution, Method, MKLProblem, MKLResult, Solver
from multikernel.solve.outer import OuterLoop, start_point
from multikernel.solve.smo import QPResult
from multikernel.solve.svm import InnerQP, inner_solution
from multikernel.stack.combination import CombinedKernel
from multikernel.stack.storage import DenseStack, KernelStack

__all__ = ["SMOMKL", "lp_weights", "solve_lp_dual", "KKT_FLOOR"]

#: The finest KKT tolerance of the SMO steps.  Finer than the inner SVMs' floor
#: (:data:`~multikernel.solve.outer.INNER_TOL_FLOOR`): at large C a KKT violation of 1e-9 still leaves relative
#: gaps near 1e-7, and the steps here cost O(M n), not a kernel combination.
KKT_FLOOR = 1e-12
#: Growth of the steps per round after a round that ended at its step limit.
ROUND_GROWTH = 1.1


class _SMOLoop(OuterLoop):
    """The shared loop, with advice that fits SMO-MKL: its iterate *is* the inner solution, so the inner gap
    is the whole gap, and more steps (not a tighter inner tolerance) is what helps."""

    def _advice(self, stalled: bool, solver: str) -> str:
        if stalled:
            return "increase tol, or use 'bcd' for this problem"
        return ("increase max_iter (rounds of SMO steps; each round is 10% longer than the last) or tol; at large C "
                "SMO needs many steps, and 'bcd' may need fewer SVM solves")


def _dual_exponent(p: float) -> float:
    """``p* = p / (p - 1)`` for ``1 < p <= inf``."""
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def lp_weights(q: np.ndarray, p: float) -> tuple[float, np.ndarray]:
    """``N = ||q||_{p*}`` and the lp-ball weights ``mu_m = (q_m / N)^{p*-1}`` that attain ``mu'q = N``.

    ``q = 0`` gives the uniform point of the unit sphere, ``M^{-1/p}``.
    """
    q = np.maximum(np.asarray(q, dtype=np.float64), 0.0)
    r = _dual_exponent(p)
    top = float(q.max()) if q.size else 0.0
    if top <= 0.0:
        return 0.0, np.full(len(q), 1.0 if math.isinf(p) else len(q) ** (-1.0 / p))
    if r == 1.0:
        return float(q.sum()), np.ones(len(q))
    N = top * float(np.sum((q / top) ** r)) ** (1.0 / r)
    return N, (q / N) ** (r - 1.0)


class _DenseRows:
    """The kernels of an in-memory (or memory-mapped) stack, read by the Cython loop in place."""

    fetch = None

    def __init__(self, K: np.ndarray) -> None:
        if K.ndim != 3 or K.shape[1] != K.shape[2]:
            raise ValueError("smo_mkl needs the square training stack")
        self.buffer = K
        self.diag = np.ascontiguousarray(np.diagonal(K, axis1=1, axis2=2), dtype=np.float64)

    def products(self, coef: np.ndarray) -> np.ndarray:
        """``U[m] = K_m coef`` for every kernel, over the support of ``coef`` only, in float64."""
        # The stack's own product loop: whole contiguous rows of the support (the kernels are symmetric).
        U = np.empty((self.buffer.shape[0], self.buffer.shape[1]))
        _stack.products_dense(self.buffer, np.ascontiguousarray(coef, dtype=np.float64),
                              np.flatnonzero(coef).astype(np.intp), np.arange(self.buffer.shape[0], dtype=np.intp), U)
        return U


class _CachedRows:
    """The rows of every kernel of a stack that is not held in memory (a lazy stack), computed when a step
    needs them (:meth:`~multikernel.stack.storage.KernelStack.kernel_rows`) and kept in a least-recently-used
    cache of ``stack.cache_size`` megabytes (at least two rows).  One row holds ``M n`` values, so a fit needs
    O(M n) memory beside the cache, whatever the size of the kernels.

    The Cython loop owns the slots (``slot_of``, ``owner``, ``stamp``, ``clock``); it calls the object with
    an index and a slot to fill.  An error (Ctrl-C included) is kept in :attr:`error` and re-raised by the
    caller once the loop has stopped.
    """

    def __init__(self, stack: KernelStack) -> None:
        M, n = stack.n_kernels, stack.n_rows
        self.stack = stack
        cache_bytes = float(getattr(stack, "cache_size", 200.0)) * 2**20
        slots = int(min(n, max(2, cache_bytes // (8 * M * n))))
        self.buffer = np.empty((slots, M, n))
        self.diag = np.ascontiguousarray(stack.diag(), dtype=np.float64)
        self.slot_of = np.full(n, -1, dtype=np.intp)
        self.owner = np.full(slots, -1, dtype=np.intp)
        self.stamp = np.zeros(slots, dtype=np.int64)
        self.clock = 0
        self.error: BaseException | None = None
        # Rows per kernel_rows call when products are formed: blocks of about block_bytes.
        self._chunk = max(1, int(getattr(stack, "block_bytes", 256 * 2**20)) // (8 * M * n))

    @property
    def fetch(self) -> _CachedRows:
        return self

    def __call__(self, index: int, slot: int) -> bool:
        try:
            self.buffer[slot] = self.stack.kernel_rows([index])[:, 0, :]
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller, outside the Cython loop
            self.error = exc
            return False
        return True

    def products(self, coef: np.ndarray) -> np.ndarray:
        """``U[m] = K_m coef`` for every kernel, from the rows of the support of ``coef`` (symmetric kernels)."""
        support = np.flatnonzero(coef)
        U = np.zeros((self.stack.n_kernels, self.stack.n_rows))
        for start in range(0, len(support), self._chunk):
            rows = support[start:start + self._chunk]
            U += np.einsum("mln,l->mn", self.stack.kernel_rows(rows), coef[rows])
        return U


def _kernel_rows(stack: KernelStack) -> _DenseRows | _CachedRows:
    """How the SMO steps read the kernels: in place for a dense or memory-mapped stack (a subset view is
    copied once), through the row cache for any other stack."""
    if stack.n_rows != stack.n_cols:
        raise ValueError("smo_mkl needs the square training stack")
    if isinstance(stack, DenseStack):
        return _DenseRows(stack.materialize().data)
    return _CachedRows(stack)


def _best_bias(f: np.ndarray, y: np.ndarray, C: np.ndarray) -> float:
    """The bias minimising ``sum_i C_i max(0, 1 - y_i (f_i + b))``: a weighted median of ``y_i - f_i``.

    The slope in ``b`` just above the k-th smallest breakpoint is ``C`` of the negatives up to it minus ``C``
    of the positives after it; the minimum is at the first breakpoint where it turns non-negative.
    """
    beta = y - f
    order = np.argsort(beta, kind="stable")
    neg = np.where(y[order] < 0, C[order], 0.0)
    pos = np.where(y[order] > 0, C[order], 0.0)
    slope = np.cumsum(neg) - (pos.sum() - np.cumsum(pos))
    k = int(np.argmax(slope >= 0.0))
    return float(beta[order[k]])


class _State:
    """The SMO-MKL iterate: ``alpha``, ``U = [K_m (y*alpha)]``, its part ``Ubar`` from the variables at their
    upper bound, the active set of the shrinking and the Cython loop's work buffers."""

    def __init__(self, rows: _DenseRows | _CachedRows, y: np.ndarray, C: np.ndarray, alpha: np.ndarray, p: float,
                 lam: float | None, shrinking: bool = True) -> None:
        self.rows, self.y, self.C, self.p = rows, y, C, p
        self.r = _dual_exponent(p)
        # The objective 1'a - c N^s: the library's lp ball (s = 1), or the paper's squared norm (s = 2).
        self.s, self.c = (1, 0.5) if lam is None else (2, 1.0 / (8.0 * lam))
        self.shrinking = bool(shrinking)
        self.alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        self.active = np.ones(len(y), dtype=np.uint8)
        self.exact = False  # whether U holds products recomputed from the stack since the last step
        self.pending: np.ndarray | None = None  # a better alpha (of an SVM bound), adopted by the next run
        self.refresh()
        self.q = np.zeros(rows.diag.shape[0])
        self.F = np.zeros(len(y))
        self.n_steps = 0
        self.newton_iterations = 0
        self.cache_misses = 0

    def refresh(self) -> None:
        """``U`` and ``Ubar`` recomputed from the kernels (removes the rounding of the incremental updates);
        ``Ubar`` only serves the shrinking (the steps neither read nor update it otherwise)."""
        coef = self.y * self.alpha
        self.U = np.ascontiguousarray(self.rows.products(coef))
        self.Ubar = (np.ascontiguousarray(self.rows.products(np.where(self.alpha >= self.C, coef, 0.0)))
                     if self.shrinking else np.zeros_like(self.U))
        self.exact = True

    def dual(self, alpha: np.ndarray, q: np.ndarray) -> float:
        """The objective ``1'alpha - c ||q||_{p*}^s`` maximised by the steps, at ``alpha`` with forms ``q``."""
        return float(np.sum(alpha)) - self.c * lp_weights(q, self.p)[0] ** self.s

    def svm_bounds(self, problem: MKLProblem, loop: OuterLoop, K: np.ndarray) -> tuple[InnerSolution, np.ndarray]:
        """The C-SVC on the combined kernel ``K = K(mu(alpha))``, warm-started at ``alpha``, and the forms
        ``q`` of its solution (recomputed from the stack).

        Its primal objective is an upper bound at ``mu(alpha)`` that is tight once the SVM has converged,
        however far ``alpha`` itself is from satisfying the KKT conditions (the primal from ``alpha`` alone
        needs a small KKT violation at every point); with ``q`` its ``alpha`` gives a lower bound too.  The
        SVM is solved at the loop's inner tolerance, tightened at once (warm-started re-solves on the same
        ``K``) while its own gap is a large part of ``tol``.  When its ``alpha`` has the higher objective,
        the next steps start from it (:attr:`pending`: its products ``U`` are only formed if the solve goes
        on, the forms ``q`` read just the upper triangles of the support).
        """
        sol = problem.solve_inner(K, self.alpha.copy(), loop.inner_tol)
        while (sol.primal_objective - sol.dual_objective > 0.25 * problem.tol * max(abs(sol.primal_objective), 1e-12)
               and loop.tighten_inner_tol()):
            sol = problem.solve_inner(K, sol.alpha, loop.inner_tol)
        q = problem.quad_forms(sol.coef)
        alpha = np.asarray(sol.alpha, dtype=np.float64)
        if (np.array_equal(np.clip(alpha, 0.0, self.C), alpha)
                and self.dual(alpha, q) > self.dual(self.alpha, self.U @ (self.y * self.alpha))):
            self.pending = np.array(alpha)
        return sol, q

    def run(self, eps: float, max_steps: int) -> tuple[float, bool]:
        """At most ``max_steps`` SMO steps, stopping at KKT violation ``eps``: (violation, converged)."""
        if self.pending is not None:
            self.alpha, self.pending = np.ascontiguousarray(self.pending), None
            self.active[:] = 1
            self.refresh()
        steps, violation, converged, interrupted, newton, misses, failed = _smo_mkl.solve(
            self.rows.buffer, self.rows.diag, self.y, self.C, self.alpha, self.U, self.Ubar, self.q, self.F,
            self.active, self.r, self.c, self.s, eps, max_steps, self.shrinking, self.rows.fetch)
        self.n_steps += steps
        self.exact = self.exact and steps == 0
        self.newton_iterations += newton
        self.cache_misses += misses
        if failed:
            error, self.rows.error = self.rows.error, None
            raise error if error is not None else RuntimeError("the kernel row cache failed")
        if interrupted:
            raise KeyboardInterrupt(f"SMO-MKL interrupted after {self.n_steps} steps")
        return violation, converged

    def evaluate(self, qp: InnerQP) -> tuple[np.ndarray, InnerSolution, np.ndarray]:
        """The weights ``mu(alpha)``, the C-SVC solution at ``mu`` (both objectives) and ``q(alpha)``.

        ``f = K(mu) coef = sum_m mu_m U[m]``; the primal uses the best bias for ``f``, so it is the C-SVC
        primal objective at the classifier ``(mu, coef, b)``: an upper bound of the MKL optimum.
        """
        coef = self.y * self.alpha
        q = self.U @ coef
        _, mu = lp_weights(q, self.p)
        f = mu @ self.U
        b = _best_bias(f, self.y, self.C)
        res = QPResult(alpha=self.alpha.copy(), objective=math.nan, gradient=self.y * f - 1.0, bias=b, rho=0.0,
                       kkt_violation=math.nan, n_iter=self.n_steps, converged=True)
        return mu, inner_solution(qp, res, len(coef)), q


def _feasible(alpha: np.ndarray, y: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``alpha`` clipped to ``[0, C]`` with the larger class total scaled down so that ``y'alpha = 0``."""
    a = np.clip(np.asarray(alpha, dtype=np.float64), 0.0, C)
    pos, neg = float(a[y > 0].sum()), float(a[y < 0].sum())
    if pos > neg:
        a[y > 0] *= neg / pos
    elif neg > pos:
        a[y < 0] *= pos / neg
    return a


def _meets(loop: OuterLoop, mu: np.ndarray, sol: InnerSolution, q: np.ndarray) -> bool:
    """Whether the bounds of a point, offered to ``loop`` (not recorded as an iteration), meet ``tol``."""
    loop.offer(mu, sol, q)
    return loop.met


def _csvc_blocks(problem: MKLProblem) -> tuple[np.ndarray, np.ndarray, InnerQP]:
    """Labels, per-sample ``C`` and the C-SVC inner problem (of one binary block: the solver's declared
    ``requires_inner`` and ``loss_forms``, checked by ``check_parts``)."""
    inner = problem.inner
    qp = inner.loss.problem(inner.targets)
    y = np.asarray(qp.y, dtype=np.float64)
    C = np.ascontiguousarray(np.broadcast_to(np.asarray(qp.upper, dtype=np.float64), y.shape))
    return y, C, qp


def _check_p(p: float) -> float:
    if not p > 1.0:
        raise ValueError(f"smo_mkl needs p > 1 (the weights are a smooth function of alpha only then); got "
                         f"p={p!r}. For p = 1 (L1-MKL) use the 'level', 'reduced_gradient' or 'bcd' solver")
    return float(p)


class SMOMKL(Solver):
    """SMO-MKL (Vishwanathan et al. 2010): lp-MKL (``p > 1``) by SMO on the dual over ``alpha`` alone.

    The weights are the closed-form function ``mu_m(alpha) = (q_m/||q||_{p*})^{p*-1}`` of ``alpha``, and the
    dual ``1'alpha - ||q(alpha)||_{p*}/2`` is maximised by SMO over pairs ``(i, j)``, chosen by the
    second-order rule, with a safeguarded one-dimensional Newton step (see :mod:`multikernel._ext._smo_mkl`).
    Every ``steps_per_round`` steps (one outer "iteration") the iterate is certified by
    :class:`~multikernel.solve.outer.OuterLoop` -- lower bound ``1'alpha - dual_bound(q/2)``, upper bound the
    C-SVC primal at ``mu(alpha)`` with the best bias, or that of the C-SVC solved at ``mu(alpha)`` (see
    ``svm_bounds``) -- so ``tol``, ``max_iter`` (rounds), the warning that
    states the gap reached and Ctrl-C (the best certified iterate) behave as for every solver.  A round stops
    early when the KKT violation is below the inner tolerance; the tolerance is tightened (down to
    :data:`KKT_FLOOR`) while the certified gap is above ``tol``; a round that ends at its step limit makes the
    next one 10% longer, so ``max_iter`` rounds cover the tens of thousands of steps that degenerate problems
    at large C need.  The final
    iterate is certified again from kernel products recomputed from the stack.

    Warm start: ``warm_start.alpha`` (made feasible), else an SVM at the warm weights (projected onto the lp
    ball), else ``alpha = 0``.  Needs the regularizer ``lp_ball`` (or ``l2_ball``) with ``p > 1`` and the
    ``csvc`` loss on one binary problem.

    Large problems (Vishwanathan et al.'s "scalable" part): with ``shrinking=True`` the steps work on an active set
    (libsvm's rule: variables at a bound that satisfy their KKT condition strictly leave it; the gradient is
    rebuilt and every variable checked before the solve stops, so the certificate is unchanged), applied only
    when the steps it saves outweigh the rebuild.  A dense or memory-mapped stack is read in place; any other
    stack (a lazy one) is read through a least-recently-used cache of rows of every kernel
    (``KernelStack.kernel_rows``) of the stack's ``cache_size`` megabytes, so memory stays O(M n) beside it.

    Parameters
    ----------
    steps_per_round : int, optional
        SMO steps between two certificates (one outer iteration); by default a quarter of the number of
        training points (at least 50).  A certificate costs O(M n), about one step.
    shrinking : bool, default=False
        Shrink the active set of the SMO steps (the optimum does not depend on it).  Off by default: the
        shared stack cannot be reordered as libsvm reorders its cache, so the steps on a shrunk set gather
        scattered entries of the same rows, and with the rebuilds it was 3-28 % slower in every case
        measured on the lp problems of ``benchmarks/bench_solvers.py``.
    p1_solver : str or None, default="bcd"
        The registered solver that :meth:`solve` hands a problem with ``p = 1`` to (L1-MKL: the weights are
        not a function of ``alpha`` there), so that one solver serves a grid over ``p`` that includes 1 (the
        soft margin protocol's Lp-MKL); ``None`` refuses ``p = 1``.
    svm_bounds : bool, default=True
        On a dense (in-memory or memory-mapped) stack, after every round whose own certificate misses
        ``tol``, form the combined kernel at ``mu(alpha)`` and solve the C-SVC there, warm-started at
        ``alpha`` and at the loop's inner tolerance: its primal objective is the upper bound of that round,
        its ``alpha`` a lower bound, and the steps continue from it when its objective is higher.  The primal
        from ``alpha`` alone is tight only once every point satisfies its KKT condition closely (heart, 182
        kernels, C = 10, p = 2: the dual value was within 2.3e-4 of the optimum after 231 steps, the primal
        bound reached gap 1e-3 after 676).  Costs one combined kernel
        (a read of the stack) and one warm-started SVM per round.  ``False``: no combined kernel is ever
        formed (nor for a lazy stack, whatever this says); the certified gap is exact either way.
    """

    name = "smo_mkl"
    requires = frozenset({Capability.LP_BALL})
    requires_inner = frozenset({InnerCapability.LABELLED_BLOCKS, InnerCapability.SINGLE_BLOCK})
    loss_forms = frozenset({"csvc"})

    def __init__(self, steps_per_round: int | None = None, shrinking: bool = False, svm_bounds: bool = True,
                 p1_solver: str | None = "bcd") -> None:
        self.steps_per_round = steps_per_round
        self.shrinking = shrinking
        self.svm_bounds = svm_bounds
        self.p1_solver = p1_solver

    def _p1(self, problem: MKLProblem) -> Solver | None:
        """The solver of a ``p = 1`` problem (``None`` when ``p > 1``); ValueError when there is none."""
        if float(problem.regularizer.p) != 1.0:
            return None
        if self.p1_solver is None or self.p1_solver == self.name:
            _check_p(1.0)
        from multikernel.core.registry import get_registry  # the registry loads this plugin

        return get_registry().create("solver", self.p1_solver)

    def check(self, problem: MKLProblem) -> None:
        reg = problem.regularizer  # its domain is the lp ball: solve's check_parts (LP_BALL)
        reg.check(problem.stack.n_kernels)
        if self._p1(problem) is None:
            _check_p(float(reg.p))
        if self.steps_per_round is not None and not (
                isinstance(self.steps_per_round, int | np.integer) and self.steps_per_round >= 1):
            raise ValueError(f"steps_per_round must be a positive integer or None; got {self.steps_per_round!r}")
        for name in ("shrinking", "svm_bounds"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}")

    def solve(self, problem: MKLProblem) -> MKLResult:
        self.check_parts(problem)
        other = self._p1(problem)
        if other is not None:
            return other.solve(problem)
        self.check(problem)
        y, C, qp = _csvc_blocks(problem)
        rows = _kernel_rows(problem.stack)
        n = len(y)
        per_round = self.steps_per_round or max(n // 4, 50)
        loop = _SMOLoop(problem)
        # The combined kernel only for a stack in memory (a lazy one would be read in full every round).
        combined = CombinedKernel(problem.stack) if self.svm_bounds and isinstance(rows, _DenseRows) else None
        converged = interrupted = False
        reason = None
        try:
            state = _State(rows, y, C, self._start(problem, y, C), float(problem.regularizer.p), None,
                           self.shrinking)

            def certify() -> tuple[bool, bool]:
                """Record the iterate's certificate (with the SVM bounds when its own misses tol): whether
                it meets tol, and whether its forms were computed from the stack (not the steps' U)."""
                mu, sol, q = state.evaluate(qp)
                # Not at alpha = 0 (a cold start): an SVM at the start weights costs more than it saves.
                if combined is not None and state.alpha.any() and not _meets(loop, mu, sol, q):
                    sol, q = state.svm_bounds(problem, loop, combined(mu))
                    return loop.record(mu, sol, q), True
                return loop.record(mu, sol, q), state.exact

            met, _ = certify()  # the starting point's certificate (U is exact there)
            eps = loop.inner_tol
            while not met and loop.n_iter < problem.max_iter:
                # The loop tightens its inner tolerance when the gap at mu(alpha) is large against tol.
                eps = min(eps, loop.inner_tol)
                _, kkt_met = state.run(eps, int(per_round))
                if not kkt_met:
                    # Rounds grow while the steps run to their limit: degenerate problems at large C take tens
                    # of thousands of steps (as the inner SMO does on them), and max_iter counts rounds.
                    per_round *= ROUND_GROWTH
                met, exact = certify()
                if met and not exact:
                    # Certify again from kernel products recomputed from the stack.
                    state.refresh()
                    met = loop.record(*state.evaluate(qp))
                if not met and kkt_met:
                    if eps <= KKT_FLOOR:
                        reason = (f"the SMO steps reached the finest KKT tolerance ({KKT_FLOOR:g}) without "
                                  "closing the gap")
                        break
                    eps = max(0.1 * eps, KKT_FLOOR)
            converged = met or loop.met
        except KeyboardInterrupt:
            interrupted = True
        res = loop.result(converged, interrupted, reason, solver=self.name)
        return res

    @staticmethod
    def _start(problem: MKLProblem, y: np.ndarray, C: np.ndarray) -> np.ndarray:
        warm = problem.warm_start
        if warm is None:
            return np.zeros(len(y))
        if np.shape(warm.alpha) == (len(y),):
            return _feasible(warm.alpha, y, C)
        mu, _ = start_point(problem)
        sol = problem.solve_inner(CombinedKernel(problem.stack)(mu), None, problem.inner_tol)
        return _feasible(sol.alpha, y, C)


def solve_lp_dual(Ks: np.ndarray, y: np.ndarray, C: float | np.ndarray, p: float, lam: float | None = None,
                  eps: float = 1e-8, max_steps: int = 10**6, alpha0: np.ndarray | None = None,
                  shrinking: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """SMO-MKL on a kernel array: the library's lp-MKL dual, or the paper's squared-norm form.

    Parameters
    ----------
    Ks : ndarray of shape (M, n, n)
        The kernels.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The cost.
    p : float
        ``p > 1`` (``inf`` allowed).
    lam : float, optional
        ``None``: maximise ``1'alpha - ||q||_{p*}/2`` (weights ``mu`` in the unit lp ball).  A positive
        number: the paper's ``1'alpha - ||q||_{p*}^2/(8 lam)`` (weights ``d = ||q||_{p*} mu / (2 lam)``).
    eps : float
        KKT tolerance of the SMO.
    max_steps : int
        Step limit.
    alpha0 : ndarray of shape (n,), optional
        Starting point (made feasible).
    shrinking : bool
        Shrink the active set (see :class:`SMOMKL`); the result does not depend on it beyond ``eps``.

    Returns
    -------
    alpha : ndarray of shape (n,)
    weights : ndarray of shape (M,)
        ``mu`` (``lam=None``) or the paper's ``d``.
    bias : float
        The best bias of the decision function ``sum_m weights_m K_m (y*alpha) + b``.
    """
    Ks = np.ascontiguousarray(Ks)
    if Ks.dtype not in (np.float32, np.float64):
        Ks = Ks.astype(np.float64)
    if Ks.ndim != 3 or Ks.shape[1] != Ks.shape[2]:
        raise ValueError(f"Ks must have shape (M, n, n); got {Ks.shape}")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (Ks.shape[1],) or not np.isin(y, (-1.0, 1.0)).all() or not ((y > 0).any() and (y < 0).any()):
        raise ValueError(f"y must hold labels -1 and +1 (both classes) for the {Ks.shape[1]} points")
    Cv = np.ascontiguousarray(np.broadcast_to(np.asarray(C, dtype=np.float64), y.shape))
    if not (np.isfinite(Cv).all() and (Cv > 0).all()):
        raise ValueError(f"C must be positive and finite; got {C!r}")
    p = _check_p(float(p))
    if lam is not None and not (float(lam) > 0 and math.isfinite(lam)):
        raise ValueError(f"lam must be a positive number or None; got {lam!r}")
    start = np.zeros(len(y)) if alpha0 is None else _feasible(alpha0, y, Cv)
    state = _State(_DenseRows(Ks), y, Cv, start, p, lam, shrinking)
    state.run(eps, max_steps)
    state.refresh()
    coef = y * state.alpha
    q = state.U @ coef
    N, mu = lp_weights(q, p)
    weights = mu if lam is None else N * mu / (2.0 * lam)
    return state.alpha, weights, _best_bias(weights @ state.U, y, Cv)


METHOD = Method(
    name="smo_mkl",
    summary="Lp-MKL (default p = 4/3) by SMO-MKL: SMO over alpha with the weights in closed form, SVMs only to "
            "certify.",
    loss="csvc", regularizer="lp_ball", solver="smo_mkl", regularizer_params={"p": 4.0 / 3.0},
    citation="Vishwanathan, Sun, Theera-Ampornpunt and Varma, Multiple Kernel Learning and the SMO Algorithm, "
             "NIPS 2010; Kloft, Brefeld, Sonnenburg and Zien, JMLR 12:953-997, 2011 (lp-MKL).",
)


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {SMOMKL.name: SMOMKL}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {METHOD.name: METHOD}
