"""Group regularizers of input-output kernel learning (Xu, Tsang and Xu 2012; Xu's thesis, chapter 4).

The kernel weights form a ``T x M`` matrix ``D`` (``T`` candidates, ``M`` input kernels), flattened group
by group (``k = t * M + m``, the layout of :class:`multikernel.iokl.stack.IOStack`):

* ``group_l21`` (IOKL-HM, (4.3)): ``{D >= 0 : sum_t ||d_t||_2 <= 1}``, l2 inside a group, l1 over groups;
* ``group_box_l21`` (IOKL-SM, (4.9)): the same with the box ``||d_t||_2 <= theta`` on every group.

Both have the closed-form weight step of Proposition 10 (Algorithm 4), a Euclidean projection (for warm
starts across cutting-plane iterations, whose number of groups grows) and the conjugate ``dual_bound`` that
gives the certified duality gap: ``max_{D} <D, G> = max_{e in E} sum_t e_t ||g_t^+||_2`` with
``E = {0 <= e <= theta, sum e <= 1}``, the greedy LP solution.
"""

from __future__ import annotations

import math

import numpy as np

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Regularizer
from multikernel.solve.projections import box_simplex_inverse, project_capped_simplex

__all__ = ["GroupBoxL21", "GroupL21"]


class GroupBoxL21(Regularizer):
    """Group l_{2,1} ball with a box on every group norm: the soft margin group-sparse MKL (IOKL-SM, (4.9)).

    Parameters
    ----------
    group_size : int, default=1
        ``M``, the number of input kernels per group (candidate).
    theta : float, default=inf
        The cap on each group's l2 norm, ``theta >= 1/T`` for ``T`` groups: ``theta = 1/T`` forces equal group
        norms, ``theta >= 1`` is the hard margin IOKL-HM (spec section 3.4).
    """

    name = "group_box_l21"

    def __init__(self, group_size: int = 1, theta: float = math.inf) -> None:
        self.group_size = group_size
        self.theta = theta

    def groups(self, n_kernels: int) -> int:
        """The number of groups ``T`` for ``n_kernels = T * M`` weights, checked."""
        M = self.group_size
        if not (isinstance(M, int | np.integer) and M >= 1):
            raise ValueError(f"group_size must be a positive integer (the number of input kernels); got {M!r}")
        if n_kernels < 1 or n_kernels % M:
            raise ValueError(f"{n_kernels} weights do not form groups of group_size={M} input kernels")
        return n_kernels // M

    def cap(self, n_kernels: int) -> float:
        """The group cap ``min(theta, 1)``, checked against ``1/T``."""
        T = self.groups(n_kernels)
        theta = float(self.theta)
        if not theta > 0 or math.isnan(theta):
            raise ValueError(f"theta must be a positive number (inf for the hard margin); got {self.theta!r}")
        if theta * T < 1.0 - 1e-12:
            raise ValueError(f"theta={theta!r} < 1/T = {1.0 / T!r} for T={T} candidate groups: the group norms "
                             f"cannot sum to 1 under the cap. Use theta >= 1/T (1/T forces equal group norms, "
                             f">= 1 is the hard margin).")
        return min(max(theta, 1.0 / T), 1.0)

    def check(self, n_kernels: int) -> None:
        self.cap(n_kernels)

    def initial(self, n_kernels: int) -> np.ndarray:
        T = self.groups(n_kernels)
        return np.full(n_kernels, 1.0 / (T * math.sqrt(self.group_size)))

    def _norms(self, g: np.ndarray) -> np.ndarray:
        G = np.maximum(np.asarray(g, dtype=np.float64), 0.0).reshape(-1, self.group_size)
        return np.sqrt(np.sum(G**2, axis=1))

    def dual_bound(self, g: np.ndarray) -> float:
        theta = self.cap(len(g))
        a = np.sort(self._norms(g))[::-1]
        # Greedy LP over the group norms: theta on the largest until the unit mass is spent.
        e = np.clip(1.0 - theta * np.arange(len(a)), 0.0, theta)
        return float(e @ a)

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Proposition 10: ``d_{m,t} = e_t ||w_{m,t}||^{2/3} / sqrt(sum_l ||w_{l,t}||^{4/3})``.

        Inside a group ``d^3`` is proportional to ``||w||^2`` (4.18); the group costs are then
        ``a_t^2 / e_t`` with ``a_t = (sum_m ||w_{m,t}||^{4/3})^{3/4}``, minimised over the box-simplex of
        group norms by Algorithm 4 (:func:`box_simplex_inverse`, the same Lemma as SM1MKL's step).
        """
        theta = self.cap(len(mu))
        M = self.group_size
        w2 = (np.asarray(mu, dtype=np.float64) ** 2 * np.maximum(np.asarray(q, dtype=np.float64), 0.0))
        b = np.cbrt(w2).reshape(-1, M)            # ||w_{m,t}||^{2/3}
        S = np.sum(b**2, axis=1)                   # sum_m ||w_{m,t}||^{4/3}
        if not np.any(S > 0):
            return self.initial(len(mu))
        a = S**0.75
        e = box_simplex_inverse(a**2, theta)
        with np.errstate(divide="ignore", invalid="ignore"):
            direction = np.where(S[:, None] > 0, b / np.sqrt(S)[:, None], 1.0 / math.sqrt(M))
        return (e[:, None] * direction).ravel()

    def project(self, v: np.ndarray) -> np.ndarray:
        """Euclidean projection: keep each group's direction, project the group norms onto ``E``."""
        theta = self.cap(len(v))
        V = np.maximum(np.asarray(v, dtype=np.float64), 0.0).reshape(-1, self.group_size)
        r = np.sqrt(np.sum(V**2, axis=1))
        e = np.minimum(r, theta)
        if e.sum() > 1.0:
            e = project_capped_simplex(r, theta)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(r > 0, e / r, 0.0)
        return (V * scale[:, None]).ravel()


class GroupL21(GroupBoxL21):
    """The group l_{2,1} ball ``{D >= 0 : sum_t ||d_t||_2 <= 1}``: the hard margin group-sparse MKL (IOKL-HM).

    Parameters
    ----------
    group_size : int, default=1
        ``M``, the number of input kernels per group (candidate).
    """

    name = "group_l21"

    def __init__(self, group_size: int = 1) -> None:
        self.group_size = group_size

    @property
    def theta(self) -> float:
        return math.inf


@hookimpl
def multikernel_regularizers() -> dict[str, type[Regularizer]]:
    return {cls.name: cls for cls in (GroupL21, GroupBoxL21)}
