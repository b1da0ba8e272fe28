"""scikit-learn estimators of input-output kernel learning: semi-supervised, multiple-instance, clustering.

All three build the input kernels with a :class:`~multikernel.stack.storage.KernelSet` (by default the thesis's four:
Gaussian, Laplacian, inverse square distance and inverse distance with ``gamma = 1 / A``, ``A`` the mean
squared training distance), run the cutting-plane loop (:func:`~multikernel.iokl.cutting_plane.cutting_plane`)
and predict with the thesis's final classifier ``f(x) = sum_m K_m(x, X) beta_m + b``.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin, ClusterMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d

from multikernel._pages import small_pages
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.core.validation import (
    Boolean,
    Constraint,
    Integer,
    NoneValue,
    Options,
    Plugin,
    RandomState,
    Real,
    check_class_labels,
    shown,
)
from multikernel.estimators.base import MultikernelEstimator
from multikernel.estimators.kernel_input import KernelInputMixin, KernelsParam, check_loaded_kernel_input
from multikernel.iokl.checks import labelled_ratio, warn_one_class
from multikernel.iokl.cutting_plane import (
    DEFAULT_SOLVER,
    N_STARTS,
    CuttingPlaneResult,
    _check_theta,
    cutting_plane,
    solve_candidates,
)
from multikernel.iokl.labels import CandidateSet, KeyInstanceSet, LabelSet
from multikernel.solve.smo import solve_qp
from multikernel.stack.products import CombinedColumns, StackProducts, supports_products
from multikernel.stack.storage import KernelStack

__all__ = ["IOKLClustering", "IOKLMultipleInstanceClassifier", "IOKLSemiSupervisedClassifier",
           "default_kernels"]


def default_kernels() -> list[KernelBuilder]:
    """The four input kernels of the thesis's SSL and MIL experiments (spec section 3.11), ``gamma = 1/A``."""
    create = get_registry().create
    return [create("kernel", name) for name in ("rbf", "laplacian", "inverse_square_distance", "inverse_distance")]


def _on_small_pages(fit: Callable) -> Callable:
    """Run ``fit`` within :func:`~multikernel._pages.small_pages`: it writes the input kernels and a combined
    kernel once each (1.7 GB of fresh memory on musk2), whose huge-page faults cost more than the arithmetic."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with small_pages():
            return fit(self, *args, **kwargs)

    return wrapper


#: The parameters every IOKL estimator shares (the kernel input's come from KernelInputMixin).
_IOKL_CONSTRAINTS: dict[str, list[Constraint]] = {
    "kernels": [KernelsParam(), NoneValue()],
    "theta": [Real(low=0), NoneValue()],  # >= 1: the cutting plane's own check explains the unit
    "solver": [Plugin("solver", instances=False)],
    "tol": [Real(low=0)],
    "max_iter": [Integer(low=1)],
    "cp_tol": [Real(low=0)],
    "enumerate_limit": [Integer(low=1)],
    "n_starts": [Integer(low=0)],
    "warm_start": [Boolean()],
    "offset": [Real(low=0, closed="left")],
    "random_state": [RandomState()],
    "verbose": [Integer(low=0)],
}


class _IOKLBase(KernelInputMixin, MultikernelEstimator):
    """Shared fitting machinery: kernels, the cutting-plane loop, the decision function."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = _IOKL_CONSTRAINTS
    #: The cutting plane's full state (history, candidate groups) is not saved; the classifier is.
    _unsaved_attributes: ClassVar[tuple[str, ...]] = ("result_", "rounded_", "results_")

    def _check_params(self) -> None:
        _check_theta(self.theta)

    def _builders(self, n_features: int) -> list[KernelBuilder]:
        if self.kernels is None:  # the thesis's four input kernels
            return default_kernels()
        return super()._builders(n_features)

    def _inputs(self, X: Any) -> KernelStack:
        """The input kernels of the training samples (``X`` validated: features or precomputed kernels)."""
        return self._fit_stack(X)[0]

    @contextlib.contextmanager
    def _cutting_plane_context(self) -> Iterator[None]:
        """The fit context of every IOKL fit, whose progress :meth:`_run` gives the cutting plane's iterations."""
        with self._fit_context(total=self.max_iter, desc=f"{type(self).__name__}: cutting-plane iterations") \
                as self._progress:
            try:
                yield
            finally:
                del self._progress

    def _check_fitted(self) -> None:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")

    def _check_loaded(self) -> None:
        n_kernels = len(self.kernel_names_)
        if np.ndim(self.coef_) != 2 or self.coef_.shape[0] != n_kernels:
            raise ValueError(f"coefficients of shape {np.shape(self.coef_)} for {n_kernels} input kernels")
        check_loaded_kernel_input(self, self.coef_.shape[1])

    def _run(self, inputs: KernelStack, cset: CandidateSet, C: np.ndarray, start: tuple[np.ndarray, np.ndarray]
             ) -> CuttingPlaneResult:
        warm = getattr(self, "result_", None) if self.warm_start else None
        if warm is not None and warm.sign.shape[2] != cset.n_units:
            warm = None
        progress = getattr(self, "_progress", None)
        result = cutting_plane(inputs, cset, C, start, theta=self.theta, offset=float(self.offset),
                               solver=self.solver, tol=self.tol, max_iter=self.max_iter, cp_tol=self.cp_tol,
                               enumerate_limit=self.enumerate_limit, n_starts=self.n_starts,
                               random_state=self.random_state, warm=warm,
                               callback=None if progress is None else _progress_callback(progress))
        self.result_ = result
        self.n_iter_ = result.n_iter
        self.stop_reason_ = result.stop_reason
        self._set_classifier(result, inputs)
        return result

    def _set_classifier(self, result: CuttingPlaneResult, inputs: KernelStack) -> None:
        """The final classifier's attributes, from the solve that defines it."""
        self.coef_ = result.coefficients(inputs)
        self.intercept_ = result.bias(float(self.offset))
        self.dual_gap_ = result.mkl.dual_gap
        self.objective_ = result.mkl.objective
        self.weights_ = result.weights.reshape(-1, inputs.n_kernels)

    def _training_scores(self, inputs: KernelStack) -> np.ndarray:
        return sum(np.asarray(inputs.kernel(m)) @ self.coef_[m] for m in range(inputs.n_kernels)) + self.intercept_

    def _scores(self, X: Any) -> np.ndarray:
        self._check_fitted()
        cross = self._cross_stack(X)
        return sum(np.asarray(cross.kernel(m)) @ self.coef_[m] for m in range(cross.n_kernels)) + self.intercept_


