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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from multikernel.config.datasets import BUILTIN_LOADERS, load_data
from multikernel.config.generators import TASK_GENERATORS, generate, make_g241c, make_g241d, make_multilabel
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
                   positive: Sequence[Any] = (), shape: Sequence[int] = (), seed: int = 0,
                   path: str = "data") -> TaskData:
    """The samples ``source`` names (a built-in set, a generator or a file), with the selections applied.

    ``shape`` (two positive integers ``[p, q]``) turns each sample's ``p * q`` features into a ``p x q`` matrix,
    filled row by row (C order): ``features = ["pix"]`` and ``shape = [16, 15]`` give mfeat's 240 pixel
    averages as the 16 x 15 images they are.

    Raises
    ------
    ConfigError
        At ``path.<key>`` (``path`` is the key path of the data set entry).
    """
    if source in TASK_GENERATORS:
        X, y, *views = generate(source, params or {}, seed, path)
        data = TaskData(X, y, *views)
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
    if shape:
        data.X = _reshaped(data.X, shape, features, f"{path}.shape")
    if not np.all(np.isfinite(data.X)):
        raise ConfigError(f"the data in {source!r} contain NaN or infinite feature values; impute or drop them "
                          f"first", f"{path}.source")
    return data


def _reshaped(X: np.ndarray, shape: Sequence[int], features: Sequence[str], path: str) -> np.ndarray:
    """``X`` (n, d) as n matrices of ``shape`` (``d`` must be their size), row by row."""
    if len(shape) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise ConfigError(f"two positive integers [rows, columns] are needed; got {list(shape)!r}", path)
    if X.ndim != 2:
        raise ConfigError(f"reshapes feature vectors; these samples already have the shape {X.shape[1:]}", path)
    rows, cols = shape
    if rows * cols != X.shape[1]:
        chosen = f"the columns of features = {list(features)!r}" if features else "the feature columns"
        raise ConfigError(f"{list(shape)!r} holds {rows * cols} values per sample, but {chosen} number "
                          f"{X.shape[1]}; give a shape whose product is {X.shape[1]}", path)
    return X.reshape(len(X), rows, cols)

