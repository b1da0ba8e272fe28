"""scikit-learn estimators of input-output kernel learning: semi-supervised, multiple-instance, clustering.

All three build the input kernels with a :class:`~multikernel.stack.storage.KernelSet` (by default the thesis's four:
Gaussian, Laplacian, inverse square distance and inverse distance with ``gamma = 1 / A``, ``A`` the mean
squared training distance), run the cutting-plane loop (:func:`~multikernel.iokl.cutting_plane.cutting_plane`)
and predict with the thesis's final classifier ``f(x) = sum_m K_m(x, X) beta_m + b``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, ClusterMixin, clone
from sklearn.utils.validation import check_array, check_is_fitted

from multikernel._pages import small_pages
from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.iokl.cutting_plane import DEFAULT_SOLVER, CuttingPlaneResult, cutting_plane, solve_candidates
from multikernel.iokl.labels import CandidateSet, KeyInstanceSet, LabelSet
from multikernel.solve.smo import solve_qp
from multikernel.stack.kernelset import KernelSet
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


class _IOKLBase(BaseEstimator):
    """Shared fitting machinery: kernels, the cutting-plane loop, the decision function."""

    def _kernel_set(self) -> KernelSet:
        builders = default_kernels() if self.kernels is None else [clone(b) for b in self.kernels]
        if not builders or not all(isinstance(b, KernelBuilder) for b in builders):
            raise ValueError("kernels must be a non-empty list of KernelBuilder objects (for example "
                             "multikernel.create('kernel', 'rbf')), or None for the thesis's four kernels")
        return KernelSet(builders)

    def _run(self, inputs: KernelStack, cset: CandidateSet, C: np.ndarray, start: tuple[np.ndarray, np.ndarray]
             ) -> CuttingPlaneResult:
        warm = getattr(self, "result_", None) if self.warm_start else None
        if warm is not None and warm.sign.shape[2] != cset.n_units:
            warm = None
        result = cutting_plane(inputs, cset, C, start, theta=self.theta, offset=self._check_offset(),
                               solver=self.solver, tol=self.tol, max_iter=self.max_iter, cp_tol=self.cp_tol,
                               enumerate_limit=self.enumerate_limit, warm=warm)
        self.result_ = result
        self.n_iter_ = result.n_iter
        self.stop_reason_ = result.stop_reason
        self._set_classifier(result, inputs)
        return result

    def _set_classifier(self, result: CuttingPlaneResult, inputs: KernelStack) -> None:
        """The final classifier's attributes, from the solve that defines it."""
        self.coef_ = result.coefficients(inputs)
        self.intercept_ = result.bias(self.offset)
        self.dual_gap_ = result.mkl.dual_gap
        self.objective_ = result.mkl.objective
        self.weights_ = result.weights.reshape(-1, inputs.n_kernels)

    def _check_offset(self) -> float:
        if not (isinstance(self.offset, int | float) and self.offset >= 0 and math.isfinite(self.offset)):
            raise ValueError(f"offset must be a non-negative finite number; got {self.offset!r}")
        return float(self.offset)

    def _training_scores(self, inputs: KernelStack) -> np.ndarray:
        return sum(np.asarray(inputs.kernel(m)) @ self.coef_[m] for m in range(inputs.n_kernels)) + self.intercept_

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        cross = self.kernel_set_.cross_stack(check_array(X))
        return sum(np.asarray(cross.kernel(m)) @ self.coef_[m] for m in range(cross.n_kernels)) + self.intercept_


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
    kernels : list of KernelBuilder, optional
        The input kernels; ``None`` for the thesis's four (Gaussian, Laplacian, ISD, ID with ``gamma = 1/A``).
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
    warm_start : bool, default=False
        Continue from the previous fit's candidates, weights and ``alpha`` (same training data).
    offset : float, default=0.1
        The bias, absorbed as a constant feature: ``offset`` is added to every input kernel.  The thesis
        adds 1 (footnote 1 of chapter 4); with unit-diagonal kernels and no ``alpha'y = 0`` constraint that
        constant dominates the label search (it favours candidates with one sign), so the default is 0.1.
