"""Declared capabilities: what regularizers offer, what solvers need, the check that pairs them, and the plugin
guide (docs/plugins.md), whose code blocks run here in order so that the guide cannot rot."""

import re
import sys
import types
from pathlib import Path

import cvxpy as cp
import numpy as np
import pytest
from _mkl_testing import random_problem, solve_mkl

import multikernel
from multikernel.cli import main
from multikernel.config.schema import config_from_dict
from multikernel.core.capabilities import (
    Capability,
    IncompatiblePartsError,
    check_compatible,
    compatible_solvers,
    offered_by,
    required_by,
)
from multikernel.core.interfaces import Regularizer, Solver
from multikernel.core.registry import Registry
from multikernel.errors import ConfigError, PluginError
from multikernel.experiments.config import experiment_config_from_dict
from multikernel.experiments.runner import check_experiment
from multikernel.plugins.losses import CSVCLoss
from multikernel.plugins.regularizers import (
    BoxSimplex,
    ElasticNet,
    L2Ball,
    LpBall,
    Simplex,
    SimplexL2,
    SimplexPower,
    Uniform,
)
from multikernel.plugins.solvers import BlockCoordinateDescent, LevelMethod, ProjectedGradient, ReducedGradient

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
C = Capability
BUILTIN_REGULARIZERS = [Uniform(), Simplex(), BoxSimplex(nu=0.5), SimplexL2(theta=1.0), SimplexPower(theta=1.0, p=1.5),
                        LpBall(p=4 / 3), L2Ball(), ElasticNet(v=0.5)]
BUILTIN_SOLVERS = [BlockCoordinateDescent(), ProjectedGradient(), ReducedGradient(), LevelMethod()]


# --------------------------------------------------------------------------------------------------
# the vocabulary and the built-ins' declarations
# --------------------------------------------------------------------------------------------------
EXPECTED_OFFERS = {
    "uniform": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.POLYHEDRAL, C.CAP},
    "simplex": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.SIMPLEX, C.POLYHEDRAL, C.CAP, C.BOUNDARY},
    "box_simplex": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.POLYHEDRAL, C.CAP},
    "simplex_l2": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.SIMPLEX, C.POLYHEDRAL, C.CAP,
                   C.STRONGLY_CONVEX, C.BOUNDARY},
    "simplex_power": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.SIMPLEX, C.POLYHEDRAL, C.CAP,
                      C.STRONGLY_CONVEX, C.BOUNDARY},
    "lp_ball": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.LP_BALL, C.BOUNDARY},
    "l2_ball": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.LP_BALL, C.BOUNDARY},
    "elastic_net": {C.CLOSED_FORM, C.PROJECTION, C.PENALTY_GRADIENT, C.BOUNDARY},
}


@pytest.mark.parametrize("reg", BUILTIN_REGULARIZERS, ids=lambda r: r.name)
def test_builtin_regularizers_offer(reg):
    assert offered_by(reg) == EXPECTED_OFFERS[reg.name]


@pytest.mark.parametrize("reg", [r for r in BUILTIN_REGULARIZERS if C.BOUNDARY in offered_by(r)],
                         ids=lambda r: r.name)
def test_onto_boundary_scales_a_point_onto_the_boundary_of_the_domain(reg):
    """``onto_boundary`` keeps the direction, lands in the domain (its projection is itself) and on its
    boundary (a little further out is not in the domain)."""
    v = np.random.default_rng(0).random(5) * [1.0, 3.0, 0.5, 2.0, 1e-3]
    out = reg.onto_boundary(v)
    np.testing.assert_allclose(out / v, (out / v)[0], rtol=1e-12)
    np.testing.assert_allclose(reg.project(out), out, rtol=1e-9, atol=1e-12)
    assert not np.allclose(reg.project(1.01 * out), 1.01 * out, rtol=1e-6, atol=0.0)


def test_builtin_solvers_require():
    assert required_by(BlockCoordinateDescent) == {C.CLOSED_FORM}
    assert required_by(ProjectedGradient()) == {C.PROJECTION, C.PENALTY_GRADIENT}
    assert required_by(ReducedGradient) == {C.SIMPLEX, C.PENALTY_GRADIENT}
    assert required_by(LevelMethod) == {C.PROJECTION, C.POLYHEDRAL, C.CAP, C.PENALTY_GRADIENT}


