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

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.neighbors import NearestNeighbors
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted, validate_data

from multikernel.ranking.estimator import KernelRankerMixin
from multikernel.ranking.labels import check_label_matrix

__all__ = ["OneVsRestRanker", "MLkNN"]


class OneVsRestRanker(KernelRankerMixin, ClassifierMixin, BaseEstimator):
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
        SVC's stopping tolerance (LIBSVM's ``eps``).
    cache_size : float, default=200
        SVC's kernel cache (MB).
    random_state : int or None, default=0
        Unused (the Platt folds are stratified, not shuffled); kept for a common interface with the rankers.

    Attributes
    ----------
    estimators_ : list of (SVC, CalibratedClassifierCV or None)
        One SVC (Platt-scaled: a calibrated one) per label, trained on the samples whose label is known;
        ``None`` for a label with a single known value in training, whose score is then constant: the decision
        value +1 or -1 (probability 1 or 0).
    rows_ : list of ndarray
        The training samples of each label's SVC.

    Notes
    -----
    ``predict`` is the SVMs' own decision (decision value > 0, or probability > 1/2).
    """

    def __init__(self, C: float = 1.0, platt: bool = False, kernels: Any = "rbf",
                 kernel_params: dict[str, Any] | None = None, normalize: str = "trace", standardize: bool = False,
                 tol: float = 1e-3, cache_size: float = 200.0, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None,
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
        if Y is None:
            raise ValueError(f"{type(self).__name__} requires Y to be passed, but the target Y is None")
        stack, _ = self._fit_stack(X)
        Y = check_label_matrix(Y, stack.n_rows)
        self.weights_ = np.full(stack.n_kernels, 1.0 / stack.n_kernels)
        K = stack.combine(self.weights_)
        self.classes_ = np.arange(Y.shape[1])
        self.estimators_, self.rows_, self.constant_ = [], [], np.zeros(Y.shape[1])
        for k, column in enumerate(Y.T):
            rows = np.flatnonzero(~np.isnan(column))
            y = column[rows]
            self.rows_.append(rows)
            if y.min() == y.max():
                self.estimators_.append(None)
                self.constant_[k] = 1.0 if y[0] > 0 else -1.0
                continue
            svc = SVC(kernel="precomputed", C=self.C, tol=self.tol, cache_size=self.cache_size)
            Kk, yk = K[np.ix_(rows, rows)], y.astype(int)
            if self.platt:
                folds = int(min(5, np.bincount(yk).min()))
                # One sample of a class: the sigmoid is fitted on the training decision values.  The single
                # "split" (train = test = every row) keeps the precomputed kernel whole: a default CV would
                # slice its columns to a fold while the frozen SVC expects all of them.
                whole = [(np.arange(len(yk)), np.arange(len(yk)))]
                svc = (CalibratedClassifierCV(svc, method="sigmoid", cv=folds, ensemble=False) if folds >= 2
                       else CalibratedClassifierCV(FrozenEstimator(svc.fit(Kk, yk)), method="sigmoid", cv=whole))
            self.estimators_.append(svc.fit(Kk, yk))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Label scores, shape (n_samples, n_labels): SVM decision values, or Platt probabilities."""
        check_is_fitted(self)
        Kc = self._cross_stack(X).combine(self.weights_)
        scores = np.empty((Kc.shape[0], len(self.estimators_)))
        for k, (svc, rows) in enumerate(zip(self.estimators_, self.rows_, strict=True)):
            if svc is None:
                scores[:, k] = max(self.constant_[k], 0.0) if self.platt else self.constant_[k]
            elif self.platt:
                scores[:, k] = svc.predict_proba(Kc[:, rows])[:, 1]
            else:
                scores[:, k] = svc.decision_function(Kc[:, rows])
        return scores

    def predict(self, X: Any) -> np.ndarray:
        """Label sets: decision value > 0 (or probability > 1/2)."""
        return (self.decision_function(X) > (0.5 if self.platt else 0.0)).astype(np.int64)


class MLkNN(ClassifierMixin, BaseEstimator):
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

    Notes
    -----
    Unknown labels (``NaN``) count neither as relevant nor as irrelevant: a neighbour with an unknown label ``l``
    does not add to ``c``, and a training sample with an unknown label ``l`` is left out of label ``l``'s
    estimates.  ``predict`` keeps the labels whose posterior exceeds 1/2.
    """

    def __init__(self, k: int = 10, s: float = 1.0, metric: str = "euclidean") -> None:
        self.k = k
        self.s = s
        self.metric = metric

    def fit(self, X: Any, Y: Any) -> MLkNN:
        """Estimate the priors and the neighbour-count distributions.

        Returns
        -------
        self
        """
        if Y is None:
            raise ValueError(f"{type(self).__name__} requires Y to be passed, but the target Y is None")
        if not (isinstance(self.k, (int, np.integer)) and self.k >= 1):
            raise ValueError(f"k must be a positive integer; got {self.k!r}")
        if not self.s > 0:
            raise ValueError(f"s must be positive; got {self.s!r}")
        X = validate_data(self, X, dtype=np.float64)
        Y = check_label_matrix(Y, len(X))
        if self.k >= len(X):
            raise ValueError(f"k={self.k} neighbours need more than {self.k} training samples; got {len(X)}")
        known, relevant = ~np.isnan(Y), Y == 1
        self.nn_ = NearestNeighbors(n_neighbors=self.k, metric=self.metric).fit(X)
        counts = self._counts(relevant, self.nn_.kneighbors(None, self.k, return_distance=False))
        self.relevant_ = relevant
        self.prior_ = (self.s + relevant.sum(axis=0)) / (2 * self.s + known.sum(axis=0))
        m = Y.shape[1]
        with_label, without = np.zeros((m, self.k + 1)), np.zeros((m, self.k + 1))
        for l in range(m):
            with_label[l] = np.bincount(counts[relevant[:, l], l], minlength=self.k + 1)
            without[l] = np.bincount(counts[known[:, l] & ~relevant[:, l], l], minlength=self.k + 1)
        self.likelihood_ = (self.s + with_label) / (self.s * (self.k + 1) + with_label.sum(axis=1, keepdims=True))
        self.likelihood_not_ = (self.s + without) / (self.s * (self.k + 1) + without.sum(axis=1, keepdims=True))
        self.classes_ = np.arange(m)
        return self

    @staticmethod
    def _counts(relevant: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
        return relevant[neighbours].sum(axis=1)  # (n, k, m) -> (n, m)

    def decision_function(self, X: Any) -> np.ndarray:
        """Posterior probability of each label, shape (n_samples, n_labels)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        counts = self._counts(self.relevant_, self.nn_.kneighbors(X, self.k, return_distance=False))
        labels = np.arange(counts.shape[1])
        yes = self.prior_ * self.likelihood_[labels, counts]
        no = (1.0 - self.prior_) * self.likelihood_not_[labels, counts]
        return yes / (yes + no)

    def predict(self, X: Any) -> np.ndarray:
        """Label sets: posterior > 1/2."""
        return (self.decision_function(X) > 0.5).astype(np.int64)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.target_tags.required = True
        return tags
