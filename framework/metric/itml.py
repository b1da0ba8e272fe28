"""ITML, ITML+ (with partial privileged information) and ITML-S: LogDet metric learning by Bregman projections.

* ITML (Davis, Kulis, Jain, Sra, Dhillon, ICML 2007): ``min D_ld(M, M0) + gamma sum l(xi, xi0)`` subject to
  ``d_M(x_i, x_j) <= xi_ij`` (similar) and ``>= xi_ij`` (dissimilar).
* ITML+ (Xu, PhD thesis NTU 2014, chapter 5, (5.4)): the slack of each pair is the learnt distance of the pair
  in a privileged view ``z`` seen only in training, ``xi_ij = d_P(z_i, z_j)``, with ``lam D_ld(P, P0)`` added.
* Partial ITML+ ((5.5)): pairs without privileged data keep ITML's slack.
* ITML-S (Fouad et al., TNNLS 2013): ITML on the privileged view, remove the pairs it finds hardest, ITML on the
  main view.

All are solved by one compiled loop (``multikernel._ext._itml``); see ``docs/methods/itml.md`` for the
updates, the stopping rule and the choices made where the sources are silent.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import validate_data

from multikernel._ext._itml import bregman_projections
from multikernel.core.validation import (
    Boolean,
    Constraint,
    InstanceOf,
    Integer,
    NoneValue,
    Options,
    RandomState,
    Real,
    check_class_labels,
)
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.progress import FitProgress
from multikernel.metric._base import MahalanobisMixin, PairsClassifierMixin, components_from_metric
from multikernel.metric._pairs import as_pairs, check_pair_labels, draw_pairs, squared_distance_percentiles

__all__ = ["ITML", "ITML_Supervised", "ITMLPlus", "ITMLPlus_Supervised", "ITMLS", "ITMLS_Supervised"]


# --------------------------------------------------------------------------------------------------------------
# The solver: state, start, sweeps
# --------------------------------------------------------------------------------------------------------------


@dataclass
class BregmanState:
    """Iterate of the cyclic projections: metrics, slacks and cumulative dual variables.

    At every step the state minimises the Lagrangian at the duals (``nu >= 0`` for the pair inequalities,
    ``beta`` for the equalities ``xi = d_P`` of privileged pairs): ``M^-1 = M0^-1 + sum nu_k y_k A_k``,
    ``lam P^-1 = lam P0^-1 - sum beta_k B_k``, ``gamma/xi_k = gamma/xi0_k - nu_k y_k + beta_k``.
    """

    M: np.ndarray
    P: np.ndarray
    xi: np.ndarray
    nu: np.ndarray
    beta: np.ndarray

    @classmethod
    def start(cls, M0: np.ndarray, P0: np.ndarray, xi0: np.ndarray) -> BregmanState:
        """The unconstrained minimiser (``M0``, ``P0``, ``xi0``) with zero duals."""
        m = len(xi0)
        return cls(
            np.array(M0, dtype=np.float64, order="C"),
            np.array(P0, dtype=np.float64, order="C"),
            np.array(xi0, dtype=np.float64),
            np.zeros(m),
            np.zeros(m),
        )


def run_projections(
    X: np.ndarray,
    Z: np.ndarray,
    pairs: np.ndarray,
    y: np.ndarray,
    privileged: np.ndarray,
    state: BregmanState,
    *,
    gamma: float,
    lam: float = 1.0,
    dual_correction: bool = True,
    tol: float = 1e-3,
    max_iter: int = 1000,
) -> tuple[int, float]:
    """Sweep the pairs cyclically (in the given order) and update ``state`` in place.

    Parameters
    ----------
    X : ndarray of shape (n, h)
        Main-view rows.
    Z : ndarray of shape (n, g)
        Privileged-view rows (``g = 0`` allowed when no pair is privileged); rows of non-privileged pairs are
        not read.
    pairs : ndarray of shape (m, 2)
        Row indices; no pair may have a zero difference (a privileged pair neither in ``Z``).
    y : ndarray of shape (m,)
        ``+1`` similar, ``-1`` dissimilar.
    privileged : ndarray of shape (m,), bool
        Which pairs take the ITML+ projection (Proposition 11); the others take ITML's.
    state : BregmanState
        Start with :meth:`BregmanState.start`; a later call continues where an earlier one stopped.
    gamma, lam : float
        Weights of the slack loss and of ``D_ld(P, P0)``.
    dual_correction : bool, default=True
        See :class:`ITMLPlus`.
    tol : float, default=1e-3
        Relative change of the duals after a sweep, ``||d - d_old||_1 / (||d||_2 + ||d_old||_2)``.
    max_iter : int, default=1000
        Maximum number of sweeps.

    Returns
    -------
    n_sweeps : int
    conv : float
        Last value of the stopping criterion (0.0 when no constraint was ever violated).
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64) if Z is not None else np.zeros((X.shape[0], 0))
    return bregman_projections(
        np.ascontiguousarray(X, dtype=np.float64),
        Z,
        np.ascontiguousarray(pairs, dtype=np.intp),
        np.ascontiguousarray(y, dtype=np.float64),
        np.ascontiguousarray(privileged, dtype=np.uint8),
        state.xi,
        state.M,
        state.P,
        state.nu,
        state.beta,
        float(gamma),
        float(lam),
        bool(dual_correction),
        float(tol),
        int(max_iter),
    )