def test_capabilities_are_derived_from_the_code():
    class PenaltyOnly(Simplex):
        """Overrides the penalty but not its gradient: the gradient solvers would use a zero gradient."""

        def penalty(self, mu):
            return float(np.sum(mu**2))

    class Bare(Regularizer):
        def check(self, n_kernels): ...
        def initial(self, n_kernels): return np.full(n_kernels, 1.0 / n_kernels)
        def dual_bound(self, g): return float(np.max(g))

    assert C.PENALTY_GRADIENT not in offered_by(PenaltyOnly())
    assert offered_by(Bare()) == {C.PENALTY_GRADIENT}  # no penalty: its zero gradient is exact
    with pytest.raises(IncompatiblePartsError, match=r"lacks: penalty_gradient \(to offer it, implement "
                                                     r"penalty_gradient\(mu\)"):
        check_compatible(PenaltyOnly(), ProjectedGradient())
    with pytest.raises(IncompatiblePartsError, match=r"No registered solver works with Bare \(an unregistered class\)"
                       ) as caught:
        check_compatible(Bare(), ProjectedGradient())
    # every registered solver is named with what it lacks (the list grows with the solver plugins)
    for name in multikernel.get_registry().names("solver"):
        assert f"{name} lacks " in str(caught.value), name
    assert "bcd lacks closed_form" in str(caught.value) and "reduced_gradient lacks simplex" in str(caught.value)


