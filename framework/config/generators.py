"""The built-in data generators of experiment configurations, and the checks of their ``params``.

A ``[[datasets]]`` entry whose ``source`` names a generator draws its samples from it: ``params`` are the
generator's keyword parameters and ``random_state`` is the experiment's ``seed`` (never a ``params`` key, so
that every data set of an experiment follows the one seed).  An unknown key, or a value the generator refuses,
is a :class:`~multikernel.errors.ConfigError` at ``datasets[i].params...`` that lists the generator's
parameters with their defaults.

Benchmark experiments (``[[methods]]``) take the generators of :data:`BENCHMARK_GENERATORS`; task experiments
(``[task]``) those of :data:`TASK_GENERATORS`, a superset.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from multikernel.bilinear.datasets import make_toy_bilinear
from multikernel.config.datasets import GENERATORS
from multikernel.config.example_data import EXAMPLE_GENERATORS
from multikernel.errors import ConfigError

__all__ = ["BENCHMARK_GENERATORS", "TASK_GENERATORS", "generator_parameters", "describe_parameters", "generate",
           "make_g241c", "make_g241d", "make_multilabel"]

Generator = Callable[..., tuple[Any, ...]]


def make_g241c(n_samples: int = 1500, n_features: int = 241, random_state: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """g241c-like data (Chapelle, Schoelkopf and Zien 2006, ch. 21; a reconstruction, the files are not public
    under a usable licence): two classes of ``n_samples // 2``, isotropic unit Gaussians whose means are 2.5
    apart along a random direction (the cluster assumption holds).  Labels -1 / +1."""
    rng = np.random.default_rng(random_state)
    u = rng.normal(size=n_features)
    u /= np.linalg.norm(u)
    y = np.repeat([-1, 1], [n_samples - n_samples // 2, n_samples // 2])
    return rng.normal(size=(n_samples, n_features)) + 1.25 * y[:, None] * u, y


def make_g241d(n_samples: int = 1500, n_features: int = 241, random_state: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """g241d-like data (same source): each class a mixture of two unit Gaussians whose means are 6 apart, each
    Gaussian of one class 2.5 from one of the other class (clusters that do not follow the classes: the
    cluster assumption misleads).  Labels -1 / +1."""
    rng = np.random.default_rng(random_state)
    u, v = np.linalg.qr(rng.normal(size=(n_features, 2)))[0].T
    means = {1: (np.zeros(n_features), 6.0 * u), -1: (2.5 * v, 6.0 * u + 2.5 * v)}
    y = np.repeat([-1, 1], [n_samples - n_samples // 2, n_samples // 2])
    comp = rng.integers(0, 2, size=n_samples)
    centres = np.array([means[int(c)][k] for c, k in zip(y, comp, strict=True)])
    return rng.normal(size=(n_samples, n_features)) + centres, y


def make_multilabel(n_samples: int = 300, n_features: int = 20, n_labels: int = 5, average_labels: int = 2,
                    random_state: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Multi-label data from :func:`sklearn.datasets.make_multilabel_classification` (every sample with at least
    one relevant label): ``X`` counts, ``Y`` an (n_samples, n_labels) 0/1 matrix."""
    from sklearn.datasets import make_multilabel_classification

    X, Y = make_multilabel_classification(n_samples=n_samples, n_features=n_features, n_classes=n_labels,
                                          n_labels=average_labels, allow_unlabeled=False, random_state=random_state)
    return X.astype(np.float64), Y

BENCHMARK_GENERATORS: dict[str, Generator] = GENERATORS
"""Generated data sets of benchmark experiments: ``name -> f(random_state=seed, **params) -> (X, y)``."""

TASK_GENERATORS: dict[str, Generator] = {
    **BENCHMARK_GENERATORS, "g241c": make_g241c, "g241d": make_g241d, "toy_bilinear": make_toy_bilinear,
    "multilabel": make_multilabel, **EXAMPLE_GENERATORS,
}
"""Generated data sets of task experiments: ``name -> f(random_state=seed, **params) -> (X, y)``, or
``(X, y, groups, privileged)`` for data with bags or a second view."""

#: The seed parameter every generator takes; the experiment's ``seed`` sets it.
SEED = "random_state"


def generator_parameters(generator: Generator) -> dict[str, Any]:
    """The parameters a configuration may give ``generator`` and their defaults (its seed excluded)."""
    params = inspect.signature(generator).parameters.values()
    return {p.name: p.default for p in params if p.name != SEED
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def describe_parameters(generator: Generator) -> str:
    """``"n_samples=7400, n_features=20"``: the parameters and their defaults, as errors list them."""
    return ", ".join(f"{k}={v!r}" for k, v in generator_parameters(generator).items()) or "(none)"


def generate(name: str, params: Mapping[str, Any], seed: int, path: str,
             generators: Mapping[str, Generator] = TASK_GENERATORS) -> tuple[Any, ...]:
    """The samples of generator ``name`` with ``params``, seeded by ``seed``: ``(X, y)``, or ``(X, y, groups,
    privileged)`` from a generator of data with bags or a second view.

    Raises
    ------
    ConfigError
        At ``path.params.<key>`` for a key the generator does not take (or the seed), at ``path.params`` for
        values it refuses; both messages list the generator's parameters and defaults.
    """
    generator = generators[name]
    accepted = generator_parameters(generator)
    listing = f"the parameters of {name!r} (with their defaults): {describe_parameters(generator)}"
    for key in params:
        if key == SEED:
            raise ConfigError(f"the generator's seed is the experiment's seed (experiment.seed), not a params key; "
                              f"{listing}", f"{path}.params.{key}")
        if key not in accepted:
            raise ConfigError(f"{key!r} is not a parameter of the generator {name!r}; {listing}",
                              f"{path}.params.{key}")
    try:
        X, y, *views = generator(**{SEED: seed, **params})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"the generator {name!r} refuses these values: {exc}; {listing}", f"{path}.params") from exc
    return (np.asarray(X, dtype=np.float64), np.asarray(y), *views)