# --------------------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------------------


def _prior_matrix(prior, rows: np.ndarray, what: str, param: str) -> np.ndarray:
    """The LogDet prior: ``'identity'``, ``'covariance'`` (inverse covariance of ``rows``) or an SPD array."""
    d = rows.shape[1]
    if isinstance(prior, str):
        if prior == "identity":
            return np.eye(d)
        if prior == "covariance":
            if rows.shape[0] < 2:
                raise ValueError(f"{param}='covariance' needs at least two samples of {what}.")
            const = np.flatnonzero(np.ptp(rows, axis=0) == 0)
            if const.size:
                raise ValueError(
                    f"{param}='covariance' is the inverse covariance of {what}, but feature(s) "
                    f"{const[:10].tolist()} are constant, which makes it singular; drop constant features (e.g. "
                    f"sklearn.feature_selection.VarianceThreshold) or use {param}='identity'."
                )
            C = np.atleast_2d(np.cov(rows, rowvar=False))
            w = np.linalg.eigvalsh(C)
            if w[0] <= 1e-12 * w[-1]:
                raise ValueError(
                    f"{param}='covariance' is the inverse covariance of {what}, but the covariance is singular "
                    f"(smallest/largest eigenvalue {w[0] / w[-1]:.1e}: collinear features, or fewer samples than "
                    f"features); reduce the dimension (e.g. PCA) or use {param}='identity'."
                )
            return np.linalg.inv(C)
        raise ValueError(f"{param} must be 'identity', 'covariance' or an array; got {prior!r}.")
    M0 = check_array(prior, dtype=np.float64, input_name=param)
    if M0.shape != (d, d):
        raise ValueError(f"{param} must have shape ({d}, {d}) for {what} with {d} features; got {M0.shape}.")
    if not np.allclose(M0, M0.T, rtol=1e-10, atol=1e-12 * np.abs(M0).max()):
        raise ValueError(f"{param} must be symmetric.")
    M0 = 0.5 * (M0 + M0.T)
    try:
        np.linalg.cholesky(M0)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{param} must be positive definite (its LogDet divergence is infinite otherwise); the given matrix "
            f"has smallest eigenvalue {np.linalg.eigvalsh(M0)[0]:.3g}."
        ) from None
    return M0


def _check_percentiles(percentiles) -> tuple[float, float]:
    try:
        lo, hi = (float(p) for p in percentiles)
    except (TypeError, ValueError):
        raise ValueError(f"percentiles must be two numbers (l, u), e.g. (3, 97); got {percentiles!r}.") from None
    if not 0 <= lo <= hi <= 100:
        raise ValueError(f"percentiles must satisfy 0 <= l <= u <= 100; got {percentiles!r}.")
    return lo, hi


def _check_bounds(bounds) -> np.ndarray:
    b = np.asarray(bounds, dtype=np.float64).ravel()
    if b.size != 2 or not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(
            f"bounds must be two positive numbers (l, u), the target squared distances of similar and dissimilar "
            f"pairs; got {bounds!r}."
        )
    return b


def _targets(rows: np.ndarray, M0: np.ndarray, percentiles, random_state) -> np.ndarray:
    """(l, u): percentiles of the squared prior distances ``d_M0`` between the samples ``rows``."""
    L0 = np.linalg.cholesky(M0)  # M0 = L0 L0', d_M0(x, x') = ||L0'(x - x')||^2
    b = squared_distance_percentiles(rows @ L0, percentiles, random_state)
    if b[0] <= 0:
        raise ValueError(
            f"the {percentiles[0]}th percentile of the squared distances between samples is 0 (many duplicated "
            "samples), so it cannot be the target of similar pairs; pass bounds=(l, u) to fit, or a higher "
            "lower percentile."
        )
    return b


def _split_missing(Z: np.ndarray, name: str) -> np.ndarray:
    """Which rows of the privileged view are present (all finite); all-NaN rows are missing, others invalid."""
    nan = np.isnan(Z)
    partial = np.flatnonzero(nan.any(axis=1) & ~nan.all(axis=1))
    if partial.size:
        raise ValueError(
            f"{name} row {partial[0]} has some but not all values missing; a sample without privileged data must "
            "be a row of NaN only."
        )
    return ~nan.all(axis=1) if Z.shape[1] else np.zeros(Z.shape[0], dtype=bool)


def _sample_rows(X: np.ndarray, idx: np.ndarray, sample_rows, bounds, prior) -> np.ndarray:
    """The training samples behind the targets and a covariance prior (those in the pairs, unless given);
    an empty (0, d) array when neither needs them (given bounds, no covariance prior)."""
    if bounds is not None and not (isinstance(prior, str) and prior == "covariance"):
        return np.empty((0, X.shape[1]))
    return X[np.unique(idx)] if sample_rows is None else sample_rows