@pytest.mark.parametrize("p, strongly", [(1.5, True), (2.0, True), (3.0, False)])
def test_strong_convexity_modulus(p, strongly):
    """``Omega - sigma/2 ||mu||^2`` is convex on the simplex (midpoint test along random segments), and the
    capability is offered exactly when the modulus is positive."""
    reg = SimplexPower(theta=0.7, p=p)
    sigma = reg.strong_convexity()
    assert (C.STRONGLY_CONVEX in offered_by(reg)) == strongly == (sigma > 0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        a, b = rng.dirichlet(np.full(4, 0.3)), rng.dirichlet(np.full(4, 0.3))
        h = lambda m: reg.penalty(m) - 0.5 * sigma * m @ m  # noqa: E731
        assert h(0.5 * (a + b)) <= 0.5 * (h(a) + h(b)) + 1e-12
    if p == 2.0:  # Omega = kappa ||mu||^2 exactly: a larger modulus breaks convexity
        e, f = np.array([1.0, 0, 0, 0]), np.array([0.0, 1.0, 0, 0])
        h = lambda m: reg.penalty(m) - 0.55 * sigma * m @ m  # noqa: E731
        assert h(0.5 * (e + f)) > 0.5 * (h(e) + h(f))
    assert SimplexL2(theta=0.5).strong_convexity() == pytest.approx(2.0)  # ||mu||^2 / (2 theta)


@pytest.mark.parametrize("reg", [r for r in BUILTIN_REGULARIZERS if C.POLYHEDRAL in offered_by(r)],
                         ids=lambda r: r.name)
def test_declared_domains_hold(reg):
    """``domain`` is the one declaration: the projection of every built-in lands in the domain it declares."""
    M = 5
    cap = {"simplex": 1.0, "point": 1.0 / M}.get(reg.domain) or reg.cap(M)
    rng = np.random.default_rng(1)
    for _ in range(50):
        mu = reg.project(3.0 * rng.normal(size=M))
        assert mu.sum() == pytest.approx(1.0) and mu.min() >= -1e-12 and mu.max() <= cap + 1e-12


def test_declarations_match_what_the_solvers_call():
    """For every built-in pair (and the guide's projection-only regularizer): when the check passes the solver
    reaches its certified gap; when it fails, the solver run without the check refuses on its own."""
    Ks, y = random_problem(3, n=24, M=3)
    floored = _guide_namespace()["FlooredSimplex"](floor=0.1)
    for reg in [*BUILTIN_REGULARIZERS, floored]:
        for solver in BUILTIN_SOLVERS:
            if required_by(solver) <= offered_by(reg):
                res = solve_mkl(Ks, y, reg, solver, tol=1e-3, inner_tol=1e-6, max_iter=300)
                assert res.dual_gap <= 1e-3, (reg, solver)
            else:
                with pytest.raises((ValueError, NotImplementedError)):
                    solve_mkl(Ks, y, reg, solver, tol=1e-3, max_iter=5)


# --------------------------------------------------------------------------------------------------
# the check where parts are built
# --------------------------------------------------------------------------------------------------
def test_every_builtin_method_passes_the_check():
    registry = multikernel.get_registry()
    assert len(registry.names("method")) >= 8
    for name in registry.names("method"):
        method = registry.get("method", name)
        reg = registry.create("regularizer", method.regularizer, **method.regularizer_params)
        solver = registry.create("solver", method.solver, **method.solver_params)
        check_compatible(reg, solver)
        assert method.solver in compatible_solvers(reg)


def test_estimator_refuses_an_impossible_pair(cancer):
    X, y = cancer
    with pytest.raises(IncompatiblePartsError) as info:
        multikernel.MKLClassifier(method="lpmkl", solver="level").fit(X, y)
    message = str(info.value)
    assert message.startswith("solver 'level' cannot run with regularizer 'lp_ball', which lacks: polyhedral")
    assert message.endswith("Solvers that work with 'lp_ball': bcd, projected_gradient, reduced_gradient_lp, "
                            "smo_mkl.")
    assert info.value.missing == {C.POLYHEDRAL, C.CAP}
    assert info.value.alternatives == ("bcd", "projected_gradient", "reduced_gradient_lp", "smo_mkl")
    assert isinstance(info.value, PluginError)
    with pytest.raises(IncompatiblePartsError, match="lacks: simplex.*work with 'box_simplex': bcd, level, "
                                                     "mirror_descent, projected_gradient, silp"):
        multikernel.MKLClassifier(method="sm1mkl", solver="reduced_gradient").fit(X, y)


def test_parts_of_the_wrong_kind_are_refused(cancer):
    X, y = cancer
    with pytest.raises(IncompatiblePartsError, match="the regularizer must be a multikernel.Regularizer"):
        multikernel.build_parts("l1mkl", regularizer=CSVCLoss())
    with pytest.raises(multikernel.InvalidParameterError, match="regularizer must be a registered regularizer"):
        multikernel.MKLClassifier(regularizer=CSVCLoss()).fit(X, y)


def test_unknown_capability_in_requires():
    class Wishful(Solver):
        requires = frozenset({"projecton"})

        def solve(self, problem): ...

    with pytest.raises(PluginError, match="Wishful declares requires=.*'projecton'.*Capabilities are closed_form"):
        check_compatible(Simplex(), Wishful())


LPMKL_LEVEL = """
[data]
source = "iris"

[[models]]
method = "lpmkl"
solver = { name = "level" }
"""


def test_cli_run_refuses_the_pair_with_exit_2(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(LPMKL_LEVEL)
    assert main(["run", "--quiet", str(path)]) == 2
    err = capsys.readouterr().err
    assert "solver 'level' cannot run with regularizer 'lp_ball'" in err
    assert "Solvers that work with 'lp_ball': bcd, projected_gradient, reduced_gradient_lp, smo_mkl." in err


def test_cli_validate_refuses_the_pair_with_exit_2(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(LPMKL_LEVEL)
    assert main(["validate", str(path)]) == 2
    assert "models[0].solver: solver 'level' cannot run with regularizer 'lp_ball'" in capsys.readouterr().err


def test_experiment_dry_run_refuses_the_pair(tmp_path):
    config = experiment_config_from_dict({
        "experiment": {"name": "pair", "output": str(tmp_path / "out"), "repeats": 1},
        "datasets": [{"name": "ring", "source": "ringnorm", "params": {"n_samples": 30, "n_features": 2}}],
        "kernels": {"family": "rbf_poly"},
        "methods": [{"method": "lpmkl", "solver": {"name": "level"}}],
    })
    with pytest.raises(ConfigError, match=r"^methods\[0\]\.solver: solver 'level' cannot run with "
                                          r"regularizer 'lp_ball'"):
        check_experiment(config)


# --------------------------------------------------------------------------------------------------
# the plugin guide, executed
# --------------------------------------------------------------------------------------------------
def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", GUIDE.read_text(encoding="utf-8"), re.S | re.M)


def _guide_namespace(upto: int = 1) -> dict:
    """The guide's first ``upto`` Python blocks run in a fresh module (the class, without registering it)."""
    module = types.ModuleType("plugins_guide_classes")
    for i, block in enumerate(_blocks("python")[:upto]):
        exec(compile(block, f"{GUIDE}:python block {i}", "exec"), module.__dict__)
    return module.__dict__


@pytest.fixture()
def private_registry(monkeypatch):
    registry = Registry()
    monkeypatch.setattr(multikernel.core.registry, "_REGISTRY", registry)
    return registry


def test_plugin_guide_runs(private_registry, monkeypatch, capsys):
    """Every Python block of docs/plugins.md, in order, in one module (as a reader's script would run them);
    the assertions are in the blocks.  The printed errors are the ones the guide shows."""
    module = types.ModuleType("plugins_guide")
    monkeypatch.setitem(sys.modules, "plugins_guide", module)
    blocks = _blocks("python")
    assert len(blocks) >= 8
    for i, block in enumerate(blocks):
        exec(compile(block, f"{GUIDE}:python block {i}", "exec"), module.__dict__)
    ns = module.__dict__
    assert private_registry.name_of(ns["FlooredSimplex"]) == "floored_simplex"
    assert set(private_registry.names("regularizer")) >= {"floored_simplex", "simplex"}
    shown = _blocks("text")[-1].strip().splitlines()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("solver '")]
    assert printed == shown


def test_plugin_guide_toml_is_a_valid_config(private_registry):
    ns = _guide_namespace(upto=2)
    private_registry.register(types.SimpleNamespace(multikernel_regularizers=ns["multikernel_regularizers"]))
    configs = [b for b in _blocks("toml") if "[[models]]" in b]
    assert len(configs) == 1
    config = config_from_dict(tomllib.loads(configs[0]))
    assert config.models[0].regularizer.name == "floored_simplex"
    assert config.models[0].solver.name == "projected_gradient"


def test_plugin_guide_tables_match_the_code():
    text = GUIDE.read_text(encoding="utf-8")
    for solver in BUILTIN_SOLVERS:
        row = re.search(rf"^\| `{solver.name}` \| (.*) \|$", text, re.M)
        assert row is not None, solver.name
        assert {Capability(c.strip()) for c in row.group(1).split(",")} == required_by(solver)
    for capability in Capability:
        assert re.search(rf"^\| `{capability.value}` \|", text, re.M), capability


@pytest.mark.parametrize("floor", [0.0, 0.1, 0.2])
def test_guide_regularizer_reaches_the_reference_optimum(floor):
    """The guide's FlooredSimplex by projected gradient against two independent references: the built-in
    simplex on the kernels ``K'_m = floor sum_k K_k + (1 - M floor) K_m`` (``mu = floor + (1 - M floor) nu``
    maps the simplex onto the floored one), and cvxpy + Clarabel on the dual
    ``max 1'alpha - floor sum_m t_m - (1 - M floor) max_m t_m``, ``t_m >= q_m(alpha)/2``."""
    FlooredSimplex = _guide_namespace()["FlooredSimplex"]
    Ks, y = random_problem(11, n=24, M=4)
    M, n = Ks.shape[0], Ks.shape[1]
    reg = FlooredSimplex(floor=floor)
    res = solve_mkl(Ks, y, reg, ProjectedGradient(), tol=1e-6, inner_tol=1e-8, max_iter=500)
    assert res.dual_gap <= 1e-6
    assert res.weights.min() >= floor - 1e-12 and res.weights.sum() == pytest.approx(1.0)

    scale = 1.0 - M * floor
    mixed = floor * Ks.sum(axis=0)[None] + scale * Ks
    ref = solve_mkl(mixed, y, Simplex(), LevelMethod(), tol=1e-7, inner_tol=1e-9, max_iter=500)
    assert res.objective == pytest.approx(ref.objective, rel=2e-6)

    alpha, t = cp.Variable(n), cp.Variable(M)
    cons = [alpha >= 0, alpha <= 1.0, y @ alpha == 0]
    for m in range(M):
        w, V = np.linalg.eigh(Ks[m])
        keep = w > 1e-12 * w.max()
        L = V[:, keep] * np.sqrt(w[keep])
        cons.append(0.5 * cp.sum_squares(L.T @ cp.multiply(y, alpha)) <= t[m])
    prob = cp.Problem(cp.Maximize(cp.sum(alpha) - floor * cp.sum(t) - scale * cp.max(t)), cons)
    prob.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(prob.value, rel=1e-5)
