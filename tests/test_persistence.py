"""save/load: a format that runs no code, with clear errors for foreign, corrupted or newer files."""

import functools
import io
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _model_files import rewrite_meta
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris

from multikernel import MKLClassifier
from multikernel.errors import ModelFormatError
from multikernel.estimators.persistence import FORMAT_VERSION
from multikernel.plugins.kernels import LinearKernel, PolynomialKernel, RBFKernel


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


def _fitted(meta):
    return meta["model"]["fitted"]


def _kernel_set(meta):
    return _fitted(meta)["kernel_set_"]["kernel_set"]


def test_incompatible_version_and_corruption(tmp_path, cancer):
    X, y = cancer
    path = tmp_path / "m.npz"
    MKLClassifier(max_iter=5).fit(X, y).save(path)

    newer = tmp_path / "newer.npz"
    rewrite_meta(path, newer, lambda m: m.update(format_version=99, version="9.0"))
    with pytest.raises(ModelFormatError, match="format 99 .*multikernel 9.0.*Refit"):
        MKLClassifier.load(newer)

    foreign = tmp_path / "foreign.npz"
    rewrite_meta(path, foreign, lambda m: m.update(library="other"))
    with pytest.raises(ModelFormatError, match="not written by multikernel"):
        MKLClassifier.load(foreign)

    missing_plugin = tmp_path / "plugin.npz"
    rewrite_meta(path, missing_plugin,
                  lambda m: _kernel_set(m)["builders"][0].update(name="gone"))
    with pytest.raises(ModelFormatError, match="plugin.npz.*'gone', which is not installed"):
        MKLClassifier.load(missing_plugin)

    format1 = tmp_path / "format1.npz"
    rewrite_meta(path, format1, lambda m: m.update(format_version=1, version="0.1.0"))
    with pytest.raises(ModelFormatError,
                       match=f"format1.npz' uses model format 1 .*reads format {FORMAT_VERSION}.*Refit"):
        MKLClassifier.load(format1)

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelFormatError, match="truncated.npz' is not a readable multikernel model"):
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


def test_products_of_builders_round_trip(tmp_path, cancer):
    from multikernel.plugins.kernels import ProductKernel

    X, y = cancer
    est = MKLClassifier(kernels=[ProductKernel(factors=[RBFKernel(), LinearKernel()]), RBFKernel()],
                        method="average").fit(X, y)
    est.save(tmp_path / "m.npz")
    loaded = MKLClassifier.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_unsaveable_parameters_get_a_clear_error(tmp_path, cancer):
    from multikernel.plugins.kernels import PrecomputedKernel

    X, y = cancer
    n = len(X)
    index = np.column_stack([np.arange(n), X[:, :2]])
    est = MKLClassifier(kernels=[PrecomputedKernel(matrix=X @ X.T)], method="average").fit(index, y)
    with pytest.raises(ValueError, match="cannot be saved without pickle"):
        est.save(tmp_path / "m.npz")


# -------------------------------------------------------------------------------------------------
# Labels and features of any type: pandas frames, string and object labels
# -------------------------------------------------------------------------------------------------
_NAMES = np.array(["setosa", "versicolor", "virginica"])


@pytest.mark.parametrize("labels", [
    lambda y: _NAMES[y],                                 # numpy strings (<U10)
    lambda y: _NAMES[y].astype(object),                  # Python strings in an object array
    lambda y: np.where(y == 0, "a", "b"),                # two classes, strings
    lambda y: np.where(y == 0, True, False),             # booleans
], ids=["str", "object-str", "binary-str", "bool"])
def test_round_trip_label_types(tmp_path, labels):
    X, y = load_iris(return_X_y=True)
    yl = labels(y)
    est = MKLClassifier(standardize=True, max_iter=20, tol=1e-2).fit(X, yl)
    est.save(tmp_path / "m.npz")
    loaded = MKLClassifier.load(tmp_path / "m.npz")
    assert loaded.classes_.dtype == est.classes_.dtype
    np.testing.assert_array_equal(loaded.classes_, est.classes_)
    before, after = est.predict(X), loaded.predict(X)
    assert after.dtype == before.dtype and [type(v) for v in after[:3]] == [type(v) for v in before[:3]]
    np.testing.assert_array_equal(after, before)


