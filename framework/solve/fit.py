"""The fit core: (kernel stack, targets, parts) -> a fitted model, for every learning task.

Everything that fits an MKL model goes through :func:`fit_mkl`: :class:`~multikernel.MKLClassifier`, the
cross-validation and grid paths of :mod:`multikernel.experiments.model_selection` and the experiment runner.
It owns the four steps that used to be written more than once:

* **target encoding** (:func:`encode_targets`): labels of any type (numbers, strings, objects) or a 0/1
  label-indicator matrix become ``T`` blocks of {-1, +1} targets, with the classes kept for decoding;
* **the parts** (:func:`build_parts`): a method preset with overrides (a registered name, a plugin instance,
  or a ``{name, params}`` config entry) and a grid point's parameters applied, ``C`` being the loss's ``C``;
* **the per-task split** (:func:`fit_mkl`): one outer problem per block (one-vs-rest, each block with its own
  kernel weights) or one outer problem whose ``T`` blocks share the weights and add their objectives (the
  sum form of multi-class and multi-label MKL), warm-started from a previous fit;
* **prediction** (:meth:`FittedMKL.decision_function`, :meth:`FittedMKL.predict`): scores on a cross stack and
  their decoding (sign, argmax, or per-label sign).

The outer solvers never see the task: they work on ``q_m = sum_t c_t' K_m c_t`` through
:class:`~multikernel.core.interfaces.MKLProblem` (see :class:`~multikernel.core.interfaces.InnerProblem`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import column_or_1d

from multikernel.core.capabilities import check_compatible, check_loss_form
from multikernel.core.interfaces import Component, MKLProblem, MKLResult, Regularizer, SampleLoss, Solver
from multikernel.core.registry import get_registry
from multikernel.core.validation import check_class_labels, shown
from multikernel.stack.storage import KernelStack

__all__ = [
    "Targets",
    "encode_targets",
    "Parts",
    "build_parts",
    "UnknownParameterError",
    "SolveSettings",
    "FittedMKL",
    "decision_values",
    "fit_mkl",
]

TASK_KINDS = ("binary", "multiclass", "multilabel", "continuous", "continuous-multioutput", "one_class")
#: The kinds whose blocks are class memberships in {-1, +1} (each block needs both signs).
CLASS_KINDS = ("binary", "multiclass", "multilabel")


# --------------------------------------------------------------------------------------------------
# targets
# --------------------------------------------------------------------------------------------------
@attrs.define
class Targets:
    """Training targets encoded as ``T`` blocks: {-1, +1} class memberships, real targets, or one-class ones.

    Attributes
    ----------
    kind : {"binary", "multiclass", "multilabel", "continuous", "continuous-multioutput", "one_class"}
        scikit-learn's names (:func:`~sklearn.utils.multiclass.type_of_target`) for the classification and
        regression kinds; ``"one_class"`` for novelty detection (no targets).
    classes : ndarray
        The class labels (binary and multi-class, sorted as :class:`~sklearn.preprocessing.LabelEncoder`
        sorts them) or the label indices 0..L-1 (multi-label); the output indices 0..T-1 for regression,
        ``[-1, 1]`` (outlier, inlier) for one class.
    blocks : ndarray of shape (T, n)
        One target vector per block: for classification one {-1, +1} vector for two classes (+1 is
        ``classes[1]``), one per class (one-vs-rest) for more, one per label for a label-indicator matrix;
        one real vector per output for regression; a vector of ones for one class.
    """

    kind: str
    classes: np.ndarray
    blocks: np.ndarray

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def subset(self, rows: np.ndarray) -> Targets:
        """The targets of the samples ``rows`` (a training fold), with the same classes.

        Raises
        ------
        ValueError
            When a block has a single value on these rows (a class or label absent from the fold).
        """
        sub = Targets(self.kind, self.classes, self.blocks[:, rows])
        sub.check_blocks("the training fold")
        return sub

    def check_blocks(self, where: str = "the training data") -> None:
        """Every block needs both signs: a binary problem with one class has no separating surface."""
        if self.kind not in CLASS_KINDS:
            return  # real targets and one-class blocks have no classes to miss
        for t, block in enumerate(self.blocks):
            if not ((block > 0).any() and (block < 0).any()):
                what = (f"label column {t}" if self.kind == "multilabel"
                        else f"class {self.classes[t]!r}" if self.kind == "multiclass" else "one of the two classes")
                value = "1" if (block > 0).all() else "0"
                raise ValueError(
                    f"{what} has a single value in {where} (every sample is {'in' if value == '1' else 'outside'} "
                    f"it), so its one-vs-rest problem is undefined; drop that "
                    f"{'label column' if self.kind == 'multilabel' else 'class'} or use a stratified split")

    def decode(self, scores: np.ndarray) -> np.ndarray:
        """Predictions from decision values of shape (n, T): sign, argmax, a 0/1 indicator matrix, the values
        themselves (regression), or +1 (inlier, a non-negative value) / -1 (outlier) for one class."""
        if self.kind == "continuous":
            return scores[:, 0]
        if self.kind == "continuous-multioutput":
            return scores
        if self.kind == "one_class":
            return np.where(scores[:, 0] >= 0, 1, -1).astype(np.intp)
        if self.kind == "multilabel":
            return (scores > 0).astype(np.int64)
        if self.kind == "binary":
            return self.classes[(scores[:, 0] > 0).astype(int)]
        return self.classes[np.argmax(scores, axis=1)]


    @classmethod
    def one_class(cls, n_samples: int) -> Targets:
        """The targets of one-class learning on ``n_samples`` samples: one block of ones."""
        return cls("one_class", np.array([-1, 1]), np.ones((1, int(n_samples))))


def encode_targets(y: Any, task: str = "classification") -> Targets:
    """Encode targets for :func:`fit_mkl`.

    Parameters
    ----------
    y : array-like of shape (n,) or (n, L)
        For classification, class labels of any type scikit-learn accepts (numbers, strings, objects), or a
        0/1 label-indicator matrix (multi-label, the scikit-learn convention).  For regression, real
        targets: one per sample, or one column per output (each output its own block).
    task : {"classification", "regression"}, default="classification"
        How ``y`` is read (one-class learning has no targets: :meth:`Targets.one_class`).

    Raises
    ------
    ValueError
        For classification: continuous targets, a single class, or an indicator column with a single value.
        For regression: targets that are not finite real numbers, or of more than two dimensions.
    """
    if task == "regression":
        return _continuous_targets(y)
    if task != "classification":
        raise ValueError(f"task must be 'classification' or 'regression'; got {task!r}")
    if not hasattr(y, "toarray"):
        y = np.asarray(y)
        if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1) or y.dtype.kind in "OcU":
            check_class_labels(y)  # mixed types, NaN, complex: before scikit-learn sorts them
    kind = type_of_target(y)
    if kind == "multilabel-indicator":
        Y = np.asarray(y.toarray() if hasattr(y, "toarray") else y)
        if not np.isin(Y, (0, 1)).all():
            raise ValueError("a label-indicator matrix must hold only 0 and 1")
        targets = Targets("multilabel", np.arange(Y.shape[1]), np.where(Y.T > 0, 1.0, -1.0))
        targets.check_blocks()
        return targets
    if np.ndim(y) == 2 and np.shape(y)[1] > 1:
        values = np.unique(np.asarray(y))
        raise ValueError(f"a 2-D y must be a label-indicator matrix holding only 0 and 1 (multi-label); got "
                         f"values {values[:6].tolist()}{' ...' if len(values) > 6 else ''}")
    check_classification_targets(y)
    y = column_or_1d(y, warn=True)  # a column vector is a 1-D y, with scikit-learn's DataConversionWarning
    encoder = LabelEncoder().fit(y)
    classes, idx = encoder.classes_, encoder.transform(y)
    if len(classes) < 2:
        raise ValueError(f"y has 1 class ({shown(classes[0])!r}); a classifier needs at least two classes")
    if len(classes) == 2:
        return Targets("binary", classes, np.where(idx == 1, 1.0, -1.0)[None, :])
    return Targets("multiclass", classes, np.where(idx[None, :] == np.arange(len(classes))[:, None], 1.0, -1.0))


def _continuous_targets(y: Any) -> Targets:
    """Real targets of shape (n,) (kind ``"continuous"``) or (n, T) (``"continuous-multioutput"``)."""
    if hasattr(y, "toarray"):
        raise ValueError("sparse regression targets are not supported; pass a dense array (y.toarray())")
    y = np.asarray(y)
    if np.iscomplexobj(y):
        raise ValueError("regression targets must be real numbers; got complex values")
    try:
        Y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"regression targets must be real numbers; got values of dtype {y.dtype} such as "
                         f"{y.ravel()[:1].tolist()}") from None
    if Y.ndim not in (1, 2) or Y.shape[0] == 0:
        raise ValueError(f"regression targets must have shape (n_samples,) or (n_samples, n_outputs) with "
                         f"n_samples >= 1; got shape {Y.shape}")
    if not np.isfinite(Y).all():
        raise ValueError("regression targets contain NaN or infinity; drop or impute those samples")
    if Y.ndim == 1:
        return Targets("continuous", np.arange(1), Y[None, :].copy())
    return Targets("continuous-multioutput", np.arange(Y.shape[1]), np.ascontiguousarray(Y.T))


# --------------------------------------------------------------------------------------------------
# parts
# --------------------------------------------------------------------------------------------------
class UnknownParameterError(ValueError):
    """A parameter key naming a parameter the method's part does not have; ``key`` is that key."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


