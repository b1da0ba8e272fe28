"""Loading the samples a configuration names: built-in data sets, CSV files, LIBSVM files."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from sklearn import datasets as skdatasets

from multikernel.errors import ConfigError

__all__ = ["load_data", "read_csv", "make_ringnorm", "BUILTIN_LOADERS", "GENERATORS"]

BUILTIN_LOADERS = {
    "breast_cancer": skdatasets.load_breast_cancer,
    "wine": skdatasets.load_wine,
    "iris": skdatasets.load_iris,
    "digits": skdatasets.load_digits,
}


def load_data(source: str, format: str = "auto") -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Return ``(X, y, feature_names)`` for a built-in name or a file path.

    CSV files hold one row per sample; the label is the last column, or the single column whose header
    starts with ``label:``.  The first row is a header (see :func:`read_csv` for the rule); blank lines
    are ignored.  Labels that are all numbers are returned as floats, otherwise as the strings given
    (the estimator encodes them as scikit-learn does).  LIBSVM files are read with
    :func:`sklearn.datasets.load_svmlight_file` (densified).

    Raises
    ------
    ConfigError
        For an unknown name, a missing or unreadable file, or a file whose contents cannot be used; for
        CSV files the message names ``file:line`` of the offending row.
    """
    if source in BUILTIN_LOADERS:
        bunch = BUILTIN_LOADERS[source]()
        names = [str(n) for n in getattr(bunch, "feature_names", [])] or [f"x{j}" for j in
                                                                            range(bunch.data.shape[1])]
        return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target), names
    path = Path(source)
    if not path.exists():
        raise ConfigError(f"{source!r} is neither a built-in data set ({', '.join(BUILTIN_LOADERS)}) nor an "
                          f"existing file", "data.source")
    fmt = format if format != "auto" else ("csv" if path.suffix.lower() == ".csv" else "libsvm")
    if fmt == "csv":
        try:
            return read_csv(path)
        except ValueError as exc:
            raise ConfigError(str(exc), "data.source") from exc
    try:
        X, y = skdatasets.load_svmlight_file(str(path))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot read {source!r} as a LIBSVM file: {exc}", "data.source") from exc
    X = X.toarray()
    return X, y, [f"x{j}" for j in range(X.shape[1])]


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _has_header(rows: list[list[str]]) -> bool:
    """The header rule of :func:`read_csv`, applied to the non-blank rows."""
    first = rows[0]
    if any(f.strip().startswith("label:") for f in first):
        return True
    if not all(_is_number(f) for f in first[:-1]):
        return True
    # Only the last field is not a number: a header if the labels below are numbers, else a data row
    # with a string label.
    return not _is_number(first[-1]) and all(_is_number(r[-1]) for r in rows[1:] if len(r) == len(first))


