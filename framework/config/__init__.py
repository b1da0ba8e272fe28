"""Layer 5, configuration: the declarative run configuration (TOML or dict), data loading, and running a config.

:mod:`~multikernel.config.schema` defines the configuration classes and their checks;
:mod:`~multikernel.config.datasets` loads data sets; :mod:`~multikernel.config.runner` fits and evaluates the
models of a run configuration through the estimators.
"""

from multikernel.config.schema import RunConfig, config_from_dict, config_to_dict, config_to_toml, load_config

__all__ = ["RunConfig", "load_config", "config_from_dict", "config_to_dict", "config_to_toml"]
