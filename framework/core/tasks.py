"""Task estimators as plugins: multi-label rankers, IOKL learners, their baselines, bilinear and metric learners.

An MKL *method* (:class:`~multikernel.core.interfaces.Method`) is a preset of parts that the fit core assembles;
a *task estimator* is a complete scikit-learn estimator of one learning task, registered by name through the
hook ``multikernel_estimators`` so that Python code, experiment configurations and the CLI use it by that name
(``multikernel.create_estimator("mlr_gl", C=10)``, ``[[estimators]] name = "mlr_gl"``).

Each task kind has one calling convention, which the experiment runner (:mod:`multikernel.experiments.tasks`)
follows and a plugin's estimator must accept:

==================== ========================================================================================
kind                 convention
==================== ========================================================================================
multilabel_ranking   ``fit(X, Y)``, ``Y`` a 0/1 indicator matrix (``NaN`` = unknown); ``decision_function(X)``
                     one score per label
ssl                  ``fit(X, y)`` on every sample, ``y == -1`` for the unlabelled ones (scikit-learn's
                     semi-supervised convention, classes encoded 0, 1, ...); ``transduction_`` if it labels
                     every sample, else ``predict(X)``
mil                  ``fit(X, y, bags)`` (instances, one label per instance constant in its bag, a bag id per
                     instance); ``predict(X, bags)`` one label per bag in the order of ``np.unique(bags)``
clustering           ``fit_predict(X)``
bilinear             ``fit(X, y)`` / ``predict(X)`` on matrix samples ``X`` of shape (n, p, q)
metric               ``fit(X, y)`` (``X_privileged=`` when the data set has a privileged view and ``fit`` takes
                     it), ``transform(X)``; scored by k-nearest-neighbour accuracy in the learnt metric
==================== ========================================================================================
"""

from __future__ import annotations

import abc
import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import attrs

__all__ = ["TASK_KINDS", "DeferredFactory", "TaskEstimator", "TaskKind", "task_kind"]


