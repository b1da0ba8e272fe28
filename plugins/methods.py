"""Built-in methods: named presets of loss, regularizer and solver.

Every method uses the C-SVC inner problem by default (as the experiments of the soft margin MKL paper
do); the ``nu`` inner form can be chosen with ``loss="nu"`` where the SMO solver provides it.
"""

from __future__ import annotations

from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import Method

_XU2013 = "Xu, Tsang and Xu, Soft Margin Multiple Kernel Learning, IEEE TNNLS 24(5):749-761, 2013."

METHODS = (
    Method(
        name="average", summary="Average kernel: uniform weights 1/M, one SVM.",
        loss="csvc", regularizer="uniform", solver="bcd", citation=_XU2013 + " (AveKernel baseline)",
    ),
    Method(
        name="l1mkl",
        summary="L1-MKL (hard margin MKL): simplex weights by the level method, certified gap.",
        loss="csvc", regularizer="simplex", solver="level",
        citation="Bach, Lanckriet and Jordan, ICML 2004; Xu, Jin, King and Lyu, An Extended Level Method for "
                 "Efficient Multiple Kernel Learning, NIPS 2008.",
    ),
    Method(
        name="simplemkl", summary="SimpleMKL: L1-MKL by reduced gradient descent with Armijo line search.",
        loss="csvc", regularizer="simplex", solver="reduced_gradient",
        citation="Rakotomamonjy, Bach, Canu and Grandvalet, SimpleMKL, JMLR 9:2491-2521, 2008.",
    ),
    Method(
        name="lpmkl", summary="Lp-MKL: weights in the lp ball (default p = 4/3), Kloft's analytic update.",
        loss="csvc", regularizer="lp_ball", solver="bcd", regularizer_params={"p": 4.0 / 3.0},
        citation="Kloft, Brefeld, Sonnenburg and Zien, lp-Norm Multiple Kernel Learning, JMLR 12:953-997, 2011.",
    ),
    Method(
        name="l2mkl", summary="L2-MKL (square-loss soft margin MKL): weights in the l2 ball.",
        loss="csvc", regularizer="l2_ball", solver="bcd",
        citation="Cortes, Mohri and Rostamizadeh, L2 Regularization for Learning Kernels, UAI 2009; " + _XU2013,
    ),
    Method(
        name="sgmkl", summary="SGMKL: elastic-net constraint v||mu||_1 + (1-v)||mu||^2 <= 1 (default v = 0.5).",
        loss="csvc", regularizer="elastic_net", solver="bcd", regularizer_params={"v": 0.5},
        citation="Yang, Xu, King and Lyu, Simple and Efficient Multiple Kernel Learning by Group Lasso, "
                 "ICML 2010; " + _XU2013,
    ),
    Method(
        name="sm1mkl",
        summary="Hinge soft margin MKL: box-simplex weights (theta, or nu with theta = 1/(nu M); default nu = 0.5), "
                "level method (solver='bcd' is the paper's Algorithm 1).",
        loss="csvc", regularizer="box_simplex", solver="level", regularizer_params={"nu": 0.5},
        citation=_XU2013 + " (SM1MKL); Xu, Jin, King and Lyu, NIPS 2008 (level method)",
    ),
    Method(
        name="sm2mkl",
        summary="Square-hinge soft margin MKL: simplex + ||mu||^2/(2 theta) (theta = 1), level method "
                "(solver='projected_gradient' is the paper's Algorithm 2).",
        loss="csvc", regularizer="simplex_l2", solver="level", regularizer_params={"theta": 1.0},
        citation=_XU2013 + " (SM2MKL); Xu, Jin, King and Lyu, NIPS 2008 (level method)",
    ),
)

AVERAGE = METHODS[0]


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in METHODS}
