"""Data of the task experiments: labelled features, multi-label matrices, bags, privileged views, generators.

:func:`load_task_data` returns a :class:`TaskData` for one ``[[datasets]]`` entry of an experiment whose
``[task]`` names a task kind (:data:`multikernel.core.tasks.TASK_KINDS`), and checks that the data suit the kind
(a ranking task needs a label matrix, a multiple-instance task needs bags, ...).

CSV files (a header row is required here: the columns are found by name):

* ``label:<name>`` columns: a 0/1 label matrix (multi-label data such as yeast and emotions), else the column
  ``label`` (or the last column): one class label per row;
* a ``bag`` column: the bag of each instance (multiple-instance data such as musk1), its label the bag's;
* every other column is a feature; ``features`` keeps the columns whose names start with one of the given
  prefixes (``features = ["fou"]`` for the Fourier view of mfeat), ``privileged`` forms the privileged view the
  same way (metric learning with privileged information).

Built-in scikit-learn sets (``digits``, ``iris``, ...) and generators (:data:`TASK_GENERATORS`) are named as in
benchmark experiments.  ``classes`` keeps the samples of the listed classes (``[1, 7]``: a digits pair) and
``positive`` turns the labels into 1 (listed) and 0 (the rest).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from multikernel.config.datasets import BUILTIN_LOADERS, GENERATORS, load_data
from multikernel.config.example_data import EXAMPLE_GENERATORS
from multikernel.errors import ConfigError

__all__ = ["TaskData", "TASK_GENERATORS", "load_task_data", "read_task_csv", "make_g241c", "make_g241d",
           "make_multilabel"]


@attrs.define
class TaskData:
    """The samples of one data set of a task experiment.

    ``X`` has shape (n, d) (or (n, p, q): matrix samples); ``y`` is (n,) class labels or (n, L) a 0/1 label
    matrix; ``groups`` the bag id of each instance (multiple-instance data); ``privileged`` a second view
    (n, d') seen in training only.
    """

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray | None = None
    privileged: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    def subset(self, rows: np.ndarray) -> TaskData:
        """The samples ``rows`` (their labels, bags and privileged view with them)."""
        return TaskData(self.X[rows], self.y[rows], None if self.groups is None else self.groups[rows],
                        None if self.privileged is None else self.privileged[rows])


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


def _toy_bilinear(**params: Any) -> tuple[np.ndarray, np.ndarray]:
    from multikernel.bilinear.datasets import make_toy_bilinear  # the task package, loaded when asked for

    return make_toy_bilinear(**params)


TASK_GENERATORS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    **GENERATORS, "g241c": make_g241c, "g241d": make_g241d, "toy_bilinear": _toy_bilinear,
    "multilabel": make_multilabel, **EXAMPLE_GENERATORS,
}
"""Generated data sets of task experiments: ``name -> f(random_state=seed, **params) -> (X, y)``, or
``(X, y, groups, privileged)`` for data with bags or a second view."""


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_task_csv(path: str | Path, features: Sequence[str] = (), privileged: Sequence[str] = ()) -> TaskData:
    """Read a CSV file with a header (see the module docstring for the columns).

    Raises
    ------
    ValueError
        For a file without a header or rows, a row of the wrong length, a feature or label matrix entry that is
        not a number; the message names ``file:line``.
    """
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        rows = [r for r in csv.reader(fh) if any(f.strip() for f in r)]
    if len(rows) < 2:
        raise ValueError(f"{path}: a header row and at least one data row are needed")
    header = [h.strip() for h in rows[0]]
    if all(_number(h) for h in header):
        raise ValueError(f"{path}: the first row is numbers; task data need a header naming the columns "
                         f"(label:<name> columns, label, bag, features)")
    body = rows[1:]
    for i, r in enumerate(body):
        if len(r) != len(header):
            raise ValueError(f"{path}:{i + 2}: {len(r)} fields where the header has {len(header)}")
    label_matrix = [j for j, h in enumerate(header) if h.startswith("label:")]
    label = header.index("label") if "label" in header else (None if label_matrix else len(header) - 1)
    bag = header.index("bag") if "bag" in header else None
    others = [j for j in range(len(header)) if j not in label_matrix and j != label and j != bag]

    def pick(prefixes: Sequence[str]) -> list[int]:
        return [j for j in others if any(header[j].startswith(p) for p in prefixes)]

    feature_cols = pick(features) if features else [j for j in others if j not in pick(privileged)]
    if not feature_cols:
        raise ValueError(f"{path}: no feature column" + (f" starts with {list(features)}" if features else ""))

    def numbers(cols: list[int]) -> np.ndarray:
        out = np.empty((len(body), len(cols)))
        for i, r in enumerate(body):
            for k, j in enumerate(cols):
                try:
                    out[i, k] = float(r[j])
                except ValueError:
                    raise ValueError(f"{path}:{i + 2}: the value {r[j]!r} of column {header[j]!r} is not a "
                                     f"number") from None
        return out

    if label_matrix:
        y = numbers(label_matrix)
    else:
        labels = [r[label].strip() for r in body]
        y = np.array([float(v) for v in labels]) if all(_number(v) for v in labels) else np.array(labels)
    groups = np.array([r[bag].strip() for r in body]) if bag is not None else None
    if groups is not None and all(_number(g) for g in groups):
        groups = groups.astype(np.float64)
    priv = numbers(pick(privileged)) if privileged else None
    if privileged and priv is not None and priv.shape[1] == 0:
        raise ValueError(f"{path}: no column starts with the privileged prefixes {list(privileged)}")
    return TaskData(numbers(feature_cols), y, groups, priv)


def load_task_data(source: str, *, format: str = "auto", params: dict[str, Any] | None = None,
                   features: Sequence[str] = (), privileged: Sequence[str] = (), classes: Sequence[Any] = (),
                   positive: Sequence[Any] = (), seed: int = 0, path: str = "data") -> TaskData:
    """The samples ``source`` names (a built-in set, a generator or a file), with the selections applied.

    Raises
    ------
    ConfigError
        At ``path.<key>`` (``path`` is the key path of the data set entry).
    """
    if source in TASK_GENERATORS:
        try:
            X, y, *views = TASK_GENERATORS[source](**{"random_state": seed, **(params or {})})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad parameters for generator {source!r}: {exc}", f"{path}.params") from exc
        data = TaskData(np.asarray(X, dtype=np.float64), np.asarray(y), *views)
    elif source in BUILTIN_LOADERS or format == "libsvm" or (format == "auto" and not source.lower().endswith(".csv")):
        try:
            X, y, _ = load_data(source, format)
        except ConfigError as exc:
            raise ConfigError(str(exc).removeprefix("data.source: "), f"{path}.source") from exc
        data = TaskData(X, y)
    else:
        try:
            data = read_task_csv(source, features, privileged)
        except (ValueError, OSError) as exc:
            raise ConfigError(str(exc), f"{path}.source") from exc
    if (features or privileged) and source in TASK_GENERATORS | BUILTIN_LOADERS:
        raise ConfigError("features and privileged select CSV columns by name; this source has none",
                          f"{path}.features" if features else f"{path}.privileged")
    if classes:
        if data.y.ndim != 1:
            raise ConfigError("classes selects single-label samples; this data set has a label matrix",
                              f"{path}.classes")
        missing = [c for c in classes if not np.any(data.y == c)]
        if missing:
            raise ConfigError(f"no sample of class(es) {missing}; the classes are {np.unique(data.y).tolist()}",
                              f"{path}.classes")
        keep = np.isin(data.y, classes)
        data = TaskData(data.X[keep], data.y[keep], None if data.groups is None else data.groups[keep],
                        None if data.privileged is None else data.privileged[keep])
    if positive:
        if data.y.ndim != 1:
            raise ConfigError("positive binarizes single labels; this data set has a label matrix",
                              f"{path}.positive")
        data.y = np.isin(data.y, positive).astype(np.int64)
    if not np.all(np.isfinite(data.X)):
        raise ConfigError(f"the data in {source!r} contain NaN or infinite feature values; impute or drop them "
                          f"first", f"{path}.source")
    return data