@attrs.define
class Parts:
    """The loss, regularizer and solver of one fit."""

    loss: SampleLoss
    regularizer: Regularizer
    solver: Solver

    def fresh(self) -> Parts:
        """Unfitted copies (solvers and losses keep no state across fits, but plugins might)."""
        return Parts(clone(self.loss), clone(self.regularizer), clone(self.solver))


_KINDS = ("loss", "regularizer", "solver")


def _part(kind: str, override: Any, default_name: str, default_params: Mapping[str, Any]) -> Component:
    registry = get_registry()
    if override is None:
        return registry.create(kind, default_name, **default_params)
    if isinstance(override, str):
        return registry.create(kind, override)
    if isinstance(override, Component):
        return clone(override)
    name, params = getattr(override, "name", None), getattr(override, "params", None)
    if isinstance(name, str) and isinstance(params, Mapping):  # a config entry {name, params}
        return registry.create(kind, name, **params)
    raise TypeError(f"{kind} must be None, a registered {kind} name, a plugin instance or a {{name, params}} "
                    f"entry; got {type(override).__name__}")


def build_parts(method: str, loss: Any = None, regularizer: Any = None, solver: Any = None,
                params: Mapping[str, Any] | None = None) -> Parts:
    """The parts of ``method`` with overrides and parameters applied.

    Parameters
    ----------
    method : str
        A registered method (a preset of loss, regularizer and solver with default parameters).
    loss, regularizer, solver : None, str, plugin instance or ``{name, params}`` entry
        Overrides of the method's parts (an instance is cloned, never modified).
    params : mapping, optional
        Parameters set on the parts: ``"part__name"`` (``"regularizer__theta"``); ``"C"`` is the loss's ``C``
        (the one and only place ``C`` lives).

    Raises
    ------
    PluginError
        Unknown plugin names; :class:`~multikernel.core.capabilities.IncompatiblePartsError` (a ``PluginError``) for a
        regularizer that does not offer what the solver needs (the message names the solvers that would work).
    UnknownParameterError
        A parameter the part does not have.
    """
    spec = get_registry().get("method", method)
    parts = {
        "loss": _part("loss", loss, spec.loss, spec.loss_params),
        "regularizer": _part("regularizer", regularizer, spec.regularizer, spec.regularizer_params),
        "solver": _part("solver", solver, spec.solver, spec.solver_params),
    }
    for key, value in (params or {}).items():
        kind, _, name = key.partition("__")
        if key == "C":
            kind, name = "loss", "C"
        if kind not in parts or not name:
            raise UnknownParameterError(f"{key!r} is not a parameter of method {method!r}: use 'C' or "
                                        f"'<part>__<name>' with a part among {_KINDS}", key)
        target = parts[kind]
        if name not in target.get_params(deep=False):
            raise UnknownParameterError(
                f"{name!r} is not a parameter of {kind} {target.name!r} (method {method!r}); its parameters: "
                f"{', '.join(sorted(target.get_params(deep=False))) or '(none)'}", key)
        target.set_params(**{name: value})
    check_compatible(parts["regularizer"], parts["solver"])
    check_loss_form(parts["loss"], parts["solver"])
    return Parts(**parts)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------------