def _progress_callback(progress: Any) -> Callable[[dict[str, Any]], None]:
    """A cutting-plane callback showing each iteration's objective and candidate groups."""
    def callback(entry: dict[str, Any]) -> None:
        shown_values = {k: entry[k] for k in ("objective", "n_groups", "gap") if k in entry}
        progress.update(**shown_values)

    return callback


def _svm_scores(inputs: KernelStack, rows: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """Decision values on every instance of an SVM trained on ``rows`` (labels ``y`` in {-1, +1}) with the
    average input kernel.

    The C-SVC dual is solved by the library's SMO (libsvm's working-set rule and stopping tolerance 1e-3,
    as ``SVC``) without forming the ``n x n`` average kernel: on a whole dense stack (SIL-SVM, every
    instance) its columns are combined when the SMO asks for them and the scores come from one read of the
    support vectors' rows (musk2: 0.5-0.7 s against 1.2-1.5 s for ``SVC`` on the combined kernel, most of it
    the first write of that 348 MB kernel); for a subset of rows (the labelled part of SSL) only those rows
    of the average kernel are formed.  The scores differ from ``SVC``'s by up to the tolerance (7.6e-4 on
    musk2), which can pick another key instance of a bag, and the cutting plane's result moves with its start
    (a local result).
    """
    w = np.full(inputs.n_kernels, 1.0 / inputs.n_kernels)
    n = inputs.n_rows
    if len(rows) == n and supports_products(inputs):
        res = solve_qp(CombinedColumns(inputs, w, inputs.diag()), y, p=-1.0, upper=C, y_sum=0.0)
        coef = res.alpha * y
        products = StackProducts(inputs, res.alpha, coef, np.zeros(n, dtype=bool))
        return sum(products.combined(w)) + res.bias
    Kr = inputs.subset(rows, np.arange(n)).combine(w)  # the rows' average kernel against every instance
    res = solve_qp(Kr if len(rows) == n else np.ascontiguousarray(Kr[:, rows]), y, p=-1.0, upper=C, y_sum=0.0)
    return (res.alpha * y) @ Kr + res.bias


_COMMON_DOC = """
    kernels : str, list of KernelBuilder or None, default=None
        The input kernels: ``None`` (or the family ``"iokl"``) for the thesis's four (Gaussian, Laplacian, ISD, ID
        with ``gamma = 1/A``), a registered family or kernel name, a list of kernel builders, or ``"precomputed"``
        (``X`` is then the stack of training kernels, as in :class:`~multikernel.MKLClassifier`).
    kernel_params, normalize, standardize, kernel_dtype, kernel_backend, memory_budget
        The kernel input's parameters, as in :class:`~multikernel.MKLClassifier` (``normalize`` defaults to
        ``"none"``: the thesis's kernels as they are).
    theta : float, optional
        IOKL-SM's cap on each candidate group's norm, in units of ``1/T`` (``theta / T`` at each cutting-plane
        iteration, as in the thesis's experiments; ``theta >= 1``); ``None`` for IOKL-HM.
    solver : str, default="projected_gradient"
        The outer MKL solver: ``projected_gradient`` (spectral steps) or ``bcd``, the thesis's Algorithm 5,
        which crawls where candidates nearly tie (:data:`multikernel.iokl.cutting_plane.DEFAULT_SOLVER`).
    tol : float, default=1e-3
        Certified relative duality gap of each MKL solve.
    max_iter : int, default=30
        Cutting-plane iterations.
    cp_tol : float, default=1e-3
        Cutting-plane stopping tolerance (see :mod:`multikernel.iokl.cutting_plane`).
    enumerate_limit : int, default=4096
        Exact most-violated search when the feasible set is at most this large.
    n_starts : int, default=20
        Random feasible candidates from which the sorting search also starts at every cutting-plane iteration,
        besides the classifier's own labels and the strongest group (:data:`multikernel.iokl.cutting_plane.N_STARTS`);
        0 is the thesis's search, from the current solution only.
    warm_start : bool, default=False
        Continue from the previous fit's candidates, weights and ``alpha`` (same training data).
    offset : float, default=0.1
        The bias, absorbed as a constant feature: ``offset`` is added to every input kernel.  The thesis
        adds 1 (footnote 1 of chapter 4); with unit-diagonal kernels and no ``alpha'y = 0`` constraint that
        constant dominates the label search (it favours candidates with one sign), so the default is 0.1.
    random_state : int, RandomState instance or None, default=0
        Seed of the random starts of the most violated candidate search (``n_starts``).
    verbose : int, default=0
        ``>= 1`` shows the cutting-plane iterations (a progress bar on a terminal, log lines elsewhere).
"""



class IOKLSemiSupervisedClassifier(ClassifierMixin, _IOKLBase):
    __doc__ = f"""Semi-supervised IOKL (transductive SVM through input-output kernels, spec section 3.5).

    Parameters
    ----------
    C_labeled, C_unlabeled : float, default=100, 1
        Square hinge costs of the labelled and unlabelled samples (the thesis uses 100 and 0.1 or 1).
    positive_fraction : float, optional
        The balance constraint: the fraction of positives (the second class of ``classes_``) among the
        unlabelled samples; default the labelled ratio, with a warning when it lies outside [0.3, 0.7]
        (:func:`multikernel.iokl.checks.labelled_ratio`).
    {_COMMON_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    transduction_ : ndarray of shape (n_samples,)
        Labels of the training samples: the given ones, and ``predict`` on the unlabelled ones.
    coef_ : ndarray of shape (n_kernels, n_samples)
        Expansion coefficients per input kernel; ``intercept_`` the bias.
    weights_ : ndarray of shape (n_candidates, n_kernels)
        The kernel weights ``d_{{m,t}}``.
    result_ : CuttingPlaneResult
        The cutting-plane state (history, stop reason, last MKL solve with its certified gap).

    Notes
    -----
    Unlabelled samples are marked as in :mod:`sklearn.semi_supervised`: ``y == -1``.  When the classes
    themselves are -1 and +1, pass the ``unlabeled`` mask to ``fit`` instead; then every entry of ``y`` at
    a labelled sample is a class.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "C_labeled": [Real(low=0)], "C_unlabeled": [Real(low=0)],
        "positive_fraction": [Real(low=0, high=1, closed="both"), NoneValue()],
    }

    def __init__(self, kernels: Any = None, C_labeled: float = 100.0,
                 C_unlabeled: float = 1.0, positive_fraction: float | None = None, theta: float | None = None,
                 solver: str = DEFAULT_SOLVER, tol: float = 1e-3, max_iter: int = 30, cp_tol: float = 1e-3,
                 enumerate_limit: int = 4096, n_starts: int = N_STARTS, warm_start: bool = False, offset: float = 0.1,
                 random_state: int | np.random.RandomState | None = 0, kernel_params: dict[str, Any] | None = None,
                 normalize: str = "none", standardize: bool = False, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None, verbose: int = 0) -> None:
        self.kernels = kernels
        self.C_labeled = C_labeled
        self.C_unlabeled = C_unlabeled
        self.positive_fraction = positive_fraction
        self.theta = theta
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cp_tol = cp_tol
        self.enumerate_limit = enumerate_limit
        self.n_starts = n_starts
        self.warm_start = warm_start
        self.offset = offset
        self.random_state = random_state
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.verbose = verbose

    @_on_small_pages
    def fit(self, X: Any, y: Any, unlabeled: Any = None) -> IOKLSemiSupervisedClassifier:
        """Fit on all samples, labelled and unlabelled.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels (see ``kernels``)
        y : array-like of shape (n_samples,)
            Class labels of the labelled samples (two classes); -1 marks the unlabelled ones (scikit-learn's
            semi-supervised convention) unless ``unlabeled`` is given.
        unlabeled : array-like of bool of shape (n_samples,), optional
            Marks the unlabelled samples when -1 is one of the classes.

        Returns
        -------
        self
        """
        with self._cutting_plane_context():
            self._require_y(y)
            inputs = self._inputs(X)
            y = check_class_labels(column_or_1d(y, warn=True))  # a column vector warns, as scikit-learn's
            n = inputs.n_rows
            if y.shape != (n,):
                raise ValueError(f"X has {n} samples but y has {len(y)} labels")
            if n < 2:
                raise ValueError(f"{n} sample: semi-supervised learning needs labelled samples of both classes")
            if unlabeled is None:
                mask = y == -1
            else:
                mask = np.asarray(unlabeled, dtype=bool)
                if mask.shape != y.shape:
                    raise ValueError(f"unlabeled must be a boolean mask of shape {y.shape}; got {mask.shape}")
            if mask.all():
                raise ValueError("all samples are unlabelled: semi-supervised learning needs labelled samples of "
                                 "both classes (for no labels at all use IOKLClustering)")
            target = type_of_target(y[~mask], input_name="y")
            if target == "continuous":
                raise ValueError(f"Unknown label type: continuous. {type(self).__name__} classifies two classes; "
                                 f"y holds continuous values")
            if target == "multiclass" and len(np.unique(y[~mask])) > 2:
                raise ValueError(f"Only binary classification is supported. The type of the target is {target} "
                                 f"(classes {[shown(c) for c in np.unique(y[~mask])]}).")
            classes = np.unique(y[~mask])
            if len(classes) != 2:
                hint = (" If your classes are -1 and +1, pass unlabeled=<boolean mask> so that -1 is read as a "
                        "class." if unlabeled is None and np.any(mask) else "")
                raise ValueError(f"the labelled samples must hold exactly two classes; got "
                                 f"{[shown(c) for c in classes]}.{hint}")
            self.classes_ = classes
            lab = np.flatnonzero(~mask)
            free = np.flatnonzero(mask)
            yl = np.where(y[lab] == classes[1], 1.0, -1.0)
            frac = labelled_ratio(yl, len(free)) if self.positive_fraction is None else float(self.positive_fraction)
            k = int(round(frac * len(free)))
            fixed = np.zeros(n)
            fixed[lab] = yl
            cset = LabelSet(n, fixed, [free] if len(free) else [], [k] if len(free) else [],
                            [k] if len(free) else [])
            # Algorithm 3's h^1 (unspecified in the thesis): an SVM on the labelled part, balanced by sorting.
            start = cset.from_scores(_svm_scores(inputs, lab, yl, float(self.C_labeled)))
            C = np.where(mask, self.C_unlabeled, self.C_labeled).astype(np.float64)
            self._run(inputs, cset, C, start)
            f = self._training_scores(inputs)
            self.transduction_ = y.copy() if unlabeled is not None else y.astype(classes.dtype)
            self.transduction_[free] = classes[(f[free] > 0).astype(int)]
        return self

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # a binary transductive SVM
        return tags

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy of :meth:`predict` on the labelled samples of ``y`` (those not marked -1)."""
        y = check_class_labels(y)
        known = y != -1
        return float(accuracy_score(y[known], self.predict(X)[known],
                                    sample_weight=None if sample_weight is None else np.asarray(sample_weight)[known]))

    def decision_function(self, X: Any) -> np.ndarray:
        """``f(x)``: positive for ``classes_[1]``."""
        return self._scores(X)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels: ``classes_[1]`` where ``f(x) > 0``."""
        self._check_fitted()
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


_ONE_CLASS_CAUSE = {
    "instance": "at the instance level the label search (4.11) adds labellings of the positive bags' instances that "
                "agree with the negative class (they enlarge ||sum_i alpha_i y_i phi(x_i)||, the quantity it "
                "maximises), and the mixture of these candidate groups scores every instance below the bias (musk1: "
                "every bag negative for portion 0, 0.3 and 0.5). Use round_keys=True (one labelling, from the "
                "relaxed scores) or level='bag' (key instances)",
    "instance_rounded": "the SVM of the rounded instance labels (in each positive bag the instances that the relaxed "
                        "classifier scores above every instance of a negative bag, at least max(1, ceil(portion |B|)) "
                        "of them) scores every training bag on one side; try a larger C or portion, or level='bag'",
    "bag": "the key-instance relaxation found no positive margin on the training bags; check the bag labels and "
           "try a larger C",
}


def _bag_lists(bags: Any, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Bags as index arrays, from a bag-id vector of length ``n`` or a sequence of index arrays."""
    if isinstance(bags, list | tuple) and len(bags) and all(np.ndim(b) == 1 for b in bags) and not np.isscalar(
            bags[0]):
        lists = [np.asarray(b, dtype=np.intp) for b in bags]
        for i, b in enumerate(lists):
            if len(b) == 0:
                raise ValueError(f"bag {i} has no instances: every bag needs at least one instance")
        allidx = np.concatenate(lists)
        if allidx.min() < 0 or allidx.max() >= n or len(np.unique(allidx)) != len(allidx):
            raise ValueError(f"bags must be disjoint index arrays into the {n} instances")
        return lists, np.arange(len(lists))
    ids = np.asarray(bags)
    if ids.shape != (n,):
        raise ValueError(f"bags must be a bag id per instance, shape ({n},), or a list of index arrays; got "
                         f"shape {ids.shape}")
    uniq, inverse = np.unique(ids, return_inverse=True)
    return [np.flatnonzero(inverse == b) for b in range(len(uniq))], uniq


def bag_labels(y: Any, bags: Any, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The bags as index arrays and one label per bag, from labels per instance (constant within each bag) or
    per bag; ``ValueError`` naming what is wrong."""
    lists, _ = _bag_lists(bags, n)
    y = check_class_labels(y)
    if y.shape == (n,):
        per_bag = [np.unique(y[b]) for b in lists]
        mixed = next((i for i, v in enumerate(per_bag) if len(v) != 1), None)
        if mixed is not None:
            raise ValueError(f"y given per instance must be constant within each bag (the bag's label); bag {mixed} "
                             f"has labels {[shown(v) for v in per_bag[mixed]]}")
        return lists, np.array([v[0] for v in per_bag])
    if y.shape == (len(lists),):
        return lists, y
    raise ValueError(f"y must hold one label per instance ({n}) or per bag ({len(lists)}); got {len(y)} labels")


def mil_score(estimator: Any, X: Any, y: Any, bags: Any) -> float:
    """Bag-level accuracy of a multiple-instance classifier's ``predict(X, bags)``."""
    predicted = estimator.predict(X, bags)
    _, yb = bag_labels(y, bags, len(np.asarray(bags)) if not isinstance(bags, list | tuple) else
                       sum(len(b) for b in bags))
    return float(accuracy_score(yb, predicted))


class IOKLMultipleInstanceClassifier(ClassifierMixin, _IOKLBase):
    __doc__ = f"""Multiple-instance IOKL: bag level (input ambiguity, KI-SVM) or instance level (MIL-CPB).

    Parameters
    ----------
    level : {{"bag", "instance"}}, default="bag"
        ``"bag"``: each positive bag is represented by a key instance (the candidates choose it), the
        instances of negative bags are negative samples; ``"instance"``: the labels of the instances of
        positive bags are the candidates, at least ``max(1, ceil(portion |B|))`` positive per positive bag.
    C : float, default=10
        Square hinge cost.
    portion : float, default=0
        The general MIL constraint's portion (instance level only).
    bag_cost : {{"bag", "unit"}} or None, default=None
        How ``C`` is spread over the training units; ``None``: ``"bag"`` at the bag level, ``"unit"`` at the
        instance level (see below).  ``"bag"``: every bag costs ``C`` in all, shared equally by
        its units (``C / |B|`` per instance of a negative bag, and at the instance level per instance of every
        bag), so that each bag counts once, as in MI-SVM's one slack per negative bag; ``"unit"``: every unit
        costs ``C`` (a positive bag's key at the bag level, and each instance of a negative bag), so a bag of
        many instances outweighs a bag of few.  On musk2, whose negative bags hold 5581 of its 6598 instances,
        ``"unit"`` gives the negative class almost all the loss and IOKL-SM 78.2 % against 85.4 % with
        ``"bag"`` (docs/experiments/iokl/README.md).  The instance level (MIL-CPB) is an SVM over the instances
        with one cost per instance, and ``"bag"`` there also shrinks the cost of the instances of a large
        positive bag that its rounding labels positive: on musk1 the rounded SVM then no longer separated every
        training fold, and scored 73.8 % against 83.6 % with ``"unit"``, its default.
    round_keys : bool, default=True
        Round the relaxation.  After the cutting plane, the bag level fixes each positive training bag's key
        instance at the instance where the relaxed classifier ``f`` is largest; the instance level labels
        positive the instances of a positive bag that ``f`` scores above every instance of a negative bag, at
        least ``max(1, ceil(portion |B|))`` of them (those where ``f`` is largest): a rule of the relaxed
        ranking alone, not of its bias (see Notes).  The MKL problem is then solved again with that single
        candidate group (warm-started); the final classifier is that solve's.  ``False`` keeps the relaxed
        classifier, a mixture of candidate groups, which at the instance level scores every bag negative on
        musk1 (see Notes).
    {_COMMON_DOC}
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (n_kernels, n_instances)
        Expansion coefficients per input kernel of the final classifier; ``intercept_`` its bias.
    weights_ : ndarray of shape (n_groups, n_kernels)
        Its kernel weights.
    result_ : CuttingPlaneResult
        The cutting plane (the relaxation): history, stop reason, candidate groups.
    rounded_ : CuttingPlaneResult or None
        With ``round_keys``: the solve over the rounded candidate (at the bag level its key instances are
        ``keys_``, one training instance index per positive bag).

    Notes
    -----
    ``fit(X, y, bags)``: ``X`` holds the instances; ``bags`` a bag id per instance (or a list of index arrays);
    ``y`` the bag labels, either one per instance (constant within a bag, as in the MIL CSV files) or one per
    bag (in the order of ``np.unique(bags)``).  A bag is positive when its largest instance score is, the
    MIL rule.  At the bag level a candidate group chooses one key instance per positive bag for all its
    input kernels (a key per kernel would score a training bag at several instances at once, which no
    prediction can reproduce); at the instance level each input kernel has its own labels, as in the thesis.

    Why the bag level rounds (``round_keys``).  The relaxation mixes candidate groups, and each group scores
    a positive training bag at its own key instance: the bag's training score ``sum_t f_t(key_t)`` is
    reached by no single instance, while a negative bag's instances are scored by ``f = sum_t f_t`` itself.
    On elephant the groups added by the cutting plane take outlying instances (whose score is their own
    diagonal term) and central ones; ``f`` was negative at every key instance of every group, so the MIL
    rule ``max_{{x in B}} f(x)`` called every bag negative, and the rule ``sum_t max_{{x in B}} f_t(x)``
    (consistent with the positive bags' training scores) inflated the negative bags (71% against 87-88% in
    the thesis).  With one group the two rules coincide and training and prediction score a bag alike.
    Without rounding a bag is scored ``sum_t max_{{x in B}} f_t(x) + b``.

    Why the instance level rounds too, and by the ranking.  Its label search adds the labellings of the
    positive bags' instances that agree with the fixed negatives (they enlarge ``||sum_i alpha_i y_i
    phi(x_i)||``, which the search maximises), and the mixture of such groups scores every instance below the
    bias: on musk1 every training instance between -0.17 and -0.13, and every test bag negative (50-53 %, the
    majority class) for portion 0, 0.3 and 0.5.  Its scores still rank the instances of each positive bag, but
    their sign carries nothing: labelling positive where ``f > 0`` left exactly the floor
    ``max(1, ceil(portion |B|))`` positive in every positive bag, so the portion, not the relaxation, chose the
    labelling, and the SVM of one positive per bag (all the other instances of the bag negative) called 10-33 %
    of the test bags positive on 9 of the 10 musk1 folds, against 44-56 % (67.4 % accuracy).  The rounding therefore
    sets the threshold on the instances whose labels the MIL constraint fixes: an instance of a positive bag
    is positive when ``f`` scores it above every instance of a negative bag
    (:meth:`~multikernel.iokl.labels.LabelSet.from_scores_above_negatives`).  That is the labelling
    ``{{f > tau}}`` with the most positives that calls no instance of a negative bag positive; it does not
    change when a constant is added to ``f`` (the relaxed bias is not used), and it needs no parameter.  On
    musk1 it labels 2.4-2.9 instances per positive bag (58-67 % of a bag on average), and the rounded solve
    scored 83.6 % on the 10 folds of ``benchmarks/bench_mil_baselines.py`` at the defaults (84.7 % at
    ``portion=0.5``; mi-SVM 80.4 % on the same folds).  On elephant the instance level stays far below the
    bag level (65.5 % at the defaults, 77.5 % at ``portion=0.5``, against about 85 %): there the ranking rule
    labels only 1.4-1.8 instances per positive bag.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "level": [Options("bag", "instance")], "C": [Real(low=0)],
        "portion": [Real(low=0, high=1, closed="both")], "round_keys": [Boolean()],
        "bag_cost": [Options("unit", "bag"), NoneValue()],
    }

    def __init__(self, kernels: Any = None, level: str = "bag", C: float = 10.0,
                 portion: float = 0.0, round_keys: bool = True, bag_cost: str | None = None, theta: float | None = None,
                 solver: str = DEFAULT_SOLVER, tol: float = 1e-3, max_iter: int = 30, cp_tol: float = 1e-3,
                 enumerate_limit: int = 4096, n_starts: int = N_STARTS, warm_start: bool = False, offset: float = 0.1,
                 random_state: int | np.random.RandomState | None = 0, kernel_params: dict[str, Any] | None = None,
                 normalize: str = "none", standardize: bool = False, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None, verbose: int = 0) -> None:
        self.kernels = kernels
        self.level = level
        self.C = C
        self.portion = portion
        self.round_keys = round_keys
        self.bag_cost = bag_cost
        self.theta = theta
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cp_tol = cp_tol
        self.enumerate_limit = enumerate_limit
        self.n_starts = n_starts
        self.warm_start = warm_start
        self.offset = offset
        self.random_state = random_state
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.verbose = verbose

    @_on_small_pages
    def fit(self, X: Any, y: Any, bags: Any) -> IOKLMultipleInstanceClassifier:
        """Fit on the instances of labelled bags.

        Parameters
        ----------
        X : array-like of shape (n_instances, n_features), or precomputed kernels (see ``kernels``)
        y : array-like of shape (n_instances,) or (n_bags,)
            The bag labels (two classes): one per instance (constant within a bag) or one per bag, in the order
            of ``np.unique(bags)``.
        bags : array-like of shape (n_instances,), or a list of index arrays
            The bag of each instance.

        Returns
        -------
        self
        """
        with self._cutting_plane_context():
            self._require_y(y)
            inputs = self._inputs(X)
            self._fit_bags(inputs, y, bags)
        return self

    def _fit_bags(self, inputs: KernelStack, y: Any, bags: Any) -> None:
        n = inputs.n_rows
        lists, yb = bag_labels(y, bags, n)
        classes = np.unique(yb)
        if len(classes) != 2:
            raise ValueError(f"MIL needs positive and negative bags; got bag labels {[shown(c) for c in classes]}")
        self.classes_ = classes
        sb = np.where(yb == classes[1], 1.0, -1.0)
        inst_label = np.empty(n)
        for b, s in zip(lists, sb, strict=True):
            inst_label[b] = s
        sil = _svm_scores(inputs, np.arange(n), inst_label, float(self.C))  # SIL-SVM starts the loop
        if self.level == "bag":
            cset: CandidateSet = KeyInstanceSet(lists, sb)
        else:
            pos = [b for b, s in zip(lists, sb, strict=True) if s > 0]
            fixed = np.where(inst_label < 0, -1.0, 0.0)
            low = [max(1, math.ceil(float(self.portion) * len(b))) for b in pos]
            cset = LabelSet(n, fixed, pos, low, [len(b) for b in pos])
        start = cset.from_scores(sil)
        C = self._unit_costs(lists, sb, n)
        result = self._run(inputs, cset, C, start)
        self.rounded_ = self.keys_ = None
        if self.round_keys:
            # Round the relaxation (see Notes): at the bag level the key of each positive bag where the relaxed f
            # is largest; at the instance level the labels where f exceeds its value at every instance of a
            # negative bag (the relaxed bias is not to be trusted, its ranking is), within the portion's bounds.
            relaxed = self._training_scores(inputs)
            index, sign = (cset.from_scores_above_negatives(relaxed) if isinstance(cset, LabelSet)
                           else cset.from_scores(relaxed))
            self.rounded_ = result = solve_candidates(inputs, index[None], sign[None], C, theta=self.theta,
                                                      offset=float(self.offset), solver=self.solver,
                                                      tol=self.tol, warm=result.mkl, solved=result)
            if self.level == "bag":
                self.keys_ = index[:cset.n_positive].copy()
            self._set_classifier(result, inputs)
        # Bag level without rounding: group t represents a bag by its own key instance, so a new bag is scored
        # as sum_t max_{x in B} f_t(x) (each group picks the key instance it scores highest, as in training).
        self.group_coef_ = result.coefficients(inputs, per_group=True)
        active = np.flatnonzero(np.abs(self.group_coef_).sum(axis=(1, 2)) > 0)
        self.group_coef_ = self.group_coef_[active]
        if self.level == "instance" or self.round_keys:  # bag score = the best instance's: from f on X itself
            f = self._training_scores(inputs)
            cause = "instance_rounded" if self.level == "instance" and self.round_keys else self.level
            warn_one_class(classes[np.array([f[b].max() > 0 for b in lists]).astype(int)], _ONE_CLASS_CAUSE[cause])

    def _unit_costs(self, lists: list[np.ndarray], sb: np.ndarray, n: int) -> np.ndarray:
        """The square hinge cost of each unit, in the candidate set's unit order (see ``bag_cost``)."""
        C = float(self.C)
        bag_cost = self.bag_cost if self.bag_cost is not None else ("bag" if self.level == "bag" else "unit")
        if self.level == "bag":  # units: one key per positive bag, then the negative bags' instances in bag order
            neg = [np.full(len(b), C / len(b) if bag_cost == "bag" else C)
                   for b, s in zip(lists, sb, strict=True) if s < 0]
            return np.concatenate([np.full(int(np.sum(sb > 0)), C)] + neg)
        costs = np.full(n, C)  # units: the instances
        if bag_cost == "bag":
            for b in lists:
                costs[b] = C / len(b)
        return costs

    def decision_function_instances(self, X: Any) -> np.ndarray:
        """Instance scores ``f(x)``."""
        return self._scores(X)

    def predict_instances(self, X: Any) -> np.ndarray:
        """Instance labels (``classes_[1]`` where ``f(x) > 0``)."""
        self._check_fitted()
        return self.classes_[(self._scores(X) > 0).astype(int)]

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores: the largest instance score of each bag (bags in the order of ``np.unique(bags)``)."""
        self._check_fitted()
        if self.level == "instance":
            f = self._scores(X)
            lists, _ = _bag_lists(bags, len(f))
            return np.array([f[b].max() for b in lists])
        cross = self._cross_stack(X)
        lists, _ = _bag_lists(bags, cross.n_rows)
        F = sum(self.group_coef_[:, m] @ np.asarray(cross.kernel(m)).T for m in range(cross.n_kernels))
        return np.array([F[:, b].max(axis=1).sum() for b in lists]) + self.intercept_

    def predict(self, X: Any, bags: Any) -> np.ndarray:
        """Bag labels, in the order of ``np.unique(bags)`` (or of the given index arrays)."""
        self._check_fitted()
        return self.classes_[(self.decision_function(X, bags) > 0).astype(int)]

    def score(self, X: Any, y: Any, bags: Any, sample_weight: Any = None) -> float:
        """Bag-level accuracy: :meth:`predict`'s bag labels against ``y`` (one label per instance, constant
        within a bag, or one per bag).  With metadata routing, ``cross_val_score(est, X, y, cv=GroupKFold(),
        params={"bags": bags, "groups": bags})`` scores whole bags (after ``set_fit_request(bags=True)`` and
        ``set_score_request(bags=True)``)."""
        return mil_score(self, X, y, bags)


class IOKLClustering(ClusterMixin, _IOKLBase):
    __doc__ = f"""Maximum-margin clustering by IOKL: every label vector is a candidate (spec section 3.9, [EXT]).

    Two clusters, with the class balance ``|sum_i y_i| <= balance * n`` that removes the trivial solutions.

    Parameters
    ----------
    n_clusters : int, default=2
        Only 2: the thesis gives no multi-cluster scheme (spec section 3.9).
    balance : float, default=0.1
        Largest allowed ``|n_+ - n_-| / n``.
    C : float, default=1
        Square hinge cost.
    {_COMMON_DOC}
    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        0 / 1: the candidate set's best agreement with ``f`` (so the balance constraint holds).
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "n_clusters": [Integer(low=1)], "balance": [Real(low=0, high=1, closed="both")], "C": [Real(low=0)],
    }

    def __init__(self, kernels: Any = None, n_clusters: int = 2, balance: float = 0.1,
                 C: float = 1.0, theta: float | None = None, solver: str = DEFAULT_SOLVER, tol: float = 1e-3,
                 max_iter: int = 30, cp_tol: float = 1e-3, enumerate_limit: int = 4096, n_starts: int = N_STARTS,
                 warm_start: bool = False, offset: float = 0.1, random_state: int | np.random.RandomState | None = 0,
                 kernel_params: dict[str, Any] | None = None,
                 normalize: str = "none", standardize: bool = False, kernel_dtype: str = "float64",
                 kernel_backend: str = "dense", memory_budget: int | str | None = None, verbose: int = 0) -> None:
        self.kernels = kernels
        self.n_clusters = n_clusters
        self.balance = balance
        self.C = C
        self.theta = theta
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cp_tol = cp_tol
        self.enumerate_limit = enumerate_limit
        self.n_starts = n_starts
        self.warm_start = warm_start
        self.offset = offset
        self.random_state = random_state
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.verbose = verbose

    def _check_params(self) -> None:
        super()._check_params()
        if self.n_clusters != 2:
            raise ValueError(f"n_clusters={self.n_clusters!r}: IOKL clustering splits into two clusters (the "
                             f"thesis gives no multi-cluster scheme); apply it recursively for more")

    @_on_small_pages
    def fit(self, X: Any, y: Any = None) -> IOKLClustering:
        """Cluster the samples of ``X`` in two.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels (see ``kernels``)
        y : ignored

        Returns
        -------
        self
        """
        with self._cutting_plane_context():
            inputs = self._inputs(X)
            self._cluster(inputs)
        return self

    def _cluster(self, inputs: KernelStack) -> None:
        n = inputs.n_rows
        if n < 2:
            raise ValueError(f"{n} sample: clustering needs at least two")
        # n_+ - n_- = 2 n_+ - n in [-balance n, balance n]
        low = math.ceil((n - self.balance * n) / 2 - 1e-9)
        high = math.floor((n + self.balance * n) / 2 + 1e-9)
        if low > high:
            raise ValueError(f"no labelling of {n} samples satisfies the balance constraint balance="
                             f"{self.balance!r}; use a larger balance (at least 1/n for odd n)")
        cset = LabelSet(n, np.zeros(n), [np.arange(n)], [low], [high])
        # h^1 (unspecified): the leading kernel principal component of the average kernel, balanced.
        K = np.mean([np.asarray(inputs.kernel(m)) for m in range(inputs.n_kernels)], axis=0)
        H = np.eye(n) - 1.0 / n
        _, vecs = np.linalg.eigh(H @ K @ H)
        start = cset.from_scores(vecs[:, -1] - np.median(vecs[:, -1]))
        self._run(inputs, cset, np.full(n, float(self.C)), start)
        _, sign = cset.from_scores(self._training_scores(inputs))
        self.labels_ = (sign > 0).astype(int)

    def predict(self, X: Any) -> np.ndarray:
        """Cluster of new samples: ``f(x) > 0``."""
        return (self._scores(X) > 0).astype(int)
