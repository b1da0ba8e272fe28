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
        name="lpmkl", summary="Lp-MKL: weights in the lp ball (default p = 4/3), Kloft's analytic update, "
                              "extrapolated.",
        loss="csvc", regularizer="lp_ball", solver="bcd", regularizer_params={"p": 4.0 / 3.0},
        solver_params={"extrapolate": True},
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
        solver_params={"extrapolate": True},
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

# The solver family of the Bucak thesis (spec chapter 2): one page each in docs/methods.
_BUCAK = "Bucak, Jin and Jain, Multiple Kernel Learning for Visual Object Recognition: A Review, IEEE TPAMI 2014"
METHODS += (
    Method(
        name="mkl_silp", summary="L1-MKL by Sonnenburg's SILP: cutting planes, restricted master LP by HiGHS.",
        loss="csvc", regularizer="simplex", solver="silp",
        citation="Sonnenburg, Raetsch, Schaefer and Schoelkopf, Large Scale Multiple Kernel Learning, "
                 "JMLR 7:1531-1565, 2006; " + _BUCAK + " (MKL-SIP).",
    ),
    Method(
        name="mkl_md", summary="L1-MKL by entropic mirror descent (exponentiated gradient) with backtracking.",
        loss="csvc", regularizer="simplex", solver="mirror_descent",
        citation="Nath, Dinesh, Raman, Bhattacharyya, Ben-Tal and Ramakrishnan, On the Algorithmics and "
                 "Applications of a Mixed-norm based Kernel Learning Formulation, NIPS 2009; Aflalo, Ben-Tal, "
                 "Bhattacharyya, Nath and Raman, Variable Sparsity Kernel Learning, JMLR 12:565-592, 2011; "
                 + _BUCAK + " (MKL-MD, VSKL).",
    ),
    Method(
        name="mkl_gl", summary="L1-MKL by the group-lasso alternation: SVM, then mu_m = ||f_m|| / sum ||f|| "
                               "(block coordinate descent, extrapolated; level steps on its cuts once it crawls, "
                               "or after 50 iterations; lp_ball gives the l_p version).",
        loss="csvc", regularizer="simplex", solver="bcd", solver_params={"extrapolate": True, "level_after": 50},
        citation="Xu, Jin, Yang, King and Lyu, Simple and Efficient Multiple Kernel Learning by Group Lasso, "
                 "ICML 2010; " + _BUCAK + " (MKL-GL).",
    ),
    Method(
        name="gmkl_l1", summary="GMKL: mu >= 0 with r(mu) = sigma'mu (sigma = 1), projected gradient + Armijo "
                                "(the form of Varma and Babu's experiments).",
        loss="csvc", regularizer="gmkl_l1", solver="projected_gradient", regularizer_params={"sigma": 1.0},
        solver_params={"metric": "weights"},
        citation="Varma and Babu, More Generality in Efficient Multiple Kernel Learning, ICML 2009.",
    ),
    Method(
        name="gmkl_l2", summary="GMKL: mu >= 0 with r(mu) = (c/2)||mu||^2 (c = 1), projected gradient + Armijo.",
        loss="csvc", regularizer="gmkl_l2", solver="projected_gradient", regularizer_params={"c": 1.0},
        citation="Varma and Babu, More Generality in Efficient Multiple Kernel Learning, ICML 2009.",
    ),
    Method(
        name="gmkl_elastic",
        summary="GMKL: mu >= 0 with r(mu) = sigma'mu + (c/2)||mu||^2 (sigma = 1, c = 1), projected gradient + Armijo.",
        loss="csvc", regularizer="gmkl_elastic", solver="projected_gradient",
        regularizer_params={"sigma": 1.0, "c": 1.0}, solver_params={"metric": "weights"},
        citation="Varma and Babu, More Generality in Efficient Multiple Kernel Learning, ICML 2009.",
    ),
)

AVERAGE = METHODS[0]


@hookimpl
def multikernel_methods() -> dict[str, Method]:
    return {m.name: m for m in METHODS}