"""


class IOKLSemiSupervisedClassifier(ClassifierMixin, _IOKLBase):
    __doc__ = f"""Semi-supervised IOKL (transductive SVM through input-output kernels, spec section 3.5).

    Parameters
    ----------
    C_labeled, C_unlabeled : float, default=100, 1
        Square hinge costs of the labelled and unlabelled samples (the thesis uses 100 and 0.1 or 1).
    positive_fraction : float, optional
        The balance constraint: the fraction of positives (the second class of ``classes_``) among the
        unlabelled samples; default the labelled ratio.
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

    def __init__(self, kernels: Sequence[KernelBuilder] | None = None, C_labeled: float = 100.0,
                 C_unlabeled: float = 1.0, positive_fraction: float | None = None, theta: float | None = None,
                 solver: str = DEFAULT_SOLVER, tol: float = 1e-3, max_iter: int = 30, cp_tol: float = 1e-3,
                 enumerate_limit: int = 4096, warm_start: bool = False, offset: float = 0.1) -> None:
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
        self.warm_start = warm_start
        self.offset = offset

    @_on_small_pages
    def fit(self, X: Any, y: Any, unlabeled: Any = None) -> IOKLSemiSupervisedClassifier:
        """Fit on all samples; ``y == -1`` (or the ``unlabeled`` mask) marks the unlabelled ones."""
        X = check_array(X)
        y = np.asarray(y)
        if y.shape != (len(X),):
            raise ValueError(f"y must have shape ({len(X)},); got {y.shape}")
        if unlabeled is None:
            mask = y == -1
        else:
            mask = np.asarray(unlabeled, dtype=bool)
            if mask.shape != y.shape:
                raise ValueError(f"unlabeled must be a boolean mask of shape {y.shape}; got {mask.shape}")
        if mask.all():
            raise ValueError("all samples are unlabelled: semi-supervised learning needs labelled samples of both "
                             "classes (for no labels at all use IOKLClustering)")
        classes = np.unique(y[~mask])
        if len(classes) != 2:
            hint = (" If your classes are -1 and +1, pass unlabeled=<boolean mask> so that -1 is read as a class."
                    if unlabeled is None and np.any(mask) else "")
            raise ValueError(f"the labelled samples must hold exactly two classes; got {classes.tolist()}.{hint}")
        for name in ("C_labeled", "C_unlabeled"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a positive finite number; got {value!r}")
        self.classes_ = classes
        lab = np.flatnonzero(~mask)
        free = np.flatnonzero(mask)
        yl = np.where(y[lab] == classes[1], 1.0, -1.0)
        frac = float(np.mean(yl > 0)) if self.positive_fraction is None else float(self.positive_fraction)
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"positive_fraction must lie in [0, 1]; got {self.positive_fraction!r}")
        k = int(round(frac * len(free)))
        fixed = np.zeros(len(X))
        fixed[lab] = yl
        cset = LabelSet(len(X), fixed, [free] if len(free) else [], [k] if len(free) else [],
                        [k] if len(free) else [])
        self.kernel_set_ = self._kernel_set()
        inputs = self.kernel_set_.fit_stack(X)
        # Algorithm 3's h^1 (unspecified in the thesis): an SVM on the labelled part, balanced by sorting.
        start = cset.from_scores(_svm_scores(inputs, lab, yl, self.C_labeled))
        C = np.where(mask, self.C_unlabeled, self.C_labeled).astype(np.float64)
        self._run(inputs, cset, C, start)
        f = self._training_scores(inputs)
        self.transduction_ = y.copy() if unlabeled is not None else y.astype(classes.dtype)
        self.transduction_[free] = classes[(f[free] > 0).astype(int)]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """``f(x)``: positive for ``classes_[1]``."""
        return self._scores(X)

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


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
    round_keys : bool, default=True
        Bag level only: round the relaxation.  After the cutting plane, each positive training bag's key
        instance is fixed at the instance where the relaxed classifier ``f`` is largest, and the MKL problem
        is solved again with that single candidate group (warm-started); the final classifier is that
        solve's.  ``False`` keeps the relaxed classifier, a mixture of candidate groups.
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
        Bag level with ``round_keys``: the solve over the rounded key instances (``keys_``, one training
        instance index per positive bag).

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
    """

    def __init__(self, kernels: Sequence[KernelBuilder] | None = None, level: str = "bag", C: float = 10.0,
                 portion: float = 0.0, round_keys: bool = True, theta: float | None = None,
                 solver: str = DEFAULT_SOLVER, tol: float = 1e-3, max_iter: int = 30, cp_tol: float = 1e-3,
                 enumerate_limit: int = 4096, warm_start: bool = False, offset: float = 0.1) -> None:
        self.kernels = kernels
        self.level = level
        self.C = C
        self.portion = portion
        self.round_keys = round_keys
        self.theta = theta
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.cp_tol = cp_tol
        self.enumerate_limit = enumerate_limit
        self.warm_start = warm_start
        self.offset = offset

    @_on_small_pages
    def fit(self, X: Any, y: Any, bags: Any) -> IOKLMultipleInstanceClassifier:
        X = check_array(X)
        lists, _ = _bag_lists(bags, len(X))
        y = np.asarray(y)
        if y.shape == (len(X),):
            per_bag = [np.unique(y[b]) for b in lists]
            if any(len(v) != 1 for v in per_bag):
                raise ValueError("y given per instance must be constant within each bag (the bag's label)")
            yb = np.array([v[0] for v in per_bag])
        elif y.shape == (len(lists),):
            yb = y
        else:
            raise ValueError(f"y must hold one label per instance ({len(X)}) or per bag ({len(lists)}); got "
                             f"shape {y.shape}")
        classes = np.unique(yb)
        if len(classes) != 2:
            raise ValueError(f"MIL needs positive and negative bags; got bag labels {classes.tolist()}")
        if self.level not in ("bag", "instance"):
            raise ValueError(f"level must be 'bag' or 'instance'; got {self.level!r}")
        if not (isinstance(self.C, int | float) and self.C > 0 and math.isfinite(self.C)):
            raise ValueError(f"C must be a positive finite number; got {self.C!r}")
        if not 0.0 <= float(self.portion) <= 1.0:
            raise ValueError(f"portion must lie in [0, 1]; got {self.portion!r}")
        self.classes_ = classes
        sb = np.where(yb == classes[1], 1.0, -1.0)
        inst_label = np.empty(len(X))
        for b, s in zip(lists, sb, strict=True):
            inst_label[b] = s
        self.kernel_set_ = self._kernel_set()
        inputs = self.kernel_set_.fit_stack(X)
        sil = _svm_scores(inputs, np.arange(len(X)), inst_label, self.C)  # SIL-SVM starts the loop
        if self.level == "bag":
            cset: CandidateSet = KeyInstanceSet(lists, sb)
        else:
            pos = [b for b, s in zip(lists, sb, strict=True) if s > 0]
            fixed = np.where(inst_label < 0, -1.0, 0.0)
            low = [max(1, math.ceil(float(self.portion) * len(b))) for b in pos]
            cset = LabelSet(len(X), fixed, pos, low, [len(b) for b in pos])
        start = cset.from_scores(sil)
        C = np.full(cset.n_units, float(self.C))
        result = self._run(inputs, cset, C, start)
        self.rounded_ = self.keys_ = None
        if self.level == "bag" and self.round_keys:
            # Round the relaxation (see Notes): the key of each positive bag where the relaxed f is largest.
            index, sign = cset.from_scores(self._training_scores(inputs))
            self.rounded_ = result = solve_candidates(inputs, index[None], sign[None], C, theta=self.theta,
                                                      offset=self._check_offset(), solver=self.solver,
                                                      tol=self.tol, warm=result.mkl, solved=result)
            self.keys_ = index[:cset.n_positive].copy()
            self._set_classifier(result, inputs)
        # Bag level without rounding: group t represents a bag by its own key instance, so a new bag is scored
        # as sum_t max_{x in B} f_t(x) (each group picks the key instance it scores highest, as in training).
        self.group_coef_ = result.coefficients(inputs, per_group=True)
        active = np.flatnonzero(np.abs(self.group_coef_).sum(axis=(1, 2)) > 0)
        self.group_coef_ = self.group_coef_[active]
        return self

    def decision_function_instances(self, X: Any) -> np.ndarray:
        """Instance scores ``f(x)``."""
        return self._scores(X)

    def predict_instances(self, X: Any) -> np.ndarray:
        """Instance labels (``classes_[1]`` where ``f(x) > 0``)."""
        return self.classes_[(self._scores(X) > 0).astype(int)]

    def decision_function(self, X: Any, bags: Any) -> np.ndarray:
        """Bag scores: the largest instance score of each bag (bags in the order of ``np.unique(bags)``)."""
        X = check_array(X)
        lists, _ = _bag_lists(bags, len(X))
        if self.level == "instance":
            f = self._scores(X)
            return np.array([f[b].max() for b in lists])
        check_is_fitted(self, "group_coef_")
        cross = self.kernel_set_.cross_stack(X)
        F = sum(self.group_coef_[:, m] @ np.asarray(cross.kernel(m)).T for m in range(cross.n_kernels))
        return np.array([F[:, b].max(axis=1).sum() for b in lists]) + self.intercept_

    def predict(self, X: Any, bags: Any) -> np.ndarray:
        """Bag labels, in the order of ``np.unique(bags)`` (or of the given index arrays)."""
        return self.classes_[(self.decision_function(X, bags) > 0).astype(int)]


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

    def __init__(self, kernels: Sequence[KernelBuilder] | None = None, n_clusters: int = 2, balance: float = 0.1,
                 C: float = 1.0, theta: float | None = None, solver: str = DEFAULT_SOLVER, tol: float = 1e-3,
                 max_iter: int = 30, cp_tol: float = 1e-3, enumerate_limit: int = 4096,
                 warm_start: bool = False, offset: float = 0.1) -> None:
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
        self.warm_start = warm_start
        self.offset = offset

    @_on_small_pages
    def fit(self, X: Any, y: Any = None) -> IOKLClustering:
        X = check_array(X, ensure_min_samples=2)
        if self.n_clusters != 2:
            raise ValueError(f"n_clusters={self.n_clusters!r}: IOKL clustering splits into two clusters (the "
                             f"thesis gives no multi-cluster scheme); apply it recursively for more")
        if not 0.0 <= float(self.balance) <= 1.0:
            raise ValueError(f"balance must lie in [0, 1]; got {self.balance!r}")
        if not (isinstance(self.C, int | float) and self.C > 0 and math.isfinite(self.C)):
            raise ValueError(f"C must be a positive finite number; got {self.C!r}")
        n = len(X)
        # n_+ - n_- = 2 n_+ - n in [-balance n, balance n]
        low = math.ceil((n - self.balance * n) / 2 - 1e-9)
        high = math.floor((n + self.balance * n) / 2 + 1e-9)
        if low > high:
            raise ValueError(f"no labelling of {n} samples satisfies the balance constraint balance="
                             f"{self.balance!r}; use a larger balance (at least 1/n for odd n)")
        cset = LabelSet(n, np.zeros(n), [np.arange(n)], [low], [high])
        self.kernel_set_ = self._kernel_set()
        inputs = self.kernel_set_.fit_stack(X)
        # h^1 (unspecified): the leading kernel principal component of the average kernel, balanced.
        K = np.mean([np.asarray(inputs.kernel(m)) for m in range(inputs.n_kernels)], axis=0)
        H = np.eye(n) - 1.0 / n
        _, vecs = np.linalg.eigh(H @ K @ H)
        start = cset.from_scores(vecs[:, -1] - np.median(vecs[:, -1]))
        self._run(inputs, cset, np.full(n, float(self.C)), start)
        _, sign = cset.from_scores(self._training_scores(inputs))
        self.labels_ = (sign > 0).astype(int)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Cluster of new samples: ``f(x) > 0``."""
        return (self._scores(X) > 0).astype(int)