def test_round_trip_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    data = load_iris(as_frame=True)
    X = data.data
    y = pd.Series(_NAMES[data.target.to_numpy()], dtype=object, name="species")
    est = MKLClassifier(standardize=True, max_iter=20, tol=1e-2).fit(X, y)
    est.save(tmp_path / "frame.npz")
    loaded = MKLClassifier.load(tmp_path / "frame.npz")
    np.testing.assert_array_equal(loaded.feature_names_in_, X.columns.to_numpy())
    assert loaded.feature_names_in_.dtype == object
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.predict(X).dtype == est.predict(X).dtype == object
    # Categorical labels (np.asarray gives an object array) and renamed columns behave as before saving.
    est2 = MKLClassifier(max_iter=20, tol=1e-2).fit(X, pd.Categorical(y))
    est2.save(tmp_path / "cat.npz")
    np.testing.assert_array_equal(MKLClassifier.load(tmp_path / "cat.npz").predict(X), est2.predict(X))
    with pytest.raises(ValueError, match="feature names"):
        loaded.predict(X.rename(columns=lambda c: c.upper()))



# -------------------------------------------------------------------------------------------------
# Damaged, truncated and foreign files: ModelFormatError naming the file, never another exception
# -------------------------------------------------------------------------------------------------
@functools.cache
def _small_model() -> tuple[bytes, np.ndarray, np.ndarray]:
    """A saved model (bytes), its test features and predictions; built once per session."""
    X, y = load_iris(return_X_y=True)
    est = MKLClassifier(kernels=[RBFKernel(gamma_scale=0.5), RBFKernel(), LinearKernel(columns=[0, 2])],
                        max_iter=20, tol=1e-2, standardize=True).fit(X, _NAMES[y])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.npz"
        est.save(path)
        return path.read_bytes(), X, est.predict(X)


def _load_bytes(content: bytes, name: str = "damaged.npz"):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(content)
        return MKLClassifier.load(path)


def _assert_refused_or_intact(content: bytes) -> None:
    """A damaged copy raises ModelFormatError naming the file, or (bytes no reader looks at, such as a
    timestamp) loads and predicts exactly as the original."""
    _, X, expected = _small_model()
    try:
        loaded = _load_bytes(content)
    except ModelFormatError as exc:
        assert "damaged.npz" in str(exc)
        return
    np.testing.assert_array_equal(loaded.predict(X), expected)


@settings(deadline=None)
@given(data=st.data())
def test_truncated_anywhere_is_a_model_format_error(data):
    content = _small_model()[0]
    length = data.draw(st.integers(0, len(content) - 1), label="length")
    with pytest.raises(ModelFormatError, match="damaged.npz"):
        _load_bytes(content[:length])


@settings(deadline=None)
@given(data=st.data())
def test_corrupted_bytes_anywhere(data):
    content = bytearray(_small_model()[0])
    n = data.draw(st.integers(1, 8), label="n_bytes")
    for _ in range(n):
        offset = data.draw(st.integers(0, len(content) - 1), label="offset")
        content[offset] = data.draw(st.integers(0, 255).filter(lambda b, o=offset: b != content[o]), label="byte")
    _assert_refused_or_intact(bytes(content))


