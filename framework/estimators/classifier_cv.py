"""Cross-validated MKL: :class:`MKLClassifierCV` selects ``C`` (and the regularizer's parameters) along a
warm-started path, in the vocabulary of :class:`~sklearn.linear_model.LogisticRegressionCV`.

:class:`~sklearn.model_selection.GridSearchCV` over :class:`~multikernel.MKLClassifier` builds the kernels and
solves from scratch at every (fold, grid point).  Here each fold's stacks (training x training, validation x
training) are built once and serve the whole grid, and the grid is walked as a path
(:func:`multikernel.solve.grid_path.walk_path`): every fit starts from the previous point's weights and dual
variables.  Each fit still stops at its certified gap ``tol``, so the fold fits are the same fits as the grid
search's within ``tol``, the selection rule is the grid search's (highest mean fold score, the first point in
:class:`~sklearn.model_selection.ParameterGrid` order on ties), and the final model is the one
``GridSearchCV(...).best_estimator_`` fits: :class:`~multikernel.MKLClassifier` at the chosen point, on all the data.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score, check_scoring
from sklearn.model_selection import ParameterGrid, check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import validate_data

from multikernel.core.interfaces import Component, KernelBuilder
from multikernel.core.validation import Boolean, Constraint, InstanceOf, Integer, NoneValue, check_positive_real
from multikernel.estimators.base import MultikernelEstimator
from multikernel.estimators.classifier import MKL_CONSTRAINTS, MKLClassifier
from multikernel.estimators.kernel_input import KernelInputMixin
from multikernel.solve.fit import FittedMKL, SolveSettings, Targets, build_parts, encode_targets, fit_mkl
from multikernel.solve.grid_path import select_best, walk_path
from multikernel.stack.storage import KernelStack
from multikernel.stack.subsets import subset_stack

__all__ = ["MKLClassifierCV"]

#: Parameters of :class:`~multikernel.MKLClassifier` that :class:`MKLClassifierCV` passes on unchanged.
_SHARED = ("kernels", "kernel_params", "normalize", "standardize", "method", "loss", "regularizer", "solver",
           "tol", "max_iter", "inner_tol", "stopping", "kernel_dtype", "kernel_backend", "memory_budget",
           "cache_size", "multiclass")

#: Fitted attributes of the refitted :class:`~multikernel.MKLClassifier` that :class:`MKLClassifierCV` exposes.
_FITTED = ("classes_", "target_type_", "weights_", "dual_coef_", "intercept_", "n_iter_", "objective_", "dual_gap_",
           "support_", "kernel_names_", "results_", "kernel_set_")

_PREFIX = "regularizer__"


class MKLClassifierCV(KernelInputMixin, ClassifierMixin, MultikernelEstimator):
    """Multiple kernel learning classifier with ``C`` (and the regularizer's parameters) chosen by
    cross-validation along a warm-started path.

    Takes the kernels, method and parameters of :class:`~multikernel.MKLClassifier`, and ``Cs``, ``cv``,
    ``scoring`` and ``refit`` as :class:`~sklearn.linear_model.LogisticRegressionCV` does.  For each fold the
    kernels are built once (on the fold's training rows, as the plain estimator builds them) and every grid
    point is fitted along a path: ``C`` increasing for the first value of the regularizer's parameters,
    decreasing for the next, and so on, each fit warm-started from the previous one and stopped at its
    certified duality gap ``tol``.  The choice is :class:`~sklearn.model_selection.GridSearchCV`'s on the same
    folds: the highest mean fold score, the first point of the grid (``Cs`` outermost, in the given order) on
    ties; with ``refit`` the final model is :class:`~multikernel.MKLClassifier` fitted at that point on all
    the data.

    Parameters
    ----------
    kernels : str or list of KernelBuilder, default="rbf_poly"
        As :class:`~multikernel.MKLClassifier`: a kernel family name, kernel builders, or ``"precomputed"``
        (then ``X`` is the training kernels, and each fold takes its rows and columns of them).
    kernel_params : dict, optional
        Parameters of the kernel family.
    normalize : {"none", "trace", "unit_diagonal", "center"}, default="trace"
        Normalization of each base kernel, fitted on each fold's training kernel (and on all the data for the
        final model).
    standardize : bool, default=False
        Standardize each feature on the training rows (each fold's, then all of them for the final model).
    method : str, default="l1mkl"
        A registered method name.
    Cs : int or array-like of float, default=10
        The values of ``C``: a list of positive values (searched in this order for ties), or a number of
        values spaced logarithmically from 1e-2 to 1e3.
    regularizer_grid : dict, optional
        Values of the regularizer's parameters searched with ``Cs``, by parameter name (``{"nu": [0.1, 0.5,
        1.0]}`` for ``method="sm1mkl"``'s box, ``{"p": [1.5, 2, 4]}`` for Lp-MKL); every combination is searched
        (:class:`~sklearn.model_selection.ParameterGrid`).
    cv : int, cross-validation generator or iterable, optional
        As :func:`sklearn.model_selection.check_cv` for a classifier: ``None`` is 5-fold, an integer the number
        of stratified folds.
    scoring : str or callable, optional
        A scikit-learn scorer name or ``scorer(estimator, X, y)``; ``None`` is accuracy (the estimator's
        ``score``).  Scorers that need probabilities do not apply (MKL classifiers have none).
    refit : bool, default=True
        Fit the final model at the chosen point on all the data.  With ``refit=False`` only the choice and the
        scores are kept, and prediction raises an error.
    loss, regularizer, solver : None, str or plugin instance
        Override the method's part, as :class:`~multikernel.MKLClassifier`.  With a ``loss`` instance its
        ``C`` is replaced by each value of ``Cs``.
    tol : float, default=1e-3
        Certified relative duality gap at which every fit (of every fold and of the final model) stops.
    max_iter : int, default=200
        Maximum number of outer iterations of each fit.
    inner_tol : float, default=1e-3
        KKT tolerance of each inner SVM solve.
    stopping : {"gap", "relative_change"}, default="gap"
    kernel_dtype : {"float64", "float32"}, default="float64"
    kernel_backend : {"dense", "memmap", "lazy", "auto"}, default="dense"
    memory_budget : int or str, optional
    cache_size : float, default=200
        As :class:`~multikernel.MKLClassifier`.
    multiclass : {"ovr", "shared"}, default="ovr"
        As :class:`~multikernel.MKLClassifier`; one ``C`` is chosen for all the classes.
    n_jobs : int, optional
        Folds fitted in parallel (joblib threads: the compiled loops release the GIL); ``None`` is 1 outside
        a :func:`joblib.parallel_config`.  The final fit uses it for its one-vs-rest problems.
    verbose : int, default=0
        ``>= 1`` shows a progress bar of the fold fits.

    Attributes
    ----------
    C_ : float
        The chosen ``C``.
    regularizer_params_ : dict
        The chosen values of the regularizer's parameters (empty without ``regularizer_grid``).
    best_params_ : dict
        The chosen point as :class:`~sklearn.model_selection.GridSearchCV` names it: ``C`` and
        ``regularizer__<name>``.
    best_score_ : float
        Mean fold score of the chosen point.
    Cs_ : ndarray of shape (n_Cs,)
        The values of ``C`` searched.
    scores_ : ndarray of shape (n_folds, n_Cs) or (n_folds, n_Cs, n_regularizer_points)
        Validation score of every fold at every point; the last axis follows
        ``ParameterGrid(regularizer_grid)``.
    path_n_iter_ : ndarray of the shape of ``scores_``
        Outer iterations of each fold's fit at each point (summed over one-vs-rest problems).
    path_objective_ : ndarray of the shape of ``scores_``
        Objective of each fold's fit at each point (summed over one-vs-rest problems): within
        ``path_dual_gap_`` (relative) of that fold's optimum, as a cold fit is.
    path_dual_gap_ : ndarray of the shape of ``scores_``
        Certified relative duality gap of each fold's fit at each point (the largest over one-vs-rest problems).
    best_estimator_ : MKLClassifier
        The final model (with ``refit``).
    classes_, target_type_, weights_, dual_coef_, intercept_, n_iter_, objective_, dual_gap_, support_, \
