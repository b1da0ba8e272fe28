"""Mahalanobis metric learning with LogDet divergences: ITML, ITML+ (privileged information), ITML-S.

The estimators follow metric-learn's conventions (a pairs form ``fit(pairs, pair_labels)`` and a supervised
form ``fit(X, y)``, ``transform``, ``get_mahalanobis_matrix``, ``pair_distance``, ``pair_score``) and
scikit-learn's. See ``docs/methods/itml.md``.
"""

from multikernel.metric._pairs import draw_pairs
from multikernel.metric.itml import ITML, ITMLS, ITML_Supervised, ITMLPlus, ITMLPlus_Supervised, ITMLS_Supervised

__all__ = ["ITML", "ITML_Supervised", "ITMLPlus", "ITMLPlus_Supervised", "ITMLS", "ITMLS_Supervised", "draw_pairs"]