def _nonzero_pairs(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.any(X[idx[:, 0]] != X[idx[:, 1]], axis=1)


def _drop_identical_pairs(X: np.ndarray, idx: np.ndarray, y: np.ndarray, owner: str):
    keep = _nonzero_pairs(X, idx)
    if not keep.all():
        warnings.warn(
            f"{owner}: {int((~keep).sum())} pair(s) join identical samples and are ignored (a similar one is "
            "always satisfied, a dissimilar one never).",
            UserWarning,
            stacklevel=6,  # the user's fit call
        )
        if not keep.any():
            raise ValueError("every pair joins two identical samples; nothing to learn from.")
    return keep


def _warn_not_converged(owner: str, n_sweeps: int, conv: float, tol: float, max_iter: int, stacklevel: int) -> None:
    if n_sweeps >= max_iter and conv >= tol:
        warnings.warn(
            f"{owner} stopped after max_iter={max_iter} sweeps with a relative change of the duals of {conv:.2e} "
            f"(tol={tol:g}); increase max_iter (or tol).",
            ConvergenceWarning,
            stacklevel=stacklevel,
        )


# --------------------------------------------------------------------------------------------------------------
# Method cores: from (X, Z, pairs, labels) to fitted attributes
# --------------------------------------------------------------------------------------------------------------


#: The prior of a LogDet divergence: a name or a symmetric positive definite matrix (checked at fit).
_PRIOR = [Options("identity", "covariance"), InstanceOf(np.ndarray, list, tuple, label="an array")]


class _MetricBase(MahalanobisMixin, MultikernelEstimator):
    """Shared fitting of the three methods on rows ``X`` (main view), ``Z`` (privileged view or None) and pairs.

    Each sweep over the pairs is one call of the compiled loop, so that ``verbose`` shows the sweeps and Ctrl-C
    keeps the metric of the last completed sweep (the loop continues exactly where it stopped: its state is the
    iterate and the cumulative duals).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "gamma": [Real(low=0)],
        "max_iter": [Integer(low=1)],
        "tol": [Real(low=0)],
        "prior": _PRIOR,
        "random_state": [RandomState()],
        "verbose": [Integer(low=0)],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec] | None] = {
        "metric_": FittedSpec("real", (2,)),
        "components_": FittedSpec("real", (2,)),
        "bounds_": FittedSpec("real", (1,)),
        "n_iter_": FittedSpec("int", (0,)),
        "n_features_in_": FittedSpec("int", (0,)),
        "feature_names_in_": FittedSpec("text", (1,), required=False),
        "threshold_": FittedSpec("real", (0,), required=False),
        "privileged_metric_": FittedSpec("any", required=False),
        "n_privileged_pairs_": FittedSpec("int", (0,), required=False),
        "n_removed_pairs_": FittedSpec("int", (0,), required=False),
    }

    def _check_params(self) -> None:
        _check_percentiles(self.percentiles)

    def _sweeps(self, progress: FitProgress, X, Z, idx, y, priv, state: BregmanState, *, gamma: float,
                lam: float = 1.0, dual_correction: bool = True,
                keep: Callable[[np.ndarray, np.ndarray, int], Callable[[], None]] | None = None) -> tuple[int, float]:
        """Sweep until the duals settle (``tol``) or ``max_iter`` sweeps; ``keep(M, P, n)`` makes the function
        that stores the model of sweep ``n`` (``None``: an interrupt here has nothing to keep).

        With ``verbose`` every call of the compiled loop runs one sweep (one progress line each); otherwise the
        sweeps per call double while a call takes under 50 ms, so that the calls' overhead (copies of the duals
        and of the metrics kept for Ctrl-C) stays small (one sweep per call was 10-17 % slower on 300 samples).
        """
        n, conv, chunk = 0, np.inf, 1
        while n < self.max_iter:
            start = time.perf_counter()
            done, conv = run_projections(X, Z, idx, y, priv, state, gamma=gamma, lam=lam,
                                         dual_correction=dual_correction, tol=self.tol,
                                         max_iter=min(chunk, self.max_iter - n))
            n += done
            progress.update(keep=None if keep is None else keep(state.M.copy(), state.P.copy(), n), change=conv)
            if conv < self.tol:
                break
            if not self.verbose and time.perf_counter() - start < 0.05:
                chunk *= 2
        return n, conv

    def _itml(self, progress, X, idx, y, bounds, prior, gamma, rng, owner, sample_rows=None, keep=None):
        """Plain ITML on ``X`` for the pairs ``idx``: returns (M, bounds, n_sweeps)."""
        rows = _sample_rows(X, idx, sample_rows, bounds, prior)
        M0 = _prior_matrix(prior, rows, "X" if owner == "main" else "X_privileged",
                           "prior" if owner == "main" else "prior_privileged")
        b = _targets(rows, M0, _check_percentiles(self.percentiles), rng) if bounds is None else bounds
        state = BregmanState.start(M0, np.zeros((0, 0)), np.where(y > 0, b[0], b[1]))
        n, conv = self._sweeps(progress, X, None, idx, y, np.zeros(len(y), bool), state, gamma=gamma,
                               keep=None if keep is None else lambda M, P, n: keep(M, b, n))
        _warn_not_converged(f"{type(self).__name__} ({owner} view)", n, conv, self.tol, self.max_iter, 7)
        return state.M, b, n

    def _set_metric(self, M: np.ndarray) -> None:
        self.metric_ = M
        self.components_ = components_from_metric(M)

    def _check_loaded(self) -> None:
        d = self.n_features_in_
        if self.metric_.shape != (d, d) or self.components_.shape != (d, d) or self.bounds_.shape != (2,):
            raise ValueError(f"a metric of shape {self.metric_.shape}, components {self.components_.shape} and "
                             f"bounds {self.bounds_.shape} for {d} features")
        if not (np.isfinite(self.metric_).all() and np.isfinite(self.components_).all()):
            raise ValueError("a metric with non-finite entries")


def _stored(est: Any, finish: Callable[[], None], **fitted: Any) -> Callable[[], None]:
    """A function that sets the fitted attributes (``metric`` through ``_set_metric``) and runs ``finish``."""
    def store() -> None:
        M = fitted.pop("metric")
        for key, value in fitted.items():
            setattr(est, key, value)
        est._set_metric(M)
        finish()

    return store


class _ITMLCore(_MetricBase):
    def _fit_rows(self, progress, X, idx, y, Z, bounds, sample_rows, finish):
        rng = check_random_state(self.random_state)
        keep = _drop_identical_pairs(X, idx, y, type(self).__name__)

        def model(M, b, n):
            return _stored(self, finish, metric=M, bounds_=np.asarray(b, dtype=np.float64), n_iter_=n)

        M, b, n = self._itml(progress, X, idx[keep], y[keep], bounds, self.prior, self.gamma, rng, "main",
                             sample_rows, keep=model)
        model(M, b, n)()
        return self


class _ITMLPlusCore(_MetricBase):
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "lam": [Real(low=0)],
        "prior_privileged": _PRIOR,
        "dual_correction": [Boolean()],
    }

    def _fit_rows(self, progress, X, idx, y, Z, bounds, sample_rows, finish):
        owner = type(self).__name__
        rng = check_random_state(self.random_state)
        keep = _drop_identical_pairs(X, idx, y, owner)
        idx, y = idx[keep], y[keep]
        rows = _sample_rows(X, idx, sample_rows, bounds, self.prior)
        M0 = _prior_matrix(self.prior, rows, "X", "prior")
        b = _targets(rows, M0, _check_percentiles(self.percentiles), rng) if bounds is None else bounds
        if Z is None:
            Z = np.zeros((X.shape[0], 0))
            priv = np.zeros(len(y), dtype=bool)
        else:
            present = _split_missing(Z, "the privileged view")
            priv = present[idx[:, 0]] & present[idx[:, 1]]
            Zf = np.where(present[:, None], Z, 0.0)  # missing rows are never read; zeros keep them finite
            zero = priv & ~_nonzero_pairs(Zf, idx)
            if zero.any():
                warnings.warn(
                    f"{owner}: {int(zero.sum())} pair(s) have identical privileged samples (their privileged "
                    "distance is 0 for every P) and are treated as pairs without privileged data.",
                    UserWarning,
                    stacklevel=5,  # the user's fit call
                )
                priv &= ~zero
            Z = Zf
        if priv.any():
            used = np.unique(idx[priv])
            P0 = _prior_matrix(self.prior_privileged, Z[used], "X_privileged", "prior_privileged")
        else:
            P0 = np.eye(Z.shape[1]) if isinstance(self.prior_privileged, str) else _prior_matrix(
                self.prior_privileged, np.zeros((0, Z.shape[1])), "X_privileged", "prior_privileged")
        state = BregmanState.start(M0, P0, np.where(y > 0, b[0], b[1]))
        bounds_ = np.asarray(b, dtype=np.float64)

        def model(M, P, n):
            return _stored(self, finish, metric=M, bounds_=bounds_, n_iter_=n, n_privileged_pairs_=int(priv.sum()),
                           privileged_metric_=P)

        n, conv = self._sweeps(progress, X, Z, idx, y, priv, state, gamma=self.gamma, lam=self.lam,
                               dual_correction=self.dual_correction, keep=model)
        _warn_not_converged(owner, n, conv, self.tol, self.max_iter, 6)
        model(state.M, state.P, n)()
        return self


class _ITMLSCore(_MetricBase):
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "gamma_privileged": [Real(low=0), NoneValue()],
        "outlier_fraction": [Real(low=0, high=1, closed="left")],
        "prior_privileged": _PRIOR,
    }

    def _fit_rows(self, progress, X, idx, y, Z, bounds, sample_rows, finish):
        frac = self.outlier_fraction
        gamma_priv = self.gamma if self.gamma_privileged is None else self.gamma_privileged
        owner = type(self).__name__
        rng = check_random_state(self.random_state)
        keep = _drop_identical_pairs(X, idx, y, owner)
        idx, y = idx[keep], y[keep]
        removed = np.zeros(len(y), dtype=bool)
        P = None
        if Z is not None:
            present = _split_missing(Z, "the privileged view")
            Zf = np.where(present[:, None], Z, 0.0)
            priv = np.flatnonzero(present[idx[:, 0]] & present[idx[:, 1]] & _nonzero_pairs(Zf, idx))
            if priv.size:
                # step 1: ITML on the privileged view (an interrupt here has no main-view metric to keep); step 2:
                # drop the pairs it fits worst
                P, _, _ = self._itml(progress, Zf, idx[priv], y[priv], None, self.prior_privileged, gamma_priv, rng,
                                     "privileged", Zf[np.unique(idx[priv])])
                diff = Zf[idx[priv, 0]] - Zf[idx[priv, 1]]
                dP = np.einsum("ij,ij->i", diff @ P, diff)
                for label, sign in ((1, -1.0), (-1, 1.0)):  # similar: largest distances; dissimilar: smallest
                    group = priv[y[priv] == label]
                    k = int(np.floor(frac * group.size))
                    if k:
                        order = np.argsort(sign * dP[y[priv] == label], kind="stable")
                        removed[group[order[:k]]] = True
        if removed.all():
            raise ValueError("outlier_fraction removed every pair; lower it.")

        def model(M, b, n):
            return _stored(self, finish, metric=M, bounds_=np.asarray(b, dtype=np.float64), n_iter_=n,
                           n_removed_pairs_=int(removed.sum()), privileged_metric_=P)

        # step 3: ITML on the main view with the remaining pairs
        M, b, n = self._itml(progress, X, idx[~removed], y[~removed], bounds, self.prior, self.gamma, rng, "main",
                             sample_rows, keep=model)
        model(M, b, n)()
        return self


# --------------------------------------------------------------------------------------------------------------
# Input forms: pairs (metric-learn's ITML) and supervised (metric-learn's ITML_Supervised)
# --------------------------------------------------------------------------------------------------------------


class _PairsForm(PairsClassifierMixin):
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "preprocessor": [InstanceOf(np.ndarray, list, tuple, label="an array"), NoneValue()],
    }

    def _fit_pairs(self, pairs, pair_labels, pairs_privileged, bounds):
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: sweeps") as progress:
            self._fit_pairs_in(progress, pairs, pair_labels, pairs_privileged, bounds)
        return self

    def _fit_pairs_in(self, progress, pairs, pair_labels, pairs_privileged, bounds):
        X, idx = as_pairs(pairs, self.preprocessor)
        y = check_pair_labels(pair_labels, idx.shape[0])
        Z = None
        if pairs_privileged is not None:
            zp = np.asarray(pairs_privileged, dtype=np.float64)
            if zp.ndim != 3 or zp.shape[1] != 2:
                raise ValueError(f"pairs_privileged must have shape (n_pairs, 2, n_privileged_features); got "
                                 f"shape {zp.shape}.")
            if zp.shape[0] != idx.shape[0]:
                raise ValueError(f"pairs_privileged has {zp.shape[0]} pairs but pairs has {idx.shape[0]}; pass one "
                                 "privileged pair per pair (rows of NaN where it is missing).")
            if np.isinf(zp).any():
                raise ValueError("pairs_privileged contains infinite values.")
            Z = zp.reshape(2 * zp.shape[0], zp.shape[2])
            if self.preprocessor is not None:  # give both views the same row numbering
                X, idx = X[idx.ravel()], np.arange(2 * idx.shape[0], dtype=np.intp).reshape(-1, 2)
        self.n_features_in_ = X.shape[1]
        b = None if bounds is None else _check_bounds(bounds)
        self._fit_rows(progress, X, idx, y, Z, b, None, lambda: self.calibrate_threshold(pairs, pair_labels))

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # pairs: (n_pairs, 2, n_features), or (n_pairs, 2) indices
        tags.input_tags.three_d_array = True
        tags.target_tags.required = True
        return tags


class _SupervisedForm(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "n_constraints": [Integer(low=1), NoneValue()],
    }

    def _fit_supervised(self, X, y, X_privileged, bounds):
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: sweeps") as progress:
            self._fit_supervised_in(progress, X, y, X_privileged, bounds)
        return self

    def _fit_supervised_in(self, progress, X, y, X_privileged, bounds):
        self._require_y(y)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        y = check_class_labels(y)
        Z = None
        if X_privileged is not None:
            Z = check_array(X_privileged, dtype=np.float64, ensure_all_finite="allow-nan", input_name="X_privileged")
            if Z.shape[0] != X.shape[0]:
                raise ValueError(
                    f"X_privileged has {Z.shape[0]} rows but X has {X.shape[0]}; pass one privileged row per "
                    "sample (a row of NaN for a sample without privileged data)."
                )
        idx, labels = draw_pairs(y, self.n_constraints, random_state=self.random_state)
        b = None if bounds is None else _check_bounds(bounds)
        self._fit_rows(progress, X, idx, labels, Z, b, X, lambda: None)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


_COMMON_PARAMS = """
    max_iter : int, default=1000
        Maximum number of sweeps over the pairs (metric-learn's default; the thesis's ITML+ stops after 10).
    tol : float, default=1e-3
        Stop after a sweep when ``||d - d_old||_1 / (||d||_2 + ||d_old||_2) < tol``, ``d`` the vector of the
        cumulative dual variables (the rule of Davis et al.'s code and metric-learn), or when no constraint has
        ever been violated (the prior is then the solution).
    prior : {'identity', 'covariance'} or array of shape (n_features, n_features), default='identity'
        ``M0`` of ``D_ld(M, M0)``: the identity, the inverse covariance of the training samples, or a given
        symmetric positive definite matrix.
    verbose : int, default=0
        ``>= 1`` shows the sweeps with the stopping criterion (a progress bar on a terminal, log lines elsewhere).
        Ctrl-C ends the fit with the metric of the last completed sweep over the main-view pairs and a
        ``FitInterruptedWarning``."""

_TARGET_PARAMS = """
    percentiles : tuple of two floats, default=(3.0, 97.0)
        The targets ``l`` (similar pairs) and ``u`` (dissimilar pairs) are these percentiles of the squared
        distances ``d_M0`` between all pairs of training samples (Xu 2014, section 5.5.1; Davis et al.'s code
        uses the 5th and 95th). Ignored when ``fit`` gets ``bounds``."""

_ATTRIBUTES = """
    Attributes
    ----------
    metric_ : ndarray of shape (n_features, n_features)
        The learnt Mahalanobis matrix ``M`` (also :meth:`get_mahalanobis_matrix`).
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``M = L' L``: :meth:`transform` maps ``X`` to ``X @ L.T``.
    bounds_ : ndarray of shape (2,)
        The targets (l, u) of the squared distances of similar and dissimilar pairs.
    n_iter_ : int
        Sweeps over the pairs (of the main-view problem)."""


# --------------------------------------------------------------------------------------------------------------
# ITML
# --------------------------------------------------------------------------------------------------------------


class ITML(_PairsForm, _ITMLCore):
    __doc__ = f"""Information-theoretic metric learning from labelled pairs (Davis et al., ICML 2007).

    Solves ``min_M D_ld(M, M0) + gamma sum_ij l(xi_ij, xi0_ij)`` subject to ``(x_i - x_j)' M (x_i - x_j) <=
    xi_ij`` for similar and ``>= xi_ij`` for dissimilar pairs, with ``D_ld(M, M0) = tr(M M0^-1) - log det(M
    M0^-1) - d`` and ``l(a, b) = a/b - log(a/b) - 1``, by cyclic Bregman projections with dual corrections
    (Davis et al., Algorithm 1, as in their code). Same interface as ``metric_learn.ITML``.

    Parameters
    ----------
    gamma : float, default=1.0
        Weight of the slack loss (larger: constraints closer to hard).{_COMMON_PARAMS}{_TARGET_PARAMS}
    preprocessor : array-like of shape (n_samples, n_features), default=None
        With a preprocessor, pairs are given as integer indices of shape (n_pairs, 2) into its rows.
    random_state : int, RandomState instance or None, default=None
        Seed of the sample of pairs behind the percentiles (only with more than two million sample pairs).
{_ATTRIBUTES}
    threshold_ : float
        Distance at most which :meth:`predict` calls a pair similar (highest training accuracy).

    See Also
    --------
    ITML_Supervised : the same learner on labelled samples.
    ITMLPlus : ITML with a privileged view.
    """

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, prior="identity", percentiles=(3.0, 97.0),
                 preprocessor=None, random_state=None, verbose=0):
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.percentiles = percentiles
        self.preprocessor = preprocessor
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, pairs, y, bounds=None):
        """Learn the metric from labelled pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
            Projected in this order, cyclically.
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``-1`` dissimilar.
        bounds : array-like of two floats, default=None
            The targets (l, u) of the squared distances; default: the percentiles.

        Returns
        -------
        self
        """
        return self._fit_pairs(pairs, y, None, bounds)


class ITML_Supervised(_SupervisedForm, _ITMLCore):
    __doc__ = f"""ITML from class labels: similar and dissimilar pairs are drawn from the labels.

    The learner of :class:`ITML`; same interface as ``metric_learn.ITML_Supervised`` (a transformer: use it in a
    ``Pipeline`` before ``KNeighborsClassifier``).

    Parameters
    ----------
    gamma : float, default=1.0
        Weight of the slack loss.{_COMMON_PARAMS}
    n_constraints : int, default=None
        Number of similar pairs, and of dissimilar pairs, drawn from the labels; ``None``: ``20 *
        n_classes**2`` (metric-learn's default).{_TARGET_PARAMS}
    random_state : int, RandomState instance or None, default=None
        Seed of the pair draw.
{_ATTRIBUTES}
    """

    def __init__(self, gamma=1.0, max_iter=1000, tol=1e-3, n_constraints=None, prior="identity",
                 percentiles=(3.0, 97.0), random_state=None, verbose=0):
        self.gamma = gamma
        self.max_iter = max_iter
        self.tol = tol
        self.n_constraints = n_constraints
        self.prior = prior
        self.percentiles = percentiles
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, bounds=None):
        """Draw pairs from the labels and learn the metric.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        bounds : array-like of two floats, default=None
            The targets (l, u) of the squared distances; default: the percentiles over ``X``.

        Returns
        -------
        self
        """
        return self._fit_supervised(X, y, None, bounds)


# --------------------------------------------------------------------------------------------------------------
# ITML+ and partial ITML+
# --------------------------------------------------------------------------------------------------------------

_PLUS_PARAMS = """
    gamma : float, default=1.0
        Weight of the loss ``l(d_P(z_i, z_j), xi0_ij)`` (and of ITML's slack loss for pairs without privileged
        data).
    lam : float, default=1.0
        Weight of ``D_ld(P, P0)``, the thesis's lambda. Large: ``P`` stays at ``P0`` and each privileged pair
        is held to ``d_M <= d_P0(z_i, z_j)`` (similar) as a hard constraint."""

_PLUS_MORE = """
    prior_privileged : {'identity', 'covariance'} or array, default='identity'
        ``P0`` of ``D_ld(P, P0)``, as ``prior`` for the privileged view.
    dual_correction : bool, default=True
        True: each projection may give back the multiplier it accumulated for its pair (Bregman's method with
        corrections, as ITML), which converges to the minimiser of (5.4). False: Algorithm 6 as printed,
        ``alpha = max{0, .}`` (5.23), which converges to a feasible point but not in general to the minimiser.
        Pairs without privileged data always take ITML's corrected step."""

_PLUS_ATTRIBUTES = """
    privileged_metric_ : ndarray of shape (n_privileged_features, n_privileged_features)
        The learnt privileged metric ``P`` (``P0`` when no pair had privileged data).
    n_privileged_pairs_ : int
        Pairs that took the ITML+ projection."""


class ITMLPlus(_PairsForm, _ITMLPlusCore):
    __doc__ = f"""ITML+ from labelled pairs with a privileged view: metric learning using privileged information.

    Solves (Xu 2014, (5.4)-(5.5))::

        min_{{M, P, xi}} D_ld(M, M0) + lam D_ld(P, P0) + gamma sum_ij l(xi_ij, xi0_ij)
        s.t. y_ij (x_i - x_j)' M (x_i - x_j) <= y_ij xi_ij,   xi_ij = (z_i - z_j)' P (z_i - z_j)

    (``y_ij = +1`` similar, ``-1`` dissimilar): the slack of a pair is its learnt distance in the privileged
    view ``z``, present only in training. A pair whose privileged rows are missing (NaN) keeps ITML's free
    slack (partial ITML+): with no privileged pair this is :class:`ITML`. Each projection is the closed form
    of Proposition 11 with the multipliers of Lemma 5.5. Only ``M`` is used after training.

    Parameters
    ----------{_PLUS_PARAMS}{_COMMON_PARAMS}{_PLUS_MORE}{_TARGET_PARAMS}
    preprocessor : array-like of shape (n_samples, n_features), default=None
        With a preprocessor, pairs are given as integer indices of shape (n_pairs, 2) into its rows.
    random_state : int, RandomState instance or None, default=None
        Seed of the sample of pairs behind the percentiles (only with more than two million sample pairs).
{_ATTRIBUTES}{_PLUS_ATTRIBUTES}
    threshold_ : float
        Distance at most which :meth:`predict` calls a pair similar.
    """

    def __init__(self, gamma=1.0, lam=1.0, max_iter=1000, tol=1e-3, prior="identity", prior_privileged="identity",
                 dual_correction=True, percentiles=(3.0, 97.0), preprocessor=None, random_state=None, verbose=0):
        self.gamma = gamma
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.prior_privileged = prior_privileged
        self.dual_correction = dual_correction
        self.percentiles = percentiles
        self.preprocessor = preprocessor
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, pairs, y, pairs_privileged=None, bounds=None):
        """Learn the metric from labelled pairs and their privileged counterparts.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``-1`` dissimilar.
        pairs_privileged : array-like of shape (n_pairs, 2, n_privileged_features), default=None
            The same pairs in the privileged view; a pair with a row of NaN has no privileged data. None: no
            pair has (ITML).
        bounds : array-like of two floats, default=None
            The targets (l, u); default: the percentiles over the main-view samples of the pairs.

        Returns
        -------
        self
        """
        return self._fit_pairs(pairs, y, pairs_privileged, bounds)


class ITMLPlus_Supervised(_SupervisedForm, _ITMLPlusCore):
    __doc__ = f"""ITML+ from class labels and a privileged view of the training samples.

    The learner of :class:`ITMLPlus` on pairs drawn from the labels. A transformer: ``transform`` needs only
    the main view, so it fits in a ``Pipeline`` before ``KNeighborsClassifier`` (route the privileged view with
    ``pipe.fit(X, y, itmlplus_supervised__X_privileged=Z)``).

    Parameters
    ----------{_PLUS_PARAMS}{_COMMON_PARAMS}{_PLUS_MORE}
    n_constraints : int, default=None
        Number of similar pairs, and of dissimilar pairs, drawn from the labels; ``None``: ``20 *
        n_classes**2``.{_TARGET_PARAMS}
    random_state : int, RandomState instance or None, default=None
        Seed of the pair draw.
{_ATTRIBUTES}{_PLUS_ATTRIBUTES}
    """

    def __init__(self, gamma=1.0, lam=1.0, max_iter=1000, tol=1e-3, prior="identity", prior_privileged="identity",
                 dual_correction=True, n_constraints=None, percentiles=(3.0, 97.0), random_state=None, verbose=0):
        self.gamma = gamma
        self.lam = lam
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.prior_privileged = prior_privileged
        self.dual_correction = dual_correction
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, X_privileged=None, bounds=None):
        """Draw pairs from the labels and learn the metric with the privileged view.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        X_privileged : array-like of shape (n_samples, n_privileged_features), default=None
            The privileged view of the same samples; a row of NaN marks a sample without it (a pair has
            privileged data when both its samples have). None: ITML.
        bounds : array-like of two floats, default=None
            The targets (l, u); default: the percentiles over ``X``.

        Returns
        -------
        self
        """
        return self._fit_supervised(X, y, X_privileged, bounds)


