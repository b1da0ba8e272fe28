"""Built-in methods: named presets of loss, regularizer and solver."""

from __future__ import annotations

from multikernel.hookspecs import hookimpl
from multikernel.interfaces import Method

AVERAGE = Method(
    name="average",
    summary="Average kernel: uniform weights 1/M, one SVM.",
    loss="csvc", regularizer="uniform", solver="bcd",
    citation="Xu, Tsang and Xu, Soft Margin Multiple Kernel Learning, IEEE TNNLS 24(5), 2013 (AveKernel).",
)
L1MKL = Method(
    name="l1mkl",
    summary="L1-MKL (hard margin MKL): weights on the simplex, closed-form block coordinate descent.",
    loss="csvc", regularizer="simplex", solver="bcd",
    citation="Bach, Lanckriet and Jordan, ICML 2004; Rakotomamonjy et al., SimpleMKL, JMLR 2008.",
)


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in (AVERAGE, L1MKL)}
