"""The scikit-learn estimator of multi-label ranking: :class:`MultiLabelRanker` (MLR-L1, MLR-GL, MK-MLR)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.linear_model import LinearRegression

from multikernel.core.interfaces import Component, MKLProblem
from multikernel.core.registry import get_registry
from multikernel.core.validation import Constraint, Integer, NoneValue, Options, Plugin, RandomState, Real
from multikernel.estimators.base import FittedSpec, MultikernelEstimator
from multikernel.estimators.kernel_input import KERNEL_INPUT_FITTED, KernelInputMixin, check_loaded_kernel_input
from multikernel.ranking.inner import RankingInner
from multikernel.ranking.labels import check_label_matrix, signed_labels
from multikernel.ranking.metrics import known_ranking_loss
from multikernel.ranking.solver import pairless_samples, solve_mlr
from multikernel.solve.outer import INNER_TOL_FLOOR
from multikernel.solve.smo import KernelColumns
from multikernel.stack.storage import DenseStack, KernelStack

__all__ = ["MultiLabelRanker", "KernelRankerMixin", "RankerMixin", "learn_thresholds"]

METHODS = ("mlr_l1", "mlr_gl")
THRESHOLD_RULES = ("linear", "constant")
#: Bytes of combined-kernel rows formed at a time by :func:`_combined_product`.
_PRODUCT_BLOCK_BYTES = 32 * 2**20


def _combined_product(stack: KernelStack, weights: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """``(sum_m weights[m] K_m) @ coef`` by blocks of rows: no ``n_rows x n_cols`` combined kernel is formed.

    The memory is one block of combined rows (``_PRODUCT_BLOCK_BYTES``), whatever the stack's backend (a dense
    stack's rows are views, a lazy stack computes them); used for MK-MLR's training scores and for prediction.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n_rows, n_cols = stack.n_rows, stack.n_cols
    step = max(1, min(n_rows, _PRODUCT_BLOCK_BYTES // (8 * max(n_cols, 1))))
    cols = np.arange(n_cols)
    out = np.empty((n_rows, coef.shape[1]), dtype=np.float64)
    for start in range(0, n_rows, step):
        rows = np.arange(start, min(start + step, n_rows))
        out[rows] = stack.subset(rows, cols).combine(weights) @ coef
    return out


# --------------------------------------------------------------------------------------------------
# thresholds
# --------------------------------------------------------------------------------------------------
def _best_split(scores: np.ndarray, relevant: np.ndarray) -> float:
    """The threshold with fewest mistakes on one sample's observed labels (the widest gap among ties)."""
    order = np.argsort(-scores, kind="mergesort")
    s, r = scores[order], relevant[order]
    # predicting the top j labels relevant (j = 0..len): mistakes = irrelevant in the top + relevant below
    mistakes = np.r_[0, np.cumsum(~r)] + (r.sum() - np.r_[0, np.cumsum(r)])
    upper = np.r_[s[0] + 1.0, s]          # score above the split (one margin unit beyond the ends)
    lower = np.r_[s, s[-1] - 1.0]         # score below the split
    best = np.flatnonzero(mistakes == mistakes.min())
    j = best[np.argmax(upper[best] - lower[best])]
    return 0.5 * (upper[j] + lower[j])


def learn_thresholds(scores: np.ndarray, Ysign: np.ndarray, rule: str | float = "linear") -> dict[str, Any]:
    """Learn the rule that turns label scores into a label set, from training scores and labels.

    ``"linear"`` (Elisseeff and Weston, 2001, as in RankSVM): each training sample with a relevant and an
    irrelevant observed label gets the threshold that makes the fewest mistakes on its labels (the midpoint of
    the widest such gap), and a least-squares linear function of the score vector predicts it:
    ``t(x) = w' f(x) + b``.  With fewer such samples than labels + 2 it falls back to ``"constant"``.
    ``"constant"``: the single threshold with the fewest mistakes over all observed training labels.  A number:
    that fixed threshold.  Returns the fitted parameters ``{"rule", "coef", "intercept"}``.
    """
    if not isinstance(rule, str):
        return {"rule": "fixed", "coef": np.zeros(scores.shape[1]), "intercept": float(rule)}
    usable = ~pairless_samples(Ysign)
    if rule == "linear" and usable.sum() >= scores.shape[1] + 2:
        targets = np.array([_best_split(scores[i][Ysign[i] != 0], Ysign[i][Ysign[i] != 0] > 0)
                            for i in np.flatnonzero(usable)])
        reg = LinearRegression().fit(scores[usable], targets)
        return {"rule": "linear", "coef": reg.coef_, "intercept": float(reg.intercept_)}
    observed = Ysign != 0
    t = _best_split(scores[observed], Ysign[observed] > 0) if observed.any() else 0.0
    return {"rule": "constant", "coef": np.zeros(scores.shape[1]), "intercept": float(t)}


# --------------------------------------------------------------------------------------------------
# what every ranker shares: kernels, score, tags
# --------------------------------------------------------------------------------------------------
class RankerMixin:
    """``score`` and tags of a multi-label ranker: ``fit(X, Y)`` with ``Y`` a 0/1 matrix (``NaN`` unknown) and
    ``decision_function(X)`` one score per label."""

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """One minus the label ranking loss of :meth:`decision_function` over the known labels of ``y``.

        The ranking loss is scikit-learn's ``label_ranking_loss`` restricted to the known entries
        (:func:`~multikernel.ranking.metrics.known_ranking_loss`): per sample, the fraction of its (relevant,
        irrelevant) label pairs that the scores do not order correctly; ``NaN`` labels enter no pair.  Higher is
        better (1 = every pair ordered), so ``GridSearchCV`` and ``cross_val_score`` select by ranking quality,
        not by exact label-set matches.

        Parameters
        ----------
        X : array-like
            Samples (or precomputed test kernels), as for :meth:`decision_function`.
        y : array-like of shape (n_samples, n_labels)
            1 relevant, 0 irrelevant, ``NaN`` unknown.
        sample_weight : None
            Not supported (a ``ValueError`` if given).

        Returns
        -------
        float
        """
        if sample_weight is not None:
            raise ValueError(f"{type(self).__name__}.score does not support sample_weight")
        return 1.0 - known_ranking_loss(y, self.decision_function(X))

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        tags.target_tags.required = True
        return tags


class KernelRankerMixin(RankerMixin, KernelInputMixin):
    """Kernels from features or precomputed for rankers, exactly as :class:`~multikernel.MKLClassifier` takes them
    (:class:`~multikernel.estimators.kernel_input.KernelInputMixin`: same layouts, checks and messages), plus
    the rankers' score and tags."""


# --------------------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------------------
class MultiLabelRanker(KernelRankerMixin, ClassifierMixin, MultikernelEstimator):
    """Multi-label ranking with one or several kernels: MLR-L1, MLR-GL and MK-MLR (Bucak's thesis, ch. 4-6).

    Learns one score function per label, ``f_k(x) = sum_i coef_[i, k] k(x_i, x)``, so that each sample's relevant
    labels score above its irrelevant ones (a max-margin ranking loss over (relevant, irrelevant) label pairs),
    and a threshold rule that turns the scores into label sets.

    Parameters
    ----------
    method : {"mlr_l1", "mlr_gl"}, default="mlr_l1"
        ``"mlr_l1"``: the thesis's MLR-L1 (ch. 4), the l1 pairwise ranking loss in its balanced dual form.
        ``"mlr_gl"``: MLR-GL (ch. 5), a group-lasso aggregation of each sample's ranking errors that tolerates
        relevant labels missing from the training labels (unmarked: ``0``), with its approximation ``eta``.
    C : float, default=1.0
        Weight of the ranking loss (box bound of the dual variables).
    eta : float, optional
        MLR-GL's approximation parameter (>= 1; the thesis chooses it by cross-validation); default: half the
        largest number of known labels of a sample, the smallest value that keeps the problem concave.
    kernels : str or list of KernelBuilder, default="rbf"
        A registered kernel name (``"rbf"``, ``"linear"``, ...: one kernel with ``kernel_params``), a registered
        kernel family (``"rbf_poly"``, ...: several kernels), a list of unfitted kernel builders, or
        ``"precomputed"`` (``X`` is then a training kernel of shape (n_samples, n_train), or a stack
        (n_samples, n_train, n_kernels) / (n_kernels, n_samples, n_train), as in
        :class:`~multikernel.MKLClassifier`).  The ``"rbf"`` kernel's default bandwidth is relative to the mean
        squared training distance (the thesis's choice).
    kernel_params : dict, optional
        Parameters of the kernel or of the family.
    normalize : {"none", "trace", "unit_diagonal", "center"}, default="trace"
        Normalization of each base kernel, fitted on the training kernel.
    standardize : bool, default=False
        Standardize each feature before building the kernels.
    regularizer : str or Regularizer, default="simplex"
        With several kernels, how their weights are learnt: a registered regularizer name or instance (its
        parameters are then nested parameters, ``regularizer__p`` in a grid search).  ``"simplex"`` is MK-MLR
        (ch. 6: sparse weights, l1), ``create("regularizer", "lp_ball", p=2)`` its l_p version, ``"uniform"``
        the average kernel (AVG-MLR, the only choice with ``"mlr_gl"``).  Ignored with one kernel.
    solver : str or Solver, default="level"
        Outer solver of MK-MLR (a registered solver name or instance that accepts the regularizer).
    threshold : {"linear", "constant"} or float, default="linear"
        How :meth:`predict` turns scores into label sets (see :func:`learn_thresholds`); learnt on the training
        samples' leave-one-out scores (each sample's scores without its own coefficients, the quantity the block
        updates use), which are less optimistic than the training scores.
    tol : float, default=1e-3
        Certified relative duality gap at which the fit stops (MLR-L1 and MK-MLR): with one kernel the ranking
        solver is re-run from its solution at a tenfold smaller ``inner_tol`` until its primal-dual gap is
        within ``tol``; with learnt weights it is the outer solver's gap.  MLR-GL's approximated problem has no
        certificate: ``inner_tol`` alone stops it.
    inner_tol : float, default=1e-3
        Tolerance of the ranking solver: the largest KKT violation of a sample's block (MLR-L1, the measure of
        LIBSVM's ``eps``), or the largest change of a dual variable in margin units (MLR-GL); the initial one of
        MK-MLR's inner solves (tightened by the outer loop).
    max_sweeps : int, default=1000
        Maximum passes of the ranking solver over the samples, per solve.
    max_iter : int, default=100
        MK-MLR: maximum outer iterations.
    kernel_dtype : {"float64", "float32"}, default="float64"
    kernel_backend : {"dense", "memmap", "lazy", "auto"}, default="dense"
        Storage of the kernels; with ``"lazy"`` the solver reads rows of the (combined) kernel on demand through
        an LRU cache of ``cache_size`` MB, and no n x n array is formed: for MK-MLR too, whose inner solves read
        the columns of ``sum_m mu_m K_m`` (the stack's column provider) and whose training scores and predictions
        are products by blocks of rows.  A dense or memmap stack is combined into one buffer that the outer
        iterations reuse.
    memory_budget : int or str, optional
    cache_size : float, default=200
        Megabytes of kernel rows cached with a lazy kernel.
    verbose : int, default=0
        ``>= 1`` shows the solver's sweeps (one kernel) or the outer iterations with their certified gap
        (MK-MLR): a progress bar on a terminal, log lines elsewhere.  Ctrl-C ends the fit with the model of the
        last completed sweep (or the best certified outer iterate) and a ``FitInterruptedWarning``.
    random_state : int, RandomState or None, default=0
        Seed of the solver's visiting orders.

    Attributes
    ----------
    coef_ : ndarray of shape (n_train, n_labels)
        Signed coefficients: ``f_k(x) = sum_i coef_[i, k] k(x_i, x)``.
    weights_ : ndarray of shape (n_kernels,)
        Kernel weights.
    classes_ : ndarray of shape (n_labels,)
        The label indices 0..n_labels-1.
    objective_ : float
        The ranking problem's optimal value found: MLR-L1 / MK-MLR the primal objective, MLR-GL the approximated
        dual its iteration maximises.
    dual_gap_ : float
        Certified relative duality gap (MLR-L1 and MK-MLR; ``nan`` for MLR-GL, whose approximation has none).
    threshold_ : dict
        The fitted threshold rule (``rule``, ``coef``, ``intercept``).
    n_iter_ : int
        Solver sweeps (MLR, summed over the re-runs) or outer iterations (MK-MLR).
    pairless_samples_ : ndarray of int
        Training samples without a (relevant, irrelevant) pair of known labels: they do not enter the ranking
        loss (their coefficients are 0).
    kernel_names_ : list of str
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` is a DataFrame with string column names.
    fit_time_ : float
    results_ : MKLResult or None
        MK-MLR's outer result (history included; ``None`` after :meth:`load`).

    Notes
    -----
    ``Y`` is a 0/1 label-indicator matrix (dense or scipy sparse) with ``NaN`` for unknown entries (see
    :mod:`multikernel.ranking.labels` for why ``NaN``): an unknown label is neither relevant nor irrelevant.  A
    sample without a relevant (or without an irrelevant) known label has no pair and is left out of the ranking
    loss (listed in ``pairless_samples_``); a label never relevant in training is learnt as always ranked below
    the relevant labels (the ranking loss is defined for it, unlike a one-vs-rest classifier's).  :meth:`score`
    is one minus the ranking loss over the known labels.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "method": [Options(*METHODS)],
        "C": [Real(low=0)],
        "eta": [Real(low=1, closed="left"), NoneValue()],
        "regularizer": [Plugin("regularizer")],
        "solver": [Plugin("solver")],
        "threshold": [Options(*THRESHOLD_RULES), Real()],
        "tol": [Real(low=0)],
        "inner_tol": [Real(low=0)],
        "max_sweeps": [Integer(low=1)],
        "max_iter": [Integer(low=1)],
        "verbose": [Integer(low=0)],
        "random_state": [RandomState()],
    }
    _fitted_schema: ClassVar[dict[str, FittedSpec]] = {
        **KERNEL_INPUT_FITTED,
        "coef_": FittedSpec("real", (2,)),
        "weights_": FittedSpec("real", (1,)),
        "classes_": FittedSpec("int", (1,)),
        "objective_": FittedSpec("real", (0,)),
        "dual_gap_": FittedSpec("real", (0,)),
        "threshold_": FittedSpec("any"),
        "n_iter_": FittedSpec("int", (0,)),
        "pairless_samples_": FittedSpec("int", (1,)),
    }

    def __init__(
        self,
        method: str = "mlr_l1",
        C: float = 1.0,
        eta: float | None = None,
        kernels: Any = "rbf",
        kernel_params: dict[str, Any] | None = None,
        normalize: str = "trace",
        standardize: bool = False,
        regularizer: str | Component = "simplex",
        solver: str | Component = "level",
        threshold: str | float = "linear",
        tol: float = 1e-3,
        inner_tol: float = 1e-3,
        max_sweeps: int = 1000,
        max_iter: int = 100,
        kernel_dtype: str = "float64",
        kernel_backend: str = "dense",
        memory_budget: int | str | None = None,
        cache_size: float = 200.0,
        verbose: int = 0,
        random_state: int | None = 0,
    ) -> None:
        self.method = method
        self.C = C
        self.eta = eta
        self.kernels = kernels
        self.kernel_params = kernel_params
        self.normalize = normalize
        self.standardize = standardize
        self.regularizer = regularizer
        self.solver = solver
        self.threshold = threshold
        self.tol = tol
        self.inner_tol = inner_tol
        self.max_sweeps = max_sweeps
        self.max_iter = max_iter
        self.kernel_dtype = kernel_dtype
        self.kernel_backend = kernel_backend
        self.memory_budget = memory_budget
        self.cache_size = cache_size
        self.verbose = verbose
        self.random_state = random_state

    def _part(self, kind: str) -> Component:
        value = getattr(self, kind)
        return get_registry().create(kind, value) if isinstance(value, str) else value

    def _seed(self) -> Any:
        # the solver takes an int seed or a numpy Generator; a RandomState instance gives one seed from its stream
        rs = self.random_state
        return int(rs.randint(2**31 - 1)) if isinstance(rs, np.random.RandomState) else rs

    # ------------------------------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, Y: Any) -> MultiLabelRanker:
        """Learn the label score functions and the threshold rule.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or precomputed kernels (see ``kernels``)
        Y : array-like or sparse matrix of shape (n_samples, n_labels)
            1 relevant, 0 irrelevant, ``NaN`` unknown.

        Returns
        -------
        self
        """
        with self._fit_context(total=None, desc=f"{type(self).__name__}: {self.method}") as progress:
            self._require_y(Y)
            stack, _ = self._fit_stack(X)
            Ysign = signed_labels(check_label_matrix(Y, stack.n_rows))
            pairless = pairless_samples(Ysign)
            if pairless.all():
                raise ValueError("no training sample has both a relevant (1) and an irrelevant (0) known label, so "
                                 "there is no label pair to rank; check Y (1 = relevant, 0 = irrelevant, NaN = "
                                 "unknown)")
            self.pairless_samples_ = np.flatnonzero(pairless)
            self.classes_ = np.arange(Ysign.shape[1])
            M = stack.n_kernels
            regularizer = self._part("regularizer")
            learnt = M > 1 and regularizer.domain != "point"
            if learnt and self.method != "mlr_l1":
                raise ValueError(f"learnt kernel weights (MK-MLR) use MLR-L1 (thesis ch. 6); with method="
                                 f"{self.method!r} and {M} kernels use regularizer='uniform' (the average kernel)")
            self.results_ = None
            if learnt:
                self._fit_mkl(stack, Ysign, regularizer, progress)
            else:
                self._fit_single(stack, Ysign, np.full(M, 1.0 / M), progress)
        return self

    def _fit_single(self, stack: KernelStack, Ysign: np.ndarray, weights: np.ndarray, progress: Any) -> None:
        if not isinstance(stack, DenseStack):
            # a lazy stack's own column provider (blocks of columns on demand); a stack without one combines
            K = stack.column_provider(weights)
            if K is None:
                K = stack.combine(weights)
        elif len(weights) == 1:
            K = stack.kernel(0)  # the stored kernel itself (float32 stays float32): no n x n copy
        else:
            K = stack.combine(weights)
        diag = K.diagonal() if isinstance(K, KernelColumns) else np.diagonal(K)
        self.weights_ = weights
        rng = np.random.default_rng(self._seed())
        inner_tol, coef0, sweeps = float(self.inner_tol), None, 0

        def on_sweep(n_sweeps: int, violation: float, snapshot: Callable[[], Any]) -> None:
            # Ctrl-C keeps the coefficients of the last completed sweep (feasible: every block update keeps the
            # constraints), with their objectives and thresholds
            done = sweeps + n_sweeps

            def keep() -> None:
                sol = snapshot()
                self._store_solution(sol.coef, sol.scores, diag, Ysign, done, sol.primal_objective,
                                     sol.dual_objective)

            progress.update(keep=keep, violation=violation)

        while True:
            sol = solve_mlr(K, Ysign, float(self.C), loss=self.method[4:], eta=self.eta, coef0=coef0, tol=inner_tol,
                            max_sweeps=self.max_sweeps, random_state=rng, cache_size=self.cache_size,
                            callback=on_sweep)
            sweeps += sol.n_sweeps
            gap = _relative_gap(sol.primal_objective, sol.dual_objective)
            # MLR-L1's gap certifies the solve; tighten the KKT tolerance until it is within tol
            if self.method != "mlr_l1" or gap <= self.tol or inner_tol <= INNER_TOL_FLOOR:
                break
            inner_tol, coef0 = max(inner_tol * 0.1, INNER_TOL_FLOOR), sol.coef
        self._store_solution(sol.coef, sol.scores, diag, Ysign, sweeps, sol.primal_objective, sol.dual_objective)

    def _store_solution(self, coef: np.ndarray, scores: np.ndarray, diag: np.ndarray, Ysign: np.ndarray,
                        n_iter: int, primal: float, dual: float) -> None:
        self.coef_ = coef
        self.n_iter_ = int(n_iter)
        if self.method == "mlr_l1":
            self.objective_, self.dual_gap_ = float(primal), _relative_gap(primal, dual)
        else:
            self.objective_, self.dual_gap_ = float(dual), float("nan")
        self.threshold_ = learn_thresholds(scores - diag[:, None] * coef, Ysign, self.threshold)

    def _fit_mkl(self, stack: KernelStack, Ysign: np.ndarray, regularizer: Component, progress: Any) -> None:
        # the outer solvers handle Ctrl-C themselves (the best certified iterate, FitInterruptedWarning)
        problem = MKLProblem(stack=stack, y=None, loss=None,
                             inner=RankingInner(Ysign, float(self.C), max_sweeps=self.max_sweeps,
                                                random_state=self._seed()),
                             regularizer=regularizer, tol=self.tol, max_iter=self.max_iter, inner_tol=self.inner_tol,
                             callback=progress.as_callback() if self.verbose else None)
        result = self._part("solver").solve(problem)
        self.results_ = result
        if result.interrupted:
            self.interrupted_ = True
        self.weights_ = np.asarray(result.weights, dtype=np.float64)
        self.coef_ = np.ascontiguousarray(np.asarray(result.coef).T)
        self.n_iter_ = int(result.n_iter)
        self.objective_, self.dual_gap_ = float(result.objective), float(result.dual_gap)
        # leave-one-out training scores, as _fit_single's: without forming the combined kernel (lazy stacks)
        diag = self.weights_ @ stack.diag()
        scores = _combined_product(stack, self.weights_, self.coef_) - diag[:, None] * self.coef_
        self.threshold_ = learn_thresholds(scores, Ysign, self.threshold)

    # ------------------------------------------------------------------------------------------
    # predict
    # ------------------------------------------------------------------------------------------
    def decision_function(self, X: Any) -> np.ndarray:
        """Label scores, shape (n_samples, n_labels): rank a sample's labels by them (higher = more relevant)."""
        self._check_fitted()
        return _combined_product(self._cross_stack(X), self.weights_, self.coef_)

    def predict(self, X: Any) -> np.ndarray:
        """Label sets as a 0/1 indicator matrix: the labels scoring above the learnt threshold (``threshold_``)."""
        scores = self.decision_function(X)
        t = scores @ self.threshold_["coef"] + self.threshold_["intercept"]
        return (scores > t[:, None]).astype(np.int64)

    def _restore_unsaved(self) -> None:
        self.results_ = None

    def _check_loaded(self) -> None:
        check_loaded_kernel_input(self, self.coef_.shape[0])
        n_labels = len(self.classes_)
        if self.coef_.shape[1] != n_labels or len(self.weights_) != len(self.kernel_names_):
            raise ValueError(f"coefficients of shape {self.coef_.shape}, {len(self.weights_)} weights, "
                             f"{n_labels} labels and {len(self.kernel_names_)} kernels do not fit together")
        rule = self.threshold_
        if not (isinstance(rule, dict) and set(rule) == {"rule", "coef", "intercept"}
                and np.shape(rule["coef"]) == (n_labels,) and isinstance(rule["intercept"], numbers.Real)):
            raise ValueError("a threshold rule that is not (rule, coef of one entry per label, intercept)")


def _relative_gap(primal: float, dual: float) -> float:
    return float((primal - dual) / max(abs(primal), 1e-12))
