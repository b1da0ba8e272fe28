"""Layer 4, the estimators: scikit-learn front ends over the fit core, and their safe persistence."""

from multikernel.estimators.classifier import MKLClassifier

__all__ = ["MKLClassifier"]
