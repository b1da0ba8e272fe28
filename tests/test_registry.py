"""The plugin registry, and the extension story end to end: a third-party package's regularizer is
installed (as a distribution with an entry point), found by name from a config, and fits a model."""

import sys
import textwrap

import numpy as np
import pytest

import multikernel
from multikernel.config.runner import run_config
from multikernel.config.schema import config_from_dict
from multikernel.core.hookspecs import hookimpl
from multikernel.core.registry import Registry
from multikernel.errors import PluginError

THIRD_PARTY = textwrap.dedent('''
    import numpy as np
    from multikernel import hookimpl
    from multikernel.core.interfaces import Regularizer

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
    monkeypatch.setattr(multikernel.core.registry, "_REGISTRY", registry)
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


# --------------------------------------------------------------------------------------------------
# hook implementations are validated at registration, naming the plugin and the hook
# --------------------------------------------------------------------------------------------------
def _plugin(**hooks):
    """A plugin object whose attributes are the given hook implementations."""
    return type("Plugin", (), {name: staticmethod(hookimpl(fn)) for name, fn in hooks.items()})()


def _simplex_subclass(**attrs):
    from multikernel.plugins.regularizers import Simplex

    return type("MySimplex", (Simplex,), {"__module__": "my_pkg.mk", **attrs})


@pytest.mark.parametrize("hooks, fragment", [
    ({"multikernel_regularizer": lambda: {}},
     r"plugin 'bad' \(.*Plugin object\): 'multikernel_regularizer' is not a multikernel hook \(did you mean "
     r"'multikernel_regularizers'\?\)\. The hooks are multikernel_estimators, multikernel_kernel_builders, "),
    ({"multikernel_regularizers": lambda: [("x", None)]},
     r"plugin 'bad' .*, hook multikernel_regularizers returned \[\('x', None\)\] \(list\); a hook returns a mapping"),
    ({"multikernel_regularizers": lambda: None},
     r"hook multikernel_regularizers returned None \(NoneType\); a hook returns a mapping"),
    ({"multikernel_regularizers": lambda: {"mine": _simplex_subclass()()}},
     r"hook multikernel_regularizers: 'mine' maps to MySimplex\(\) \(MySimplex\), not a class; return the class "
     r"itself: \{'mine': MySimplex\}"),
    ({"multikernel_regularizers": lambda: {"mine": dict}},
     r"hook multikernel_regularizers: 'mine' maps to the class builtins\.dict, which is not a subclass of "
     r"multikernel\.Regularizer"),
    ({"multikernel_solvers": lambda: {"mine": _simplex_subclass()}},
     r"hook multikernel_solvers: 'mine' maps to the class my_pkg\.mk\.MySimplex, which is not a subclass of "
     r"multikernel\.Solver"),
    ({"multikernel_regularizers": lambda: {3: _simplex_subclass()}},
     r"hook multikernel_regularizers: the key 3 is not a name"),
    ({"multikernel_regularizers": lambda: {"mine": _simplex_subclass(name="other")}},
     r"hook multikernel_regularizers: 'mine' maps to the class my_pkg\.mk\.MySimplex, whose name attribute is "
     r"'other'"),
    ({"multikernel_methods": lambda: {"fast": "l1mkl"}},
     r"hook multikernel_methods: 'fast' maps to 'l1mkl' \(str\); a method is a multikernel\.Method"),
    ({"multikernel_kernel_families": lambda: {"fam": 3}},
     r"hook multikernel_kernel_families: 'fam' maps to 3 \(int\); a kernel family is a function"),
    ({"multikernel_regularizers": lambda: 1 / 0},
     r"plugin 'bad' .*, hook multikernel_regularizers raised ZeroDivisionError"),
])
def test_malformed_hooks_fail_at_registration(hooks, fragment):
    reg = Registry()
    before = {kind: reg.names(kind) for kind in ("regularizer", "solver", "method", "family")}
    plugin = _plugin(**hooks)
    with pytest.raises(PluginError, match=fragment):
        reg.register(plugin, name="bad")
    assert not reg._pm.is_registered(plugin)  # the registry is left as it was
    assert {kind: reg.names(kind) for kind in before} == before


def test_method_key_must_match_its_name():
    from multikernel.plugins.methods import AVERAGE

    with pytest.raises(PluginError, match="the key 'avg' maps to the method named 'average'"):
        Registry().register(_plugin(multikernel_methods=lambda: {"avg": AVERAGE}), name="bad")


def test_a_class_has_one_name():
    cls = _simplex_subclass()
    with pytest.raises(PluginError, match=r"the class my_pkg\.mk\.MySimplex is registered twice, as 'a' and 'b'"):
        Registry().register(_plugin(multikernel_regularizers=lambda: {"a": cls, "b": cls}), name="twice")


def test_installed_plugin_with_a_misspelled_hook(tmp_path, monkeypatch):
    (tmp_path / "mk_typo.py").write_text("from multikernel import hookimpl\n\n@hookimpl\n"
                                         "def multikernel_solver():\n    return {}\n")
    dist = tmp_path / "mk_typo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mk-typo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[multikernel]\ntypo = mk_typo\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(PluginError, match=r"plugin 'mk-typo:typo' \(module mk_typo\): 'multikernel_solver' is "
                                              r"not a multikernel hook \(did you mean 'multikernel_solvers'\?\)"):
            Registry()
    finally:
        sys.modules.pop("mk_typo", None)


# --------------------------------------------------------------------------------------------------
# one source of truth for names
# --------------------------------------------------------------------------------------------------
def test_registration_sets_the_name():
    cls = _simplex_subclass()
    assert cls.name == "simplex"  # inherited, until registered
    reg = Registry()
    reg.register(_plugin(multikernel_regularizers=lambda: {"my_simplex": cls}), name="mine")
    assert cls.name == "my_simplex" and reg.name_of(cls()) == "my_simplex"
    assert reg.get("regularizer", "my_simplex") is cls


def test_unregistered_subclass_is_not_its_parent(cancer, tmp_path):
    from multikernel.plugins.regularizers import Simplex

    Unregistered = _simplex_subclass()
    assert multikernel.get_registry().name_of(Simplex()) == "simplex"
    with pytest.raises(PluginError, match=r"my_pkg\.mk\.MySimplex is not a registered plugin\. It subclasses the "
                                          r"registered regularizer 'simplex'.*a multikernel_regularizers\(\) "
                                          r"returning \{'my_name': MySimplex\}"):
        multikernel.get_registry().name_of(Unregistered())
    X, y = cancer
    est = multikernel.MKLClassifier(regularizer=Unregistered(), tol=1e-2).fit(X, y)
    with pytest.raises(PluginError, match=r"MySimplex is not a registered plugin"):
        est.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_registered_subclass_round_trips_as_itself(cancer, tmp_path, monkeypatch):
    from multikernel.plugins.regularizers import Simplex

    class Sparse(Simplex):
        """A subclass registered under its own name: it saves and loads as itself."""

    registry = Registry()
    monkeypatch.setattr(multikernel.core.registry, "_REGISTRY", registry)
    multikernel.register_plugin(_plugin(multikernel_regularizers=lambda: {"sparse_simplex": Sparse}), name="sparse")
    X, y = cancer
    est = multikernel.MKLClassifier(regularizer=Sparse(), tol=1e-2).fit(X, y)
    est.save(tmp_path / "m.npz")
    loaded = multikernel.MKLClassifier.load(tmp_path / "m.npz")
    assert type(loaded.regularizer) is Sparse
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
