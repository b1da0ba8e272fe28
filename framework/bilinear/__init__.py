"""Low-rank bilinear classification of matrix-valued samples (Kobayashi, IJCV 2014)."""

from multikernel.bilinear.crossmodal import CrossModalEmbedding, cmc_curve, retrieval_ranks
from multikernel.bilinear.datasets import make_toy_bilinear
from multikernel.bilinear.estimators import BilinearClassifier, BilinearSVMClassifier, check_matrix_samples
from multikernel.bilinear.hmkl import HMKLClassifier, kernel_transforms
from multikernel.bilinear.smoothing import knn_laplacian, second_difference_laplacian
from multikernel.bilinear.solver import BilinearFit, fit_trace_norm

__all__ = ["BilinearClassifier", "BilinearSVMClassifier", "BilinearFit", "fit_trace_norm", "check_matrix_samples",
           "make_toy_bilinear", "knn_laplacian", "second_difference_laplacian", "HMKLClassifier",
           "kernel_transforms", "CrossModalEmbedding", "retrieval_ranks", "cmc_curve"]
