import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer


@pytest.fixture(scope="session")
def cancer():
    """Standardized breast cancer data, 200 samples (shipped with scikit-learn), labels in {0, 1}."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), 200, replace=False)
    X = X[idx]
    X = (X - X.mean(0)) / X.std(0)
    return X, y[idx]
