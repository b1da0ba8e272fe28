"""The plugin registry, and the extension story end to end: a third-party package's regularizer is
installed (as a distribution with an entry point), found by name from a config, and fits a model."""

import sys
import textwrap

import numpy as np
import pytest

import multikernel
from multikernel.config import config_from_dict
from multikernel.errors import PluginError
from multikernel.hookspecs import hookimpl
from multikernel.registry import Registry
from multikernel.runner import run_config

THIRD_PARTY = textwrap.dedent('''
    import numpy as np
    from multikernel import hookimpl
    from multikernel.interfaces import Regularizer

    class L2Ball(Regularizer):
        """The l2 ball of a given radius (l2-MKL), with the analytic update of Kloft et al."""

        name = "test_l2_ball"

        def __init__(self, radius=1.0):
            self.radius = radius

        def check(self, n_kernels):
            if not self.radius > 0:
                raise ValueError("radius must be positive")

        def initial(self, n_kernels):
            return np.full(n_kernels, self.radius / np.sqrt(n_kernels))

        def dual_bound(self, g):
            return self.radius * float(np.linalg.norm(np.maximum(g, 0.0)))

        def closed_form_update(self, mu, q):
            norms = mu * np.sqrt(np.maximum(q, 0.0))
            w = norms ** (2.0 / 3.0)
            total = np.linalg.norm(w)
            return self.initial(len(mu)) if total == 0 else self.radius * w / total

    @hookimpl
    def multikernel_regularizers():
        return {"test_l2_ball": L2Ball}
''')


@pytest.fixture()
def third_party(tmp_path, monkeypatch):
    """Install a plugin package the way pip would: a module plus a .dist-info with an entry point."""
    (tmp_path / "mk_thirdparty.py").write_text(THIRD_PARTY)
    dist = tmp_path / "mk_thirdparty-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mk-thirdparty\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[multikernel]\nl2ball = mk_thirdparty\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry()
    monkeypatch.setattr(multikernel.registry, "_REGISTRY", registry)
    yield registry
    sys.modules.pop("mk_thirdparty", None)


def test_builtins_are_registered():
    reg = Registry()
    assert {"average", "l1mkl"} <= set(reg.names("method"))
    assert {"linear", "poly", "rbf"} <= set(reg.names("kernel"))
    assert "csvc" in reg.names("loss")
    origins = {info.origin for info in reg.plugins()}
    assert all(o.startswith("multikernel:") for o in origins)


def test_unknown_name_lists_available():
    reg = Registry()
    with pytest.raises(PluginError, match=r"unknown method 'l1mk'\. Did you mean 'l1mkl'\?.*average"):
        reg.get("method", "l1mk")
    with pytest.raises(PluginError, match="unknown plugin kind"):
        reg.get("widget", "x")


def test_duplicate_names_are_refused():
    reg = Registry()

    class Dup:
        @hookimpl
        def multikernel_methods(self):
            from multikernel.plugins.methods import AVERAGE
            return {"average": AVERAGE}

    with pytest.raises(PluginError, match="two plugins provide the method 'average'"):
        reg.register(Dup(), name="dup")
    assert "average" in reg.names("method")  # the registry is left as it was


def test_bad_plugin_parameters():
    with pytest.raises(PluginError, match="bad parameters for kernel 'rbf'"):
        Registry().create("kernel", "rbf", bandwidth=3)


def test_third_party_regularizer_from_config(third_party):
    assert "test_l2_ball" in third_party.names("regularizer")
    info = [i for i in third_party.plugins("regularizer") if i.name == "test_l2_ball"][0]
    assert info.origin == "mk-thirdparty:l2ball"
    config = config_from_dict({
        "data": {"source": "breast_cancer"},
        "kernels": {"family": "rbf_poly"},
        "models": [{"method": "l1mkl", "label": "l2", "regularizer": {"name": "test_l2_ball",
                                                                    "params": {"radius": 1.0}},
                    "solver": {"name": "bcd"}}],
        "solver": {"max_iter": 50, "tol": 1e-2},
    })
    report = run_config(config, progress=False)
    model = report["models"][0]
    weights = np.array(model["repeats"][0]["weights"][0])
    assert model["accuracy_mean"] > 0.9
    assert np.linalg.norm(weights) == pytest.approx(1.0, rel=1e-6)
    assert np.count_nonzero(weights) == len(weights)  # l2 weights are dense, unlike l1


def test_third_party_regularizer_nested_grid_search(third_party, cancer):
    from sklearn.model_selection import GridSearchCV

    X, y = cancer
    reg = multikernel.create("regularizer", "test_l2_ball", radius=1.0)
    est = multikernel.MKLClassifier(kernels="rbf_poly", regularizer=reg, solver="bcd", max_iter=30, tol=1e-2)
    assert "regularizer__radius" in est.get_params()
    search = GridSearchCV(est, {"regularizer__radius": [0.5, 2.0]}, cv=2).fit(X, y)
    radius = search.best_estimator_.regularizer.radius
    assert radius in (0.5, 2.0)
    assert np.linalg.norm(search.best_estimator_.weights_) == pytest.approx(radius, rel=1e-6)
