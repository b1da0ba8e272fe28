"""The level method's cuts carried from one fit to the next along a path of ``C``.

A cut of ``J(mu) = max_alpha L(alpha) - 1/2 sum_m mu_m q_m(alpha)`` is ``L(alpha_i) - 1/2 q(alpha_i)'mu``, a
lower bound of ``J`` wherever ``alpha_i`` is feasible.  The quadratic forms ``q`` depend on the stack and the
coefficients only; ``C`` enters through the feasible set of ``alpha`` (the box ``0 <= alpha <= C`` of the hinge
losses) and through ``L`` (the square hinge's ``-alpha'alpha/(2C)``).  So a cut made at another ``C`` is a cut at
this one once its ``alpha`` is feasible here and ``L`` is evaluated here: a larger ``C`` keeps every ``alpha``
feasible; at a smaller one ``alpha`` is scaled by the largest ``s <= 1`` that brings it back into the box
(:meth:`~multikernel.core.interfaces.MKLProblem.feasible_scale`), its coefficients by ``s``, its forms and
cross products by ``s^2`` (``s_i s_j``).  Nothing is read from the stack and no SVM is solved: the next fit
starts with the previous fit's model, and every certificate it offers is still of its own problem (the
aggregate ``alpha`` is a convex combination of feasible ones, its forms exact on the same stack).

The cuts are carried only to a fit on the same stack object and the same targets, and their penalty tangents
(SM2MKL's ``Omega``) are taken again at the new fit's first weights, for the regularizer of the new fit.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from multikernel.core.interfaces import MKLProblem

__all__ = ["KeptCuts", "keep_cuts", "rescaled_cuts"]


@attrs.define(eq=False)
class KeptCuts:
    """Cuts of ``J`` (without penalty tangents) of one fit, and what they were made on."""

    stack: Any
    targets: np.ndarray
    alphas: np.ndarray
    coefs: np.ndarray
    #: the quadratic forms ``q_i`` (k, M)
    forms: np.ndarray
    #: ``cross[i, j, m] = c_i'K_m c_j`` (k, k, M), or ``None``
    cross: np.ndarray | None


def keep_cuts(problem: MKLProblem, bundle: Any) -> KeptCuts | None:
    """The cuts of ``bundle`` that were active in its last LP (all of them if it had none), or ``None``."""
    if bundle.Q is None or problem.y is None or not len(bundle.L):
        return None
    keep = np.flatnonzero(bundle.active) if bundle.active.any() else np.arange(len(bundle.L))
    cross = None if bundle.X is None else np.array(bundle.X[np.ix_(keep, keep)])
    # the bundle holds the cuts of F: q - 2 g with the penalty tangent's gradient g; the forms of J are q
    forms = bundle.Q[keep] + 2.0 * bundle.G[keep]
    return KeptCuts(stack=problem.stack, targets=problem.y, alphas=bundle.alphas[keep].copy(),
                    coefs=bundle.coefs[keep].copy(), forms=forms, cross=cross)


def rescaled_cuts(problem: MKLProblem, cuts: KeptCuts | None
                  ) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
    """The cuts of ``cuts`` as cuts of ``problem``: ``(L, q, alpha, coef, cross)`` each, ``cross`` the cross
    products with the cuts before it in the list (``None`` without them).

    Each ``alpha`` is scaled by its :meth:`~multikernel.core.interfaces.MKLProblem.feasible_scale` (1 when it
    is feasible as it is), a cut whose ``alpha`` no scale makes feasible is left out, and ``L`` is evaluated
    for ``problem``.  (Scaling each cut to be highest at the new fit's first weights, along the ray of its
    ``alpha``, was measured: no fewer iterations.)  Empty unless ``cuts`` were made on ``problem``'s stack
    object with its targets.
    """
    if (cuts is None or cuts.stack is not problem.stack or problem.y is None
            or np.shape(cuts.targets) != np.shape(problem.y) or not np.array_equal(cuts.targets, problem.y)
            or cuts.forms.shape[1] != problem.stack.n_kernels):
        return []
    scales = [problem.feasible_scale(a) for a in cuts.alphas]
    keep = np.array([i for i, s in enumerate(scales) if s is not None], dtype=np.intp)
    if not keep.size:
        return []
    s = np.array([scales[i] for i in keep])
    cross = None if cuts.cross is None else cuts.cross[np.ix_(keep, keep)] * np.outer(s, s)[:, :, None]
    out = []
    for k, i in enumerate(keep):
        alpha = s[k] * cuts.alphas[i]
        out.append((problem.linear_term(alpha), s[k] ** 2 * cuts.forms[i], alpha, s[k] * cuts.coefs[i],
                    None if cross is None else cross[k, :k]))
    return out
