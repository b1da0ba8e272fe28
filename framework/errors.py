"""Exceptions of multikernel. Each subclasses the built-in exception a scikit-learn user expects."""

from __future__ import annotations

__all__ = ["PluginError", "ConfigError", "InvalidParameterError", "ModelFormatError", "MemoryBudgetError",
           "FitInterruptedWarning"]


class PluginError(ValueError):
    """An unknown, duplicated or broken plugin, or bad parameters for one."""


class ConfigError(ValueError):
    """A configuration file or dictionary that does not describe a valid run.

    ``path`` is the dotted key path of the offending entry (``"model.regularizer.theta"``).
    """

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class InvalidParameterError(ValueError, TypeError):
    """An estimator parameter of the wrong type or out of range (as scikit-learn's, both a ``ValueError`` and a
    ``TypeError``); the message names the estimator, the parameter, what it accepts and what it got."""


class ModelFormatError(ValueError):
    """A saved model that cannot be loaded: corrupted, or written by an incompatible version."""


class MemoryBudgetError(MemoryError):
    """A kernel stack that would not fit in the memory budget; the message names the alternatives."""


class FitInterruptedWarning(RuntimeWarning):
    """A fit stopped by Ctrl-C (``KeyboardInterrupt``) that returned the best weights found so far.

    The result then has ``interrupted=True``.  Callers that must not treat such a fit as finished (an
    experiment runner recording units) test this category, never the message text.
    """