@attrs.define(frozen=True)
class SolveSettings:
    """Stopping and computation settings of the outer loop (see :class:`~multikernel.core.interfaces.MKLProblem`
    for ``ray_search`` and ``one_pass``)."""

    tol: float = 1e-3
    max_iter: int = 200
    inner_tol: float = 1e-3
    stopping: str = "gap"
    ray_search: str = "infinite"
    one_pass: bool = True


@attrs.define
class FittedMKL:
    """A fitted model: the outer results and what prediction needs.

    ``results`` has one :class:`~multikernel.core.interfaces.MKLResult` per outer problem: one per block when the
    blocks have their own weights (binary, one-vs-rest), or a single one whose ``coef`` holds all ``T``
    blocks when they share the weights.
    """

    targets: Targets
    results: list[MKLResult]
    shared: bool
    fit_time: float = 0.0
    params: dict[str, Any] = attrs.Factory(dict)

    @property
    def weights(self) -> np.ndarray:
        """Kernel weights, shape (n_problems, M): one row, or one per block for one-vs-rest."""
        return np.array([r.weights for r in self.results])

    @property
    def block_weights(self) -> np.ndarray:
        """The weights of each block, shape (T, M)."""
        w = self.weights
        return np.repeat(w, self.targets.n_blocks, axis=0) if self.shared else w

    @property
    def coef(self) -> np.ndarray:
        """Expansion coefficients ``c_t`` of each block, shape (T, n_train)."""
        return np.vstack([np.atleast_2d(r.coef) for r in self.results])

    @property
    def bias(self) -> np.ndarray:
        """Offsets of each block, shape (T,)."""
        return np.concatenate([np.atleast_1d(np.asarray(r.bias, dtype=np.float64)) for r in self.results])

    @property
    def n_iter(self) -> np.ndarray:
        return np.array([r.n_iter for r in self.results])

    @property
    def objective(self) -> np.ndarray:
        return np.array([r.objective for r in self.results])

    @property
    def dual_gap(self) -> np.ndarray:
        return np.array([r.dual_gap for r in self.results])

    @property
    def converged(self) -> bool:
        return all(bool(r.converged) for r in self.results)

    def decision_function(self, cross: KernelStack) -> np.ndarray:
        """Decision values on the rows of a cross stack (rows x training samples): shape (n_rows, T)."""
        return decision_values(cross, self.weights, self.coef, self.bias)

    def predict(self, cross: KernelStack) -> np.ndarray:
        """Decoded predictions on the rows of a cross stack."""
        return self.targets.decode(self.decision_function(cross))


