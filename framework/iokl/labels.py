"""Feasible candidate sets of IOKL and the most violated candidate (4.11).

Two kinds of ambiguity (spec section 3.1):

* :class:`LabelSet` (output ambiguity): label vectors ``y in {-1, +1}^n`` with some entries fixed and the
  free entries split into groups whose number of positives lies in ``[low_g, high_g]``.  Semi-supervised
  learning is one group (the unlabelled points) with the exact count of the balance constraint; maximum-margin
  clustering is one group (all points) with a count range; instance-level MIL (MIL-CPB) has one group per
  positive bag with at least ``max(1, ceil(portion |B|))`` positives and the negative bags fixed at -1.
* :class:`KeyInstanceSet` (input ambiguity, bag-level MIL as in KI-SVM): one unit per positive bag, which is
  represented by one of its instances (the key instance), and one unit per instance of a negative bag.

A candidate enters the virtual stack as a signed selection ``(index, sign)`` of length ``U`` (the units).
The most violated candidate for input kernel ``K_m`` maximises ``u' K_m u`` with ``u = P(alpha)`` the
candidate's coefficients in instance space.  This is the maximum of a convex function, so it is found
exactly by enumeration when the feasible set is small, and otherwise by the sorting ascent of [130]: the
function lies above its linearisation, and the linearisation is maximised over the feasible set exactly by
sorting (the best count of positives per group, or the best instance per bag), so every step increases
the value; the ascent stops at a fixed point.
"""

from __future__ import annotations

import abc
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from multikernel._threads import one_blas_thread
from multikernel.iokl.stack import _blas_for

__all__ = ["CandidateSet", "KeyInstanceSet", "LabelSet"]