kernel_names_, results_
        The final model's, as :class:`~multikernel.MKLClassifier` (with ``refit``; ``classes_`` and
        ``target_type_`` always).
    n_features_in_ : int
        Number of features (of training samples with precomputed kernels).

    See Also
    --------
    MKLClassifier : the estimator at one point.
    sklearn.linear_model.LogisticRegressionCV : the same interface for logistic regression.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from multikernel import MKLClassifierCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = MKLClassifierCV(method="lpmkl", Cs=[0.1, 1, 10], cv=3, standardize=True).fit(X[:150], y[:150])
    >>> float(clf.C_) in (0.1, 1.0, 10.0)
    True
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **{k: v for k, v in MKL_CONSTRAINTS.items() if k != "C"},
        "Cs": [Integer(low=1), InstanceOf(list, tuple, np.ndarray, label="a list of positive values of C")],
        "regularizer_grid": [InstanceOf(Mapping, label="a dict of parameter name -> list of values"), NoneValue()],
        "refit": [Boolean()],
    }

    def __init__(
        self,
        kernels: str | Sequence[KernelBuilder] = "rbf_poly",
        kernel_params: dict[str, Any] | None = None,
        normalize: str = "trace",
        standardize: bool = False,
        method: str = "l1mkl",
        Cs: int | Sequence[float] = 10,
        regularizer_grid: Mapping[str, Sequence[Any]] | None = None,
        cv: Any = None,
        scoring: Any = None,
        refit: bool = True,
        loss: str | Component | None = None,
        regularizer: str | Component | None = None,
        solver: str | Component | None = None,
        tol: float = 1e-3,
        max_iter: int = 200,
        inner_tol: float = 1e-3,
        stopping: str = "gap",
        kernel_dtype: str = "float64",
        kernel_backend: str = "dense",
        memory_budget: int | str | None = None,
        cache_size: float = 200.0,
        multiclass: str = "ovr",
        n_jobs: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.method = method
        self.Cs = Cs
        self.regularizer_grid = regularizer_grid
        self.cv = cv
        self.scoring = scoring
        self.refit = refit
        self.loss = loss
        self.regularizer = regularizer
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.stopping = stopping
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.cache_size = cache_size
        self.multiclass = multiclass
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    # parameters
    # ------------------------------------------------------------------------------------------
    def _Cs(self) -> np.ndarray:
        if isinstance(self.Cs, numbers.Number):  # a count (checked by the constraints)
            return np.logspace(-2, 3, int(self.Cs))
        if np.ndim(self.Cs) != 1 or not len(self.Cs):
            raise ValueError(f"{type(self).__name__}: Cs must be a non-empty list of positive values of C; "
                             f"got {self.Cs!r}")
        return np.array([check_positive_real("each value of Cs", c) for c in self.Cs], dtype=np.float64)

    def _regularizer_points(self) -> list[dict[str, Any]]:
        grid = self.regularizer_grid
        if grid is None:
            return [{}]
        for name, values in grid.items():
            if not isinstance(name, str) or name == "C" or "__" in name:
                raise ValueError(f"regularizer_grid keys are the regularizer's parameter names (e.g. 'nu', not "
                                 f"'regularizer__nu'; C is searched by Cs); got {name!r}")
            if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)) or not len(values):
                raise ValueError(f"regularizer_grid[{name!r}] must be a non-empty list of values; got {values!r}")
        return list(ParameterGrid({_PREFIX + k: list(v) for k, v in grid.items()})) if grid else [{}]

    def _check_params(self) -> None:
        self._points()

    def _points(self) -> tuple[np.ndarray, list[dict[str, Any]], list[dict[str, Any]]]:
        """``Cs``, the regularizer's points and the grid in :class:`~sklearn.model_selection.ParameterGrid`
        order (``C`` outermost: "C" sorts before "regularizer__..."), every point's parts checked."""
        Cs, rpoints = self._Cs(), self._regularizer_points()
        points = [{"C": float(C), **r} for C in Cs for r in rpoints]
        for point in points[:len(rpoints)]:  # the parts depend on the regularizer's point only
            self._parts_at(point)
        return Cs, rpoints, points

    def _parts_at(self, point: dict[str, Any]):
        return build_parts(self.method, self.loss, self.regularizer, self.solver, params=point)

    def _estimator_at(self, point: dict[str, Any]) -> MKLClassifier:
        """The plain estimator at a grid point: what ``GridSearchCV`` clones and sets."""
        params = {k: getattr(self, k) for k in _SHARED}
        rp = {k: v for k, v in point.items() if k.startswith(_PREFIX)}
        if rp:  # a nested parameter needs a regularizer instance: the method's own, or the one given
            params["regularizer"] = self._parts_at(rp).regularizer
        if isinstance(self.loss, Component):  # C lives in one place: the loss instance's C
            params["loss"] = self._parts_at({"C": point["C"]}).loss
            return MKLClassifier(**params, n_jobs=self.n_jobs)
        return MKLClassifier(**params, C=point["C"], n_jobs=self.n_jobs)

    # ------------------------------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, groups: Any = None) -> MKLClassifierCV:
        """Choose the grid point by cross-validation, then (with ``refit``) fit the final model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels (see ``kernels``)
        y : array-like of shape (n_samples,), or a 0/1 label-indicator matrix (n_samples, n_labels)
        groups : array-like of shape (n_samples,), optional
            Group labels for a group splitter given as ``cv``.

        Returns
        -------
        self
        """
        with self._fit_context(desc=f"{type(self).__name__}: {self.method} fold fits") as progress:
            self._require_y(y)
            Cs, rpoints, points = self._points()
            if self._precomputed:
                stack, y = self._fit_stack(X, y)
                features, n = None, stack.n_rows
            else:
                features, y = validate_data(self, X, y, dtype=np.float64, multi_output=True)
                stack, n = None, len(features)
            if len(y) != n:
                raise ValueError(f"X has {n} samples but y has {len(y)} labels")
            targets = encode_targets(y)
            scorer = None if self.scoring is None else check_scoring(self, scoring=self.scoring)
            folds = list(check_cv(self.cv, y, classifier=True).split(np.empty((n, 0)), y, groups))
            settings = self._path_settings(self._estimator_at(points[0])._settings())

            def fold(k: int, train: np.ndarray, val: np.ndarray) -> np.ndarray:
                try:  # the fold's own classes, as the plain estimator fitted on the fold has them
                    fold_targets = encode_targets(_safe_indexing(y, train))
                except ValueError as error:
                    raise ValueError(f"training fold {k} of cv: {error}") from error
                fold_train, fold_val = self._fold_stacks(stack, features, y, train, val)
                return self._fold_path(fold_train, fold_val, fold_targets, _safe_indexing(y, val), points, settings,
                                       scorer, progress)

            runs = Parallel(n_jobs=self.n_jobs, prefer="threads")(
                delayed(fold)(k, tr, va) for k, (tr, va) in enumerate(folds))
            self._store_path(np.stack(runs, axis=1), Cs, rpoints, points, targets)
            if self.refit:
                self.best_estimator_ = self._estimator_at(self.best_params_).fit(X, y)
                for name in _FITTED:
                    setattr(self, name, getattr(self.best_estimator_, name))
        return self

    def _store_path(self, path: np.ndarray, Cs: np.ndarray, rpoints: list[dict[str, Any]],
                    points: list[dict[str, Any]], targets: Targets) -> None:
        """The fitted attributes of the search from the fold paths' rows, shape (4, n_folds, n_points)."""
        scores = path[0].T  # (n_points, n_folds), as select_best takes them
        best = select_best(scores)
        shape = (path.shape[1], len(Cs)) + ((len(rpoints),) if self.regularizer_grid else ())
        self.Cs_ = Cs
        self.scores_ = path[0].reshape(shape)
        self.path_n_iter_ = path[1].astype(np.int64).reshape(shape)
        self.path_objective_, self.path_dual_gap_ = path[2].reshape(shape), path[3].reshape(shape)
        self.best_params_ = dict(points[best])
        self.best_score_ = float(np.mean(scores[best]))
        self.C_ = self.best_params_["C"]
        self.regularizer_params_ = {k[len(_PREFIX):]: v for k, v in self.best_params_.items() if k.startswith(_PREFIX)}
        self.classes_, self.target_type_ = targets.classes, targets.kind

    @staticmethod
    def _path_settings(settings: SolveSettings) -> SolveSettings:
        """The plain estimator's settings (the same stopping rule and certificate) computed as a path computes best.

        Along the path (:meth:`_fold_path`: ``fit_mkl(keep_cuts=True)``) the level method keeps its cuts from one
        ``C`` to the next (:mod:`multikernel.plugins._kept_cuts`:
        rescaled into each fit's feasible set, they stay cuts of its objective), which saves it most of the outer
        iterations at the larger values of ``C``.  Each fit reads the stack twice per iteration (combination, then
        forms over the support) instead of once (``one_pass``): a warm-started fit takes a few iterations, too
        few for the products of the one-read path, which cost more than the forms alone, to pay off (measured
        1.3-2.2x faster per fold path on heart, pima and ionosphere for lpmkl and sm1mkl, the same for l1mkl).
        """
        return attrs.evolve(settings, one_pass=False)

    def _fold_stacks(self, stack: KernelStack | None, features: np.ndarray | None, y: Any, train: np.ndarray,
                     val: np.ndarray) -> tuple[KernelStack, KernelStack]:
        """A fold's training and validation stacks, the kernels the plain estimator would use on it: rows and
        columns of the precomputed kernels, or kernels fitted on the fold's training features."""
        if stack is not None:
            return subset_stack(stack, train, train), subset_stack(stack, val, train)
        builder = self._estimator_at({"C": 1.0})
        fold_train, _ = builder._fit_stack(features[train], _safe_indexing(y, train))
        return fold_train, builder._cross_stack(features[val])

    def _fold_path(self, fold_train: KernelStack, fold_val: KernelStack, targets: Targets, y_val: Any,
                   points: list[dict[str, Any]], settings: SolveSettings, scorer: Any, progress: Any
                   ) -> np.ndarray:
        """Every grid point of one fold along the warm-started path: rows of scores, outer iterations,
        objectives and certified gaps, one column per point."""
        out = np.full((4, len(points)), np.nan)
        shared = self.multiclass == "shared"

        def fit_at(i: int, previous: FittedMKL | None) -> FittedMKL:
            return fit_mkl(fold_train, targets, self._parts_at(points[i]), settings, shared=shared, warm=previous,
                           n_jobs=1, params=points[i], keep_cuts=True)

        for i, fitted in walk_path(points, fit_at):
            score = (accuracy_score(y_val, fitted.predict(fold_val)) if scorer is None
                     else scorer(_FoldModel(fitted), fold_val, y_val))
            out[:, i] = score, fitted.n_iter.sum(), fitted.objective.sum(), fitted.dual_gap.max()
            progress.update(C=points[i]["C"], score=float(score))
        return out

    # ------------------------------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------------------------------
    def _final(self) -> MKLClassifier:
        self._check_fitted()
        if not hasattr(self, "best_estimator_"):
            raise ValueError(f"{type(self).__name__} was fitted with refit=False: it chose C_={self.C_!r} but "
                             f"fitted no final model; fit with refit=True to predict")
        return self.best_estimator_

    def decision_function(self, X: Any) -> np.ndarray:
        """Decision values of the final model (see :meth:`MKLClassifier.decision_function`).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes) (or (n_samples, n_labels))
        """
        return self._final().decision_function(X)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels predicted by the final model (a 0/1 indicator matrix for multi-label targets)."""
        return self._final().predict(X)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()  # pairwise in the precomputed mode: KernelInputMixin
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        return tags


class _FoldModel(ClassifierMixin, BaseEstimator):
    """A fold's fit as a scikit-learn classifier of its validation stack, for scorers."""

    def __init__(self, fitted: FittedMKL | None = None) -> None:
        self.fitted = fitted

    @property
    def classes_(self) -> np.ndarray:
        return self.fitted.targets.classes

    def decision_function(self, cross: KernelStack) -> np.ndarray:
        scores = self.fitted.decision_function(cross)
        return scores[:, 0] if self.fitted.targets.kind == "binary" else scores

    def predict(self, cross: KernelStack) -> np.ndarray:
        return self.fitted.predict(cross)