def decision_values(cross: KernelStack, weights: np.ndarray, coef: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``f_t(x) = sum_m w_tm K_m(x, .) c_t + b_t`` on the rows of a cross stack: shape (n_rows, T).

    ``weights`` has one row shared by all ``T`` blocks, or one row per block; with one row the combined cross
    kernel is formed once.
    """
    weights, coef = np.atleast_2d(weights), np.atleast_2d(coef)
    if len(weights) == 1:
        return cross.combine(weights[0]) @ coef.T + bias
    return np.column_stack([cross.combine(w) @ c for w, c in zip(weights, coef, strict=True)]) + bias


def _solve_block(stack: KernelStack, y: np.ndarray, warm_start: MKLResult | None, parts: Parts,
                 settings: SolveSettings, callback: Callable[[dict[str, Any]], None] | None,
                 keep_cuts: bool = False) -> MKLResult:
    """One outer problem of :func:`fit_mkl` (module level: a process or Dask backend pickles it)."""
    p = parts.fresh()
    problem = MKLProblem(stack=stack, y=y, loss=p.loss, regularizer=p.regularizer, tol=settings.tol,
                         max_iter=settings.max_iter, inner_tol=settings.inner_tol, stopping=settings.stopping,
                         warm_start=warm_start, callback=callback, ray_search=settings.ray_search,
                         one_pass=settings.one_pass, keep_cuts=keep_cuts)
    return p.solver.solve(problem)


def fit_mkl(stack: KernelStack, targets: Targets, parts: Parts, settings: SolveSettings | None = None, *,
            shared: bool = False, warm: FittedMKL | None = None, n_jobs: int | None = None,
            callback: Callable[[dict[str, Any]], None] | None = None,
            params: Mapping[str, Any] | None = None, keep_cuts: bool = False) -> FittedMKL:
    """Fit kernel weights and classifiers on a training stack.

    Parameters
    ----------
    stack : KernelStack
        The square training stack (n x n per kernel).
    targets : Targets
        From :func:`encode_targets` (or :meth:`Targets.subset` for a fold).
    parts : Parts
        From :func:`build_parts`; copied, never modified.
    settings : SolveSettings, optional
        Stopping settings (default: ``SolveSettings()``).
    shared : bool, default=False
        With several blocks: one weight vector for all (their objectives summed) instead of one per block.
        A single block is the same either way.
    warm : FittedMKL, optional
        A previous fit of the same task on the same stack (a neighbouring grid point): its weights and dual
        variables start the solvers; weights outside a changed regularizer's domain are projected onto it.
    n_jobs : int, optional
        Blocks fitted in parallel when they have their own weights: joblib threads (the stack is shared), or
        the backend of an enclosing ``joblib.parallel_config`` (``None``: its ``n_jobs``, 1 outside one).
    callback : callable, optional
        Called with each outer iteration's history entry.
    params : mapping, optional
        Recorded in the result (the grid point of this fit).
    keep_cuts : bool, default=False
        Return a cutting-plane solver's last active cuts with each result, for the next fit of a path on this stack
        (``MKLProblem(keep_cuts=True)``; they start its model when this fit is its ``warm``).
    """
    start = time.perf_counter()
    settings = settings or SolveSettings()
    if stack.n_rows != targets.blocks.shape[1] or stack.n_rows != stack.n_cols:
        raise ValueError(f"the training stack is {stack.n_rows} x {stack.n_cols} but there are "
                         f"{targets.blocks.shape[1]} targets; it must be square with one row per sample")
    shared = shared and targets.n_blocks > 1
    problems = [targets.blocks] if shared else list(targets.blocks)
    starts: list[MKLResult | None] = [None] * len(problems)
    if warm is not None and warm.shared == shared and len(warm.results) == len(problems):
        starts = list(warm.results)

    args = (parts, settings, callback, keep_cuts)
    if len(problems) == 1 or n_jobs == 1:
        results = [_solve_block(stack, y, w, *args) for y, w in zip(problems, starts, strict=True)]
    else:
        # Threads by default (the stack is shared in memory); any joblib backend otherwise, e.g. Dask under
        # ``joblib.parallel_config(backend="dask")``: the stack is a top-level argument, so that backend
        # scatters it once for all the blocks (multikernel.engine.register_sizeof).
        results = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_solve_block)(stack, y, w, *args) for y, w in zip(problems, starts, strict=True))
    return FittedMKL(targets=targets, results=results, shared=shared, fit_time=time.perf_counter() - start,
                     params=dict(params or {}))

