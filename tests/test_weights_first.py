"""The two-stage methods by name from Python, configs and the CLI; the simplex search against a known minimum."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _mkl_testing import make_problem
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

from multikernel import MKLClassifier
from multikernel.cli import main
from multikernel.core.capabilities import replaced_objective
from multikernel.core.registry import get_registry
from multikernel.plugins._weights_first import simplex_descent

METHODS = ["cka", "alignf", "pwmk", "fheuristic", "gram", "rmkl", "memo"]


@pytest.mark.parametrize("method", METHODS)
def test_method_by_name_fits_predicts_and_round_trips(method, tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=120, stratify=y, random_state=0)
    clf = MKLClassifier(kernels="rbf_poly", method=method, C=10.0, standardize=True).fit(Xtr, ytr)
    assert clf.score(Xte, yte) > 0.85
    assert abs(clf.weights_.sum() - 1.0) < 1e-9 and (clf.weights_ >= 0).all()
    assert clf.dual_gap_ <= clf.tol  # the SVM's own certificate at the chosen weights
    assert replaced_objective(get_registry().create("solver", method))  # left out of comparisons on F
    clf.save(tmp_path / "m.npz")
    loaded = MKLClassifier.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.predict(Xte), clf.predict(Xte))


def test_methods_from_a_config_and_the_cli(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(60, 3))
    rows = ["a,b,c,label"] + [f"{a:.4f},{b:.4f},{c:.4f},{1 if a + 0.3 * b > 0 else -1}" for a, b, c in Z]
    csv.write_text("\n".join(rows))
    models = "".join(f"[[models]]\nmethod = '{m}'\n" for m in ("cka", "gram"))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[data]\nsource = '{csv}'\n{models}[models.solver]\nname = 'gram'\nparams = {{ qp_tol = 1e-6 }}\n")
    assert main(["validate", str(cfg)]) == 0
    out = tmp_path / "r.json"
    assert main(["run", str(cfg), "--quiet", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [m["label"] for m in report["models"]] == ["cka", "gram"]
    assert all(m["accuracy_mean"] > 0.8 for m in report["models"])
    capsys.readouterr()
    cfg.write_text(f"[data]\nsource = '{csv}'\n[[models]]\nmethod = 'memo'\n[models.solver]\nname = 'memo'\n"
                   "params = { theta = -1.0 }\n")
    assert main(["validate", str(cfg)]) == 2
    assert "theta must be" in capsys.readouterr().err


@pytest.mark.parametrize("certified", [True, False])
def test_simplex_descent_finds_a_known_minimum(certified):
    c = np.array([0.6, 0.3, 0.1, 0.0])

    def evaluate(mu):
        return float((mu - c) @ (mu - c)), 2 * (mu - c)

    found = simplex_descent(evaluate, np.full(4, 0.25), tol=1e-5, max_iter=5000, certified=certified,
                            relative=False, method="test")
    assert found.converged
    if certified:  # the Frank-Wolfe gap bounds f(mu) - min f = f(mu)
        assert found.value <= 1e-5
        np.testing.assert_allclose(found.mu, c, atol=3e-3)
    else:  # the change rule only says that the descent has slowed down
        assert found.value <= 1e-3


def test_max_iter_warns_with_the_measure_reached():
    d = make_problem(n=30, positives=12, kinds=["rbf", "poly", "linear", "rbf"], seed=3)
    with pytest.warns(UserWarning, match="memo: the weight search reached max_iter = 2 at Frank-Wolfe gap"):
        MKLClassifier(kernels="precomputed", method="memo", max_iter=2, tol=1e-9).fit(d.Ks, d.y)


@pytest.mark.parametrize("method", METHODS)
def test_lazy_and_float32_stacks_give_the_dense_weights(method):
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:80], y[:80]
    dense = MKLClassifier(kernels="rbf_poly", method=method, standardize=True).fit(X, y).weights_
    lazy = MKLClassifier(kernels="rbf_poly", method=method, standardize=True, kernel_backend="lazy"
                         ).fit(X, y).weights_
    np.testing.assert_allclose(lazy, dense, atol=1e-6)
    single = MKLClassifier(kernels="rbf_poly", method=method, standardize=True, kernel_dtype="float32"
                           ).fit(X, y).weights_
    assert np.abs(single - dense).max() < 0.05  # float32 rounding moves the QPs' solutions, not the method
