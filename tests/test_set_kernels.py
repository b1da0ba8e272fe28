"""NSK and STK (Gärtner et al. 2002) against their closed forms and scikit-learn's SVC on those kernels.

The bag kernels are computed here by brute force from their definitions (every instance pair, each
normalization; each feature's minimum and maximum); SVC(kernel="precomputed") fitted on them is the reference.
The SVM's weight vector is unique, so the decision values without the offset are compared through strong
convexity: ``1/2 ||w - w*||^2 <= P(w) - D_svc``, with ``P`` the primal at ours and ``D_svc`` SVC's dual objective
(a lower bound of the optimum).  Hypothesis draws the bag sizes (singletons included), duplicated instances,
feature scales and C over five decades.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mkl_testing import scaled
from hypothesis import given
from hypothesis import strategies as st
from sklearn.svm import SVC

from multikernel import create
from multikernel.iokl.set_kernels import NSK, STK, bag_statistics


@st.composite
def bag_problems(draw, max_log_scale: int = 1):
    """(X, bags, y, X_test, bags_test, C): training bags of both labels and three test bags."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n_pos, n_neg = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 5), min_size=n_pos + n_neg + 3, max_size=n_pos + n_neg + 3))
    d = draw(st.integers(1, 3))
    X = rng.normal(size=(sum(sizes), d))
    bags = np.repeat(np.arange(len(sizes)), sizes)
    labels = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    X[np.isin(bags, np.flatnonzero(labels > 0))] += 1.0
    if draw(st.booleans()):
        X[int(rng.integers(len(X)))] = X[0]
    X = X * 10.0 ** draw(st.integers(-1, max_log_scale))
    train = bags < n_pos + n_neg
    C = 10.0 ** draw(st.integers(-1, 3))
    return X[train], bags[train], labels[bags[train]], X[~train], bags[~train] - n_pos - n_neg, C


def _rbf(gamma: float):
    return lambda A, B: np.exp(-gamma * ((A[:, None] - B[None]) ** 2).sum(-1))


def nsk_kernel(k, Xa, ba, Xb, bb, normalization):
    la, lb = [Xa[ba == i] for i in np.unique(ba)], [Xb[bb == i] for i in np.unique(bb)]
    raw = np.array([[k(A, B).sum() for B in lb] for A in la])
    if normalization == "averaging":
        return raw / np.outer([len(A) for A in la], [len(B) for B in lb])
    if normalization == "featurespace":
        return raw / np.outer([np.sqrt(k(A, A).sum()) for A in la], [np.sqrt(k(B, B).sum()) for B in lb])
    return raw


def _check_against_svc(model, Kb, yb, Kt, test_diag, decision, C):
    """Our decision values without offset against SVC's on the same bag kernel, by the strong-convexity bound:
    ``|f0(t) - f0*(t)| <= ||w - w*|| sqrt(k(t, t))`` with ``||w - w*||^2 <= 2 (P(w) - D_svc)``."""
    svc = SVC(kernel="precomputed", C=C, tol=1e-10).fit(Kb, yb)
    coef_svc = np.zeros(len(Kb))
    coef_svc[svc.support_] = svc.dual_coef_[0]
    dual_svc = np.abs(coef_svc).sum() - 0.5 * coef_svc @ Kb @ coef_svc
    c = model.dual_coef_
    f0 = Kb @ c
    primal = 0.5 * c @ Kb @ c + C * np.maximum(0.0, 1.0 - yb * (f0 + model.intercept_)).sum()
    # the certificate reaches tol, or a ConvergenceWarning where rounding in large kernels stops it first
    assert model.dual_gap_ <= max(model.tol, 1e-4)
    assert primal >= dual_svc - 1e-7 * max(1.0, abs(dual_svc))  # weak duality: a check of both
    radius = np.sqrt(2 * max(primal - dual_svc, 0.0) + 1e-9 * max(1.0, abs(primal)))
    error = np.abs((decision - model.intercept_) - Kt @ coef_svc)
    assert np.all(error <= radius * np.sqrt(test_diag) * (1 + 1e-6) + 1e-9)


pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.mark.parametrize("normalization", ["featurespace", "averaging", "none"])
@given(problem=bag_problems())
@scaled(0.8)
def test_nsk_is_the_svc_of_its_closed_form_kernel(normalization, problem):
    X, bags, y, Xt, bt, C = problem
    gamma = 0.5
    model = NSK(kernels=[create("kernel", "rbf", gamma=gamma)], normalization=normalization, C=C,
                tol=1e-8).fit(X, y, bags)
    k = _rbf(gamma)
    yb = np.array([y[bags == b][0] for b in np.unique(bags)])
    Kb, Kt = nsk_kernel(k, X, bags, X, bags, normalization), nsk_kernel(k, Xt, bt, X, bags, normalization)
    test_diag = np.diag(nsk_kernel(k, Xt, bt, Xt, bt, normalization))
    _check_against_svc(model, Kb, yb, Kt, test_diag, model.decision_function(Xt, bt), C)


def test_nsk_featurespace_on_singleton_bags_is_the_instance_svc():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(8, 2)) + 1, rng.normal(size=(8, 2)) - 1])
    y = np.r_[np.ones(8), -np.ones(8)]
    model = NSK(kernels=[create("kernel", "rbf", gamma=0.3)], C=5.0, tol=1e-9).fit(X, y, np.arange(16))
    svc = SVC(kernel="rbf", gamma=0.3, C=5.0, tol=1e-10).fit(X, y)
    Z = rng.normal(size=(6, 2))
    np.testing.assert_allclose(model.decision_function(Z, np.arange(6)), svc.decision_function(Z), atol=1e-5)


def test_bag_statistics_are_the_minima_then_maxima():
    X = np.array([[1.0, 5.0], [3.0, -2.0], [0.0, 0.0]])
    lists = [np.array([0, 1]), np.array([2])]
    np.testing.assert_array_equal(bag_statistics(X, lists), [[1.0, -2.0, 3.0, 5.0], [0.0, 0.0, 0.0, 0.0]])


@given(problem=bag_problems(max_log_scale=0))  # a cubic kernel of statistics scaled by 10 spans 10^9
@scaled(1.0)
def test_stk_is_the_svc_of_the_polynomial_kernel_of_the_statistics(problem):
    X, bags, y, Xt, bt, C = problem
    poly = create("kernel", "poly", degree=3, gamma=0.5, coef0=1.0)
    model = STK(kernels=[poly], C=C, tol=1e-8, standardize=False).fit(X, y, bags)
    S = np.array([np.r_[X[bags == b].min(axis=0), X[bags == b].max(axis=0)] for b in np.unique(bags)])
    St = np.array([np.r_[Xt[bt == b].min(axis=0), Xt[bt == b].max(axis=0)] for b in np.unique(bt)])
    yb = np.array([y[bags == b][0] for b in np.unique(bags)])
    Kb, Kt = (0.5 * S @ S.T + 1) ** 3, (0.5 * St @ S.T + 1) ** 3
    test_diag = (0.5 * np.einsum("ij,ij->i", St, St) + 1) ** 3
    _check_against_svc(model, Kb, yb, Kt, test_diag, model.decision_function(Xt, bt), C)


def test_inputs_the_kernels_cannot_serve_get_a_clear_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2))
    bags, y = np.repeat(np.arange(3), 2), np.repeat([1, 0, 1], 2)
    K = X @ X.T
    with pytest.raises(ValueError, match="normalization='featurespace' .* needs instance features"):
        NSK(kernels="precomputed").fit(K, y, bags)
    with pytest.raises(ValueError, match="STK: the statistics kernel .* needs instance features"):
        STK(kernels="precomputed").fit(K, y, bags)
    with pytest.raises(ValueError, match="normalization must be one of"):
        NSK(normalization="cosine").fit(X, y, bags)
    # precomputed instance kernels serve the averaging normalization
    model = NSK(kernels="precomputed", normalization="averaging").fit(K, y, bags)
    assert model.decision_function(K, bags).shape == (3,)
