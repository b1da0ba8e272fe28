"""The declaration of solvers that do not minimise the problem's objective (``replaces_objective``): read by
:func:`multikernel.core.capabilities.replaced_objective`, used by the tools that compare solvers on ``F``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from _mkl_testing import random_problem

import multikernel.core.registry
from multikernel.core.capabilities import replaced_objective
from multikernel.core.hookspecs import hookimpl
from multikernel.core.interfaces import MKLProblem, MKLResult, Solver
from multikernel.core.registry import Registry, get_registry
from multikernel.errors import PluginError
from multikernel.plugins.easymkl import EasyMKLSolver
from multikernel.plugins.silp import SILP
from multikernel.stack.storage import DenseStack


def test_only_the_two_stage_methods_declare_it_among_the_builtins():
    registry = get_registry()
    declared = {name: replaced_objective(registry.get("solver", name)) for name in registry.names("solver")}
    two_stage = {"easymkl", "cka", "alignf", "pwmk", "fheuristic", "gram", "rmkl", "memo"}
    assert {name for name, what in declared.items() if what is not None} == two_stage
    assert "one QP" in declared["easymkl"]
    # Instances and classes alike.
    assert replaced_objective(EasyMKLSolver()) == declared["easymkl"] and replaced_objective(SILP()) is None


@pytest.mark.parametrize("bad", [3, "", "   ", True])
def test_a_bad_declaration_is_a_plugin_error(bad):
    class Odd(Solver):
        replaces_objective = bad

        def solve(self, problem: MKLProblem) -> MKLResult:  # pragma: no cover - never called
            raise NotImplementedError

    with pytest.raises(PluginError, match=r"replaces_objective=.*must be None .* or a non-empty string"):
        replaced_objective(Odd)


def test_the_solver_benchmark_skips_by_the_declaration(monkeypatch):
    # bench_solvers.py has no list of names: a third-party solver that declares it is skipped with its own words,
    # before any work, and one that minimises F is run.
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_solvers.py"
    spec = importlib.util.spec_from_file_location("bench_solvers_under_test", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    class Heuristic(EasyMKLSolver):
        replaces_objective = "weights by a rule of thumb"

    class ThirdParty:
        @hookimpl
        def multikernel_solvers(self) -> dict[str, type[Solver]]:
            return {"heuristic_weights": Heuristic}

    registry = Registry()
    registry.register(ThirdParty(), name="third_party")
    monkeypatch.setattr(multikernel.core.registry, "_REGISTRY", registry)
    Ks, y = random_problem(0, n=20, M=3)
    train = DenseStack(Ks)
    args = SimpleNamespace(C=1.0, tol=1e-3, max_iter=50, time_limit=60.0)
    for name in ("easymkl", "heuristic_weights"):
        skipped = bench.run(name, "simplex", {}, train, train, y, y, args)
        assert isinstance(skipped, str) and skipped.startswith("not this problem: ")
        assert skipped.endswith(replaced_objective(registry.get("solver", name)))
    ran = bench.run("silp", "simplex", {}, train, train, y, y, args)
    assert isinstance(ran, dict) and ran["reached"] and np.isfinite(ran["objective"])
