"""Multi-label ranking: MLR-L1, MLR-GL and multiple kernel MLR (Bucak's thesis, chapters 4-6).

* :class:`MultiLabelRanker` -- the scikit-learn estimator (also ``multikernel.MultiLabelRanker``);
* :class:`OneVsRestRanker`, :class:`MLkNN` -- the thesis's baselines (one-vs-rest SVM / PLATT, ML-kNN);
* :func:`solve_mlr` -- the block coordinate ascent of MLR-L1 and MLR-GL on one kernel;
* :class:`RankingInner` -- MLR-L1 as the inner problem of the library's outer MKL solvers (MK-MLR);
* :mod:`multikernel.ranking.metrics` -- the ranking measures scikit-learn lacks;
* :mod:`multikernel.ranking.labels` -- label matrices with unknown entries (``NaN``), the missing-label protocol.
"""

from multikernel.ranking.baselines import MLkNN, OneVsRestRanker
from multikernel.ranking.estimator import MultiLabelRanker, learn_thresholds
from multikernel.ranking.inner import RankingInner
from multikernel.ranking.labels import check_label_matrix, drop_positive_labels, signed_labels
from multikernel.ranking.metrics import (
    coverage_mulan,
    example_auc,
    example_average_precision,
    label_average_precision,
    one_error,
    ranking_scores,
    recall_at_k,
)
from multikernel.ranking.solver import RankingSolution, solve_mlr

__all__ = [
    "MultiLabelRanker",
    "learn_thresholds",
    "OneVsRestRanker",
    "MLkNN",
    "solve_mlr",
    "RankingSolution",
    "RankingInner",
    "check_label_matrix",
    "signed_labels",
    "drop_positive_labels",
    "one_error",
    "coverage_mulan",
    "example_auc",
    "example_average_precision",
    "label_average_precision",
    "recall_at_k",
    "ranking_scores",
]
