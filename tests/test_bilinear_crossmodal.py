"""Cross-modal learning (Kobayashi 2014, section 5.2): the block SMO against cvxpy, the outer optimum, the API."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import KernelCenterer

from multikernel.bilinear import CrossModalEmbedding
from multikernel.bilinear.crossmodal import _one_vs_rest, cmc_curve, retrieval_ranks, solve_block_smo
from multikernel.solve.smo import solve_qp


def _modalities(seed, n_a=24, n_b=15, w=3, d_a=4, d_b=3):
    rng = np.random.default_rng(seed)
    centres_a, centres_b = rng.normal(size=(w, d_a)), rng.normal(size=(w, d_b))
    ya, yb = np.arange(n_a) % w, np.arange(n_b) % w
    Xa = centres_a[ya] + 0.8 * rng.normal(size=(n_a, d_a))
    Xb = centres_b[yb] + 0.8 * rng.normal(size=(n_b, d_b))
    return Xa, ya, Xb, yb


def _block_qp_cvxpy(K, Y, S, C):
    """max sum(alpha) - 1/2 tr(S A'KA), 0 <= alpha <= C, Y'A... per class equality: the value."""
    import cvxpy as cp

    n, w = Y.shape
    e, U = np.linalg.eigh(K)
    L = U * np.sqrt(np.clip(e, 0, None))  # K = L L'
    e, U = np.linalg.eigh(S)
    M = U * np.sqrt(np.clip(e, 0, None))  # S = M M'
    alpha = cp.Variable((n, w))
    A = cp.multiply(Y, alpha)
    objective = cp.sum(alpha) - 0.5 * cp.sum_squares(L.T @ A @ M)
    prob = cp.Problem(cp.Maximize(objective), [alpha >= 0, alpha <= C, cp.sum(A, axis=0) == 0])
    prob.solve(solver="CLARABEL")
    return prob.value


def _value(K, Y, S, alpha):
    A = Y * alpha
    return alpha.sum() - 0.5 * np.sum(S * (A.T @ K @ A))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), w=st.integers(2, 4), rank=st.integers(0, 4), C=st.sampled_from([0.1, 1.0, 10.0]),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_block_smo_optimum_equals_cvxpy(seed, w, rank, C, dtype):
    # P27: the class-wise block SMO reaches the optimum of the whole sub-problem (52), any PSD S (also singular)
    rng = np.random.default_rng(seed)
    n = 20
    X = rng.normal(size=(n, 3))
    K = (X @ X.T).astype(dtype)
    Y = _one_vs_rest(rng.integers(0, w, n), w)
    Y[:w] = _one_vs_rest(np.arange(w), w)  # every class present
    R = rng.normal(size=(w, min(rank, w)))
    S = R @ R.T
    alpha, F, info = solve_block_smo(K, Y, S, C, tol=1e-8)
    ref = _block_qp_cvxpy(K.astype(np.float64), Y, S, C)
    assert _value(K.astype(np.float64), Y, S, alpha) == pytest.approx(ref, rel=1e-5 if dtype == np.float64 else 1e-4,
                                                                       abs=1e-6)
    # feasibility and the termination rule
    assert alpha.min() >= 0 and alpha.max() <= C
    np.testing.assert_allclose((Y * alpha).sum(0), 0, atol=1e-9 * max(C, 1) * n)
    # float32: the tolerance is raised to the rounding of F = K A (1e-6 to 2e-4 here; 1e-8 ran into max_iter)
    assert info["tol"] == 1e-8 if dtype == np.float64 else 1e-8 <= info["tol"] < 1e-3
    assert max(info["gaps"]) < info["tol"] and min(info["gaps"]) >= 0 and not info["hit_max_iter"]
    np.testing.assert_allclose(F, K.astype(np.float64) @ (Y * alpha), atol=1e-6 * max(1, np.abs(F).max()))


def test_diagonal_sigma_decouples_into_one_vs_rest_svms():
    # P26: S diagonal => block c is the SVM with kernel S_cc K, independent of the other blocks
    Xa, ya, _, _ = _modalities(1)
    K = Xa @ Xa.T
    Y = _one_vs_rest(ya, 3)
    S = np.diag([0.5, 1.0, 2.0])
    alpha, _, _ = solve_block_smo(K, Y, S, 1.0, tol=1e-9)
    for c in range(3):
        ref = solve_qp(S[c, c] * K, Y[:, c], p=-1.0, lower=0.0, upper=1.0, y_sum=0.0, tol=1e-9)
        got = 0.5 * S[c, c] * (Y[:, c] * alpha[:, c]) @ K @ (Y[:, c] * alpha[:, c]) - alpha[:, c].sum()
        assert got == pytest.approx(ref.objective, rel=1e-7, abs=1e-9)


def test_outer_optimum_equals_the_nuclear_norm_problem():
    # problem (48)/(39) with linear kernels on centred features, written in cvxpy: ||[W_a; W_b]||_* + C hinge
    import cvxpy as cp

    Xa, ya, Xb, yb = _modalities(2)
    C = 0.3
    est = CrossModalEmbedding(C=C, tol=1e-6, max_iter=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xa, ya, Xb, yb)
    terms, Ws = [], []
    for X, y in ((Xa, ya), (Xb, yb)):
        Xc = X - X.mean(0)
        W, b = cp.Variable((X.shape[1], 3)), cp.Variable(3)
        Y = _one_vs_rest(y, 3)
        terms.append(cp.sum(cp.pos(1 - cp.multiply(Y, Xc @ W + np.ones((X.shape[0], 1)) @ cp.reshape(b, (1, 3),
                                                                                                     order="C")))))
        Ws.append(W)
    prob = cp.Problem(cp.Minimize(cp.normNuc(cp.vstack(Ws)) + C * sum(terms)))
    prob.solve(solver="CLARABEL")
    info = est.fit_info_
    assert info["dual"] <= prob.value * (1 + 1e-6) + 1e-8
    assert info["primal"] == pytest.approx(prob.value, rel=1e-4)
    assert 1 <= est.n_components_ <= 3


def test_embedding_and_retrieval():
    Xa, ya, Xb, yb = _modalities(3, n_a=60, n_b=45)
    est = CrossModalEmbedding(C=1.0, tol=1e-3).fit(Xa, ya, Xb, yb)
    za, zb = est.transform(Xa, "a"), est.transform(Xb, "b")
    assert za.shape == (60, est.n_components_) and zb.shape == (45, est.n_components_)
    # distances in the common space depend on S only: (a - a')' S (a - a') with a = A' k(x)
    S = est.sigma_
    Ka = KernelCenterer().fit(Xa @ Xa.T).transform(Xa @ Xa.T)  # the centring fit applies, by scikit-learn
    Aa = est.components_a_ @ np.linalg.pinv(est.class_factors_)  # A^[a] on the range of W_w
    a = Ka @ Aa
    d = a[0] - a[1]
    assert np.sum((za[0] - za[1]) ** 2) == pytest.approx(d @ S @ d, rel=1e-8)
    ranks = retrieval_ranks(za, ya, zb, yb)
    assert ranks.min() >= 1 and (ranks == 1).mean() > 0.6
    curve = cmc_curve(ranks, 5)
    assert np.all(np.diff(curve) >= 0) and curve[-1] <= 1
    assert (est.predict(Xb, "b") == yb).mean() > 0.6


def test_different_kernels_and_builders():
    from multikernel.plugins.kernels import RBFKernel

    Xa, ya, Xb, yb = _modalities(4)
    est = CrossModalEmbedding(kernel_a=RBFKernel(gamma=0.2), kernel_b="rbf", kernel_b_params={"gamma": 0.5},
                              tol=1e-3, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the stall safeguard may end the fit before the gap reaches tol
        est.fit(Xa, ya, Xb, yb)
    assert est.dual_gap_ < 0.05
    assert est.transform(Xb[:3], "b").shape == (3, est.n_components_)


def test_bad_input():
    Xa, ya, Xb, yb = _modalities(5)
    with pytest.raises(ValueError, match=r"same classes.*only in ya: \[2\], only in yb: \[7\]"):
        CrossModalEmbedding().fit(Xa, ya, Xb, np.where(yb == 2, 7, yb))
    with pytest.raises(ValueError, match="single class"):
        CrossModalEmbedding().fit(Xa, np.zeros(24), Xb, np.zeros(15))
    with pytest.raises(ValueError, match="one label per sample of Xb"):
        CrossModalEmbedding().fit(Xa, ya, Xb, yb[:4])
    est = CrossModalEmbedding(tol=1e-2).fit(Xa, ya, Xb, yb)
    with pytest.raises(ValueError, match="modality must be 'a' or 'b'"):
        est.transform(Xa, "c")
    with pytest.raises(ValueError, match="features"):
        est.transform(Xa[:, :2], "a")
    with pytest.raises(ValueError, match="kernel_a must be a registered kernel name or instance; got 3"):
        CrossModalEmbedding(kernel_a=3).fit(Xa, ya, Xb, yb)
    with pytest.raises(ValueError, match="mixes labels of different types"):
        CrossModalEmbedding().fit(Xa, np.array([1, "x"] * 12, dtype=object), Xb, yb)
