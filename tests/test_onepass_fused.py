"""One read of the stack per outer iteration: products ``K_m v`` and the combined kernel by columns.

The one-pass path (:class:`multikernel.solve.outer.Evaluator`, ``MKLProblem(one_pass=True)``) is compared with the
two-pass path it replaces (combine, then quadratic forms; ``one_pass=False``) on the same fits:

* the pieces exactly: the products' forms against :meth:`DenseStack.quad_forms`, the columns against
  :meth:`DenseStack.combine`, and the SMO's starting gradient from the products against the one it computes
  from the kernel rows;
* whole fits: the block coordinate descent methods (``lpmkl``, ``sm1mkl``) end at the same objective,
  certified gap and weights within 1e-10.  The level method (``l1mkl``) and the reduced gradient
  (``simplemkl``) amplify rounding differences (an LP vertex or an SMO stopping step that flips), so for them the first
  iterations' certified bounds are compared to 1e-10 and both runs must reach the certified tolerance;
* lazy stacks (which already solve by columns) and subset views keep the two-pass path and give the same fit.

A fit from a raw array still reports NaN, asymmetric and indefinite kernels as before, and the combination
made in the checking read equals the stack's own.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest

from multikernel import MKLClassifier
from multikernel.plugins.kernels import RBFKernel
from multikernel.solve import smo
from multikernel.solve.svm import solve_inner, svm_problem
from multikernel.stack import products, storage
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.products import CombinedColumns, StackProducts
from multikernel.stack.storage import DenseStack


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _stack_of(n=60, seed=0, dtype=np.float64):
    X, y = _data(n, seed)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    Ks = [X @ X.T, (1 + X @ X.T) ** 2] + [np.exp(-g * d2) for g in (0.05, 0.2, 1.0, 3.0)]
    Ks += [np.outer(X[:, f], X[:, f]) for f in range(4)]
    Ks = np.stack(Ks)
    Ks = Ks * (n / np.trace(Ks, axis1=1, axis2=2))[:, None, None]
    return np.ascontiguousarray(Ks, dtype=dtype), y


class _TwoPass(MKLClassifier):
    """The classifier with the outer loop's two-pass path (combine, then quadratic forms): a per-solve setting."""

    def _settings(self):
        return attrs.evolve(super()._settings(), one_pass=False)


def _fit(monkeypatch, one_pass, K, y, method, **kw):
    cls = MKLClassifier if one_pass else _TwoPass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(kernels="precomputed", method=method, C=10.0, tol=1e-4, max_iter=300, **kw).fit(K, y)


