"""The metric learners as library estimators: save/load, progress and Ctrl-C, labels, pair-input conformance."""

import warnings

import numpy as np
import pytest
from _model_files import assert_damaged_files_refused, round_trip
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from multikernel.errors import FitInterruptedWarning
from multikernel.metric import (
    ITML,
    ITMLS,
    ITML_Supervised,
    ITMLPlus,
    ITMLPlus_Supervised,
    ITMLS_Supervised,
    draw_pairs,
)
from multikernel.metric import itml as itml_module


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 4)) + np.array([[0, 0, 0, 0], [2, 0, 0, 0], [0, 2, 0, 0]])[y]
    Z = np.eye(3)[y] + 0.1 * rng.normal(size=(60, 3))
    Z[:5] = np.nan  # samples without privileged data
    return X, y, Z


def _pairs(X, y, Z):
    idx, lab = draw_pairs(y, 40, random_state=0)
    return np.stack([X[idx[:, 0]], X[idx[:, 1]]], axis=1), lab, np.stack([Z[idx[:, 0]], Z[idx[:, 1]]], axis=1)


SUPERVISED = [ITML_Supervised, ITMLPlus_Supervised, ITMLS_Supervised]
PAIRS = [ITML, ITMLPlus, ITMLS]


def _fit(cls, **params):
    X, y, Z = _blobs()
    est = cls(max_iter=50, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if cls in SUPERVISED:
            return est.fit(X, y) if cls is ITML_Supervised else est.fit(X, y, X_privileged=Z)
        P, lab, Zp = _pairs(X, y, Z)
        return est.fit(P, lab) if cls is ITML else est.fit(P, lab, pairs_privileged=Zp)


@pytest.mark.parametrize("cls", SUPERVISED + PAIRS, ids=lambda c: c.__name__)
def test_round_trip_and_damaged_files(tmp_path, cls):
    est = _fit(cls)
    X, y, Z = _blobs(seed=1)
    P, lab, _ = _pairs(X, y, Z)
    methods = {"transform": (X,), "get_mahalanobis_matrix": ()}
    if cls in PAIRS:
        methods.update(predict=(P,), decision_function=(P,))
    loaded = round_trip(est, tmp_path / "m.npz", methods)
    assert loaded.n_iter_ == est.n_iter_
    assert_damaged_files_refused(tmp_path / "m.npz", cls, tmp_path)


@pytest.mark.parametrize("cls", SUPERVISED + PAIRS, ids=lambda c: c.__name__)
def test_ctrl_c_keeps_the_metric_of_the_last_sweep(monkeypatch, cls):
    original = itml_module.run_projections
    calls = {"main": 0, "sweeps": 0}

    def interrupted(X, Z, pairs, y, privileged, state, **kwargs):
        if X.shape[1] == 4:  # the main view (ITML-S first sweeps the privileged view, with 3 features)
            calls["main"] += 1
            if calls["main"] > 4:
                raise KeyboardInterrupt
            done, conv = original(X, Z, pairs, y, privileged, state, **kwargs)
            calls["sweeps"] += done
            return done, conv
        return original(X, Z, pairs, y, privileged, state, **kwargs)

    monkeypatch.setattr(itml_module, "run_projections", interrupted)
    with pytest.warns(FitInterruptedWarning, match=f"{cls.__name__}.fit was interrupted"):
        est = _fit(cls, tol=1e-12)
    assert est.interrupted_ and est.n_iter_ == calls["sweeps"] > 4  # the calls run more sweeps as they go
    X, y, Z = _blobs()
    assert np.isfinite(est.transform(X)).all()
    if cls in PAIRS:
        assert np.isfinite(est.threshold_)


def test_sweeps_one_at_a_time_give_the_uninterrupted_solution():
    """The loop runs one sweep per call of the compiled loop: the same iterate as all sweeps in one call."""
    X, y, _ = _blobs()
    idx, lab = draw_pairs(y, 40, random_state=0)
    b = np.array([1.0, 10.0])
    state = itml_module.BregmanState.start(np.eye(4), np.zeros((0, 0)), np.where(lab > 0, b[0], b[1]))
    n, _ = itml_module.run_projections(X, None, idx, lab, np.zeros(len(lab), bool), state, gamma=1.0, tol=1e-6,
                                       max_iter=1000)
    est = ITML_Supervised(tol=1e-6, max_iter=1000, n_constraints=40, random_state=0).fit(X, y, bounds=b)
    assert est.n_iter_ == n
    np.testing.assert_allclose(est.metric_, state.M, rtol=1e-9, atol=1e-12)


def test_verbose_shows_the_sweeps(capsys):
    _fit(ITMLPlus_Supervised, verbose=1)
    assert "ITMLPlus_Supervised: sweeps: 1/50, change" in capsys.readouterr().err
    _fit(ITMLPlus_Supervised)
    assert capsys.readouterr().err == ""


def test_labels_of_mixed_types_are_refused():
    X, y, _ = _blobs()
    mixed = np.array([1, "a"] * 30, dtype=object)
    with pytest.raises(ValueError, match="mixes labels of different types"):
        ITML_Supervised().fit(X, mixed)
    with pytest.raises(ValueError, match="requires y"):
        ITML_Supervised().fit(X, None)


@pytest.mark.parametrize("params", [{"gamma": True}, {"tol": "1"}, {"verbose": -1}, {"lam": 0.0},
                                    {"dual_correction": 1}, {"n_constraints": 2.5}])
def test_parameters_are_checked_by_the_constraints(params):
    X, y, _ = _blobs()
    name = next(iter(params))
    with pytest.raises(ValueError, match=f"ITMLPlus_Supervised: {name} must be"):
        ITMLPlus_Supervised(**params).fit(X, y)


@pytest.mark.parametrize("cls", PAIRS, ids=lambda c: c.__name__)
def test_pairs_forms_have_honest_tags(cls):
    """Pairs of shape (n_pairs, 2, n_features) are not scikit-learn's 2-D samples (scikit-learn's checks, which
    draw 2-D samples, do not apply: the supervised forms pass them in test_itml_estimators.py)."""
    tags = cls().__sklearn_tags__()
    assert not tags.input_tags.two_d_array and tags.input_tags.three_d_array and tags.target_tags.required
    est = _fit(cls)
    assert clone(est).get_params() == cls(max_iter=50).get_params()
