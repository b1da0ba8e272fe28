"""What every learnt Mahalanobis metric offers: the linear map, the matrix, distances and scores of pairs.

The method names and meanings follow metric-learn (``transform``, ``get_mahalanobis_matrix``,
``pair_distance``, ``pair_score``, ``score_pairs``, ``get_metric``; for the pairs form ``decision_function``,
``predict``, ``score``, ``calibrate_threshold``, ``set_threshold``), so that code written for metric-learn runs
after changing an import.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.utils.validation import check_is_fitted, validate_data

from multikernel.metric._pairs import as_pairs, check_pair_labels

__all__ = ["MahalanobisMixin", "PairsClassifierMixin", "components_from_metric"]


def components_from_metric(M: np.ndarray) -> np.ndarray:
    """``L`` of shape (n_features, n_features) with ``L.T @ L == M`` (``M`` symmetric positive semi-definite).

    From the eigendecomposition ``M = V diag(w) V'``: ``L = diag(sqrt(w)) V'``; eigenvalues below zero by
    rounding are set to zero.
    """
    w, V = np.linalg.eigh(M)
    return np.sqrt(np.maximum(w, 0.0))[:, None] * V.T


class MahalanobisMixin:
    """Methods of an estimator whose fitted attribute ``metric_`` is its Mahalanobis matrix ``M``.

    Fitted attributes it relies on: ``metric_`` (n_features, n_features), ``components_`` (``L`` with
    ``M = L' L``) and ``n_features_in_``.
    """

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """The learnt Mahalanobis matrix ``M`` (a copy).

        Returns
        -------
        M : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self, "metric_")
        return self.metric_.copy()

    def transform(self, X) -> np.ndarray:
        """Map samples by ``L`` (``M = L' L``): Euclidean distances after the map are the learnt distances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            ``X @ L.T``.
        """
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.components_.T

    @property
    def _n_features_out(self) -> int:
        return self.components_.shape[0]

    def _pair_rows(self, pairs) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "metric_")
        X, idx = as_pairs(pairs, getattr(self, "preprocessor", None))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"pairs have {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_} features."
            )
        return X, idx

    def pair_distance(self, pairs, *, squared: bool = False) -> np.ndarray:
        """Learnt distance of each pair: ``sqrt((x - x')' M (x - x'))`` (metric-learn's meaning).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
        squared : bool, default=False
            Return ``(x - x')' M (x - x')``, the quantity ITML constrains.

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        X, idx = self._pair_rows(pairs)
        diff = X[idx[:, 0]] - X[idx[:, 1]]
        d2 = np.maximum(np.einsum("ij,ij->i", diff @ self.metric_, diff), 0.0)
        return d2 if squared else np.sqrt(d2)

    def pair_score(self, pairs) -> np.ndarray:
        """Similarity of each pair: minus its learnt distance (higher means more similar, as metric-learn).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return -self.pair_distance(pairs)

    def score_pairs(self, pairs) -> np.ndarray:
        """Learnt distance of each pair (metric-learn's older name of :meth:`pair_distance`).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
        """
        return self.pair_distance(pairs)

    def get_metric(self) -> Callable[..., float]:
        """The learnt distance as a function of two samples, e.g. for ``KNeighborsClassifier(metric=...)``.

        Returns
        -------
        metric : callable
            ``metric(u, v, squared=False)``; it does not change if the estimator is refitted.
        """
        M = self.get_mahalanobis_matrix()

        def metric(u, v, squared: bool = False) -> float:
            d = np.asarray(u, dtype=np.float64) - np.asarray(v, dtype=np.float64)
            d2 = max(float(d @ M @ d), 0.0)
            return d2 if squared else float(np.sqrt(d2))

        return metric


class PairsClassifierMixin:
    """Pair classification by a distance threshold (metric-learn's ``_PairsClassifierMixin``).

    A pair is predicted similar (``+1``) when its learnt distance is at most ``threshold_``, dissimilar (``-1``)
    otherwise. ``fit`` sets ``threshold_`` by :meth:`calibrate_threshold` on the training pairs.
    """

    classes_ = np.array([-1, 1])

    def decision_function(self, pairs) -> np.ndarray:
        """Minus the learnt distance of each pair (higher: more similar).

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
        """
        return self.pair_score(pairs)

    def predict(self, pairs) -> np.ndarray:
        """``+1`` (similar) for pairs whose learnt distance is at most ``threshold_``, else ``-1``.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor

        Returns
        -------
        y_pred : ndarray of shape (n_pairs,)
        """
        check_is_fitted(self, "threshold_")
        return np.where(self.pair_distance(pairs) <= self.threshold_, 1, -1)

    def score(self, pairs, y) -> float:
        """Area under the ROC curve of the scores :meth:`decision_function` against the pair labels.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``-1`` dissimilar.

        Returns
        -------
        auc : float
        """
        return float(roc_auc_score(y, self.decision_function(pairs)))

    def set_threshold(self, threshold: float):
        """Set the distance threshold of :meth:`predict`.

        Parameters
        ----------
        threshold : float

        Returns
        -------
        self
        """
        self.threshold_ = float(threshold)
        return self

    def calibrate_threshold(self, pairs, y):
        """Set ``threshold_`` to the distance threshold of highest accuracy on ``(pairs, y)``.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features), or (n_pairs, 2) indices with a preprocessor
        y : array-like of shape (n_pairs,)
            ``+1`` similar, ``-1`` dissimilar.

        Returns
        -------
        self
        """
        d = self.pair_distance(pairs)
        y = check_pair_labels(y, len(d))
        order = np.argsort(d, kind="stable")
        d, pos = d[order], (y[order] > 0).astype(np.int64)
        # cut after the first k sorted pairs (k = 0..m): those are predicted similar
        correct = np.concatenate([[0], np.cumsum(2 * pos - 1)]) + (len(pos) - pos.sum())
        valid = np.ones(len(d) + 1, dtype=bool)
        valid[1:-1] = d[1:] > d[:-1]  # no cut between tied distances
        k = int(np.argmax(np.where(valid, correct, -1)))
        if k == 0:
            self.threshold_ = -1.0
        elif k == len(d):
            self.threshold_ = float(d[-1])
        else:
            self.threshold_ = float(0.5 * (d[k - 1] + d[k]))
        return self
