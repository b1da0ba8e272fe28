"""A fit writes nothing to the process's stdout (programs pipe it; ``plugins --json`` prints JSON there).

HiGHS (highspy >= 1.12) prints a version banner from C++ on its first instance, below Python's ``sys.stdout``,
so only a fresh process sees it: the check runs one.
"""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import numpy as np
from sklearn.datasets import make_classification
from multikernel import MKLClassifier
X, y = make_classification(60, 4, random_state=0)
MKLClassifier(method="l1mkl").fit(X, y)
print("done")
"""


def test_a_level_method_fit_prints_nothing_to_stdout():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True)
    assert out.stdout == "done\n"
