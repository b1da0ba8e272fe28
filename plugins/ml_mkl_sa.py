"""ML-MKL-SA: multi-class and multi-label MKL with shared kernel weights by stochastic approximation.

Bucak, Jin and Jain, "Multi-label Multiple Kernel Learning by Stochastic Approximation", NIPS 2010; Bucak's
thesis, chapter 3 (spec: ``bucak-thesis-mkl-multilabel-ranking.md`` section 3).

The ``T`` blocks (labels, or one-vs-rest classes) share one weight vector on the simplex and their objectives
add up (the sum form, ML-MKL-Sum, eq. 3.1-3.2):

    min_{mu in simplex}  F(mu) = Omega(mu) + sum_t G_t(mu),
    G_t(mu) = max_{alpha_t} L_t(alpha_t) - 1/2 sum_m mu_m q_m(alpha_t),   q_m(alpha_t) = c_t' K_m c_t.

A deterministic solver pays ``T`` SVM solves per iteration (one gradient ``-1/2 sum_t q(alpha_t)``).  ML-MKL-SA
samples blocks uniformly (the sum form is the thesis's ``L(beta, gamma)`` with ``gamma`` frozen at ``1/T``),
solves their SVMs on ``K(mu)`` from each block's last ``alpha``, and takes an entropic mirror-descent
(exponentiated-gradient) step with an unbiased estimate of the gradient (eq. 3.8, with the importance weight
``1/p = T/b``; Proposition 1)

    g = -T/(2b) sum_{a in batch} q(alpha_a) + grad Omega(mu),        mu <- mu exp(-eta_t g) / Z.

The thesis samples ONE block per step (``batch=1``); the default samples ``ceil(sqrt(T))`` (without
replacement) per step, because a step's cost is not only its SVM solve: forming ``K(mu)`` (every weight
changes at every step) reads the whole stack, as much as a solve on yeast (1208 samples, 10 kernels), and a
batch shares it.  ``gradient="aggregated"`` (the default) replaces the thesis's estimate by the SAGA one,
``-1/2 (sum_t q(alpha_t^old) + T/b sum_{a in batch} (q(alpha_a) - q(alpha_a^old)))``, also unbiased, whose
variance vanishes as the iterates settle; its table of every block's last forms is filled by the first
certification, and the steps before it use the thesis's estimate (so no step waits for all ``T`` blocks).
The weights returned are averages of the iterates (eq. 3.10).

**Certification.**  The thesis stops on heuristics; here the answer carries the same certified duality gap as
every other solver of the sum form (:class:`~multikernel.solve.outer.OuterLoop`).  At the end of each round
all blocks are solved at ``mu_bar``, the average of the last ``suffix`` share of the round's iterates
(weighted by the step sizes; suffix averaging, the standard answer of stochastic approximation, since the first
iterates of a round pull the whole round's average back towards its start), which gives the upper bound
``F(mu_bar)`` (any weights on the simplex give one) and, from those ``alpha``, the lower bound
``L(alpha) - dual_bound(q(alpha)/2)``; the blocks' ``alpha`` averaged over the whole round give another one
(the bound is concave in ``alpha``: any average of dual points is one), and so do the last ``alpha`` of every
block (``q_m(alpha_t)`` does not depend on the weights: free).  Sampling then continues from ``mu_bar`` with a
fresh average.  The first round is
``certify_every`` epochs of sampled solves (an epoch is ``T``, the SVM solves of one iteration of a
deterministic solver; default half an epoch, so the first certified answer comes after ``1.5 T`` solves), and
each round is twice as long as the one before, up to 4 epochs, so that certifying (``T`` solves each time)
takes a vanishing share of the work.  The start is not certified (its ``T`` solves would find the average
kernel's objective), unless a warm start brings ``alpha``.  The solve stops when the gap is below ``tol``;
``max_iter`` counts rounds.

**Step sizes.**  The thesis uses a constant step (``eta = 0.01`` on Caltech 101, ``0.001`` on VOC and ImageNet,
``eta_beta = eta_gamma``), which depends on the scale of the kernels, ``C`` and ``n``; its Corollary 2 step
``(1/n) m^{-1/3} sqrt(ln m / T)`` assumes the worst-case bound of the gradients.  ``step="constant"`` is the
thesis's rule; the default ``step="auto"`` is the scale-free rule of stochastic mirror descent on the simplex,
``eta_t = eta sqrt(2 ln M / t) / R_t``, ``t`` the steps since the start and ``R_t`` the spread
``max_m g_m - min_m g_m`` of this step's gradient estimate (the entropic step does not change when a constant
is added to ``g``), so that ``eta_t g`` always spreads ``eta sqrt(2 ln M / t)``: the normalized subgradient
step, whose step-weighted average keeps the usual guarantee for exact gradients (with a sampled estimate the
step depends on the sample, a bias that vanishes with the SAGA estimate's variance; the certificate does not
depend on the steps at all).  The first step, from the uniform weights, spreads
4-5 times more than the next ones (yeast); scaling those by the largest spread of the round, as before, made
the second step a quarter as long and the first round end short of the optimum.

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
from multikernel.core.interfaces import InnerCapability, InnerProblem, Method, MKLProblem, MKLResult, Solver
from multikernel.solve.outer import Evaluator, OuterLoop, certified_forms, start_point

__all__ = ["MLMKLSA"]

#: The longest round between two certifications, in epochs (rounds double from ``certify_every`` up to it).
_MAX_ROUND_EPOCHS = 4

_BUCAK = ("Bucak, Jin and Jain, Multi-label Multiple Kernel Learning by Stochastic Approximation: Application "
          "to Visual Object Recognition, NIPS 2010; S. S. Bucak, PhD thesis, Michigan State University, 2014, ch. 3")


class MLMKLSA(Solver):
    """ML-MKL-SA: one sampled block (label or class) per step, entropic mirror descent on the simplex.

    For problems whose blocks share the kernel weights (``MKLClassifier(multiclass="shared")``, or
    ``fit_mkl(..., shared=True)``); see the module docstring for the algorithm and its certificate.

    Parameters
    ----------
    gradient : {"aggregated", "sampled"}, default="aggregated"
        The estimate of the gradient from the sampled blocks: ``"sampled"`` is the thesis's (eq. 3.8,
        ``-T/(2b) sum q(alpha_a)``); ``"aggregated"`` (SAGA) adds the change of the batch's forms, times
        ``T/b``, to the sum of every block's last forms: also unbiased, with a variance that vanishes as the
        iterates settle.  Both cost the same.
    step : {"auto", "constant"}, default="auto"
        ``"auto"``: ``eta_t = eta sqrt(2 ln M / t) / R_t`` (scale-free; ``R_t`` the spread of the step's own
        estimate); ``"constant"``: ``eta_t = eta``, the thesis's rule (its ``eta_beta``; its values 0.01 and
        0.001 assume its kernels' scale).
    eta : float, default=3.0
        The step size (constant) or its multiplier (auto).
    batch : int or "auto", default="auto"
        Blocks sampled per step (without replacement), all on one combined kernel: ``1`` is the thesis's
        algorithm, ``"auto"`` is ``ceil(sqrt(T))``; more than ``T`` means all of them.
    certify_every : float, default=0.5
        Epochs (``T`` sampled solves each) in the first round before its average is certified; later rounds
        double, up to 4 epochs.  Each certification costs the ``T`` SVM solves of one epoch.
    suffix : float, default=0.5
        The share of a round's steps, the last ones, whose iterates are averaged into the weights certified at
        its end (suffix averaging; at least the last step): ``1`` averages the whole round.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling of the blocks.

    Notes
    -----
    The defaults (``eta=3``, the SAGA estimate) were chosen on emotions and a synthetic 20-label problem
    (``benchmarks/bench_multilabel_mkl.py``); the batch, the first round and the step schedule across rounds
    on emotions and yeast (C = 1, 10), the sets of the benchmark; ``suffix=0.5`` and the step's scale by its
    own estimate on yeast (C = 10) and checked on yeast C = 1 and emotions (C = 1, 10), three yeast splits
    (docs/benchmarks.md, multi-label MKL).
    """

    name = "ml_mkl_sa"
    requires = frozenset({Capability.SIMPLEX, Capability.PENALTY_GRADIENT})
    requires_inner = frozenset({InnerCapability.SEPARABLE})
    samples_blocks = True

    def __init__(self, gradient: str = "aggregated", step: str = "auto", eta: float = 3.0,
                 batch: int | str = "auto", certify_every: float = 0.5,
                 suffix: float = 0.5, random_state: int | np.random.RandomState | None = None) -> None:
        self.gradient = gradient
        self.step = step
        self.eta = eta
        self.batch = batch
        self.certify_every = certify_every
        self.suffix = suffix
        self.random_state = random_state

    def _check(self, problem: MKLProblem) -> list[InnerProblem]:
        if self.gradient not in ("sampled", "aggregated"):
            raise ValueError(f"gradient must be 'sampled' or 'aggregated'; got {self.gradient!r}")
        if self.step not in ("auto", "constant"):
            raise ValueError(f"step must be 'auto' or 'constant'; got {self.step!r}")
        if not (isinstance(self.eta, numbers.Real) and math.isfinite(self.eta) and self.eta > 0):
            raise ValueError(f"eta must be a positive finite number; got {self.eta!r}")
        if not (self.batch == "auto" or (isinstance(self.batch, numbers.Integral)
                                         and not isinstance(self.batch, bool) and self.batch >= 1)):
            raise ValueError(f"batch must be 'auto' or a positive integer (blocks per step); got {self.batch!r}")
        if not (isinstance(self.certify_every, numbers.Real) and not isinstance(self.certify_every, bool)
                and math.isfinite(self.certify_every) and self.certify_every > 0):
            raise ValueError(f"certify_every must be a positive number of epochs; got {self.certify_every!r}")
        if not (isinstance(self.suffix, numbers.Real) and not isinstance(self.suffix, bool)
                and 0 < self.suffix <= 1):
            raise ValueError(f"suffix must be in (0, 1], the share of a round's last steps averaged into the "
                             f"certified weights (1: the whole round); got {self.suffix!r}")
        return problem.inner.split()  # type: ignore[union-attr]  (SEPARABLE: checked by check_parts)

    def _batch_size(self, T: int) -> int:
        if self.batch == "auto":
            return max(1, math.ceil(math.sqrt(T)))
        return min(int(self.batch), T)

    def _eta(self, g: np.ndarray, t: int, n_kernels: int) -> float:
        if self.step == "constant":
            return float(self.eta)
        # the spread of this step's estimate, not the largest of the round: the first step from the uniform
        # weights spreads 4-5x more than the next ones (yeast, C = 10), and scaling those by it stalled them
        spread = float(g.max() - g.min())
        if spread <= 0:
            return 0.0  # every kernel has the same gradient: the entropic step leaves mu unchanged
        return float(self.eta) * math.sqrt(2.0 * math.log(max(n_kernels, 2)) / t) / spread

    def _estimate(self, forms: np.ndarray, seen: np.ndarray, batch: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The estimate of ``sum_t q(alpha_t)`` from the new forms ``q`` of the sampled ``batch`` of blocks.

        ``forms`` are the blocks' last forms and ``seen`` says which blocks have been solved (before this step).
        Each block is in a batch of ``b`` out of ``T`` with probability ``b / T``, so both estimates are
        unbiased.  SAGA's table needs every block's forms: until every block has been solved once (the first
        certification solves them all) the thesis's estimate is used, which also keeps the forms of the
        average kernel, far from the optimum, out of the first steps.
        """
        T, b = len(forms), len(batch)
        if self.gradient == "sampled" or not seen.all():
            return (T / b) * q.sum(axis=0)
        return forms.sum(axis=0) + (T / b) * (q - forms[batch]).sum(axis=0)

    def solve(self, problem: MKLProblem) -> MKLResult:
        self.check_parts(problem)
        blocks = self._check(problem)
        T, M = len(blocks), problem.stack.n_kernels
        b = self._batch_size(T)
        # the first round: the sampled solves before the first certification, in whole steps of b blocks
        first_round = max(1, math.ceil(self.certify_every * T / b))
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
        seen = np.zeros(T, dtype=bool)
        rounds = sampled = t = 0
        converged = interrupted = False
        try:
            if alpha0 is not None:
                # a warm start (the neighbour on a grid path) is certified first: its alpha are near the optimum,
                # so the solves are cheap, and they fill the gradient table with every block's forms
                converged = self._certify(problem, evaluate, loop, mu, alphas, coefs, linear, forms, blocks, None)
                seen[:] = True
                loop.history[-1].update(round=0, epoch=0.0, svm_solves=evaluate.n_solves)
            while rounds < problem.max_iter and not converged:
                # the steps keep decreasing as 1/sqrt(t) over the whole solve; the average restarts at each
                # certification (the iterates far from the optimum leave it), and the rounds double up to a cap,
                # so that certifying costs a vanishing share of the solves without delaying the first one
                steps = min(first_round * 2 ** rounds, max(first_round, math.ceil(_MAX_ROUND_EPOCHS * T / b)))
                # the alpha of a block not yet solved is a placeholder (zero), not a dual point of every loss
                # (a nu-SVM's), so the dual bounds below wait until every block has been solved
                solved_all = bool(seen.all())
                log_mu = np.log(mu)
                average, total, total_alpha = np.zeros(M), 0.0, 0.0
                average_alpha, average_coef = np.zeros((T, n)), np.zeros((T, n))
                # the certified weights average the last steps of the round only (suffix averaging: the first
                # ones, nearer the start, pull the average back); the alpha average keeps every step: any
                # average of alpha is a dual point, and the lower bound keeps the best of it and the others
                first_kept = steps - max(1, math.ceil(self.suffix * steps))
                for step in range(steps):
                    batch = rng.choice(T, size=b, replace=False) if b < T else np.arange(T)
                    K = evaluate.combined(mu)  # one combination serves the whole batch
                    q = np.empty((b, M))
                    sols = []
                    for i, a in enumerate(batch):
                        sols.append(blocks[a].solve(K, alphas[a], loop.inner_tol))
                        q[i] = problem.stack.quad_forms(sols[-1].coef)
                    evaluate.n_solves += b
                    sampled += b
                    g = -0.5 * self._estimate(forms, seen, batch, q) + reg.penalty_gradient(mu)
                    for i, a in enumerate(batch):
                        alphas[a], coefs[a], forms[a] = sols[i].alpha, sols[i].coef, q[i]
                        linear[a] = blocks[a].linear_term(sols[i].alpha)
                    seen[batch] = True
                    t += 1
                    eta = self._eta(g, t, M)
                    average_alpha += eta * alphas
                    average_coef += eta * coefs
                    total_alpha += eta
                    log_mu = log_mu - eta * g
                    log_mu -= logsumexp(log_mu)
                    mu = np.exp(log_mu)
                    # the iterates after each step (a round of a single step must still move), in the suffix
                    if step >= first_kept:
                        average += eta * mu
                        total += eta
                rounds += 1
                if seen.all():  # weak duality with the last alpha of every block: q_m(alpha) needs no solve
                    q_all = certified_forms(problem, coefs, forms.sum(axis=0))
                    loop.lower = max(loop.lower, float(linear.sum() - reg.dual_bound(0.5 * q_all)))
                if total > 0:
                    mu = average / total
                    mu /= mu.sum()
                averaged = ((average_alpha / total_alpha, average_coef / total_alpha)
                            if total_alpha > 0 and solved_all else None)
                converged = self._certify(problem, evaluate, loop, mu, alphas, coefs, linear, forms, blocks,
                                          averaged)
                seen[:] = True
                loop.history[-1].update(round=rounds, epoch=sampled / T, svm_solves=evaluate.n_solves)
        except KeyboardInterrupt:
            interrupted = True
            if loop.best is None:
                raise KeyboardInterrupt("ml_mkl_sa was interrupted before its first certification: no "
                                        "certified weights to return yet") from None
        res = loop.result(converged, interrupted, solver=self.name)
        res.n_iter = rounds
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
            q_bar = certified_forms(problem, coef_bar, q_bar)
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
