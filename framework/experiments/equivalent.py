"""Grid points of different methods that are the same optimisation problem, so that a fold fits them once.

The soft margin protocol's grids meet at their ends (Xu, Tsang and Xu 2013; the equivalences of the
baselines): SGMKL at ``v = 1``, Lp-MKL at ``p = 1`` and SM1MKL at ``nu = 1/M`` (``theta = 1``: the cap is
inactive) are L1-MKL, the problem SimpleMKL solves; SGMKL at ``v = 0`` and Lp-MKL at ``p = 2`` are L2-MKL;
SM1MKL at ``nu = 1`` (``theta = 1/M``) is the average kernel.  The domains are equal as sets of optimal
weights (``{mu >= 0, sum mu <= 1}`` and the simplex have the same minimisers, the objective decreasing in
every weight), and so are the optimal values and the certified bounds, so a fit of one to a certified gap
is a fit of the others to the same gap.  :func:`problem_key` names such a problem; points without a known
equivalent get ``None`` and are always fitted.
"""

from __future__ import annotations

import math
from typing import Any

from multikernel.solve.fit import Parts

__all__ = ["problem_key"]


def _canonical_domain(reg: Any, n_kernels: int) -> str | None:
    """``"simplex"`` (L1-MKL), ``"l2_ball"`` (L2-MKL), ``"uniform"`` (the average kernel), or None."""
    name = getattr(reg, "name", None)
    try:
        if name in ("simplex", "l2_ball", "uniform"):
            return name
        if name == "elastic_net":
            v = float(reg.v)
            return "simplex" if v == 1.0 else "l2_ball" if v == 0.0 else None
        if name == "lp_ball":
            p = float(reg.p)
            return "simplex" if p == 1.0 else "l2_ball" if p == 2.0 else None
        if name == "box_simplex":
            cap = reg.cap(n_kernels)
            return "simplex" if cap >= 1.0 else "uniform" if cap == 1.0 / n_kernels else None
    except (TypeError, ValueError):  # invalid parameters: the fit itself reports them
        return None
    return None


def problem_key(parts: Parts, n_kernels: int) -> tuple | None:
    """A hashable name of the problem ``parts`` pose on a stack of ``n_kernels`` kernels, equal for grid points
    (of any method) that are the same problem; ``None`` when no equivalence is known.

    The key holds the loss with all its parameters (``C``) and the canonical domain of the weights; the
    solver is left out on purpose: any solver's certified fit of the problem serves.
    """
    domain = _canonical_domain(parts.regularizer, n_kernels)
    if domain is None:
        return None
    loss = parts.loss
    params = tuple(sorted((k, repr(v)) for k, v in loss.get_params(deep=False).items()))
    if any(isinstance(v, float) and math.isnan(v) for v in loss.get_params(deep=False).values()):
        return None
    return (getattr(loss, "name", type(loss).__name__), params, domain)