class CandidateSet(abc.ABC):
    """A feasible set of candidates, each a signed selection of ``n_units`` instances."""

    n_units: int
    n_instances: int

    @abc.abstractmethod
    def size(self) -> int:
        """The number of feasible candidates (may be astronomically large)."""

    @abc.abstractmethod
    def enumerate(self) -> tuple[np.ndarray, np.ndarray]:
        """All feasible candidates as ``(index, sign)`` arrays of shape (size, n_units)."""

    @abc.abstractmethod
    def best_linear(self, g: np.ndarray, current: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """A feasible candidate maximising the linearisation ``2 g' u`` (``g = K u_current`` in instance space)."""

    @abc.abstractmethod
    def from_scores(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The feasible candidate that agrees best with decision values on the instances."""

    def random_candidates(self, n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
        """``n`` feasible candidates drawn at random: the starts that let the search leave the current group.

        The sorting ascent only climbs to a fixed point near its start, and the two starts of the cutting plane
        (the classifier's own labels and its strongest group) sit at the current solution's fixed point, so
        alone they find the group the solution already has (on musk1 the loop stopped at its first group
        while random starts reached candidates whose group norm was four times larger).
        """
        return [self.from_scores(rng.standard_normal(self.n_instances)) for _ in range(n)]

    def lift(self, alpha: np.ndarray, index: np.ndarray, sign: np.ndarray) -> np.ndarray:
        """``u = P alpha`` in instance space for one candidate, or a batch of candidates (rows)."""
        index, sign = np.atleast_2d(index), np.atleast_2d(sign)
        out = np.zeros((len(index), self.n_instances))
        rows = np.repeat(np.arange(len(index)), index.shape[1])
        np.add.at(out, (rows, index.ravel()), (alpha * sign).ravel())
        return out

    #: Whether one candidate serves all input kernels of a group.  True for input ambiguity (a key instance is
    #: the bag's representative whatever the kernel: with a key per kernel, a bag would be scored in training
    #: by a sum over kernels at different instances, which no single instance achieves when predicting);
    #: False for output ambiguity, where the thesis gives each input kernel its own candidate set.
    shared_across_kernels: bool = False

    def most_violated(self, K: np.ndarray, alpha: np.ndarray, start: Sequence[tuple[np.ndarray, np.ndarray]],
                      enumerate_limit: int = 4096, max_steps: int = 50, offset: float = 0.0
                      ) -> tuple[np.ndarray, np.ndarray, float]:
        """``argmax u' (K + offset 11') u`` over the feasible candidates (4.11).

        Exact when ``size() <= enumerate_limit``; otherwise the sorting ascent runs from every candidate of
        ``start`` and the best fixed point wins.  ``offset`` is the absorbed bias of the input kernels.
        Returns ``(index, sign, value)``.
        """
        index, sign, q = self.most_violated_group([K], alpha, start, enumerate_limit, max_steps, offset)
        return index, sign, float(q[0])

    def most_violated_group(self, kernels: Sequence[np.ndarray], alpha: np.ndarray,
                            start: Sequence[tuple[np.ndarray, np.ndarray]], enumerate_limit: int = 4096,
                            max_steps: int = 50, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The candidate shared by the kernels ``K_1..K_M`` with the largest group norm ``||q||_2``.

        ``q_m = u' (K_m + offset 11') u``: the most violated group of the group-sparse dual (4.4) when one
        candidate serves the whole group (its constraint is ``||lambda_t||_2 <= gamma`` with
        ``lambda_{m,t} >= q_m / 2``).  With one kernel this is (4.11).  ``||q(u)||_2`` is convex in ``u`` (a
        norm, non-decreasing on the non-negative orthant, of convex quadratics), so the sorting ascent on its
        linearisation ``sum_m q_m (K_m + offset 11') u`` increases it at every step, as for one kernel.
        Returns ``(index, sign, q)``.
        """
        Ks = [np.asarray(K, dtype=np.float64) for K in kernels]
        if self.size() <= enumerate_limit:
            best_val, best = -math.inf, None
            index, sign = self.enumerate()
            for lo in range(0, len(index), 512):
                U = self.lift(alpha, index[lo:lo + 512], sign[lo:lo + 512])
                sums = offset * U.sum(axis=1) ** 2
                with _blas_for(U.shape[1]):
                    Q = np.stack([np.einsum("bi,bi->b", U @ K, U) + sums for K in Ks], axis=1)
                vals = np.linalg.norm(Q, axis=1)
                j = int(np.argmax(vals))
                if vals[j] > best_val:
                    best_val, best = float(vals[j]), (index[lo + j], sign[lo + j], Q[j])
            return best[0].copy(), best[1].copy(), best[2].copy()

        evaluate = self._evaluator(Ks, np.asarray(alpha, dtype=np.float64), offset)
        best_val, best = -math.inf, None
        for cand in start:
            index, sign = cand
            q, linear = evaluate(index, sign)
            val = float(np.linalg.norm(q))
            for _ in range(max_steps):
                w = q if np.any(q > 0) else np.ones_like(q)  # u = 0: any direction, the kernels equally
                ni, ns = self.best_linear(linear(w), (index, sign))
                if np.array_equal(ni, index) and np.array_equal(ns, sign):
                    break
                nq, nlinear = evaluate(ni, ns)
                nval = float(np.linalg.norm(nq))
                if nval <= val * (1 + 1e-12):
                    break
                index, sign, q, linear, val = ni, ns, nq, nlinear, nval
            if val > best_val:
                best_val, best = val, (index, sign, q)
        return best[0].copy(), best[1].copy(), best[2].copy()


    def scored_instances(self) -> np.ndarray | None:
        """The instances whose scores decide :meth:`from_scores` and :meth:`best_linear` (``None``: all)."""
        return None

    def scored_rows(self, Ks: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The rows :meth:`scored_instances` of the kernels ``Ks`` (float64 copies), kept for the next call
        with the same kernels: the cutting plane asks at every iteration, and on a loaded machine the fresh
        memory of the copies costs more than the products with them."""
        key = tuple(id(K) for K in Ks)
        cache = getattr(self, "_row_cache", None)
        if cache is None or cache[0] != key:
            rows = self.scored_instances()
            # the kernels themselves are kept with their rows, so that their ids stay theirs
            cache = self._row_cache = (key, list(Ks), [np.asarray(K[rows], dtype=np.float64) for K in Ks])
        return cache[2]

    def _evaluator(self, Ks: Sequence[np.ndarray], alpha: np.ndarray, offset: float
                   ) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]]:
        """``evaluate(index, sign) -> (q, linear)``: the forms ``q_m = u' (K_m + offset 11') u`` of a candidate
        and ``linear(w)``, the gradient ``sum_m w_m (K_m + offset 11') u`` in instance space (at least at
        :meth:`scored_instances`), the sorting ascent's linearisation."""

        def evaluate(index: np.ndarray, sign: np.ndarray):
            u = self.lift(alpha, index, sign)[0]
            with one_blas_thread():  # matrix-vector products are memory-bound: BLAS threads only contend
                KU = np.stack([K @ u for K in Ks])  # reused: the value and the next linearisation need it
            q = KU @ u + offset * u.sum() ** 2
            return q, lambda w: w @ KU + offset * w.sum() * u.sum()

        return evaluate


class LabelSet(CandidateSet):
    """Label vectors with fixed entries and count-constrained groups of free entries (output ambiguity).

    Parameters
    ----------
    n : int
        Number of samples (the units are the samples).
    fixed : ndarray of shape (n,)
        ``+1`` or ``-1`` for a fixed label, ``0`` for a free one.
    groups : sequence of ndarray
        Disjoint index arrays covering the free entries.
    low, high : sequence of int
        Bounds on the number of positives in each group.
    """

    def __init__(self, n: int, fixed: np.ndarray, groups: Sequence[np.ndarray], low: Sequence[int],
                 high: Sequence[int]) -> None:
        self.n_units = self.n_instances = int(n)
        self.fixed = np.asarray(fixed, dtype=np.float64)
        self.groups = [np.asarray(g, dtype=np.intp) for g in groups]
        self.low = [int(v) for v in low]
        self.high = [int(v) for v in high]
        free = np.concatenate(self.groups) if self.groups else np.array([], dtype=np.intp)
        if sorted(free.tolist()) != np.flatnonzero(self.fixed == 0).tolist():
            raise ValueError("the groups must partition the free (0) entries of fixed")
        for g, lo, hi in zip(self.groups, self.low, self.high, strict=True):
            if not 0 <= lo <= hi <= len(g):
                raise ValueError(f"no labelling satisfies the constraint: a group of {len(g)} free samples "
                                 f"must have between {lo} and {hi} positives. Relax the balance / portion "
                                 f"constraint")

    def size(self) -> int:
        return math.prod(sum(math.comb(len(g), k) for k in range(lo, hi + 1))
                         for g, lo, hi in zip(self.groups, self.low, self.high, strict=True))

    def _group_choices(self, g: np.ndarray, lo: int, hi: int) -> list[np.ndarray]:
        choices = []
        for k in range(lo, hi + 1):
            for pos in itertools.combinations(range(len(g)), k):
                y = -np.ones(len(g))
                y[list(pos)] = 1.0
                choices.append(y)
        return choices

    def enumerate(self) -> tuple[np.ndarray, np.ndarray]:
        per_group = [self._group_choices(g, lo, hi) for g, lo, hi in zip(self.groups, self.low, self.high,
                                                                          strict=True)]
        signs = []
        for combo in itertools.product(*per_group):
            y = self.fixed.copy()
            for g, part in zip(self.groups, combo, strict=True):
                y[g] = part
            signs.append(y)
        signs = np.array(signs)
        return np.tile(np.arange(self.n_units), (len(signs), 1)), signs

    def from_scores(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positives where the score is highest in each group, with the count clipped to its bounds."""
        scores = np.asarray(scores, dtype=np.float64)
        y = self.fixed.copy()
        for g, lo, hi in zip(self.groups, self.low, self.high, strict=True):
            order = g[np.argsort(-scores[g], kind="stable")]
            k = int(np.clip(np.count_nonzero(scores[g] > 0), lo, hi))
            y[g] = -1.0
            y[order[:k]] = 1.0
        return np.arange(self.n_units), y

    def from_scores_above_negatives(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positives where the score exceeds that of every fixed negative, with the count clipped to its bounds.

        :meth:`from_scores` with the threshold moved from 0 to the highest score of a fixed negative entry: the
        labelling depends on the ranking of the scores alone (adding a constant changes nothing), so it serves
        to round a classifier whose bias is not to be trusted while its ranking is (instance-level MIL, see
        :class:`~multikernel.iokl.IOKLMultipleInstanceClassifier`).  Among the labellings a change of that
        classifier's bias can give, it is the one with the most free positives that still calls every fixed
        negative negative.  Without fixed negatives it is :meth:`from_scores`.
        """
        scores = np.asarray(scores, dtype=np.float64)
        negative = self.fixed < 0
        if not np.any(negative):
            return self.from_scores(scores)
        return self.from_scores(scores - scores[negative].max())

    def best_linear(self, g: np.ndarray, current: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        # u = alpha o y, so the linearisation 2 g'u = 2 sum_i (alpha_i g_i) y_i is linear in y.
        return self.from_scores(self._alpha * g)

    def most_violated_group(self, kernels, alpha, start, enumerate_limit=4096, max_steps=50, offset=0.0):
        self._alpha = np.asarray(alpha, dtype=np.float64)
        return super().most_violated_group(kernels, alpha, start, enumerate_limit, max_steps, offset)


class KeyInstanceSet(CandidateSet):
    """One key instance per positive bag; the instances of negative bags are units of their own.

    Parameters
    ----------
    bags : sequence of ndarray
        Instance indices of each bag.
    labels : ndarray of shape (n_bags,)
        Bag labels in {-1, +1}.
    """

    def __init__(self, bags: Sequence[np.ndarray], labels: np.ndarray) -> None:
        self.bags = [np.asarray(b, dtype=np.intp) for b in bags]
        labels = np.asarray(labels, dtype=np.float64)
        self.positive = [b for b, lab in zip(self.bags, labels, strict=True) if lab > 0]
        self.negative = np.concatenate([b for b, lab in zip(self.bags, labels, strict=True) if lab < 0]
                                       + [np.array([], dtype=np.intp)])
        self.n_instances = int(sum(len(b) for b in self.bags))
        self.n_units = len(self.positive) + len(self.negative)
        self.sign = np.r_[np.ones(len(self.positive)), -np.ones(len(self.negative))]
        # The unit of each positive bag, for prediction and reports.
        self.n_positive = len(self.positive)

    shared_across_kernels = True

    def size(self) -> int:
        return math.prod(len(b) for b in self.positive)

    def _candidate(self, keys: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        return np.r_[np.asarray(keys, dtype=np.intp), self.negative].astype(np.intp), self.sign.copy()

    def enumerate(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.array(list(itertools.product(*self.positive)), dtype=np.intp).reshape(-1, self.n_positive)
        index = np.hstack([keys, np.tile(self.negative, (len(keys), 1))])
        return index, np.tile(self.sign, (len(keys), 1))

    def from_scores(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The highest-scoring instance of each positive bag."""
        scores = np.asarray(scores, dtype=np.float64)
        return self._candidate([b[int(np.argmax(scores[b]))] for b in self.positive])

    def best_linear(self, g: np.ndarray, current: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        # u = sum_b alpha_b e_{key_b} - ...: the linearisation is sum_b alpha_b g_{key_b} + const, maximised
        # per bag independently.
        return self.from_scores(g)

    def scored_instances(self) -> np.ndarray:
        """The instances of the positive bags: only their scores choose the key instances."""
        return np.sort(np.concatenate(self.positive + [np.array([], dtype=np.intp)]))

    def _evaluator(self, Ks, alpha, offset):
        # u = u_keys + u_neg, and the negative instances' part u_neg is the same for every candidate: its
        # form c_m = u_neg' K_m u_neg and its products h_m = K_m[P] u_neg with the rows P of the positive
        # bags' instances are computed once per search; a candidate then costs products with the rows P only
        # (on musk2 1017 of 6598 rows), instead of a pass over every input kernel per ascent step.
        rows = self.scored_instances()
        where = np.full(self.n_instances, -1, dtype=np.intp)
        where[rows] = np.arange(len(rows))
        npos = self.n_positive
        a_pos = alpha[:npos]
        u_neg = np.zeros(self.n_instances)
        u_neg[self.negative] = -alpha[npos:]
        total = float(a_pos.sum() - alpha[npos:].sum())  # sum(u): the offset's part, the same for every key
        # u_neg' K_m u_neg from the rows of u_neg's support only (the negative units with alpha > 0, a few
        # hundred on musk2), not a pass over the whole kernel: 4 x 348 MB read per search before
        support = np.flatnonzero(u_neg)
        with one_blas_thread():
            Kr = self.scored_rows(Ks)  # (P, N): the positive bags' rows
            h = np.stack([R @ u_neg for R in Kr])
            c = np.array([u_neg[support] @ (K[support] @ u_neg) for K in Ks])

        def evaluate(index: np.ndarray, sign: np.ndarray):
            keys = index[:npos]
            with one_blas_thread():
                g = h + np.stack([R[:, keys] @ a_pos for R in Kr])  # (K_m u)[P]
            q = c + 2.0 * (h[:, where[keys]] @ a_pos) + (g - h)[:, where[keys]] @ a_pos + offset * total**2

            def linear(w: np.ndarray) -> np.ndarray:
                out = np.zeros(self.n_instances)
                out[rows] = w @ g + offset * w.sum() * total
                return out

            return q, linear

        return evaluate