@settings(deadline=None)
@given(start=st.integers(0, 10_000), length=st.integers(1, 2_000), fill=st.binary(min_size=1, max_size=64))
def test_overwritten_ranges(start, length, fill):
    content = bytearray(_small_model()[0])
    start %= len(content)
    patch = (fill * (length // len(fill) + 1))[:length]
    content[start:start + length] = patch[:len(content) - start]
    _assert_refused_or_intact(bytes(content))


@settings(deadline=None)
@given(content=st.binary(max_size=4_000))
def test_random_bytes(content):
    with pytest.raises(ModelFormatError, match="damaged.npz"):
        _load_bytes(content)
    with pytest.raises(ModelFormatError, match="damaged.npz"):
        _load_bytes(b"PK\x03\x04" + content)  # a ZIP signature followed by garbage


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return buf.getvalue()


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npy_bytes(a, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=allow_pickle)
    return buf.getvalue()


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pickled code ran >&2",))


@pytest.mark.parametrize(("content", "match"), [
    (b"", "not a multikernel model file"),
    (b"hello, I am a text file\n", "not a multikernel model file"),
    (_npy_bytes(np.arange(5.0)), "not a multikernel model file"),
    (_npz_bytes(x=np.arange(3.0), y=np.eye(2)), "without the model metadata"),
    (_npz_bytes(__meta__=np.frombuffer(b"[1, 2]", dtype=np.uint8)), "not written by multikernel"),
    (_npz_bytes(__meta__=np.frombuffer(b"{not json", dtype=np.uint8)), "damaged or truncated"),
    (_npz_bytes(__meta__=np.arange(4.0)), "damaged or truncated"),
    (_zip_bytes({"garbage.npy": os.urandom(300)}), "without the model metadata"),
    (_zip_bytes({"readme.txt": b"hello"}), "damaged or truncated"),
    (_zip_bytes({"__meta__.npy": _npy_bytes(np.array([_Boom()], dtype=object), allow_pickle=True)}),
     "damaged or truncated.*object array"),
], ids=["empty", "text", "npy", "npz-other", "meta-list", "meta-not-json", "meta-floats", "zip-garbage",
        "zip-text", "pickle"])
def test_foreign_files(content, match, capfd):
    with pytest.raises(ModelFormatError, match=f"damaged.npz.*{match}"):
        _load_bytes(content)
    assert "pickled code ran" not in capfd.readouterr().err


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        MKLClassifier.load(tmp_path / "nope.npz")
    with pytest.raises(IsADirectoryError):
        MKLClassifier.load(tmp_path)


@pytest.mark.parametrize("change", [
    lambda m: _fitted(m).update(fit=_fitted(m)["classes_"]),                # a method name
    lambda m: _fitted(m).update(_private_=_fitted(m)["classes_"]),          # a private name
    lambda m: _fitted(m)["classes_"].update(array="a999"),                  # a missing array
    lambda m: _fitted(m).update(classes_={"object": [[1]], "shape": [1]}),   # not plain values
    lambda m: _kernel_set(m)["builders"][0].update(training_features="a0") or _kernel_set(m)["state"].update(
        n_train_={"json": 5}),                                              # inconsistent sizes
    lambda m: m["model"].update({"class": "SomethingElse"}),
    lambda m: m["model"].update(params=[1, 2]),
    lambda m: _kernel_set(m).update(builders=None),
    lambda m: _fitted(m).pop("kernel_set_"),                                  # a features model without kernels
    lambda m: m["model"].update(fitted={}),
    lambda m: m["model"]["params"].update(C="abc"),
    lambda m: m["model"]["params"].update(method="no_such_method"),
    lambda m: _fitted(m).update(weights_={"json": "text"}),
    lambda m: _fitted(m).update(target_type_={"json": "regression"}),
], ids=["method", "private", "missing-array", "object-nested", "sizes", "estimator", "params", "builders",
        "no-kernel-set", "no-fitted", "C", "unknown-method", "weights-text", "target-type"])
def test_inconsistent_metadata(tmp_path, cancer, change):
    X, y = cancer
    path = tmp_path / "m.npz"
    MKLClassifier(max_iter=5, tol=1e-1).fit(X, y).save(path)
    bad = tmp_path / "bad.npz"
    rewrite_meta(path, bad, change)
    with pytest.raises(ModelFormatError, match="bad.npz"):
        MKLClassifier.load(bad)


# -------------------------------------------------------------------------------------------------
# What a file stores: the training features once, each array once
# -------------------------------------------------------------------------------------------------
def _stored_arrays(path):
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != "__meta__"}


@pytest.mark.parametrize("make_kernels", [
    lambda d: [RBFKernel(gamma_scale=2.0**k) for k in range(-15, 15)],                       # 30, all features
    lambda d: [RBFKernel(sigma=s, columns=[j]) for j in range(d) for s in (0.5, 1, 2, 4, 8)]   # 30 single columns
    + [PolynomialKernel(columns=[j]) for j in range(d)],
], ids=["all-features", "single-columns"])
def test_training_features_are_stored_once(tmp_path, cancer, make_kernels):
    X, y = cancer
    X = X[:, :5]
    est = MKLClassifier(kernels=make_kernels(X.shape[1]), method="average").fit(X, y)
    assert len(est.kernel_names_) >= 30
    path = tmp_path / "m.npz"
    est.save(path)
    stored = _stored_arrays(path)
    with_training_rows = [a for a in stored.values() if a.ndim == 2 and a.shape[0] == len(X)]
    assert len(with_training_rows) == 1  # the training features, once; no X_fit_ per builder
    np.testing.assert_array_equal(with_training_rows[0], X)
    loaded = MKLClassifier.load(path)
    features = [b.training_features() for b in loaded.kernel_set_.builders]
    assert all(f is features[0] for f in features)  # one array in memory for all builders, as after fit
    for b, b0 in zip(loaded.kernel_set_.builders, est.kernel_set_.builders, strict=True):
        np.testing.assert_array_equal(b.X_fit_, b0.X_fit_)
    np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))


