"""Low-rank bilinear classification of matrix-valued samples (Kobayashi, IJCV 2014)."""

from multikernel.bilinear.solver import BilinearFit, fit_trace_norm

__all__ = ["BilinearFit", "fit_trace_norm"]