# --------------------------------------------------------------------------------------------------------------
# ITML-S
# --------------------------------------------------------------------------------------------------------------

_S_PARAMS = """
    gamma : float, default=1.0
        Weight of the slack loss of the main-view ITML.
    gamma_privileged : float, default=None
        Weight of the slack loss of the privileged-view ITML (None: ``gamma``).
    outlier_fraction : float in [0, 1), default=0.1
        Fraction of the similar pairs with the largest, and of the dissimilar pairs with the smallest, learnt
        privileged distances that are removed (the source does not give the number)."""


class ITMLS(_PairsForm, _ITMLSCore):
    __doc__ = f"""ITML-S: two-step learning using privileged information with ITML (Fouad et al., TNNLS 2013).

    1. ITML on the privileged view of the pairs that have it; 2. remove the pairs that metric fits worst; 3. ITML
    on the main view with the remaining pairs (pairs without privileged data are always kept). The baseline of
    Xu 2014, section 5.5.1.

    Parameters
    ----------{_S_PARAMS}{_COMMON_PARAMS}
    prior_privileged : {{'identity', 'covariance'}} or array, default='identity'
        Prior of the privileged-view ITML.{_TARGET_PARAMS} (The privileged-view ITML takes its own percentiles
        over the privileged samples.)
    preprocessor : array-like of shape (n_samples, n_features), default=None
        With a preprocessor, pairs are given as integer indices of shape (n_pairs, 2) into its rows.
    random_state : int, RandomState instance or None, default=None
        Seed of the sample of pairs behind the percentiles.
{_ATTRIBUTES}
    privileged_metric_ : ndarray or None
        The metric learnt on the privileged view (None without privileged pairs).
    n_removed_pairs_ : int
        Pairs removed as outliers.
    threshold_ : float
        Distance at most which :meth:`predict` calls a pair similar.
    """

    def __init__(self, gamma=1.0, gamma_privileged=None, outlier_fraction=0.1, max_iter=1000, tol=1e-3,
                 prior="identity", prior_privileged="identity", percentiles=(3.0, 97.0), preprocessor=None,
                 random_state=None, verbose=0):
        self.gamma = gamma
        self.gamma_privileged = gamma_privileged
        self.outlier_fraction = outlier_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.prior_privileged = prior_privileged
        self.percentiles = percentiles
        self.preprocessor = preprocessor
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, pairs, y, pairs_privileged=None, bounds=None):
        """Learn the metric in two steps.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``-1`` dissimilar.
        pairs_privileged : array-like of shape (n_pairs, 2, n_privileged_features), default=None
            The same pairs in the privileged view (rows of NaN where missing). None: ITML.
        bounds : array-like of two floats, default=None
            The targets (l, u) of the main-view ITML.

        Returns
        -------
        self
        """
        return self._fit_pairs(pairs, y, pairs_privileged, bounds)


