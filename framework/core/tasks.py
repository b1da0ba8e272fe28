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

import inspect
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["TASK_KINDS", "TaskEstimator"]

TASK_KINDS: dict[str, str] = {
    "multilabel_ranking": "multi-label ranking (fit(X, Y), one score per label)",
    "ssl": "semi-supervised binary classification (y == -1 unlabelled, transductive accuracy)",
    "mil": "multiple-instance binary classification (fit(X, y, bags), bag accuracy)",
    "clustering": "clustering (fit_predict(X); clustering accuracy and NMI against the labels)",
    "classification": "classification of feature vectors (fit(X, y), predict; accuracy)",
    "bilinear": "classification of matrix samples (n, p, q)",
    "crossmodal": "two modalities of the same classes (features and the second view 'privileged'): "
                  "fit(Xa, ya, Xb, yb), transform(X, modality); rank-1 retrieval across modalities",
    "metric": "metric learning (fit(X, y), transform; k-NN accuracy in the learnt metric)",
}
"""The task kinds and their calling conventions (see the module docstring)."""


def _accepted(factory: Callable[..., Any]) -> tuple[list[str], bool]:
    """The keyword parameters ``factory`` takes, and whether it takes any (``**kwargs``)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: accept anything
        return [], True
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


@attrs.frozen
class TaskEstimator:
    """A named task estimator: a class (or factory) with default parameters, for one task kind.

    Parameters
    ----------
    name : str
        The registered name (the key of the hook's mapping).
    task : str
        One of :data:`TASK_KINDS`.
    factory : callable
        An estimator class, or a function returning an unfitted estimator, called with keyword parameters.
    params : dict
        Defaults passed to ``factory``; configurations and :meth:`create` override them.
    summary, citation : str
    """

    name: str
    task: str
    factory: Callable[..., Any]
    params: dict[str, Any] = attrs.Factory(dict)
    summary: str = ""
    citation: str = ""

    def parameters(self) -> list[str] | None:
        """The parameter names :meth:`create` accepts (``None``: any, the factory takes ``**kwargs``)."""
        names, anything = _accepted(self.factory)
        return None if anything else names

    def problems(self) -> list[str]:
        """What is wrong with this entry (empty when it is well formed): checked at registration."""
        out = []
        if self.task not in TASK_KINDS:
            out.append(f"task {self.task!r} is not a task kind ({', '.join(TASK_KINDS)})")
        if not callable(self.factory):
            out.append(f"factory {self.factory!r} is not callable (give the estimator class or a function)")
            return out
        if not isinstance(self.params, dict):
            out.append(f"params must be a dict; got {self.params!r}")
            return out
        accepted = self.parameters()
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
            unknown = [k for k in params if k not in accepted]
            if unknown:
                raise TypeError(f"{unknown[0]!r} is not a parameter of the {self.task} estimator {self.name!r}; "
                                f"its parameters: {', '.join(accepted) or '(none)'}")
        return self.factory(**{**self.params, **params})