class TaskKind(abc.ABC):
    """A kind of learning task: everything that differs between tasks in configurations, experiments and the CLI.

    A task kind is a plugin (hook ``multikernel_task_kinds``, registered like every other plugin): the experiment
    runner, ``multikernel validate`` and the reports call these methods and keep no per-kind code.  A subclass
    declares

    - ``description`` (one line: the task and its calling convention) and ``measures`` (``(name, higher is
      better)`` pairs; the first chooses grid points unless a configuration says ``select_by``);
    - ``labels``: ``"classes"`` (one label per sample), ``"matrix"`` (a 0/1 label matrix), ``"continuous"``, or
      ``"none"``; ``bags``, ``privileged``: ``"required"``, ``"optional"`` or ``"no"``; ``samples``:
      ``"vectors"`` or ``"matrices"`` (shape (n, p, q)); ``binary``: whether exactly two classes are needed;
      ``transductive``: whether every sample is given to ``fit`` (standardization then uses every sample);
    ``task_settings``, ``has_folds``, ``can_select``: which [task] settings of an experiment apply;

    and implements :meth:`evaluate` (fit by the kind's calling convention, measure on the test samples).  The
    default splits are stratified k-fold (or one stratified split) over the samples; a kind overrides
    :meth:`folds`, :meth:`splits`, :meth:`selection_folds`, :meth:`settings` or :meth:`check` where it differs
    (bags kept whole, labelled samples drawn, ...).

    ``data`` below is a :class:`multikernel.config.task_data.TaskData` (``X``, ``y``, ``groups``, ``privileged``,
    ``subset(rows)``); errors in configurations are :class:`multikernel.errors.ConfigError` at the given key path.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    measures: ClassVar[tuple[tuple[str, bool], ...]] = (("accuracy", True),)
    labels: ClassVar[str] = "classes"
    bags: ClassVar[str] = "no"
    privileged: ClassVar[str] = "no"
    samples: ClassVar[str] = "vectors"
    binary: ClassVar[bool] = False
    transductive: ClassVar[bool] = False
    #: The [task] keys of an experiment that only some kinds use ("labeled", "missing", "neighbors"): this kind's.
    task_settings: ClassVar[frozenset[str]] = frozenset()
    #: Whether a repeat is split into ``task.folds`` evaluation folds (and if not, why).
    has_folds: ClassVar[bool] = True
    no_folds_reason: ClassVar[str] = ""
    #: Whether grid points can be chosen by cross-validation (clustering has no labels to choose by).
    can_select: ClassVar[bool] = True

    def check_task(self, task: Any) -> None:  # noqa: B027 (optional)
        """Checks of the experiment's [task] settings for this kind (a subclass overrides it);
        :class:`~multikernel.errors.ConfigError` at the key path."""

    # -- settings of a data set (a task may run each data set at several, e.g. numbers of labelled samples) --
    def settings(self, task: Any) -> list[Any]:
        """The settings each data set runs at (``[None]``: one)."""
        return [None]

    def setting_name(self, task: Any, setting: Any) -> str:
        """How a setting appears in unit keys and reports."""
        return "-"

    def probe_setting(self, task: Any) -> Any:
        """The setting the probe fits of ``validate`` run at (the hardest of :meth:`settings`, where it matters)."""
        return None

    def n_folds(self, task: Any) -> int:
        """Units per repeat: the folds of ``task.folds`` (1 for a single split, or a kind without folds)."""
        return task.folds if task.folds >= 2 and self.has_folds else 1

    # -- splits ------------------------------------------------------------------------------------------
    def folds(self, data: Any, rows: Any, k: int, seed: int) -> list[tuple[Any, Any]]:
        """``k``-fold cross-validation of the samples ``rows`` (stratified by class where there are classes)."""
        import numpy as np
        from sklearn.model_selection import KFold, StratifiedKFold

        if self.labels == "classes":
            cv = StratifiedKFold(k, shuffle=True, random_state=seed)
            return [(rows[tr], rows[te]) for tr, te in cv.split(rows, data.y[rows])]
        return [(rows[tr], rows[te]) for tr, te in KFold(k, shuffle=True, random_state=seed).split(np.asarray(rows))]

    def splits(self, task: Any, data: Any, dataset: Any, settings: Any, repeat: int, setting: Any
               ) -> list[tuple[Any, Any]]:
        """The (train, test) samples of repeat ``repeat`` (seed ``settings.seed + repeat``): ``task.folds`` folds,
        or one split of ``dataset.train_size`` / ``settings.test_fraction`` when ``folds = 0``."""
        import numpy as np
        from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

        seed = settings.seed + repeat
        everything = np.arange(data.n_samples)
        if task.folds >= 2:
            return self.folds(data, everything, task.folds, seed)
        size = {"train_size": dataset.train_size} if dataset.train_size else {"test_size": settings.test_fraction}
        stratified = self.labels == "classes"
        splitter = (StratifiedShuffleSplit if stratified else ShuffleSplit)(1, random_state=seed, **size)
        return [next(splitter.split(everything, data.y if stratified else None))]

    def selection_folds(self, data: Any, train: Any, k: int, seed: int) -> list[tuple[Any, Any]]:
        """The inner folds of the training samples on which grid points are compared."""
        return self.folds(data, train, k, seed)

    # -- checks ------------------------------------------------------------------------------------------
    def check(self, data: Any, source: str, task: Any, settings: Any, path: str, searched: bool) -> None:
        """Raise :class:`~multikernel.errors.ConfigError` (at ``path``, the data set entry) unless the data suit
        the kind: what it declares (labels, samples, bags, privileged view, classes, enough samples per fold),
        then :meth:`check_more`."""
        import numpy as np

        from multikernel.core.validation import shown
        from multikernel.errors import ConfigError

        where, y = f"{path}.source", data.y
        if self.labels == "matrix":
            if y.ndim != 2 or y.shape[1] < 2:
                raise ConfigError(f"a {self.name} task needs a label matrix (CSV columns label:<name>, two or "
                                  f"more); {source!r} has one label per sample", where)
            if not np.all(np.isin(y[~np.isnan(y)] if y.dtype.kind == "f" else y, (0, 1))):
                raise ConfigError("the label matrix must hold 0 and 1 only", where)
        elif y.ndim != 1:
            raise ConfigError(f"a {self.name} task needs one label per sample; {source!r} has a label matrix", where)
        wanted = 3 if self.samples == "matrices" else 2
        if data.X.ndim != wanted:
            hint = (" (a CSV's features are reshaped by the data set's 'shape' key, e.g. shape = [15, 16])"
                    if wanted == 3 else "")
            needed = "matrix samples (n, p, q)" if wanted == 3 else "feature vectors"
            raise ConfigError(f"a {self.name} task needs {needed}; {source!r} gives samples of shape "
                              f"{data.X.shape[1:]}{hint}", where)
        if self.privileged == "no" and data.privileged is not None:
            raise ConfigError(f"a {self.name} task uses no privileged view (tasks that do: metric, crossmodal)",
                              f"{path}.privileged")
        if self.privileged == "required" and data.privileged is None:
            raise ConfigError(f"a {self.name} task needs a second view: give 'features' (the column prefixes of the "
                              f"first) and 'privileged' (those of the second)", f"{path}.privileged")
        if self.bags == "required":
            if data.groups is None:
                raise ConfigError(f"a {self.name} task needs bags: a CSV column 'bag' (the bag of each instance); "
                                  f"{source!r} has none", where)
            bag_ids, inverse = np.unique(data.groups, return_inverse=True)
            labels = np.empty(len(bag_ids), dtype=y.dtype)
            for b in range(len(bag_ids)):
                values = np.unique(y[inverse == b])
                if len(values) != 1:
                    raise ConfigError(f"bag {shown(bag_ids[b])!r} has instances with different labels "
                                      f"({', '.join(repr(shown(v)) for v in values)}); an instance's label is its "
                                      f"bag's", where)
                labels[b] = values[0]
            counts = np.unique(labels, return_counts=True)[1]
        else:
            if data.groups is not None:
                raise ConfigError(f"{source!r} has bags (a 'bag' column); only tasks with bags (mil) use them", where)
            counts = np.unique(y, return_counts=True)[1] if self.labels == "classes" else None
        if counts is not None:
            if len(counts) < 2:
                raise ConfigError(f"{source!r} has a single class; a {self.name} task needs two or more", where)
            if self.binary and len(counts) != 2:
                raise ConfigError(f"a {self.name} task is binary; {source!r} has {len(counts)} classes (select two "
                                  f"with 'classes' or binarize with 'positive')", where)
            need = max(task.folds, settings.cv_folds)
            if not self.transductive and need >= 2 and counts.min() < need:
                unit = "bags" if self.bags == "required" else "samples"
                raise ConfigError(f"{source!r} has a class with {counts.min()} {unit}, fewer than the {need} folds",
                                  "task.folds" if task.folds >= settings.cv_folds else "experiment.cv_folds")
        self.check_more(data, source, task, settings, path, searched)

    def check_more(self, data: Any, source: str, task: Any, settings: Any, path: str,  # noqa: B027 (optional)
                   searched: bool) -> None:
        """Checks of the data beyond the declared ones (a subclass overrides it)."""

    def probe(self, data: Any, size: int = 40) -> tuple[Any, Any, Any]:
        """A few samples of ``data`` (``size``, some of each class) and a train/test split of them (the first
        sample of each class and every other one trained), for the probe fits of ``validate``."""
        import numpy as np

        rng = np.random.default_rng(0)
        if self.labels == "classes":
            classes = np.unique(data.y)
            per = max(2, size // max(len(classes), 1))
            rows = np.sort(np.concatenate([rng.permutation(np.flatnonzero(data.y == c))[:per] for c in classes]))
            small = data.subset(rows)
            firsts = np.array([np.flatnonzero(small.y == c)[0] for c in classes])
            train = np.union1d(firsts, np.arange(0, len(rows), 2))
        else:
            rows = np.sort(rng.permutation(data.n_samples)[:size])
            small = data.subset(rows)
            train = np.arange(0, len(rows), 2)
        return small, train, np.setdiff1d(np.arange(len(rows)), train)

    # -- one evaluation ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def evaluate(self, estimator: Any, data: Any, train: Any, test: Any, *, setting: Any = None,
                 neighbors: int = 3, seed: int = 0) -> dict[str, float]:
        """Fit ``estimator`` on ``train`` by the kind's calling convention; the kind's measures on ``test``.

        ``data`` is already standardized as the configuration asks (with the statistics of the samples ``fit``
        sees)."""


def task_kind(name: str) -> TaskKind:
    """The registered task kind ``name`` (an instance), or :class:`~multikernel.errors.PluginError` listing them."""
    from multikernel.core.registry import get_registry

    return get_registry().create("task", name)


class _TaskKindsView(Mapping):
    """The registered task kinds by name, with their descriptions (read from the registry when asked)."""

    def _table(self) -> dict[str, str]:
        from multikernel.core.registry import get_registry

        registry = get_registry()
        return {name: registry.get("task", name).description for name in registry.names("task")}

    def __getitem__(self, key: str) -> str:
        return self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


TASK_KINDS: Mapping[str, str] = _TaskKindsView()
"""The registered task kinds and their descriptions (see :class:`TaskKind`; built-ins in
:mod:`multikernel.plugins.task_kinds`)."""


def _accepted(factory: Callable[..., Any]) -> tuple[list[str], bool]:
    """The keyword parameters ``factory`` takes, and whether it takes any (``**kwargs``)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: accept anything
        return [], True
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