class _Columns:
    """Counts the solves on columns from products (the one-pass path actually taken)."""

    def __init__(self, monkeypatch):
        self.n = 0
        init = CombinedColumns.__init__

        def counted(obj, *a, **k):
            self.n += 1
            init(obj, *a, **k)

        monkeypatch.setattr(CombinedColumns, "__init__", counted)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_give_the_quadratic_forms_and_combined_products(dtype):
    K, _ = _stack_of(dtype=dtype)
    stack = DenseStack(K)
    rng = np.random.default_rng(1)
    n = stack.n_rows
    for density in (0.1, 0.6, 1.0):  # sparse (gathered forms) and dense supports
        v = np.where(rng.random(n) < density, rng.normal(size=n), 0.0)
        bound = rng.random(n) < 0.5
        p = StackProducts(stack, np.abs(v), v, bound)
        np.testing.assert_allclose(p.forms(), stack.quad_forms(v), rtol=1e-12, atol=1e-12)
        mu = rng.random(len(K))
        Kb, Kf = p.combined(mu)
        K64 = np.tensordot(mu, K.astype(np.float64), axes=1)
        np.testing.assert_allclose(Kb, K64 @ np.where(bound, v, 0.0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Kf, K64 @ np.where(bound, 0.0, v), rtol=1e-12, atol=1e-12)
    # a subset of kernels: forms in that order, and no combined product for weights outside it
    ks = np.array([7, 2, 5])
    p = StackProducts(stack, np.abs(v), v, bound, ks)
    np.testing.assert_allclose(p.forms(), stack.quad_forms(v, ks), rtol=1e-12)
    mu = np.zeros(len(K))
    mu[[2, 5]] = 0.5
    assert p.combined(mu) is not None
    mu[0] = 0.1
    assert p.combined(mu) is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_columns_are_the_combined_kernel_bit_for_bit(dtype):
    K, _ = _stack_of(dtype=dtype)
    stack = DenseStack(K, symmetric=False)  # full rows, as the columns read them
    mu = np.random.default_rng(2).random(len(K))
    mu[3] = 0.0
    full = stack.combine(mu)
    cols = CombinedColumns(stack, mu, stack.diag())
    idx = np.array([0, 17, 5, 59])
    out = np.empty((len(idx), stack.n_rows))
    cols.columns(idx, out)
    np.testing.assert_array_equal(out, full[idx])
    np.testing.assert_allclose(cols.diagonal(), np.diagonal(full), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_warm_start_from_products_is_the_solve_from_rows(dtype):
    K, y = _stack_of(dtype=dtype)
    stack = DenseStack(K)
    mu0 = np.full(len(K), 1.0 / len(K))
    problem = svm_problem("csvc", y, 10.0)
    first = solve_inner(stack.combine(mu0), problem, tol=1e-6)
    assert first.at_bound.any() and (~first.at_bound & (first.alpha > 0)).any()  # both parts are exercised
    p = StackProducts(stack, first.alpha, first.coef, first.at_bound)
    mu1 = np.random.default_rng(4).random(len(K))
    mu1 /= mu1.sum()
    cols = CombinedColumns(stack, mu1, stack.diag(), p)
    # the starting gradient from the products equals the dense one (Q alpha + p, and its bound part)
    lo, up = np.zeros(len(y)), np.full(len(y), 10.0)
    G, Gbar = smo._given_gradient(cols, first.alpha.copy(), first.alpha, y, np.full(len(y), -1.0), lo, up,
                                  np.zeros(len(y)))
    K1 = stack.combine(mu1)
    Q = y[:, None] * K1 * y[None, :]
    np.testing.assert_allclose(G, Q @ first.alpha - 1.0, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(Gbar, Q @ np.where(first.at_bound, first.alpha, 0.0), rtol=1e-11, atol=1e-11)
    # and the solve from it is the solve from the kernel rows
    dense = solve_inner(K1, problem, alpha0=first.alpha, tol=1e-6)
    fused = solve_inner(cols, problem, alpha0=first.alpha, tol=1e-6)
    np.testing.assert_allclose(fused.alpha, dense.alpha, rtol=1e-10, atol=1e-10)
    assert fused.dual_objective == pytest.approx(dense.dual_objective, rel=1e-10)
    assert fused.primal_objective == pytest.approx(dense.primal_objective, rel=1e-10)


def test_products_for_another_start_are_not_used():
    K, y = _stack_of()
    stack = DenseStack(K)
    problem = svm_problem("csvc", y, 10.0)
    first = solve_inner(stack.combine(np.full(len(K), 0.1)), problem, tol=1e-6)
    p = StackProducts(stack, first.alpha, first.coef, first.at_bound)
    cols = CombinedColumns(stack, np.full(len(K), 0.1), stack.diag(), p)
    args = (y, np.full(len(y), -1.0), np.zeros(len(y)), np.full(len(y), 10.0), np.zeros(len(y)))
    other = first.alpha.copy()
    other[np.flatnonzero(other)[0]] *= 0.5
    assert smo._given_gradient(cols, other, other, *args) is None  # products of another alpha
    moved = first.alpha + 1e-9
    assert smo._given_gradient(cols, moved, first.alpha, *args) is None  # the projection moved the start
    # a different split between bound and free entries (another box) is refused too
    assert smo._given_gradient(cols, first.alpha.copy(), first.alpha, y, np.full(len(y), -1.0),
                               np.zeros(len(y)), np.full(len(y), 20.0), np.zeros(len(y))) is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", ["lpmkl", "sm1mkl"])
def test_block_coordinate_methods_end_where_the_two_pass_path_ends(monkeypatch, method, dtype):
    K, y = _stack_of(dtype=dtype)
    two = _fit(monkeypatch, False, K, y, method)
    count = _Columns(monkeypatch)
    one = _fit(monkeypatch, True, K, y, method)
    assert count.n >= one.n_iter_ - 1  # every solve after the first starts from products
    assert one.n_iter_ == two.n_iter_
    assert one.objective_ == pytest.approx(two.objective_, rel=1e-10)
    # The gap is a difference of two bounds that agree to ~1e-12: the level set projection (Newton steps on
    # its dual, stopped at 1e-9) passes rounding differences on to it at about 1e-11.
    assert one.dual_gap_ == pytest.approx(two.dual_gap_, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(one.weights_, two.weights_, rtol=1e-10, atol=1e-12)
    assert one.dual_gap_ <= 1e-4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", ["l1mkl", "simplemkl"])
def test_level_and_reduced_gradient_agree_until_rounding_is_amplified(monkeypatch, method, dtype):
    K, y = _stack_of(dtype=dtype)
    two = _fit(monkeypatch, False, K, y, method)
    count = _Columns(monkeypatch)
    one = _fit(monkeypatch, True, K, y, method)
    assert count.n > 0
    h1, h2 = one.results_[0].history, two.results_[0].history
    for a, b in list(zip(h1, h2, strict=False))[:4]:
        assert a["upper"] == pytest.approx(b["upper"], rel=1e-10)
        assert a["lower"] == pytest.approx(b["lower"], rel=1e-10, abs=1e-10)
    # both certify the tolerance, and the certified optima agree within it
    assert one.dual_gap_ <= 1e-4 and two.dual_gap_ <= 1e-4
    assert one.objective_ == pytest.approx(two.objective_, rel=2e-4)


def test_lazy_stacks_and_subset_views_keep_the_two_pass_path(monkeypatch):
    X, y = _data()
    builders = [RBFKernel(gamma=g) for g in (0.05, 0.3, 2.0)]
    lazy = KernelSet(builders, backend="lazy").fit_stack(X)
    dense = KernelSet(builders).fit_stack(X)
    count = _Columns(monkeypatch)
    fits = {}
    for name, stack in (("lazy", lazy), ("view", dense.subset(np.arange(len(y))))):
        for one_pass in (True, False):
            fits[name, one_pass] = _fit(monkeypatch, one_pass, stack, y, "sm1mkl")
    assert count.n == 0
    for name in ("lazy", "view"):
        a, b = fits[name, True], fits[name, False]
        assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
        np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-12, atol=1e-14)
    # the dense stack itself takes the one-pass path to the same fit
    one = _fit(monkeypatch, True, dense, y, "sm1mkl")
    assert count.n > 0
    # (compared with the view of the same dense kernels: the lazy stack's columns, computed from the features
    # by another BLAS path, differ in the last bits, enough for the level method to take other iterates)
    assert one.objective_ == pytest.approx(fits["view", False].objective_, rel=1e-8)


def test_multiclass_shared_weights_keep_the_two_pass_path(monkeypatch):
    K, _ = _stack_of()
    X, _ = _data()
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    count = _Columns(monkeypatch)
    a = _fit(monkeypatch, True, K, y3, "sm1mkl", multiclass="shared")
    b = _fit(monkeypatch, False, K, y3, "sm1mkl", multiclass="shared")
    assert count.n == 0
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)


# ---------------------------------------------------------------------------------------------------
# average from a raw array: the checks and the first combination in one read
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_checks_form_the_first_combination(dtype):
    K, _ = _stack_of(dtype=dtype)
    w = np.random.default_rng(5).random(len(K))
    stack = DenseStack.checked(K, first_weights=w)
    assert stack._pending is not None
    fresh = DenseStack(K).combine(w)
    got = stack.combine(w)
    np.testing.assert_allclose(got, fresh, rtol=1e-13, atol=1e-13)
    assert stack._pending is None  # used once, then the memory is released
    np.testing.assert_allclose(stack.combine(w), fresh, rtol=1e-13, atol=1e-13)
    # other weights, or an accumulation, never see it
    stack = DenseStack.checked(K, first_weights=w)
    np.testing.assert_allclose(stack.combine(w[::-1]), DenseStack(K).combine(w[::-1]), rtol=1e-13)
    assert stack._pending is None


def test_average_from_a_raw_array_reads_it_once(monkeypatch):
    K, y = _stack_of()
    calls = []
    combine_dense = storage._stack.combine_dense
    monkeypatch.setattr(storage._stack, "combine_dense", lambda *a, **k: calls.append(1) or combine_dense(*a, **k))
    raw = MKLClassifier(kernels="precomputed", method="average", C=10.0, tol=1e-6).fit(K, y)
    assert calls == []  # the combination came from the checking read
    ref = MKLClassifier(kernels="precomputed", method="average", C=10.0, tol=1e-6).fit(DenseStack(K), y)
    assert raw.objective_ == pytest.approx(ref.objective_, rel=1e-10)
    np.testing.assert_allclose(raw.decision_function(K), ref.decision_function(K), rtol=1e-8, atol=1e-8)


def test_bad_raw_arrays_get_the_same_errors_and_warnings():
    K, y = _stack_of()
    clf = MKLClassifier(kernels="precomputed", method="average", C=10.0)
    bad = K.copy()
    bad[2, 30, 4] = np.nan
    with pytest.raises(ValueError, match=r"kernel 2 has NaN or infinite entries \(the first at row 30, column 4"):
        clf.fit(bad, y)
    asym = K.copy()
    asym[3, 1, 2] += 1.0
    with pytest.warns(UserWarning, match=r"kernels \[3\] are not symmetric"):
        fitted = MKLClassifier(kernels="precomputed", method="average", C=10.0, tol=1e-6).fit(asym, y)
    sym = asym.copy()
    sym[3] = (asym[3] + asym[3].T) / 2
    ref = MKLClassifier(kernels="precomputed", method="average", C=10.0, tol=1e-6).fit(DenseStack(sym), y)
    assert fitted.objective_ == pytest.approx(ref.objective_, rel=1e-10)  # the symmetrized kernels' average
    indef = K.copy()
    indef[1, 5, 9] = indef[1, 9, 5] = 1.1 * np.sqrt(indef[1, 5, 5] * indef[1, 9, 9])
    with pytest.warns(UserWarning, match=r"kernel 1 is not positive semi-definite"):
        MKLClassifier(kernels="precomputed", method="average", C=10.0).fit(indef, y)


def test_products_module_needs_a_whole_square_dense_stack():
    K, _ = _stack_of()
    assert products.supports_products(DenseStack(K))
    assert not products.supports_products(DenseStack(K).subset(np.arange(10)))
    assert not products.supports_products(DenseStack(K[:, :, :30]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_level_method_aggregate_forms_from_cross_products(monkeypatch, dtype):
    from multikernel.plugins import solvers

    K, y = _stack_of(dtype=dtype)
    seen = []
    aggregate = solvers.CuttingPlanes._aggregate

    def checked(self, mu, lam):
        out = aggregate(self, mu, lam)
        if out is not None:
            # the forms from c_i'K_m c_j equal the forms read from the stack
            seen.append(out[6] is not None)
            np.testing.assert_allclose(out[1], self.problem.stack.quad_forms(out[3]), rtol=1e-10, atol=1e-12)
        return out

    monkeypatch.setattr(solvers.CuttingPlanes, "_aggregate", checked)
    one = _fit(monkeypatch, True, K, y, "l1mkl")
    assert seen and all(seen)  # every aggregate came from cross products
    assert one.dual_gap_ <= 1e-4
    seen.clear()
    two = _fit(monkeypatch, False, K, y, "l1mkl")
    assert seen and not any(seen)  # the two-pass path reads the stack for them
    assert one.objective_ == pytest.approx(two.objective_, rel=2e-4)
