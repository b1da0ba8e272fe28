"""Kernel builders against direct numpy formulas, PSD, train/test consistency, bandwidths, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone

from multikernel.core.registry import get_registry
from multikernel.plugins.kernels import (
    BUILDERS,
    CosineKernel,
    DistanceKernel,
    ExpChi2Kernel,
    IntersectionKernel,
    InverseDistanceKernel,
    InverseSquareDistanceKernel,
    LaplacianKernel,
    LinearKernel,
    ModifiedChi2Kernel,
    PolynomialKernel,
    PrecomputedKernel,
    ProductKernel,
    RBFKernel,
    chi2_family,
    event6_family,
    rbf_poly_family,
    simplemkl_family,
)


# -------------------------------------------------------------------------------------------------
# Direct (slow, obvious) reference formulas
# -------------------------------------------------------------------------------------------------
def _pairs(A, B):
    return A[:, None, :], B[None, :, :]


def ref_sqdist(A, B):
    a, b = _pairs(A, B)
    return ((a - b) ** 2).sum(-1)


def ref_chi2(A, B):
    a, b = _pairs(A, B)
    num, den = (a - b) ** 2, a + b
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0).sum(-1)


def ref_modchi2(A, B):
    a, b = _pairs(A, B)
    num, den = ((a - b) ** 2).sum(-1), ((a + b) ** 2).sum(-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0)


def ref_cosine(A, B):
    # Cosine is scale-invariant per row: rescaling keeps denormal rows (which are not zero) from
    # underflowing in the norms.
    def rescale(Z):
        m = np.abs(Z).max(axis=1, keepdims=True) if Z.shape[1] else np.ones((len(Z), 1))
        return Z / np.where(m > 0, m, 1.0)

    A, B = rescale(A), rescale(B)
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    G = A @ B.T
    d = np.outer(na, nb)
    return np.where(d > 0, G / np.where(d > 0, d, 1), 0)


def mean_offdiag(D):
    n = len(D)
    return (D.sum() - np.trace(D)) / (n * (n - 1))


# (builder, reference(A, B, fitted builder), needs non-negative features)
CASES = [
    (LinearKernel(), lambda A, B, b: A @ B.T, False),
    (PolynomialKernel(degree=3, gamma=0.5, coef0=1.0), lambda A, B, b: (0.5 * A @ B.T + 1) ** 3, False),
    (CosineKernel(), lambda A, B, b: ref_cosine(A, B), False),
    (RBFKernel(gamma=0.3), lambda A, B, b: np.exp(-0.3 * ref_sqdist(A, B)), False),
    (RBFKernel(sigma=2.0), lambda A, B, b: np.exp(-ref_sqdist(A, B) / 8.0), False),
    (LaplacianKernel(gamma=0.3), lambda A, B, b: np.exp(-np.sqrt(0.3 * ref_sqdist(A, B))), False),
    (InverseSquareDistanceKernel(gamma=0.3), lambda A, B, b: 1 / (0.3 * ref_sqdist(A, B) + 1), False),
    (InverseDistanceKernel(gamma=0.3), lambda A, B, b: 1 / (np.sqrt(0.3 * ref_sqdist(A, B)) + 1), False),
    (ExpChi2Kernel(gamma=0.7), lambda A, B, b: np.exp(-0.7 * ref_chi2(A, B)), True),
    (IntersectionKernel(), lambda A, B, b: np.minimum(A[:, None], B[None]).sum(-1), True),
    (ModifiedChi2Kernel(gamma=2.0), lambda A, B, b: np.exp(-2.0 * ref_modchi2(A, B)), True),
    (RBFKernel(gamma_scale=2.0), lambda A, B, b: np.exp(-b.gamma_ * ref_sqdist(A, B)), False),
    (ExpChi2Kernel(gamma_scale=0.5), lambda A, B, b: np.exp(-b.gamma_ * ref_chi2(A, B)), True),
]
IDS = [f"{b.name}-{i}" for i, (b, _, _) in enumerate(CASES)]


def _features(draw, nonneg: bool, n: int, d: int):
    # Features on a grid of 1e-4: values such as 1e-159 make distances subnormal and every bandwidth rule
    # (ours and the reference's) meaningless; that case gets its own test.
    lo = 0 if nonneg else -30000
    return draw(arrays(np.int64, (n, d), elements=st.integers(lo, 30000))) / 1e4


@st.composite
def train_test(draw, nonneg: bool):
    d = draw(st.integers(1, 5))
    X = _features(draw, nonneg, draw(st.integers(2, 12)), d)
    Z = _features(draw, nonneg, draw(st.integers(1, 6)), d)
    return X, Z


@pytest.mark.parametrize(("builder", "ref", "nonneg"), CASES, ids=IDS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_builder_matches_formula(builder, ref, nonneg, data):
    X, Z = data.draw(train_test(nonneg))
    b = clone(builder)
    K = b.fit_transform(X)
    # Distances from the Gram matrix carry cancellation noise of about eps * ||x||^2 (cut to 0 below
    # it); the kernels of the distance itself (not squared) see its square root, ~1e-7 here.
    atol = 1e-6 if b.name in ("laplacian", "inverse_distance") else 1e-9
    np.testing.assert_allclose(K, ref(X, X, b), rtol=1e-9, atol=atol)
    np.testing.assert_allclose(b.transform(Z), ref(Z, X, b), rtol=1e-9, atol=atol)
    # Train/test consistency: the training rows through transform give the training kernel.
    np.testing.assert_allclose(b.transform(X), K, rtol=1e-9, atol=atol)
    np.testing.assert_allclose(b.self_similarity(Z), np.diagonal(ref(Z, Z, b)), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("builder", "ref", "nonneg"), CASES, ids=IDS)
def test_columns_subset(builder, ref, nonneg):
    rng = np.random.default_rng(1)
    X, Z = rng.random((15, 6)), rng.random((4, 6))
    b = clone(builder).set_params(columns=[4, 1])
    K = b.fit_transform(X)
    np.testing.assert_allclose(K, ref(X[:, [4, 1]], X[:, [4, 1]], b), rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(b.transform(Z), ref(Z[:, [4, 1]], X[:, [4, 1]], b), rtol=1e-9, atol=1e-7)


@pytest.mark.parametrize(("builder", "ref", "nonneg"), [c for c in CASES if c[0].psd],
                         ids=[i for c, i in zip(CASES, IDS, strict=True) if c[0].psd])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_psd(builder, ref, nonneg, data):
    X, _ = data.draw(train_test(nonneg))
    K = clone(builder).fit_transform(X)
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    scale = max(1.0, np.abs(K).max())
    assert np.linalg.eigvalsh(K).min() >= -1e-8 * scale * len(K)


def test_modified_chi2_not_declared_psd():
    assert ModifiedChi2Kernel.psd is False


# -------------------------------------------------------------------------------------------------
# Bandwidth rules: gamma_0 = 1 / mean over distinct training pairs, times a multiplier
# -------------------------------------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_fitted_bandwidths(data):
    X, _ = data.draw(train_test(nonneg=True))
    D2, C, MC = ref_sqdist(X, X), ref_chi2(X, X), ref_modchi2(X, X)
    for cls in (RBFKernel, LaplacianKernel, InverseSquareDistanceKernel, InverseDistanceKernel):
        b = cls(gamma_scale=4.0).fit(X)
        A = mean_offdiag(D2)
        expected = 4.0 / A if A > 0 else 4.0
        assert b.gamma_ == pytest.approx(expected, rel=1e-9)
    A = mean_offdiag(C)
    assert ExpChi2Kernel(gamma_scale=0.25).fit(X).gamma_ == pytest.approx(0.25 / A if A > 0 else 0.25,
                                                                        rel=1e-9)
    A = mean_offdiag(MC)
    assert ModifiedChi2Kernel().fit(X).gamma_ == pytest.approx(1 / A if A > 0 else 1.0, rel=1e-9)


def test_numerically_constant_features_get_a_clear_bandwidth_error():
    X = np.array([[0.0, 1e-159], [1e-159, 1e-159], [1e-159, 0.0]])
    with pytest.raises(ValueError, match="numerically constant"):
        RBFKernel().fit(X)


def test_bandwidth_cache_sees_in_place_changes():
    X = np.random.default_rng(10).random((15, 4))
    first = ExpChi2Kernel().fit(X).gamma_
    X *= 2.0  # chi-square distances double, so gamma halves
    assert ExpChi2Kernel().fit(X).gamma_ == pytest.approx(first / 2)


def test_bandwidth_uses_training_data_only():
    rng = np.random.default_rng(2)
    X = rng.random((20, 3))
    b = RBFKernel(gamma_scale=1.0).fit(X)
    gamma = b.gamma_
    b.transform(100 * rng.random((5, 3)))
    assert b.gamma_ == gamma
    assert RBFKernel(sigma=0.5).fit(X).gamma_ == pytest.approx(2.0)
    assert LaplacianKernel(sigma=0.5).fit(X).gamma_ == pytest.approx(4.0)


# -------------------------------------------------------------------------------------------------
# Distance, precomputed and product kernels
# -------------------------------------------------------------------------------------------------
def _indexed(rng, n_all=30):
    P = rng.random((n_all, 4))
    D = np.sqrt(ref_sqdist(P, P))
    idx = np.arange(n_all, dtype=float)[:, None]
    return P, D, idx[:20], idx[20:]


@pytest.mark.parametrize(("kind", "feature_cls"), [
    ("gaussian", RBFKernel), ("laplacian", LaplacianKernel),
    ("inverse_square_distance", InverseSquareDistanceKernel), ("inverse_distance", InverseDistanceKernel)])
def test_distance_kernel_equals_feature_kernel(kind, feature_cls):
    rng = np.random.default_rng(3)
    P, D, tr, te = _indexed(rng)
    b = DistanceKernel(distances=D, kind=kind, gamma_scale=2.0)
    f = feature_cls(gamma_scale=2.0)
    np.testing.assert_allclose(b.fit_transform(tr), f.fit_transform(P[:20]), rtol=1e-9, atol=1e-12)
    assert b.gamma_ == pytest.approx(f.gamma_)
    np.testing.assert_allclose(b.transform(te), f.transform(P[20:]), rtol=1e-9, atol=1e-12)


def test_distance_exponential_kind():
    rng = np.random.default_rng(4)
    P = rng.random((25, 6))
    C = ref_chi2(P, P)
    idx = np.arange(25, dtype=float)[:, None]
    b = DistanceKernel(distances=C, kind="exponential").fit(idx[:18])
    f = ExpChi2Kernel().fit(P[:18])
    assert b.gamma_ == pytest.approx(f.gamma_)
    np.testing.assert_allclose(b.transform(idx[18:]), f.transform(P[18:]), rtol=1e-9)


def test_precomputed_kernel_both_modes():
    rng = np.random.default_rng(5)
    P = rng.random((12, 3))
    Kall = P @ P.T
    idx = np.arange(12, dtype=float)[:, None]
    b = PrecomputedKernel(matrix=Kall).fit(idx[:8])
    np.testing.assert_array_equal(b.transform(idx[8:]), Kall[8:, :8])
    np.testing.assert_array_equal(b.self_similarity(idx[8:]), np.diag(Kall)[8:])
    s = PrecomputedKernel()
    np.testing.assert_array_equal(s.fit_transform(Kall[:8, :8]), Kall[:8, :8])
    np.testing.assert_array_equal(s.transform(Kall[8:, :8]), Kall[8:, :8])
    with pytest.raises(ValueError, match="columns"):
        s.transform(Kall[8:, :7])
    with pytest.raises(ValueError, match="square"):
        PrecomputedKernel().fit(Kall[:8, :7])


def test_product_kernel():
    rng = np.random.default_rng(6)
    X, Z = rng.random((10, 3)), rng.random((4, 3))
    b = ProductKernel(factors=[RBFKernel(gamma=0.5), PolynomialKernel(degree=2)])
    expected = np.exp(-0.5 * ref_sqdist(Z, X)) * (Z @ X.T + 1) ** 2
    np.testing.assert_allclose(b.fit(X).transform(Z), expected, rtol=1e-10)
    assert b.psd
    assert np.linalg.eigvalsh(b.fit_transform(X)).min() > -1e-9


# -------------------------------------------------------------------------------------------------
# Bad input
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", ["linear", "rbf", "exp_chi2", "intersection"])
def test_nonfinite_features(bad, name):
    X = np.ones((5, 3))
    X[2, 1] = bad
    b = BUILDERS[name]()
    with pytest.raises(ValueError, match="NaN|infinity"):
        b.fit(X)
    b.fit(np.ones((5, 3)))
    with pytest.raises(ValueError, match="NaN|infinity"):
        b.transform(X)


@pytest.mark.parametrize("cls", [ExpChi2Kernel, IntersectionKernel, ModifiedChi2Kernel])
def test_negative_histograms(cls):
    X = np.abs(np.random.default_rng(7).random((6, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        cls().fit(X - 0.5)
    b = cls().fit(X)
    with pytest.raises(ValueError, match="non-negative"):
        b.transform(-X)


def test_empty_and_out_of_range_columns():
    X = np.ones((5, 3))
    with pytest.raises(ValueError, match="empty"):
        RBFKernel(columns=[]).fit(X)
    with pytest.raises(ValueError, match="out of range"):
        LinearKernel(columns=[3]).fit(X)


def test_mismatched_test_dimensions():
    rng = np.random.default_rng(8)
    for name in ("linear", "rbf", "exp_chi2", "cosine"):
        b = BUILDERS[name]().fit(rng.random((6, 3)))
        with pytest.raises(ValueError, match="expected 3 features"):
            b.transform(rng.random((2, 4)))


def test_bad_parameters():
    X = np.random.default_rng(9).random((6, 2))
    with pytest.raises(ValueError, match="gamma or sigma"):
        RBFKernel(gamma=1.0, sigma=1.0).fit(X)
    with pytest.raises(ValueError, match="positive"):
        RBFKernel(gamma=-1.0).fit(X)
    with pytest.raises(ValueError, match="degree"):
        PolynomialKernel(degree=1.5).fit(X)
    with pytest.raises(ValueError, match="kind"):
        DistanceKernel(distances=np.zeros((6, 6)), kind="cubic").fit(np.arange(6.0)[:, None])
    with pytest.raises(ValueError, match="integer sample indices"):
        DistanceKernel(distances=np.zeros((6, 6))).fit(np.array([[0.5], [1.0]]))


@pytest.mark.parametrize(("make", "numpy_params"), [
    (lambda **p: PolynomialKernel(**p), {"degree": np.int64(3), "gamma": np.float32(0.5), "coef0": np.int32(1)}),
    (lambda **p: RBFKernel(**p), {"gamma": np.float32(0.25)}),
    (lambda **p: RBFKernel(**p), {"sigma": np.int64(2)}),
    (lambda **p: LaplacianKernel(**p), {"gamma_scale": np.float16(2.0)}),
    (lambda **p: ExpChi2Kernel(**p), {"gamma": np.int64(1)}),
    (lambda **p: ModifiedChi2Kernel(**p), {"gamma_scale": np.float32(0.5)}),
])
def test_numpy_scalar_parameters_are_numbers(make, numpy_params):
    X = np.random.default_rng(11).random((8, 3))
    plain = {k: v.item() for k, v in numpy_params.items()}
    np.testing.assert_array_equal(make(**numpy_params).fit_transform(X), make(**plain).fit_transform(X))


@pytest.mark.parametrize(("builder", "match"), [
    (RBFKernel(gamma=True), "rbf: gamma must be a positive finite number; got True of type bool"),
    (RBFKernel(gamma="0.5"), "rbf: gamma must be a positive finite number; got '0.5'"),
    (LaplacianKernel(sigma=0), "laplacian: sigma must be a positive finite number"),
    (ExpChi2Kernel(gamma_scale=np.nan), "exp_chi2: gamma_scale must be a positive finite number"),
    (PolynomialKernel(coef0=-1), "poly: coef0 must be a non-negative finite number"),
    (PolynomialKernel(gamma=0), "poly: gamma must be a positive finite number"),
    (PolynomialKernel(degree=True), "poly: degree must be a positive integer"),
    (DistanceKernel(distances=np.eye(3), gamma=-1.0), "distance: gamma must be a positive finite number"),
])
def test_bad_scalar_parameters_name_builder_and_parameter(builder, match):
    X = np.arange(3.0)[:, None]
    with pytest.raises(ValueError, match=match):
        builder.fit(X)


def test_a_new_distance_kernel_is_a_small_bandwidth_subclass():
    """The documented extension path: name a map, give the base and its training mean."""
    from multikernel.plugins.kernels import BandwidthKernel

    class CityBlockLaplacian(BandwidthKernel):
        name = "cityblock"
        _base_kind = "cityblock"

        def _base(self, A, B, symmetric):
            return np.abs(A[:, None, :] - B[None, :, :]).sum(-1)

        def _mean_base(self, A):
            return mean_offdiag(self._base(A, A, True))

    rng = np.random.default_rng(12)
    X, Z = rng.random((10, 3)), rng.random((4, 3))
    b = CityBlockLaplacian(gamma_scale=2.0).fit(X)
    D = np.abs(X[:, None] - X[None]).sum(-1)
    assert b.gamma_ == pytest.approx(2.0 / mean_offdiag(D))
    np.testing.assert_allclose(b.transform(Z), np.exp(-b.gamma_ * np.abs(Z[:, None] - X[None]).sum(-1)))
    np.testing.assert_array_equal(b.self_similarity(Z), np.ones(4))
    assert b.get_params() == {"gamma": None, "gamma_scale": 2.0, "columns": None}


# -------------------------------------------------------------------------------------------------
# Families and registration
# -------------------------------------------------------------------------------------------------
def test_families_sizes_and_parameters():
    fam = simplemkl_family(20)
    assert len(fam) == 273
    assert len(simplemkl_family(30)) == 403
    rbfs = [b for b in fam[:13] if isinstance(b, RBFKernel)]
    assert sorted(b.sigma for b in rbfs) == [2.0**k for k in range(-3, 7)]
    assert [b.degree for b in fam[:13] if isinstance(b, PolynomialKernel)] == [1, 2, 3]
    assert fam[13].columns == [0] and fam[-1].columns == [19]
    ev = event6_family(5)
    assert len(ev) == 20
    assert sorted({b.gamma_scale for b in ev}) == [4.0**k for k in (-3, -2, -1, 0, 1)]
    D = [np.zeros((4, 4))] * 4
    assert len(event6_family(1, distances=D)) == 80
    yt = chi2_family(40, feature_groups=[range(0, 10), range(10, 20), range(20, 30), range(30, 40)])
    assert len(yt) == 20
    assert sorted({b.gamma_scale for b in yt}) == pytest.approx([4.0**(n - 1) for n in (-1, -.5, 0, .5, 1)])
    assert len(rbf_poly_family(4)) == 8


def test_registry_exposes_builders_and_families():
    reg = get_registry()
    for name in ("linear", "poly", "rbf", "laplacian", "inverse_square_distance", "inverse_distance",
                 "exp_chi2", "intersection", "chi2_modified", "cosine", "distance", "precomputed",
                 "product"):
        assert name in reg.names("kernel")
    for name in ("simplemkl", "rbf_poly", "event6", "chi2"):
        assert name in reg.names("family")
    b = reg.create("kernel", "laplacian", gamma=2.0)
    assert isinstance(b, LaplacianKernel) and b.get_params()["gamma"] == 2.0
