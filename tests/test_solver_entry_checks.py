"""Every registered solver refuses, at its ``solve`` entry, a regularizer that lacks what it requires.

Building a method checks the pairing (``check_compatible``); a solver called directly on a problem is
guarded by ``Solver.check_parts``, the first call of every ``solve``, so that no solver repeats the
capability test in its own checks (a review found two copies of the lp-ball test).  A solver whose
``solve`` forgot the call would run on a domain it cannot handle and fail here.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mkl_testing import random_problem

from multikernel.core.capabilities import IncompatiblePartsError, offered_by, required_by
from multikernel.core.interfaces import MKLProblem
from multikernel.core.registry import get_registry
from multikernel.plugins.losses import CSVCLoss
from multikernel.stack.storage import DenseStack

_REGISTRY = get_registry()


def _incompatible_regularizer(solver_cls):
    """A registered regularizer (default parameters) that lacks one of the solver's requirements."""
    needed = required_by(solver_cls)
    for info in _REGISTRY.plugins("regularizer"):
        try:
            reg = info.obj()
        except TypeError:  # needs parameters
            continue
        if not needed <= offered_by(reg):
            return reg
    return None


# Solvers with a registered regularizer that lacks one of their requirements (bcd and projected_gradient
# work with every registered one).
_REFUSING = sorted(info.name for info in _REGISTRY.plugins("solver") if _incompatible_regularizer(info.obj))


def test_the_solvers_that_need_a_domain_are_covered():
    assert {"smo_mkl", "reduced_gradient_lp", "reduced_gradient", "level", "silp", "easymkl"} <= set(_REFUSING)


@pytest.mark.parametrize("name", _REFUSING)
def test_direct_solve_refuses_a_regularizer_without_the_required_capabilities(name):
    solver_cls = _REGISTRY.get("solver", name)
    reg = _incompatible_regularizer(solver_cls)
    Ks, y = random_problem(3, n=12, M=3)
    problem = MKLProblem(stack=DenseStack(Ks), y=y, loss=CSVCLoss(C=1.0), regularizer=reg)
    with pytest.raises(IncompatiblePartsError, match=r"cannot run with regularizer .* which lacks") as err:
        solver_cls().solve(problem)
    assert set(err.value.missing) == set(required_by(solver_cls) - offered_by(reg))
    assert np.all([alt != name for alt in err.value.alternatives])
