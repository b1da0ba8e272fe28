"""The one base of every estimator of the library: parameters, fit context, persistence, tags.

In the spirit of scikit-learn's ``svm/_base.py`` (one base, thin subclasses that say what differs), every
estimator of the four works derives from :class:`MultikernelEstimator` and gets from it

- **parameters**: ``_parameter_constraints`` (a mapping of parameter name to the accepted forms, from
  :mod:`multikernel.core.validation`), merged over the class hierarchy so that an input mixin contributes the
  constraints of the parameters it owns; checked at the start of every fit and when a model is loaded, with one
  message format (``"<Estimator>: C must be a positive finite number; got True of type bool"``);
- **the fit context**: :meth:`_fit_context` checks the parameters, shows progress with ``verbose``
  (:class:`~multikernel.estimators.progress.FitProgress`), turns Ctrl-C into
  :class:`~multikernel.errors.FitInterruptedWarning` with the best model of the completed iterations, and records
  ``fit_time_``;
- **persistence**: :meth:`save` / :meth:`load` (:mod:`multikernel.estimators.persistence`: no code from the
  file, every damaged or crafted file refused at load with :class:`~multikernel.errors.ModelFormatError`), with
  the fitted state checked against ``_fitted_schema`` where the class declares one and by
  :meth:`_check_loaded`;
- ``NotFittedError`` before fit (:meth:`_check_fitted`).

What differs between tasks (target encoding, the inner problem, ``score``) stays in the subclasses and in the
task mixins of their packages.
"""

from __future__ import annotations

import contextlib
import importlib
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from multikernel.core.validation import Constraint, validate_params
from multikernel.errors import FitInterruptedWarning
from multikernel.estimators.progress import FitProgress

__all__ = ["MultikernelEstimator", "FittedSpec", "class_key", "saveable_class"]

# Every subclass, by "module.qualname": the only classes a model file may name (persistence looks them up here).
_SAVEABLE: dict[str, type] = {}


def class_key(cls: type) -> str:
    """How a model file names an estimator class: ``"multikernel.estimators.classifier.MKLClassifier"``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def saveable_class(key: str) -> type | None:
    """The estimator class a model file names, or ``None``.

    Only subclasses of :class:`MultikernelEstimator` are found.  A class of the library itself is found even when
    its module was not imported yet (the module is imported: it is the library's own code, never the file's);
    a third-party class once its package is imported.
    """
    if key not in _SAVEABLE and isinstance(key, str) and key.startswith("multikernel."):
        module = key.rsplit(".", 1)[0]
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    return _SAVEABLE.get(key)


class FittedSpec:
    """What a fitted attribute must be in a loaded model: ``kind`` one of ``"real"`` (a float or a real array),
    ``"int"``, ``"labels"`` (an array of class labels: numbers or strings), ``"text"``, ``"any"``; ``ndim`` the
    accepted dimensions of an array (``0`` for a scalar); ``required`` whether a model must have it."""

    def __init__(self, kind: str = "any", ndim: tuple[int, ...] | None = None, required: bool = True) -> None:
        self.kind, self.ndim, self.required = kind, ndim, required


class MultikernelEstimator(BaseEstimator):
    """Base class of the library's estimators (see the module docstring for what it provides).

    Subclasses declare

    - ``_parameter_constraints``: ``{"C": [Real(low=0)], "method": [Plugin("method")], ...}``;
    - ``_fitted_schema`` (optional): ``{"weights_": FittedSpec("real", (1, 2)), ...}`` for load-time checks;
    - ``_unsaved_attributes``: fitted attributes a model file leaves out (``("results_",)`` by default);
    - in ``fit``: ``with self._fit_context(total=self.max_iter, desc=...) as progress:`` around the work, and
      ``progress.update(keep=..., gap=...)`` once per iteration of their own loops.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}
    _fitted_schema: ClassVar[dict[str, FittedSpec] | None] = None
    #: Fitted attributes a saved model leaves out (the solvers' full results with their histories); after
    #: loading they hold what :meth:`_restore_unsaved` sets.
    _unsaved_attributes: ClassVar[tuple[str, ...]] = ("results_",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _SAVEABLE[class_key(cls)] = cls

    # ------------------------------------------------------------------------------------------
    # parameters
    # ------------------------------------------------------------------------------------------
    @classmethod
    def _all_constraints(cls) -> dict[str, list[Constraint]]:
        merged: dict[str, list[Constraint]] = {}
        for klass in reversed(cls.__mro__):
            merged.update(getattr(klass, "_parameter_constraints", None) or {})
        return merged

    def _validate_params(self) -> None:
        """Check every constrained parameter; ``ValueError`` naming the estimator, the parameter and the choices."""
        validate_params(type(self).__name__, self.get_params(deep=False), self._all_constraints())
        self._check_params()

    def _check_params(self) -> None:
        """Checks that involve several parameters (a subclass overrides it); called after the constraints."""

    # ------------------------------------------------------------------------------------------
    # the fit context: progress, interrupts, fit time
    # ------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _fit_context(self, total: int | None = None, desc: str | None = None) -> Iterator[FitProgress]:
        """Check the parameters, then run the body with a progress reporter; Ctrl-C keeps the best model.

        On ``KeyboardInterrupt`` the last ``keep`` given to :meth:`FitProgress.update` stores the best model of
        the completed iterations and a :class:`~multikernel.errors.FitInterruptedWarning` is issued; without a
        ``keep`` (nothing completed yet) the interrupt propagates.
        """
        self._validate_params()
        start = time.perf_counter()
        progress = FitProgress(getattr(self, "verbose", 0), total, desc or f"{type(self).__name__} iterations")
        status = "done"
        try:
            yield progress
        except KeyboardInterrupt:
            if progress.keep is None:
                status = "interrupted"
                raise
            progress.keep()
            status = "interrupted, best model kept"
            warnings.warn(f"{type(self).__name__}.fit was interrupted after {progress.n} iteration(s); the model "
                          f"holds the best state found so far", FitInterruptedWarning, stacklevel=3)
            self.interrupted_ = True
        finally:
            progress.close(status)
        self.fit_time_ = time.perf_counter() - start

    def _require_y(self, y: Any) -> None:
        """scikit-learn's error for a supervised ``fit`` called without a target (``check_estimator`` asks for
        this message)."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")

    # ------------------------------------------------------------------------------------------
    # fitted state
    # ------------------------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        """``NotFittedError`` (scikit-learn's) unless fitted."""
        check_is_fitted(self)

    def _check_loaded(self) -> None:
        """Consistency checks of a loaded model beyond ``_fitted_schema`` (a subclass overrides it); raise
        ``ValueError`` naming what is inconsistent.  Called by :func:`~multikernel.estimators.persistence.load_model`,
        whose caller then gets a :class:`~multikernel.errors.ModelFormatError`."""

    def _restore_unsaved(self) -> None:
        """Set what a model file leaves out (``results_``, the solvers' histories) after loading; a subclass
        that keeps such state overrides it."""

    # ------------------------------------------------------------------------------------------
    # persistence
    # ------------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Save the fitted model to ``path`` (``.npz``: arrays and JSON metadata; no pickled code).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If a parameter or fitted attribute cannot be written without pickle; the message names it.
        """
        from multikernel.estimators.persistence import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path: str | Path) -> MultikernelEstimator:
        """Load a model written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ModelFormatError
            If the file is not a model of this class (or a subclass), is damaged, truncated or inconsistent, was
            written by an incompatible version, or needs a plugin that is not installed.
        """
        from multikernel.estimators.persistence import load_model

        return load_model(path, expected=cls)