class ITMLS_Supervised(_SupervisedForm, _ITMLSCore):
    __doc__ = f"""ITML-S from class labels and a privileged view of the training samples (see :class:`ITMLS`).

    Parameters
    ----------{_S_PARAMS}{_COMMON_PARAMS}
    prior_privileged : {{'identity', 'covariance'}} or array, default='identity'
        Prior of the privileged-view ITML.
    n_constraints : int, default=None
        Number of similar pairs, and of dissimilar pairs, drawn from the labels; ``None``: ``20 *
        n_classes**2``.{_TARGET_PARAMS}
    random_state : int, RandomState instance or None, default=None
        Seed of the pair draw.
{_ATTRIBUTES}
    privileged_metric_ : ndarray or None
        The metric learnt on the privileged view.
    n_removed_pairs_ : int
        Pairs removed as outliers.
    """

    def __init__(self, gamma=1.0, gamma_privileged=None, outlier_fraction=0.1, max_iter=1000, tol=1e-3,
                 prior="identity", prior_privileged="identity", n_constraints=None, percentiles=(3.0, 97.0),
                 random_state=None, verbose=0):
        self.gamma = gamma
        self.gamma_privileged = gamma_privileged
        self.outlier_fraction = outlier_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.prior = prior
        self.prior_privileged = prior_privileged
        self.n_constraints = n_constraints
        self.percentiles = percentiles
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, X_privileged=None, bounds=None):
        """Draw pairs from the labels and learn the metric in two steps.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        X_privileged : array-like of shape (n_samples, n_privileged_features), default=None
            The privileged view of the same samples (rows of NaN where missing). None: ITML.
        bounds : array-like of two floats, default=None
            The targets (l, u) of the main-view ITML.

        Returns
        -------
        self
        """
        return self._fit_supervised(X, y, X_privileged, bounds)
