"""Input-output kernel learning (Xu, Tsang and Xu, ICDM 2012; Xu's thesis, chapter 4).

One engine for learning with ambiguous labels: semi-supervised learning, multiple-instance learning and
maximum-margin clustering.  Candidate label vectors (or key-instance choices) define input-output kernels
``K_m o (y_t y_t')`` (:class:`IOStack`, never materialised), whose group-sparse MKL problem (IOKL-HM / IOKL-SM)
is solved by the core's outer solvers with the group regularizers of :mod:`multikernel.plugins.iokl`, and
candidates are added by a cutting-plane loop (Algorithm 3).
"""

from multikernel.iokl.baselines import MISVM, SILSVM, MIKernelSVM, miSVM
from multikernel.iokl.cutting_plane import CuttingPlaneResult, cutting_plane, solve_candidates
from multikernel.iokl.estimators import (
    IOKLClustering,
    IOKLMultipleInstanceClassifier,
    IOKLSemiSupervisedClassifier,
    default_kernels,
)
from multikernel.iokl.inner import SimplexRidge
from multikernel.iokl.labels import CandidateSet, KeyInstanceSet, LabelSet
from multikernel.iokl.mica import MICA
from multikernel.iokl.missvm import MissSVM
from multikernel.iokl.set_kernels import NSK, STK
from multikernel.iokl.sparse_mil import sbMIL, sMIL, stMIL
from multikernel.iokl.stack import IOColumns, IOStack

__all__ = ["CandidateSet", "CuttingPlaneResult", "IOColumns", "IOKLClustering", "IOKLMultipleInstanceClassifier",
           "IOKLSemiSupervisedClassifier", "IOStack", "KeyInstanceSet", "LabelSet", "SimplexRidge", "cutting_plane",
           "default_kernels", "solve_candidates",
           # the multiple-instance baselines and the peers' MIL methods, all fit(X, y, bags)
           "MICA", "MIKernelSVM", "MISVM", "MissSVM", "NSK", "SILSVM", "STK", "miSVM", "sMIL", "sbMIL", "stMIL"]