def test_failed_save_keeps_the_previous_file(tmp_path, cancer, monkeypatch):
    X, y = cancer
    est = MKLClassifier(max_iter=5, tol=1e-1).fit(X, y)
    path = tmp_path / "m.npz"
    est.save(path)
    before = path.read_bytes()

    def disk_full(fh, **arrays):
        fh.write(b"PK\x03\x04partial")
        raise OSError("No space left on device")

    monkeypatch.setattr("multikernel.estimators.persistence.np.savez_compressed", disk_full)
    with pytest.raises(OSError, match="No space"):
        est.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


def test_round_trip_precomputed_and_lazy(tmp_path, cancer):
    X, y = cancer
    K = np.stack([X @ X.T, (X @ X.T + 1) ** 2])
    est = MKLClassifier(kernels="precomputed", max_iter=20, tol=1e-2).fit(K, y)
    est.save(tmp_path / "pre.npz")
    loaded = MKLClassifier.load(tmp_path / "pre.npz")
    np.testing.assert_array_equal(loaded.decision_function(K[:, :7]), est.decision_function(K[:, :7]))
    lazy = MKLClassifier(kernels=[RBFKernel(), PolynomialKernel(columns=[1, 3])], normalize="center",
                         kernel_backend="lazy", max_iter=20, tol=1e-2).fit(X, y)
    lazy.save(tmp_path / "lazy.npz")
    loaded = MKLClassifier.load(tmp_path / "lazy.npz")
    assert loaded.kernel_set_.backend_ == "lazy"
    np.testing.assert_allclose(loaded.decision_function(X[:9]), lazy.decision_function(X[:9]), rtol=1e-12)


def test_round_trip_multilabel_and_shared(tmp_path):
    X, y = load_iris(return_X_y=True)
    Y = np.column_stack([y == 0, y == 1, X[:, 0] > 5.8]).astype(int)
    for name, est, target in [("ml", MKLClassifier(max_iter=10, tol=1e-2), Y),
                              ("shared", MKLClassifier(max_iter=10, tol=1e-2, multiclass="shared",
                                                       standardize=True), _NAMES[y])]:
        est.fit(X, target)
        est.save(tmp_path / f"{name}.npz")
        loaded = MKLClassifier.load(tmp_path / f"{name}.npz")
        assert loaded.target_type_ == est.target_type_
        np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
        np.testing.assert_array_equal(loaded.decision_function(X), est.decision_function(X))