def read_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a CSV file of samples: ``(X, y, feature_names)``.

    - One row per sample, comma-separated; blank lines (anywhere, such as trailing ones) are ignored.
    - **Header.** The first non-blank row is a header when one of its fields starts with ``label:``, when
      one of its fields other than the last is not a number, or when only its last field is not a number
      and every label below is a number.  A first row of numbers, or of numbers and a string label, is
      data: without a header, the features are named ``x0, x1, ...``.
    - **Label.** The last column, or the single column whose header starts with ``label:``.  Labels are
      floats when every label is a number, else the strings as given (surrounding spaces removed).
    - **Features** must be numbers (``nan`` and ``inf`` are read; runs refuse them).

    Raises
    ------
    ValueError
        For a file without data rows, a row with a different number of fields than the first one, a
        feature that is not a number, or an empty label; the message names ``file:line``.
    """
    path = Path(path)
    numbered: list[tuple[int, list[str]]] = []
    with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: ignore a BOM (spreadsheet exports)
        reader = csv.reader(fh, strict=True)
        start = 1  # the line where the next row starts (a quoted field may span lines)
        try:
            for row in reader:
                if any(f.strip() for f in row):
                    numbered.append((start, row))
                start = reader.line_num + 1
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: cannot read as a UTF-8 CSV file ({exc})") from exc
        except csv.Error as exc:
            raise ValueError(f"{path}:{start}: cannot read as CSV ({exc})") from exc
    if not numbered:
        raise ValueError(f"{path}: the file is empty (one row per sample expected)")
    width = len(numbered[0][1])
    for line, row in numbered:
        if len(row) != width:
            raise ValueError(f"{path}:{line}: {len(row)} fields where the first row has {width}; every row needs "
                             f"one value per column")
    header = _has_header([row for _, row in numbered])
    names = [f.strip() for f in numbered[0][1]] if header else [f"x{j}" for j in range(width - 1)] + ["label"]
    body = numbered[1:] if header else numbered
    if not body:
        raise ValueError(f"{path}: no data rows below the header {','.join(names)!r}")
    label_cols = [j for j, h in enumerate(names) if header and h.startswith("label:")]
    if len(label_cols) > 1:
        raise ValueError(f"{path}: {len(label_cols)} label:* columns (multi-label data); an MKL benchmark fits "
                         f"single-label classifiers: keep one label column, or compare multi-label learners "
                         f"(multi-label MKL: ml_mkl_sum, ml_mkl_sa, mkl) in a task experiment ([task] kind = "
                         f"'multilabel_ranking')")
    if width < 2:
        raise ValueError(f"{path}: one column only; a feature column and a label column are needed")
    label = label_cols[0] if label_cols else width - 1
    features = [j for j in range(width) if j != label]
    X = np.empty((len(body), len(features)))
    labels = []
    for i, (line, row) in enumerate(body):
        for k, j in enumerate(features):
            try:
                X[i, k] = float(row[j])
            except ValueError:
                raise ValueError(f"{path}:{line}: the value {row[j]!r} of column {names[j]!r} is not a number"
                                 ) from None
        value = row[label].strip()
        if not value:
            raise ValueError(f"{path}:{line}: the label (column {names[label]!r}) is empty")
        labels.append(value)
    y = (np.array([float(v) for v in labels]) if all(_is_number(v) for v in labels) else np.array(labels))
    return X, y, [names[j] for j in features]


def make_ringnorm(n_samples: int = 7400, n_features: int = 20,
                  random_state: int | np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Breiman's *ringnorm* problem: two Gaussians, one inside the "ring" of the other.

    Class ``+1`` is ``N(0, 4 I)``; class ``-1`` is ``N((a, ..., a), I)`` with ``a = 2 / sqrt(n_features)``
    (the recipe of Breiman, "Bias, variance and arcing classifiers", 1996; with the defaults, the 7400 x 20
    set of the IDA benchmark of Raetsch et al.).  The classes have ``n_samples // 2`` and
    ``n_samples - n_samples // 2`` samples, in random order.

    Parameters
    ----------
    n_samples : int, default=7400
    n_features : int, default=20
    random_state : int, numpy Generator or None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), labels in {-1, +1}
    """
    if int(n_samples) < 2 or int(n_features) < 1:
        raise ValueError(f"make_ringnorm needs n_samples >= 2 and n_features >= 1; got {n_samples}, {n_features}")
    n_samples, n_features = int(n_samples), int(n_features)
    rng = np.random.default_rng(random_state)
    n_pos = n_samples // 2
    a = 2.0 / np.sqrt(n_features)
    inner = rng.normal(0.0, 2.0, size=(n_pos, n_features))  # standard deviation 2: covariance 4 I
    outer = rng.normal(a, 1.0, size=(n_samples - n_pos, n_features))
    X = np.vstack([inner, outer])
    y = np.concatenate([np.ones(n_pos), -np.ones(n_samples - n_pos)])
    order = rng.permutation(n_samples)
    return X[order], y[order]


GENERATORS = {"ringnorm": make_ringnorm}
"""Generated data sets usable by name in experiment configurations: ``name -> f(**params) -> (X, y)``."""
