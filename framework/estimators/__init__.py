"""Layer 4, the estimators: scikit-learn front ends over the fit core, and their safe persistence."""

from multikernel.estimators.classifier import MKLClassifier
from multikernel.estimators.classifier_cv import MKLClassifierCV

__all__ = ["MKLClassifier", "MKLClassifierCV"]
