"""Layer 5, configuration: the declarative run configuration (TOML or dict), data loading, and running a config.

:mod:`~multikernel.config.schema` defines the configuration classes and their checks (shared with experiment
configurations: the key-path machinery, the path rule, the grid rules); :mod:`~multikernel.config.checks` checks a
configuration against the plugins and the data as a fit would (what ``validate``, ``run`` and ``experiment`` run
before fitting); :mod:`~multikernel.config.datasets` and :mod:`~multikernel.config.task_data` load data sets
(:mod:`~multikernel.config.example_data` generates those with bags, two views or a real target);
:mod:`~multikernel.config.evaluation` fits and measures an estimator by its task kind;
:mod:`~multikernel.config.runner` fits and evaluates the models of a run configuration, of any task kind;
:mod:`~multikernel.config.examples` holds the embedded examples of ``multikernel run --example``;
:mod:`~multikernel.config.progress` reports the progress of long runs.
"""

from multikernel.config.schema import RunConfig, config_from_dict, config_to_dict, config_to_toml, load_config

__all__ = ["RunConfig", "load_config", "config_from_dict", "config_to_dict", "config_to_toml"]
