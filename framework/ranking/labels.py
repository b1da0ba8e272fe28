"""Label matrices of multi-label ranking: checks, the signed encoding of the solvers, the missing-label protocol.

A training label matrix ``Y`` of shape (n_samples, n_labels) holds 1 (relevant), 0 (irrelevant) and, for an
unknown assignment, ``NaN``: an unknown label is neither relevant nor irrelevant and enters no
(relevant, irrelevant) pair.  ``NaN`` is the marker because it is what scikit-learn and pandas users already
write for a missing value, it cannot be mistaken for a label (``-1`` can: many multi-label tools, and the
thesis, write irrelevant labels as -1), and it travels with ``Y`` through scikit-learn's cross-validation
splitters, which a separate mask argument would not do without metadata routing.

The solvers use the signed encoding ``Ysign``: +1 relevant, -1 irrelevant, 0 unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_label_matrix", "signed_labels", "drop_positive_labels"]


def check_label_matrix(Y: Any, n_samples: int | None = None, *, allow_missing: bool = True,
                       what: str = "Y") -> np.ndarray:
    """A dense float64 copy of a 0/1 label matrix, with ``NaN`` for unknown entries.

    Parameters
    ----------
    Y : array-like or scipy sparse matrix of shape (n_samples, n_labels)
        1 = relevant, 0 = irrelevant, ``NaN`` = unknown (when ``allow_missing``).  A sparse matrix has 0 in
        its implicit entries; explicitly stored ``NaN`` values mark unknown entries.
    n_samples : int, optional
        The number of rows ``Y`` must have (the rows of ``X``).
    allow_missing : bool, default=True
        Whether ``NaN`` entries are allowed (test labels and evaluation measures need complete labels).
    what : str
        The name used in error messages.

    Raises
    ------
    ValueError
        For a shape other than 2-D, at least two labels, a row count other than ``n_samples``, and values
        other than 0, 1 (and ``NaN``), with what to do about the common ones (-1 for irrelevant labels,
        class labels instead of an indicator matrix).
    """
    if hasattr(Y, "toarray"):
        Y = Y.toarray()
    if np.asarray(Y).dtype.kind == "c":  # float64 conversion would drop the imaginary parts silently
        raise ValueError(f"{what} holds complex numbers; it must hold 0 (irrelevant), 1 (relevant) and NaN "
                         f"(unknown)")
    try:
        arr = np.array(Y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a numeric 0/1 label-indicator matrix of shape (n_samples, n_labels); "
                         f"it could not be converted to numbers ({exc})") from exc
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 0/1 label-indicator matrix of shape (n_samples, n_labels); got an "
                         f"array of shape {arr.shape}. Class labels y can be turned into one with "
                         f"sklearn.preprocessing.MultiLabelBinarizer (or LabelBinarizer)")
    if arr.shape[1] < 2:
        raise ValueError(f"{what} has {arr.shape[1]} label column(s); ranking labels needs at least two")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} samples but {what} has {arr.shape[0]} rows; they must match")
    missing = np.isnan(arr)
    if missing.any() and not allow_missing:
        raise ValueError(f"{what} has {int(missing.sum())} unknown (NaN) entries; complete labels are needed here")
    if np.isinf(arr).any():
        raise ValueError(f"{what} has infinite values; it must hold 0 and 1 (and NaN for unknown labels)")
    observed = arr[~missing]
    bad = ~np.isin(observed, (0.0, 1.0))
    if bad.any():
        values = np.unique(observed[bad])
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (" ..." if len(values) > 6 else "")
        hint = ""
        if np.all(np.isin(observed, (-1.0, 0.0, 1.0))) and (observed == -1).any():
            hint = (" If -1 means 'irrelevant' (the {-1, +1} encoding), pass (Y > 0).astype(int); if it means "
                    "'unknown', replace it by NaN")
        elif np.any(values != np.round(values)):
            hint = " Continuous values are not labels (Unknown label type: continuous)"
        raise ValueError(f"{what} must hold only 0 (irrelevant), 1 (relevant) and NaN (unknown); found "
                         f"{shown}.{hint}")
    return arr


def signed_labels(Y: np.ndarray) -> np.ndarray:
    """The solvers' encoding of a checked label matrix: +1 relevant, -1 irrelevant, 0 unknown (``NaN``)."""
    return np.where(np.isnan(Y), 0.0, np.where(Y > 0, 1.0, -1.0))


def drop_positive_labels(Y: Any, fraction: float, random_state: Any = None) -> np.ndarray:
    """The thesis's missing-label protocol (section 5.2): remove a fraction of each sample's relevant labels.

    For each row, ``round(fraction * a)`` of its ``a`` relevant labels, chosen at random, become 0 (unmarked,
    as in the thesis: the learner does not know which labels were removed), keeping at least one relevant
    label per row that had one.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_labels)
        A complete 0/1 label matrix.
    fraction : float in [0, 1)
        0.2, 0.4 and 0.6 are the thesis's cases 2-4.
    random_state : int, numpy Generator or None

    Returns
    -------
    ndarray of shape (n_samples, n_labels), float64
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction must be in [0, 1); got {fraction!r}")
    Y = check_label_matrix(Y, allow_missing=False)
    rng = np.random.default_rng(random_state)
    out = Y.copy()
    for i in range(len(out)):
        relevant = np.flatnonzero(out[i] > 0)
        n_drop = min(int(round(fraction * len(relevant))), len(relevant) - 1)
        if n_drop > 0:
            out[i, rng.choice(relevant, n_drop, replace=False)] = 0.0
    return out
