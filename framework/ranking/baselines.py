"""The baselines of the thesis's ranking chapters (spec section 7): one-vs-rest SVMs, Platt-scaled, and ML-kNN.

* :class:`OneVsRestRanker` -- one SVM per label (scikit-learn's ``SVC``, i.e. LIBSVM as in the thesis, with its
  bias) on the same kernels as :class:`~multikernel.ranking.MultiLabelRanker` (several kernels: their average,
  the thesis's AVG-SVM); ``platt=True`` ranks by Platt-scaled probabilities (the thesis's PLATT).
* :class:`MLkNN` -- multi-label k-nearest neighbours (Zhang and Zhou, 2007), implemented here because the
  package that offered it (scikit-multilearn) is unmaintained.

Both take the label matrix of the ranker (1, 0, ``NaN`` for unknown) and return one score per label from
``decision_function``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.neighbors import NearestNeighbors
from sklearn.svm import SVC
from sklearn.utils.validation import validate_data

from multikernel.core.validation import Boolean, Constraint, Integer, Options, RandomState, Real
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.kernel_input import KERNEL_INPUT_FITTED, check_loaded_kernel_input
from multikernel.ranking.estimator import KernelRankerMixin, RankerMixin
from multikernel.ranking.labels import check_label_matrix

__all__ = ["OneVsRestRanker", "MLkNN"]


class OneVsRestRanker(KernelRankerMixin, ClassifierMixin, MultikernelEstimator):
    """One-vs-rest SVMs as a label ranker (the thesis's SVM and PLATT baselines).

    Parameters
    ----------
    C : float, default=1.0
        SVC's ``C``.
    platt : bool, default=False
        Rank by Platt-scaled probabilities instead of SVM decision values: a sigmoid fitted to out-of-fold
        decision values (``CalibratedClassifierCV(method="sigmoid", ensemble=False)``, 5-fold, what
        LIBSVM's ``-b 1`` does; fewer folds for a label with fewer than 5 relevant or irrelevant samples, and
        the training decision values for a label with one).
    kernels, kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        As in :class:`~multikernel.ranking.MultiLabelRanker`; several kernels are averaged.
    tol : float, default=1e-3
        SVC's stopping tolerance (LIBSVM's ``eps``; LIBSVM certifies no gap).
    cache_size : float, default=200
        SVC's kernel cache (MB).
    verbose : int, default=0
        ``>= 1`` shows one progress step per label.
    random_state : int, RandomState or None, default=0
        Unused (the Platt folds are stratified, not shuffled); kept for a common interface with the rankers.

    Attributes
    ----------
    weights_ : ndarray of shape (n_kernels,)
        The average kernel's weights.
    classes_ : ndarray of shape (n_labels,)
    support_ : list of ndarray
        Per label, the training samples (indices into all training samples) with a non-zero SVC coefficient.
    dual_coef_ : list of ndarray
        Per label, ``alpha_i y_i`` of those samples: the label's decision value is
        ``K(x, X[support_[k]]) @ dual_coef_[k] + intercept_[k]``.
    intercept_ : ndarray of shape (n_labels,)
    sigmoid_ : ndarray of shape (n_labels, 2)
        Platt's ``(a, b)`` per label: probability ``1 / (1 + exp(a f + b))`` (``platt=True``; zeros otherwise).
    constant_ : ndarray of shape (n_labels,)
        ``+1`` or ``-1`` for a label with a single known value in training (its score is then that constant
        decision value, or probability 1 or 0), else 0.
    kernel_names_ : list of str
    n_features_in_ : int

    Notes
    -----
    ``predict`` is the SVMs' own decision (decision value > 0, or probability > 1/2).  Each label's SVC is
    scikit-learn's (LIBSVM) on the samples whose label is known; the model keeps only its coefficients, so it
    saves without pickle.  :meth:`score` is one minus the ranking loss over the known labels.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "C": [Real(low=0)],
        "platt": [Boolean()],
        "tol": [Real(low=0)],
        "verbose": [Integer(low=0)],
        "random_state": [RandomState()],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {
        **KERNEL_INPUT_FITTED,
        "weights_": FittedSpec("real", (1,)),
        "classes_": FittedSpec("int", (1,)),
        "support_": FittedSpec("any"),
        "dual_coef_": FittedSpec("any"),
        "intercept_": FittedSpec("real", (1,)),
        "sigmoid_": FittedSpec("real", (2,)),
        "constant_": FittedSpec("real", (1,)),
    }

    def __init__(self, C: float = 1.0, platt: bool = False, kernels: Any = "rbf",
                 kernel_params: dict[str, Any] | None = None, normalize: str = "trace", standardize: bool = False,
                 tol: float = 1e-3, cache_size: float = 200.0, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None, verbose: int = 0,
                 random_state: int | None = 0) -> None:
        self.C = C
        self.platt = platt
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.tol = tol
        self.cache_size = cache_size
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.verbose = verbose
        self.random_state = random_state

    def fit(self, X: Any, Y: Any) -> OneVsRestRanker:
        """Fit one SVC per label on the samples where the label is known.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels
        Y : array-like or sparse matrix of shape (n_samples, n_labels): 1, 0, ``NaN`` unknown

        Returns
        -------
        self
        """
        with self._fit_context(desc=f"{type(self).__name__}: labels") as progress:
            self._require_y(Y)
            stack, _ = self._fit_stack(X)
            Y = check_label_matrix(Y, stack.n_rows)
            progress.total = Y.shape[1]
            self.weights_ = np.full(stack.n_kernels, 1.0 / stack.n_kernels)
            K = stack.combine(self.weights_)
            self.classes_ = np.arange(Y.shape[1])
            m = Y.shape[1]
            support, coef = [], []
            intercept, sigmoid, constant = np.zeros(m), np.zeros((m, 2)), np.zeros(m)
            for k, column in enumerate(Y.T):
                rows = np.flatnonzero(~np.isnan(column))
                y = column[rows]
                if y.min() == y.max():
                    constant[k] = 1.0 if y[0] > 0 else -1.0
                    support.append(np.zeros(0, dtype=np.int64))
                    coef.append(np.zeros(0))
                    progress.update()
                    continue
                svc, a_b = self._fit_label(K[np.ix_(rows, rows)], y.astype(int))
                support.append(rows[svc.support_].astype(np.int64))
                coef.append(np.asarray(svc.dual_coef_[0], dtype=np.float64))
                intercept[k] = float(svc.intercept_[0])
                sigmoid[k] = a_b
                progress.update()
            self.support_, self.dual_coef_ = support, coef
            self.intercept_, self.sigmoid_, self.constant_ = intercept, sigmoid, constant
        return self

    def _fit_label(self, Kk: np.ndarray, yk: np.ndarray) -> tuple[SVC, tuple[float, float]]:
        """One label's SVC and, with ``platt``, the sigmoid fitted to its out-of-fold decision values."""
        svc = SVC(kernel="precomputed", C=self.C, tol=self.tol, cache_size=self.cache_size)
        if not self.platt:
            return svc.fit(Kk, yk), (0.0, 0.0)
        folds = int(min(5, np.bincount(yk).min()))
        # One sample of a class: the sigmoid is fitted on the training decision values.  The single
        # "split" (train = test = every row) keeps the precomputed kernel whole: a default CV would
        # slice its columns to a fold while the frozen SVC expects all of them.
        whole = [(np.arange(len(yk)), np.arange(len(yk)))]
        cal = (CalibratedClassifierCV(svc, method="sigmoid", cv=folds, ensemble=False) if folds >= 2
               else CalibratedClassifierCV(FrozenEstimator(svc.fit(Kk, yk)), method="sigmoid", cv=whole))
        cal.fit(Kk, yk)
        fitted = cal.calibrated_classifiers_[0]
        final = fitted.estimator
        final = getattr(final, "estimator", final)  # a FrozenEstimator's SVC
        sig = fitted.calibrators[0]
        return final, (float(sig.a_), float(sig.b_))

    def decision_function(self, X: Any) -> np.ndarray:
        """Label scores, shape (n_samples, n_labels): SVM decision values, or Platt probabilities."""
        self._check_fitted()
        Kc = self._cross_stack(X).combine(self.weights_)
        scores = np.empty((Kc.shape[0], len(self.classes_)))
        for k in range(len(self.classes_)):
            if self.constant_[k] != 0:
                scores[:, k] = max(self.constant_[k], 0.0) if self.platt else self.constant_[k]
                continue
            f = Kc[:, self.support_[k]] @ self.dual_coef_[k] + self.intercept_[k]
            if self.platt:
                a, b = self.sigmoid_[k]
                f = _sigmoid(a * f + b)
            scores[:, k] = f
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """Label sets: decision value > 0 (or probability > 1/2)."""
        return (self.decision_function(X) > (0.5 if self.platt else 0.0)).astype(np.int64)

    def _check_loaded(self) -> None:
        ks = getattr(self, "kernel_set_", None)
        n_train = ks.n_train_ if ks is not None else getattr(self, "n_train_", 0)
        m = len(self.classes_)
        if not (len(self.support_) == len(self.dual_coef_) == m and self.sigmoid_.shape == (m, 2)
                and len(self.intercept_) == m and len(self.constant_) == m
                and len(self.weights_) == len(self.kernel_names_)):
            raise ValueError(f"per-label coefficients that do not match the {m} labels")
        for rows, coef in zip(self.support_, self.dual_coef_, strict=True):
            rows, coef = np.asarray(rows), np.asarray(coef)
            if rows.dtype.kind not in "iu" or coef.dtype.kind != "f" or rows.shape != coef.shape or rows.ndim != 1:
                raise ValueError("a label's support and coefficients that do not match")
            if rows.size and (rows.min() < 0 or rows.max() >= max(n_train, 1)):
                raise ValueError(f"a support index outside the {n_train} training samples")
        check_loaded_kernel_input(self, n_train)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(z))`` without overflow (scikit-learn's ``_SigmoidCalibration.predict``)."""
    from scipy.special import expit

    return expit(-z)


class MLkNN(RankerMixin, ClassifierMixin, MultikernelEstimator):
    """Multi-label k-nearest neighbours (Zhang and Zhou, Pattern Recognition 40, 2007).

    For label ``l`` and a sample whose ``k`` nearest training neighbours include ``c`` with label ``l``, the score
    is the posterior ``P(l | c) = P(l) P(c | l) / (P(l) P(c | l) + P(not l) P(c | not l))``, with the prior and the
    count distributions estimated on the training set (each training sample's neighbours exclude itself) and
    Laplace smoothing ``s``.

    Parameters
    ----------
    k : int, default=10
        Number of neighbours.
    s : float, default=1.0
        Smoothing.
    metric : str, default="euclidean"
        Distance of :class:`sklearn.neighbors.NearestNeighbors` (``"precomputed"``: ``X`` holds distances).

    Attributes
    ----------
    X_fit_ : ndarray of shape (n_train, n_features)
        The training samples (divided by ``scale_``), whose neighbours a prediction looks up.
    scale_ : float
        The training samples' largest absolute value (1 for ``metric="precomputed"`` or all-zero samples): the
        samples are divided by it, so distances of huge or tiny features neither overflow nor underflow; the
        neighbours of the built-in metrics (Minkowski, cosine, ...) do not change by a common scale.
    relevant_ : ndarray of shape (n_train, n_labels), bool
    prior_ : ndarray of shape (n_labels,)
    likelihood_, likelihood_not_ : ndarray of shape (n_labels, k + 1)
    classes_ : ndarray of shape (n_labels,)
    n_features_in_ : int

    Notes
    -----
    Unknown labels (``NaN``) count neither as relevant nor as irrelevant: a neighbour with an unknown label ``l``
    does not add to ``c``, and a training sample with an unknown label ``l`` is left out of label ``l``'s
    estimates.  ``predict`` keeps the labels whose posterior exceeds 1/2; :meth:`score` is one minus the ranking
    loss over the known labels.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "k": [Integer(low=1)],
        "s": [Real(low=0)],
        "metric": [Options("euclidean", "manhattan", "chebyshev", "minkowski", "cosine", "l1", "l2", "cityblock",
                           "precomputed")],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {
        "X_fit_": FittedSpec("real", (2,)),
        "scale_": FittedSpec("real", (0,)),
        "relevant_": FittedSpec("int", (2,)),
        "prior_": FittedSpec("real", (1,)),
        "likelihood_": FittedSpec("real", (2,)),
        "likelihood_not_": FittedSpec("real", (2,)),
        "classes_": FittedSpec("int", (1,)),
        "n_features_in_": FittedSpec("int", (0,)),
        "feature_names_in_": FittedSpec("text", (1,), required=False),
    }

    def __init__(self, k: int = 10, s: float = 1.0, metric: str = "euclidean") -> None:
        self.k = k
        self.s = s
        self.metric = metric

    def fit(self, X: Any, Y: Any) -> MLkNN:
        """Estimate the priors and the neighbour-count distributions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (distances between them with ``metric="precomputed"``).
        Y : array-like or sparse matrix of shape (n_samples, n_labels): 1, 0, ``NaN`` unknown

        Returns
        -------
        self
        """
        with self._fit_context():
            self._require_y(Y)
            X = validate_data(self, X, dtype=np.float64)
            Y = check_label_matrix(Y, len(X))
            if self.k >= len(X):
                raise ValueError(f"k={self.k} neighbours need more than {self.k} training samples; got {len(X)}")
            top = float(np.abs(X).max(initial=0.0))
            self.scale_ = top if self.metric != "precomputed" and top > 0 else 1.0
            self.X_fit_ = X / self.scale_
            known, relevant = ~np.isnan(Y), Y == 1
            counts = self._counts(relevant, self._neighbours(None))
            self.relevant_ = relevant
            self.prior_ = (self.s + relevant.sum(axis=0)) / (2 * self.s + known.sum(axis=0))
            m = Y.shape[1]
            with_label, without = np.zeros((m, self.k + 1)), np.zeros((m, self.k + 1))
            for label in range(m):
                with_label[label] = np.bincount(counts[relevant[:, label], label], minlength=self.k + 1)
                without[label] = np.bincount(counts[known[:, label] & ~relevant[:, label], label],
                                             minlength=self.k + 1)
            self.likelihood_ = (self.s + with_label) / (self.s * (self.k + 1) + with_label.sum(axis=1, keepdims=True))
            self.likelihood_not_ = (self.s + without) / (self.s * (self.k + 1) + without.sum(axis=1, keepdims=True))
            self.classes_ = np.arange(m)
        return self

    def _neighbours(self, X: np.ndarray | None) -> np.ndarray:
        """Indices of the ``k`` nearest training samples of ``X`` (of each training sample, itself excluded,
        for ``None``)."""
        nn = NearestNeighbors(n_neighbors=self.k, metric=self.metric).fit(self.X_fit_)
        return nn.kneighbors(X, self.k, return_distance=False)

    @staticmethod
    def _counts(relevant: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
        return relevant[neighbours].sum(axis=1)  # (n, k, m) -> (n, m)

    def decision_function(self, X: Any) -> np.ndarray:
        """Posterior probability of each label, shape (n_samples, n_labels)."""
        self._check_fitted()
        X = validate_data(self, X, dtype=np.float64, reset=False)
        counts = self._counts(self.relevant_, self._neighbours(X / self.scale_))
        labels = np.arange(counts.shape[1])
        yes = self.prior_ * self.likelihood_[labels, counts]
        no = (1.0 - self.prior_) * self.likelihood_not_[labels, counts]
        return yes / (yes + no)

    def predict(self, X: Any) -> np.ndarray:
        """Label sets: posterior > 1/2."""
        return (self.decision_function(X) > 0.5).astype(np.int64)

    def _check_loaded(self) -> None:
        n, m = self.relevant_.shape
        if self.relevant_.dtype != bool:
            raise ValueError("the training labels are not a boolean matrix")
        if self.X_fit_.shape != (n, self.n_features_in_) or self.prior_.shape != (m,) or \
                self.likelihood_.shape != (m, self.k + 1) or self.likelihood_not_.shape != (m, self.k + 1) or \
                len(self.classes_) != m or not (np.isfinite(self.scale_) and self.scale_ > 0) or self.k >= n:
            raise ValueError("training samples, labels and estimated distributions that do not fit together")
