import os

import numpy as np
import pytest
from _mkl_testing import without_local_constants
from hypothesis import HealthCheck, settings
from sklearn.datasets import load_breast_cancer

# Hypothesis profiles (CONTRIBUTING.md): "ci", the default, keeps the whole suite within a few minutes and
# draws the same examples on every run; "thorough" draws hundreds of new examples per property and is run
# before a release (HYPOTHESIS_PROFILE=thorough, or pytest --hypothesis-profile=thorough).  Tests whose
# examples are costly take a fraction of max_examples (tests/_mkl_testing.py: scaled).
settings.register_profile("ci", max_examples=10, deadline=None, derandomize=True, print_blob=True)
settings.register_profile("thorough", max_examples=200, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def pytest_configure(config):
    # --hypothesis-profile (hypothesis' own option) wins over the environment variable.
    profile = config.getoption("hypothesis_profile", None) or os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(profile)
    if profile == "ci":
        without_local_constants()


@pytest.fixture(scope="session")
def cancer():
    """Standardized breast cancer data, 200 samples (shipped with scikit-learn), labels in {0, 1}."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), 200, replace=False)
    X = X[idx]
    X = (X - X.mean(0)) / X.std(0)
    return X, y[idx]
