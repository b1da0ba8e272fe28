"""ML-MKL-SA: multi-class and multi-label MKL with shared kernel weights by stochastic approximation.

Bucak, Jin and Jain, "Multi-label Multiple Kernel Learning by Stochastic Approximation", NIPS 2010; Bucak's
thesis, chapter 3 (spec: ``bucak-thesis-mkl-multilabel-ranking.md`` section 3).

The ``T`` blocks (labels, or one-vs-rest classes) share one weight vector on the simplex and their objectives
add up (the sum form, ML-MKL-Sum, eq. 3.1-3.2):

    min_{mu in simplex}  F(mu) = Omega(mu) + sum_t G_t(mu),
    G_t(mu) = max_{alpha_t} L_t(alpha_t) - 1/2 sum_m mu_m q_m(alpha_t),   q_m(alpha_t) = c_t' K_m c_t.

A deterministic solver pays ``T`` SVM solves per iteration (one gradient ``-1/2 sum_t q(alpha_t)``).  ML-MKL-SA
samples ONE block ``a`` per step (uniformly: the sum form is the thesis's ``L(beta, gamma)`` with ``gamma``
frozen at ``1/T``), solves its SVM on ``K(mu)`` from that block's last ``alpha``, and takes an entropic
mirror-descent (exponentiated-gradient) step with the unbiased estimate of the gradient (eq. 3.8, with the
importance weight ``1/p_a = T``; Proposition 1)

    g = -T/2 q(alpha_a) + grad Omega(mu),        mu <- mu exp(-eta_t g) / Z,

so a step costs one SVM solve and one pass over the stack, independent of ``T``.  The weights returned are an
average of the iterates (eq. 3.10).  ``gradient="aggregated"`` (the default) replaces the thesis's estimate by
the SAGA one, ``-1/2 (sum_t q(alpha_t^old) + T (q(alpha_a) - q(alpha_a^old)))``, also unbiased, whose variance
vanishes as the iterates settle.

**Certification.**  The thesis stops on heuristics; here the answer carries the same certified duality gap as
every other solver of the sum form (:class:`~multikernel.solve.outer.OuterLoop`): every ``certify_every``
epochs (an epoch is ``T`` sampled steps, the SVM solves of one iteration of a deterministic solver) all blocks
are solved at the average ``mu_bar`` of the iterates since the previous certification (weighted by the step
sizes), which gives the upper bound ``F(mu_bar)`` and, from those ``alpha``, the lower bound
``L(alpha) - dual_bound(q(alpha)/2)``, and the blocks' ``alpha`` averaged over the round give another one
(the bound is concave in ``alpha``); sampling then restarts from ``mu_bar`` with a fresh step schedule
(restarted mirror descent: the average forgets the early iterates far from the optimum, and the steps do not
shrink for ever).  Between certifications the lower bound is also evaluated
from the last ``alpha`` of every block: ``q_m(alpha_t)`` does not depend on the weights, so it is free.  The
solve stops when the gap is below ``tol``; ``max_iter`` counts epochs, so it compares with the iterations of
the deterministic solvers at equal SVM solves.

**Step sizes.**  The thesis uses a constant step (``eta = 0.01`` on Caltech 101, ``0.001`` on VOC and ImageNet,
``eta_beta = eta_gamma``), which depends on the scale of the kernels, ``C`` and ``n``.  ``step="constant"``
is that rule; the default ``step="auto"`` is the scale-free rule of stochastic mirror descent on the
simplex, ``eta_t = eta sqrt(2 ln M / t) / R_t`` with ``R_t`` the largest spread ``max_m g_m - min_m g_m``
of a stochastic gradient so far (the entropic step does not change when a constant is added to ``g``).

**Not implemented.**  The thesis's worst-class formulation (eq. 3.3-3.5: ``gamma`` updated by exponentiated
gradient ascent on the smoothed simplex, sampling from ``gamma_hat``) solves a different problem from the sum
form (``max_t`` instead of ``sum_t`` of the block objectives); this solver is the sum form's, so that its
answer is certified by, and equal within ``tol`` to, the deterministic solvers' optimum.  With ``T = 1`` it is
deterministic exponentiated-gradient L1-MKL (the special case ``m = 1`` of the spec).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.utils import check_random_state

from multikernel.core.capabilities import Capability
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import InnerProblem, Method, MKLProblem, MKLResult, Solver
from multikernel.solve.outer import Evaluator, OuterLoop, start_point

__all__ = ["MLMKLSA"]

_BUCAK = ("Bucak, Jin and Jain, Multi-label Multiple Kernel Learning by Stochastic Approximation: Application "
          "to Visual Object Recognition, NIPS 2010; S. S. Bucak, PhD thesis, Michigan State University, 2014, ch. 3")


class MLMKLSA(Solver):
    """ML-MKL-SA: one sampled block (label or class) per step, entropic mirror descent on the simplex.

    For problems whose blocks share the kernel weights (``MKLClassifier(multiclass="shared")``, or
    ``fit_mkl(..., shared=True)``); see the module docstring for the algorithm and its certificate.

    Parameters
    ----------
    gradient : {"aggregated", "sampled"}, default="aggregated"
        The estimate of the gradient from the sampled block ``a``: ``"sampled"`` is the thesis's (eq. 3.8,
        ``-T/2 q(alpha_a)``); ``"aggregated"`` (SAGA) adds the change of block ``a``'s forms, times ``T``, to
        the sum of every block's last forms: also unbiased, with a variance that vanishes as the iterates
        settle, so the certified gap's tail is shorter.  Both cost the same.
    step : {"auto", "constant"}, default="auto"
        ``"auto"``: ``eta_t = eta sqrt(2 ln M / t) / R_t`` (scale-free; ``t`` counts the steps since the last
        certification, as the steps restart from each certified average); ``"constant"``: ``eta_t = eta``,
        the thesis's rule (its ``eta_beta``; its values 0.01 and 0.001 assume its kernels' scale).
    eta : float, default=3.0
        The step size (constant) or its multiplier (auto).
    certify_every : int, default=1
        Epochs (``T`` sampled steps each) between two certifications of the averaged weights; each costs the
        ``T`` SVM solves of one epoch.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling of the blocks.

    Notes
    -----
    The defaults (``eta=3``, ``certify_every=1``, the SAGA estimate, the restarts) were chosen on emotions and
    a synthetic 20-label problem (``benchmarks/bench_multilabel_mkl.py``), not on yeast or mfeat.
    """

    name = "ml_mkl_sa"
    requires = frozenset({Capability.SIMPLEX, Capability.PENALTY_GRADIENT})
    #: Samples the blocks of a shared-weight problem: MKLClassifier refuses it with one-vs-rest weights.
    samples_blocks = True

    def __init__(self, gradient: str = "aggregated", step: str = "auto", eta: float = 3.0, certify_every: int = 1,
                 random_state: int | np.random.RandomState | None = None) -> None:
        self.gradient = gradient
        self.step = step
        self.eta = eta
        self.certify_every = certify_every
        self.random_state = random_state

    def _check(self, problem: MKLProblem) -> list[InnerProblem]:
        if self.gradient not in ("sampled", "aggregated"):
            raise ValueError(f"gradient must be 'sampled' or 'aggregated'; got {self.gradient!r}")
        if self.step not in ("auto", "constant"):
            raise ValueError(f"step must be 'auto' or 'constant'; got {self.step!r}")
        if not (isinstance(self.eta, numbers.Real) and math.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"eta must be a positive finite number; got {self.eta!r}")
        if not (isinstance(self.certify_every, numbers.Integral) and self.certify_every >= 1):
            raise ValueError(f"certify_every must be a positive integer; got {self.certify_every!r}")
        blocks = problem.inner.split()  # type: ignore[union-attr]
        if blocks is None:
            raise ValueError(f"solver 'ml_mkl_sa' samples independent blocks, but the inner problem "
                             f"{type(problem.inner).__name__} couples its blocks (its split() is None): use a "
                             f"deterministic solver (`multikernel plugins` lists them)")
        return blocks

    def _eta(self, g: np.ndarray, t: int, n_kernels: int) -> float:
        if self.step == "constant":
            return float(self.eta)
        self._spread = max(self._spread, float(g.max() - g.min()))
        if self._spread <= 0:
            return 0.0  # every kernel has the same gradient: the entropic step leaves mu unchanged
        return float(self.eta) * math.sqrt(2.0 * math.log(max(n_kernels, 2)) / t) / self._spread

    def solve(self, problem: MKLProblem) -> MKLResult:
        blocks = self._check(problem)
        T, M = len(blocks), problem.stack.n_kernels
        rng = check_random_state(self.random_state)
        reg = problem.regularizer
        loop = OuterLoop(problem)
        evaluate = Evaluator(problem, loop)  # owns the combined kernel K(mu), updated in place
        mu, alpha0 = start_point(problem, revive=True)  # exponentiated steps never move a zero weight
        n = problem.stack.n_rows
        alphas = np.zeros((T, n)) if alpha0 is None else np.reshape(alpha0, (T, n)).astype(np.float64)
        coefs = np.zeros((T, n))
        linear = np.zeros(T)
        forms = np.zeros((T, M))
        self._spread = 0.0
        epochs = 0
        converged = interrupted = False
        try:
            # The start is certified like every average: every block gets its alpha at the first weights.
            converged = self._certify(problem, evaluate, loop, mu, alphas, coefs, linear, forms, blocks, None)
            loop.history[-1].update(epoch=0, svm_solves=evaluate.n_solves)
            while epochs < problem.max_iter and not converged:
                round_epochs = min(self.certify_every, problem.max_iter - epochs)
                t = 0  # a restart: the step schedule starts again from the average (restarted mirror descent)
                log_mu = np.log(mu)
                average, total = np.zeros(M), 0.0
                average_alpha, average_coef = np.zeros((T, n)), np.zeros((T, n))
                for a in rng.randint(T, size=T * round_epochs):
                    sol = blocks[a].solve(evaluate.combined(mu), alphas[a], loop.inner_tol)
                    evaluate.n_solves += 1
                    q = problem.stack.quad_forms(sol.coef)
                    if self.gradient == "sampled":
                        g = -0.5 * T * q
                    else:  # SAGA: the stored forms of every block, the sampled one's change scaled by T
                        g = -0.5 * (forms.sum(axis=0) + T * (q - forms[a]))
                    g = g + reg.penalty_gradient(mu)
                    alphas[a], coefs[a], forms[a] = sol.alpha, sol.coef, q
                    linear[a] = blocks[a].linear_term(sol.alpha)
                    t += 1
                    eta = self._eta(g, t, M)
                    average_alpha += eta * alphas
                    average_coef += eta * coefs
                    log_mu = log_mu - eta * g
                    log_mu -= logsumexp(log_mu)
                    mu = np.exp(log_mu)
                    # the iterates after each step: a round of a single step (one block) must still move
                    average += eta * mu
                    total += eta
                epochs += round_epochs
                # weak duality with the last alpha of every block: q_m(alpha) needs no solve
                loop.lower = max(loop.lower, float(linear.sum() - reg.dual_bound(0.5 * forms.sum(axis=0))))
                if total > 0:
                    mu = average / total
                    mu /= mu.sum()
                averaged = (average_alpha / total, average_coef / total) if total > 0 else None
                converged = self._certify(problem, evaluate, loop, mu, alphas, coefs, linear, forms, blocks,
                                          averaged)
                loop.history[-1].update(epoch=epochs, svm_solves=evaluate.n_solves)
        except KeyboardInterrupt:
            interrupted = True
            if loop.best is None:
                raise KeyboardInterrupt("ml_mkl_sa was interrupted before its first certification: no "
                                        "certified weights to return yet") from None
        res = loop.result(converged, interrupted, solver=self.name)
        res.n_iter = epochs
        return res

    @staticmethod
    def _certify(problem: MKLProblem, evaluate: Evaluator, loop: OuterLoop, mu: np.ndarray, alphas: np.ndarray,
                 coefs: np.ndarray, linear: np.ndarray, forms: np.ndarray, blocks: list[InnerProblem],
                 averaged: tuple[np.ndarray, np.ndarray] | None) -> bool:
        """Solve every block at ``mu`` and record the certified bounds; refreshes the blocks' alpha.

        ``averaged``, the blocks' alpha (and coefficients) averaged over the steps since the last certification,
        gives a second lower bound: ``L(alpha) - dual_bound(q(alpha)/2)`` is concave in ``alpha``, so the average of
        the responses to the iterates is a better dual point than each of them (the dual half of the averaged
        saddle point of stochastic approximation).
        """
        start = alphas if len(blocks) > 1 else alphas[0]
        sol = problem.solve_inner(evaluate.combined(mu), start.reshape(problem.block_shape), loop.inner_tol)
        evaluate.n_solves += len(blocks)
        alphas[:] = np.reshape(sol.alpha, alphas.shape)
        coefs[:] = np.reshape(sol.coef, alphas.shape)
        for t, block in enumerate(blocks):
            forms[t] = problem.stack.quad_forms(coefs[t])
            linear[t] = block.linear_term(alphas[t])
        if averaged is not None:  # coef is linear in alpha (split()'s contract), so the averages match
            alpha_bar, coef_bar = averaged
            lower = sum(block.linear_term(alpha_bar[t]) for t, block in enumerate(blocks))
            q_bar = np.sum([problem.stack.quad_forms(c) for c in coef_bar], axis=0)
            loop.lower = max(loop.lower, float(lower - problem.regularizer.dual_bound(0.5 * q_bar)))
        return loop.record(mu, sol, forms.sum(axis=0))


@hookimpl
def multikernel_solvers() -> dict[str, type[Solver]]:
    return {MLMKLSA.name: MLMKLSA}


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {"ml_mkl_sa": Method(
        name="ml_mkl_sa",
        summary="ML-MKL-SA: shared simplex weights for all labels/classes (the sum form, multiclass='shared'), "
                "one sampled label per step, entropic mirror descent, certified gap.",
        loss="csvc", regularizer="simplex", solver="ml_mkl_sa", citation=_BUCAK)}
