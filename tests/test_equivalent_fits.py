"""Grid points of different methods that are the same problem are fitted once per fold
(:mod:`multikernel.experiments.equivalent`): the keys, the equivalences themselves (independent fits reach the
same optimum), and cross-validation with and without sharing."""

from __future__ import annotations

import numpy as np
import pytest
from _mkl_testing import random_problem

from multikernel.config.schema import PartConfig
from multikernel.experiments.config import MethodSpec
from multikernel.experiments.equivalent import problem_key
from multikernel.experiments.model_selection import cross_validate_methods, fit_point, fits_per_fold, method_parts
from multikernel.solve.fit import SolveSettings, encode_targets
from multikernel.stack.storage import DenseStack

M = 6


def _key(method: str, regularizer: PartConfig | None = None, **params):
    return problem_key(method_parts(MethodSpec(method=method, regularizer=regularizer), params), M)


def test_keys_name_the_equivalences_of_the_protocol():
    l1 = _key("simplemkl", C=1.0)
    assert l1 is not None
    assert _key("sgmkl", C=1.0, regularizer__v=1.0) == l1
    assert _key("lpmkl", C=1.0, regularizer__p=1.0) == l1
    box = PartConfig(name="box_simplex", params={})
    assert _key("sm1mkl", box, C=1.0, regularizer__nu=1.0 / M) == l1  # theta = 1: the cap is inactive
    assert _key("sm1mkl", box, C=1.0, regularizer__theta=3.0) == l1
    l2 = _key("l2mkl", C=1.0)
    assert l2 is not None and l2 != l1
    assert _key("sgmkl", C=1.0, regularizer__v=0.0) == l2 == _key("lpmkl", C=1.0, regularizer__p=2.0)
    average = _key("average", C=1.0)
    assert average is not None and _key("sm1mkl", box, C=1.0, regularizer__nu=1.0) == average
    # Another C is another problem; the points inside the grids have no equivalent.
    assert _key("sgmkl", C=10.0, regularizer__v=1.0) != l1
    for method, params in (("sgmkl", {"regularizer__v": 0.5}), ("lpmkl", {"regularizer__p": 4 / 3}),
                           ("sm2mkl", {"regularizer__theta": 1e5}), ("lpmkl", {"regularizer__p": float("inf")})):
        assert _key(method, C=1.0, **params) is None
    assert _key("sm1mkl", box, C=1.0, regularizer__nu=0.5) is None


@pytest.mark.parametrize("method, regularizer, params", [
    ("sgmkl", None, {"regularizer__v": 1.0}),
    ("lpmkl", None, {"regularizer__p": 1.0}),
    ("sm1mkl", PartConfig(name="box_simplex", params={}), {"regularizer__theta": 1.0}),
])
def test_equivalent_points_have_the_same_optimum(method, regularizer, params):
    # Independent tight fits of the L1-equivalent points reach L1-MKL's optimal value.
    Ks, y = random_problem(3, n=30, M=M)
    stack, targets = DenseStack(Ks), encode_targets(y)
    settings = SolveSettings(tol=1e-6, max_iter=2000)
    ref = fit_point(stack, targets, MethodSpec(method="simplemkl"), {"C": 1.0}, settings)
    ours = fit_point(stack, targets, MethodSpec(method=method, regularizer=regularizer), {"C": 1.0, **params}, settings)
    assert ref.dual_gap.max() <= 1e-6 and ours.dual_gap.max() <= 1e-6
    assert float(ours.objective.sum()) == pytest.approx(float(ref.objective.sum()), rel=3e-6)


def test_cross_validation_fits_a_shared_problem_once():
    Ks, y = random_problem(5, n=45, M=M)
    stack = DenseStack(Ks)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    folds = [(np.sort(order[15:]), np.sort(order[:15])), (np.sort(order[:30]), np.sort(order[30:]))]
    Cs = [0.1, 10.0]
    methods = [(MethodSpec(method="simplemkl", label="L1"), [{"C": c} for c in Cs]),
               (MethodSpec(method="sgmkl", label="SG", solver=PartConfig(name="projected_gradient", params={})),
                [{"C": c, "regularizer__v": v} for v in (0.5, 1.0) for c in Cs])]
    settings = SolveSettings(tol=1e-3, max_iter=500)
    shared = cross_validate_methods(stack, y, folds, methods, settings)
    alone = cross_validate_methods(stack, y, folds, methods, settings, share=False)
    (l1_scores, l1_info), (sg_scores, sg_info) = shared
    # SGMKL at v = 1 took SimpleMKL's fits: the same fold accuracies, and no fits of its own there.
    np.testing.assert_array_equal(sg_scores[2:], l1_scores)
    assert sg_info["cv_shared_fits"] == 2 * len(folds) and sg_info["cv_fits"] == 2 * len(folds)
    assert alone[1][1]["cv_shared_fits"] == 0 and alone[1][1]["cv_fits"] == 4 * len(folds)
    # The points without an equivalent are fitted as before, and every fit met the tolerance.
    np.testing.assert_array_equal(sg_scores[:2], alone[1][0][:2])
    np.testing.assert_array_equal(l1_scores, alone[0][0])
    assert sg_info["cv_gap_max"] <= 1e-3
    # fits_per_fold (the protocol's floor script counts with it) is the runner's own count.
    assert fits_per_fold(methods, M) * len(folds) == l1_info["cv_fits"] + sg_info["cv_fits"]
