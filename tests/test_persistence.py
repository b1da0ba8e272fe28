"""save/load: a format that runs no code, with clear errors for foreign, corrupted or newer files."""

import json
import zipfile

import numpy as np
import pytest
from sklearn.datasets import load_iris

from multikernel import MKLClassifier
from multikernel.errors import ModelFormatError
from multikernel.plugins.kernels import LinearKernel, RBFKernel


@pytest.mark.parametrize("make", [
    lambda: MKLClassifier(max_iter=30, tol=1e-2, standardize=True),
    lambda: MKLClassifier(kernels=[RBFKernel(), LinearKernel(columns=[0, 2])], normalize="unit_diagonal",
                          method="average"),
    lambda: MKLClassifier(kernels="simplemkl", kernel_params={"sigmas": [1.0, 4.0], "degrees": [1]},
                          max_iter=20, tol=1e-2, regularizer="simplex"),
])
def test_round_trip(tmp_path, cancer, make):
    X, y = cancer
    est = make().fit(X, y)
    path = tmp_path / "model.npz"
    est.save(path)
    loaded = MKLClassifier.load(path)
    np.testing.assert_allclose(loaded.decision_function(X), est.decision_function(X), rtol=1e-10)
    np.testing.assert_array_equal(loaded.weights_, est.weights_)
    assert loaded.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    assert loaded.kernel_names_ == est.kernel_names_
    with np.load(path, allow_pickle=False) as data:  # readable without pickle
        assert "__meta__" in data.files


def test_round_trip_multiclass(tmp_path):
    X, y = load_iris(return_X_y=True)
    est = MKLClassifier(standardize=True, max_iter=30, tol=1e-2).fit(X, y)
    est.save(tmp_path / "iris.npz")
    loaded = MKLClassifier.load(tmp_path / "iris.npz")
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))


def _rewrite_meta(src, dst, change):
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(bytes(arrays["__meta__"]).decode())
    change(meta)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(dst, **arrays)


def test_incompatible_version_and_corruption(tmp_path, cancer):
    X, y = cancer
    path = tmp_path / "m.npz"
    MKLClassifier(max_iter=5).fit(X, y).save(path)

    newer = tmp_path / "newer.npz"
    _rewrite_meta(path, newer, lambda m: m.update(format_version=99, version="9.0"))
    with pytest.raises(ModelFormatError, match="format 99 .*multikernel 9.0.*Refit"):
        MKLClassifier.load(newer)

    foreign = tmp_path / "foreign.npz"
    _rewrite_meta(path, foreign, lambda m: m.update(library="other"))
    with pytest.raises(ModelFormatError, match="not written by multikernel"):
        MKLClassifier.load(foreign)

    missing_plugin = tmp_path / "plugin.npz"
    _rewrite_meta(path, missing_plugin,
                  lambda m: m["kernel_set"]["builders"][0].update(name="gone"))
    with pytest.raises(Exception, match="gone"):
        MKLClassifier.load(missing_plugin)

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelFormatError, match="not a readable multikernel model"):
        MKLClassifier.load(truncated)

    text = tmp_path / "text.npz"
    text.write_text("hello")
    with pytest.raises(ModelFormatError):
        MKLClassifier.load(text)

    no_meta = tmp_path / "nometa.npz"
    with zipfile.ZipFile(no_meta, "w") as zf:
        zf.writestr("x.npy", b"")
    with pytest.raises(ModelFormatError):
        MKLClassifier.load(no_meta)


def test_unfitted_model_cannot_be_saved(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MKLClassifier().save(tmp_path / "x.npz")


def test_unsaveable_parameters_get_a_clear_error(tmp_path, cancer):
    from multikernel.plugins.kernels import ProductKernel

    X, y = cancer
    est = MKLClassifier(kernels=[ProductKernel(factors=[RBFKernel(), LinearKernel()]), RBFKernel()],
                        method="average").fit(X, y)
    with pytest.raises(ValueError, match="cannot be saved without pickle"):
        est.save(tmp_path / "m.npz")
