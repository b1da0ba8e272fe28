"""Loading the samples a configuration names: built-in data sets, CSV files, LIBSVM files."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from sklearn import datasets as skdatasets

from multikernel.errors import ConfigError

__all__ = ["load_data", "make_ringnorm", "BUILTIN_LOADERS", "GENERATORS"]

BUILTIN_LOADERS = {
    "breast_cancer": skdatasets.load_breast_cancer,
    "wine": skdatasets.load_wine,
    "iris": skdatasets.load_iris,
    "digits": skdatasets.load_digits,
}


def load_data(source: str, format: str = "auto") -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Return ``(X, y, feature_names)`` for a built-in name or a file path.

    CSV files have a header row; the label is the last column, or the single column named ``label:*``.
    LIBSVM files are read with :func:`sklearn.datasets.load_svmlight_file` (densified).

    Raises
    ------
    ConfigError
        For an unknown name, a missing or unreadable file, or a file whose contents are not numeric.
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
        return _load_csv(path)
    try:
        X, y = skdatasets.load_svmlight_file(str(path))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot read {source!r} as a LIBSVM file: {exc}", "data.source") from exc
    X = X.toarray()
    return X, y, [f"x{j}" for j in range(X.shape[1])]


def _load_csv(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise ConfigError(f"{str(path)!r} has no data rows (a header row and one row per sample expected)",
                          "data.source")
    header, body = rows[0], rows[1:]
    label_cols = [j for j, h in enumerate(header) if h.startswith("label:")]
    if len(label_cols) > 1:
        raise ConfigError(f"{str(path)!r} has {len(label_cols)} label:* columns (multi-label data); "
                          f"`multikernel run` fits single-label classifiers: keep one label column",
                          "data.source")
    label = label_cols[0] if label_cols else len(header) - 1
    try:
        table = np.array([[float(v) for v in row] for row in body], dtype=np.float64)
    except ValueError as exc:
        raise ConfigError(f"{str(path)!r} contains a non-numeric value ({exc})", "data.source") from exc
    if table.ndim != 2 or table.shape[1] != len(header):
        raise ConfigError(f"{str(path)!r}: every row must have {len(header)} values like the header",
                          "data.source")
    features = [j for j in range(len(header)) if j != label]
    return table[:, features], table[:, label], [header[j] for j in features]


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
