"""Warnings of the IOKL estimators about settings that silently decide a fit's outcome."""

from __future__ import annotations

import warnings

import numpy as np

from multikernel.core.validation import shown

__all__ = ["BALANCE_WARNING", "labelled_ratio", "warn_one_class"]

BALANCE_WARNING = 0.2
"""How far from 1/2 the labelled ratio may be before semi-supervised IOKL warns that it imposes it."""


def labelled_ratio(yl: np.ndarray, n_free: int) -> float:
    """The fraction of positives among the labelled samples, with a warning when it is far from balanced.

    The balance constraint (the TSVM's, spec section 3.1) imposes the fraction on every candidate labelling of
    the unlabelled samples: a ratio read off a few imbalanced labels forces that imbalance on the transduction
    (30 labels with 10 % positives and 51 % positives in the unlabelled part gave an accuracy of 0.58, against
    0.69 for an SVM on the labelled samples and 0.88 with the true fraction).
    """
    frac = float(np.mean(yl > 0))
    if n_free and abs(frac - 0.5) > BALANCE_WARNING:
        warnings.warn(f"positive_fraction was left to the labelled ratio {frac:.3g} ({int(np.sum(yl > 0))} of "
                      f"{len(yl)} labelled samples are positive); the balance constraint forces this fraction on "
                      f"the {n_free} unlabelled samples. Pass positive_fraction (the thesis uses the true ratio "
                      f"of the unlabelled part) if the labelled samples are not a random draw of the classes",
                      UserWarning, stacklevel=3)
    return frac


def warn_one_class(predicted: np.ndarray, cause: str) -> None:
    """Warn when a fit predicts a single class on all of its own training bags or samples."""
    values = np.unique(predicted)
    if len(values) == 1:
        warnings.warn(f"the fitted classifier predicts every training bag as {shown(values[0])!r}: {cause}",
                      UserWarning, stacklevel=3)
