"""multikernel: learning with multiple kernels.

The import package ``multikernel`` is built from three folders of the source tree: ``framework/`` (this
package: interfaces, registry, kernel stack, estimators, configuration, CLI), ``plugins/`` (installed as
``multikernel.plugins``: every built-in kernel builder, loss, regularizer, solver and method) and ``_ext/``
(installed as ``multikernel._ext``: the Cython hot loops).
"""

from multikernel._version import __version__
from multikernel.config import RunConfig, config_from_dict, load_config
from multikernel.errors import ConfigError, FitInterruptedWarning, MemoryBudgetError, ModelFormatError, PluginError
from multikernel.estimator import MKLClassifier
from multikernel.hookspecs import hookimpl
from multikernel.registry import get_registry, register_plugin

__all__ = [
    "__version__",
    "MKLClassifier",
    "RunConfig",
    "load_config",
    "config_from_dict",
    "create",
    "hookimpl",
    "get_registry",
    "register_plugin",
    "ConfigError",
    "PluginError",
    "ModelFormatError",
    "MemoryBudgetError",
    "FitInterruptedWarning",
]


def create(kind: str, name: str, **params):  # noqa: ANN201 (returns the plugin's own type)
    """Instantiate a registered plugin: ``create("regularizer", "box_simplex", theta=0.2)``."""
    return get_registry().create(kind, name, **params)