class DeferredFactory:
    """An estimator class named by its module and attribute, imported when it is first called or inspected.

    The registry imports every plugin module when it loads; a task estimator whose factory is deferred does
    not import its package then (scikit-learn's ``cluster``, say, a tenth of a second), only when it is used.
    Its default parameters are checked against the class at its first :meth:`TaskEstimator.create` (or
    :meth:`TaskEstimator.parameters`), not at registration.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"sklearn.cluster"``.
    name : str
        The class (or function) in it, e.g. ``"KMeans"``.
    """

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = self.__name__ = self.__qualname__ = name
        self._target: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The class (imported at the first call)."""
        if self._target is None:
            self._target = getattr(importlib.import_module(self.module), self.name)
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:  # what inspect.signature reports: the class's own
        return inspect.signature(self.resolve())

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


@attrs.frozen
class TaskEstimator:
    """A named task estimator: a class (or factory) with default parameters, for one task kind.

    Parameters
    ----------
    name : str
        The registered name (the key of the hook's mapping).
    task : str
        A registered task kind (:data:`TASK_KINDS`); checked once every plugin is registered.
    factory : callable
        An estimator class, or a function returning an unfitted estimator, called with keyword parameters.
    params : dict
        Defaults passed to ``factory``; configurations and :meth:`create` override them.
    summary, citation : str
    also : tuple of str
        Further task kinds whose calling convention the estimator follows (``MKLClassifier`` fits class labels
        and 0/1 label matrices alike: ``task="classification"``, ``also=("multilabel_ranking",)``).
    """

    name: str
    task: str
    factory: Callable[..., Any]
    params: dict[str, Any] = attrs.Factory(dict)
    summary: str = ""
    citation: str = ""
    also: tuple[str, ...] = ()

    @property
    def tasks(self) -> tuple[str, ...]:
        """Every task kind the estimator serves: ``task``, then ``also``."""
        return (self.task, *self.also)

    def parameters(self) -> list[str] | None:
        """The parameter names :meth:`create` accepts (``None``: any, the factory takes ``**kwargs``)."""
        names, anything = _accepted(self.factory)
        return None if anything else names

    def problems(self) -> list[str]:
        """What is wrong with this entry (empty when it is well formed): checked at registration."""
        out = []
        if not isinstance(self.task, str) or not self.task:
            out.append(f"task {self.task!r} is not a task kind name")
        if not isinstance(self.also, tuple) or not all(isinstance(t, str) and t for t in self.also):
            out.append(f"also {self.also!r} is not a tuple of task kind names")
        if not callable(self.factory):
            out.append(f"factory {self.factory!r} is not callable (give the estimator class or a function)")
            return out
        if not isinstance(self.params, dict):
            out.append(f"params must be a dict; got {self.params!r}")
            return out
        # a deferred factory is checked at its first create: inspecting it here would import it
        accepted = None if isinstance(self.factory, DeferredFactory) else self.parameters()
        if accepted is not None:
            unknown = [k for k in self.params if k not in accepted]
            if unknown:
                out.append(f"default parameter(s) {', '.join(map(repr, unknown))} not taken by "
                           f"{getattr(self.factory, '__qualname__', self.factory)!r} (it takes "
                           f"{', '.join(accepted) or 'none'})")
        return out

    def create(self, **params: Any) -> Any:
        """A new unfitted estimator: ``factory(**{**self.params, **params})``.

        Raises
        ------
        TypeError
            For a parameter the factory does not take; the message lists those it takes.
        """
        accepted = self.parameters()
        if accepted is not None:
            # a deferred factory's defaults were not checked at registration: they are checked with the call's
            given = {**self.params, **params} if isinstance(self.factory, DeferredFactory) else params
            unknown = [k for k in given if k not in accepted]
            if unknown:
                raise TypeError(f"{unknown[0]!r} is not a parameter of the {self.task} estimator {self.name!r}; "
                                f"its parameters: {', '.join(accepted) or '(none)'}")
        return self.factory(**{**self.params, **params})
