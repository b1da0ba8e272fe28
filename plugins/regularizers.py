"""Built-in regularizers: the domains and penalties of the kernel weights."""

from __future__ import annotations

import numpy as np

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import Regularizer


def _component_norms(mu: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``||f_m|| = mu_m sqrt(q_m)``, the norms of the per-kernel parts of the classifier."""
    return mu * np.sqrt(np.maximum(q, 0.0))


class Uniform(Regularizer):
    """The single point ``mu = 1/M``: the average kernel (no kernel learning)."""

    name = "uniform"

    def check(self, n_kernels: int) -> None:
        if n_kernels < 1:
            raise ValueError("at least one kernel is needed")

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def dual_bound(self, g: np.ndarray) -> float:
        return float(np.mean(g))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        return self.initial(len(mu))

    def project(self, v: np.ndarray) -> np.ndarray:
        return self.initial(len(v))


class Simplex(Regularizer):
    """The simplex ``{mu >= 0, sum mu = 1}``: L1-MKL ("hard margin" MKL)."""

    name = "simplex"

    def check(self, n_kernels: int) -> None:
        if n_kernels < 1:
            raise ValueError("at least one kernel is needed")

    def initial(self, n_kernels: int) -> np.ndarray:
        return np.full(n_kernels, 1.0 / n_kernels)

    def dual_bound(self, g: np.ndarray) -> float:
        return float(np.max(g))

    def closed_form_update(self, mu: np.ndarray, q: np.ndarray) -> np.ndarray:
        norms = _component_norms(mu, q)
        total = norms.sum()
        if total <= 0.0:
            return np.full(len(mu), 1.0 / len(mu))
        return norms / total


@hookimpl
def multikernel_regularizers() -> dict[str, type[Regularizer]]:
    return {"uniform": Uniform, "simplex": Simplex}
