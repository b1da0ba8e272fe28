"""Multi-label ranking: MLR-L1, MLR-GL and multiple kernel MLR (Bucak's thesis, chapters 4-6)."""

from multikernel.ranking.labels import check_label_matrix, drop_positive_labels, signed_labels
from multikernel.ranking.solver import RankingSolution, solve_mlr

__all__ = ["check_label_matrix", "drop_positive_labels", "signed_labels", "RankingSolution", "solve_mlr"]
