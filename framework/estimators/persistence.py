"""Saving and loading fitted estimators without pickle.

A model file is a ZIP archive of ``.npy`` arrays (what :func:`numpy.savez_compressed` writes) plus one
``__meta__`` entry holding JSON: library and format versions, the estimator's parameters, the kernel
builders by registered name with their parameters, and where each fitted attribute is stored.

- **No code from the file.**  Arrays are parsed by :func:`_parse_npy`, which accepts plain dtypes only
  (no object arrays, so no pickle); builders and other plugins are re-created from the plugin registry
  by name; fitted attributes are restored only under names of the form ``name_``.
- **Each array once.**  Arrays are stored by content: identical arrays (the same fitted vector in two
  places) are written once.  The training features, which every feature builder derives its ``X_fit_``
  from, are stored once for the whole model: a builder that declares ``derived_from_training_features``
  and offers ``training_features()`` / ``set_training_features(X)`` (as
  :class:`~multikernel.plugins.kernels.FeatureKernel` does) is saved without those attributes and
  rebuilt from the shared array.
- **Object arrays** (string class labels from pandas or lists, ``feature_names_in_`` of a DataFrame) are
  stored as JSON lists and restored with dtype ``object`` and the same values.
- **Errors.**  A missing file raises :class:`FileNotFoundError`; every file that is not a complete model
  of a compatible format (empty, truncated, corrupted, random bytes, text, a ZIP or ``.npz`` of other
  data, a model of another format version) raises :class:`~multikernel.errors.ModelFormatError` naming
  the file.  Each ZIP member carries a CRC-32 that is checked on reading, so damaged bytes are detected
  rather than loaded.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from multikernel._version import __version__
from multikernel.core.interfaces import Component
from multikernel.core.registry import get_registry
from multikernel.errors import ModelFormatError

__all__ = ["save_model", "load_model", "FORMAT_VERSION"]

#: Version of the file layout.  Format 2: arrays stored by content, training features once per model,
#: object arrays as JSON.  Files of format 1 are refused with a message (refit the model).
FORMAT_VERSION = 2

#: Fitted attributes of the estimator that a saved model leaves out: the solvers' full results (with
#: histories; ``results_`` is empty after loading) and the kernel set, which is saved on its own.
_NOT_SAVED = ("results_", "kernel_set_")

_FITTED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*_")
_JSON_SCALARS = (str, int, float, bool, type(None))

# What reading a damaged archive can raise, from zipfile, zlib, struct and numpy's header parser.
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, IndexError,
                struct.error, NotImplementedError, RuntimeError, OverflowError, RecursionError, SyntaxError)
# What rebuilding an estimator from inconsistent metadata can raise.
_REBUILD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------
class _ArrayStore:
    """The arrays of one model file, each distinct array (dtype, shape, bytes) under one name."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._by_content: dict[tuple[str, tuple[int, ...], str], str] = {}

    def add(self, value: np.ndarray) -> str:
        value = value if value.flags.c_contiguous else value.copy(order="C")  # (keeps 0-d arrays 0-d)
        digest = hashlib.sha256(value.reshape(-1).view(np.uint8)).hexdigest()
        key = (value.dtype.str, value.shape, digest)
        if key not in self._by_content:
            self._by_content[key] = name = f"a{len(self.arrays)}"
            self.arrays[name] = value
        return self._by_content[key]


def _plain(value: Any, where: str) -> Any:
    """A JSON scalar from a Python or NumPy scalar, or ``ValueError`` naming ``where``."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, _JSON_SCALARS):
        raise ValueError(f"this model cannot be saved without pickle: {where} holds a {type(value).__name__} "
                         f"({value!r}); use pickle or joblib.dump for it")
    return value


def _encode_value(value: Any, store: _ArrayStore, where: str) -> dict[str, Any]:
    """The layout entry of one fitted value (arrays go to ``store``)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            # String labels from pandas or lists: JSON, restored as an object array of the same values.
            return {"object": [_plain(v, where) for v in value.ravel().tolist()], "shape": list(value.shape)}
        return {"array": store.add(value)}
    if isinstance(value, (bool, int, float, str, np.generic)):
        return {"scalar": store.add(np.asarray(value))}
    if isinstance(value, (list, tuple)) and all(isinstance(v, np.ndarray) for v in value) and value:
        return {"list": [_encode_value(v, store, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, (list, tuple)):
        return {"json": [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    # A fitted attribute we cannot write as arrays (a 'product' keeps fitted builders): refuse rather
    # than write a model that would not predict after loading.
    raise ValueError(f"this model cannot be saved without pickle: {where} is a {type(value).__name__}; "
                     f"use pickle or joblib.dump for it")


def _encode_fitted(obj: Any, store: _ArrayStore, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Layout of the fitted attributes (``name_``, not private) of ``obj`` that are not ``None``."""
    return {key: _encode_value(value, store, f"{type(obj).__name__}.{key}")
            for key, value in vars(obj).items()
            if _FITTED_NAME.fullmatch(key) and key not in skip and value is not None}


def _jsonable(value: Any) -> Any:
    """Parameters as JSON: plugin instances by registered name and parameters."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Component):
        # The name of the exact class: an unregistered subclass must not be saved as its parent.
        return {"__plugin__": get_registry().name_of(value), "params": _jsonable(value.get_params(deep=False))}
    return value


def _encode_builders(ks: Any, store: _ArrayStore) -> list[dict[str, Any]]:
    builders = []
    for b in ks.builders:
        derived = tuple(getattr(b, "derived_from_training_features", ()))
        spec = {"name": get_registry().name_of(b, "kernel"), "params": _jsonable(b.get_params(deep=False)),
                "state": _encode_fitted(b, store, skip=derived)}
        if derived:
            spec["training_features"] = store.add(b.training_features())
        builders.append(spec)
    return builders


def save_model(est: Any, path: str | Path) -> None:
    """Write a fitted :class:`~multikernel.MKLClassifier` to ``path``.

    The file is written to a temporary file beside ``path`` and renamed, so an interrupted save never
    leaves a truncated model under ``path``.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If ``est`` is not fitted.
    ValueError
        If a parameter or fitted attribute cannot be written without pickle (a builder holding a
        matrix, a ``product`` of builders); the message names it.
    PluginError
        If a plugin's exact class is not registered (a subclass does not inherit its parent's name).
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est)
    store = _ArrayStore()
    params = dict(est.get_params(deep=False))
    if not isinstance(est.kernels, str):
        params["kernels"] = "builders"
    meta: dict[str, Any] = {"library": "multikernel", "version": __version__, "format_version": FORMAT_VERSION,
                            "estimator": type(est).__name__, "params": _jsonable(params),
                            "fitted": _encode_fitted(est, store, skip=_NOT_SAVED), "kernel_set": None}
    ks = est.kernel_set_
    if ks is not None:
        meta["kernel_set"] = {"normalize": ks.normalize, "dtype": str(ks.dtype), "backend": ks.backend,
                              "memory_budget": ks.memory_budget, "standardize": ks.standardize,
                              "cache_size": ks.cache_size,
                              "builders": _encode_builders(ks, store),
                              "state": _encode_fitted(ks, store)}
    try:
        text = json.dumps(meta, allow_nan=True)
    except (TypeError, ValueError) as exc:
        # e.g. a 'distance' or 'precomputed' builder holding a matrix, or a 'product' of builders
        raise ValueError(f"this model cannot be saved without pickle: a kernel builder or plugin parameter is not "
                         f"a plain value ({exc}); use pickle or joblib.dump for it") from exc
    arrays = dict(store.arrays, __meta__=np.frombuffer(text.encode("utf-8"), dtype=np.uint8))
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------
def _parse_npy(raw: bytes) -> np.ndarray:
    """One ``.npy`` member: plain dtypes only, and exactly as many bytes as the header announces."""
    fh = io.BytesIO(raw)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    if dtype.hasobject:
        raise ValueError("an object array (pickled data), which a model file never holds")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    offset = fh.tell()
    if count < 0 or count * dtype.itemsize != len(raw) - offset:
        raise ValueError(f"an array of shape {shape} ({dtype}) with {len(raw) - offset} bytes of data")
    flat = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy()


def _read_archive(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every array of the file (CRC-checked) and the metadata."""
    with path.open("rb") as fh:  # FileNotFoundError, IsADirectoryError, PermissionError: as they are
        if fh.read(4) != b"PK\x03\x04":
            raise ModelFormatError(f"{str(path)!r} is not a multikernel model file (not a ZIP/.npz archive; "
                                   f"models are written by MKLClassifier.save)")
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as zf:
                arrays = {}
                for info in zf.infolist():
                    if not info.filename.endswith(".npy"):
                        raise ValueError(f"unexpected member {info.filename!r}")
                    arrays[info.filename[:-4]] = _parse_npy(zf.read(info))
            if "__meta__" not in arrays:
                raise ModelFormatError(f"{str(path)!r} is not a multikernel model file (an .npz archive without "
                                       f"the model metadata; models are written by MKLClassifier.save)")
            meta = json.loads(arrays.pop("__meta__").tobytes().decode("utf-8"))
        except ModelFormatError:
            raise
        except _READ_ERRORS as exc:
            raise ModelFormatError(f"{str(path)!r} is not a readable multikernel model file: it is damaged or "
                                   f"truncated ({type(exc).__name__}: {exc})") from exc
    if not isinstance(meta, dict) or meta.get("library") != "multikernel":
        raise ModelFormatError(f"{str(path)!r} was not written by multikernel")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} uses model format {meta.get('format_version')} (written by multikernel "
            f"{meta.get('version')}); this is multikernel {__version__}, which reads format {FORMAT_VERSION}. "
            f"Refit the model, or load it with the version that wrote it.")
    return arrays, meta


def _decode_value(spec: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    if "array" in spec:
        return arrays[spec["array"]]
    if "scalar" in spec:
        value = arrays[spec["scalar"]]
        if value.ndim != 0:
            raise ValueError(f"a scalar stored as an array of shape {value.shape}")
        return value.item()
    if "object" in spec:
        values = spec["object"]
        if not isinstance(values, list) or not all(isinstance(v, _JSON_SCALARS) for v in values):
            raise ValueError("an object array that is not a list of plain values")
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(spec["shape"])
    if "list" in spec:
        return [_decode_value(s, arrays) for s in spec["list"]]
    if "json" in spec:
        return list(spec["json"])
    raise ValueError(f"unknown layout entry {spec!r}")


def _restore_fitted(obj: Any, layout: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    for key, spec in layout.items():
        if not isinstance(key, str) or not _FITTED_NAME.fullmatch(key):
            # Only fitted attributes are set from a file: never a method or a private attribute.
            raise ValueError(f"{key!r} is not the name of a fitted attribute")
        setattr(obj, key, _decode_value(spec, arrays))


def _restore_part(value: Any, key: str = "") -> Any:
    if isinstance(value, dict) and "__plugin__" in value:
        name, registry = value["__plugin__"], get_registry()
        # The estimator's parameter says the kind (the same name may be a loss and a kernel, say).
        kinds = [key] if key in ("loss", "regularizer", "solver") else ["loss", "regularizer", "solver", "kernel"]
        kind = next((k for k in kinds if name in registry.names(k)), None)
        if kind is None:
            raise ModelFormatError(f"the model uses the plugin {name!r}, which is not installed")
        return registry.create(kind, name, **value["params"])
    return value


def _restore_kernel_set(ks_meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    from multikernel.stack.kernelset import KernelSet

    registry = get_registry()
    builders = []
    for spec in ks_meta["builders"]:
        if spec["name"] not in registry.names("kernel"):
            raise ModelFormatError(f"the model uses the kernel builder {spec['name']!r}, which is not installed")
        b = registry.create("kernel", spec["name"], **spec["params"])
        _restore_fitted(b, spec["state"], arrays)
        if "training_features" in spec:
            b.set_training_features(arrays[spec["training_features"]])
        builders.append(b)
    ks = KernelSet(builders, normalize=ks_meta["normalize"], dtype=ks_meta["dtype"],
                   backend=ks_meta.get("backend", "dense"), memory_budget=ks_meta.get("memory_budget"),
                   standardize=ks_meta.get("standardize", False), cache_size=ks_meta.get("cache_size", 200.0))
    _restore_fitted(ks, ks_meta["state"], arrays)
    for b, spec in zip(builders, ks_meta["builders"], strict=True):
        if "training_features" in spec and len(b.training_features()) != ks.n_train_:
            raise ValueError(f"builder {b.name!r} has {len(b.training_features())} training samples, the kernel "
                             f"set {ks.n_train_}")
    return ks


def load_model(path: str | Path) -> Any:
    """Read a model written by :func:`save_model`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ModelFormatError
        If the file is not a multikernel model, is damaged or truncated, was written by an incompatible
        version, or needs a plugin that is not installed; the message names the file.
    """
    from multikernel.estimators.classifier import MKLClassifier

    path = Path(path)
    arrays, meta = _read_archive(path)
    try:
        if meta.get("estimator") != MKLClassifier.__name__:
            raise ValueError(f"unknown estimator {meta.get('estimator')!r}")
        params = {k: _restore_part(v, k) for k, v in meta["params"].items()}
        ks = None if meta["kernel_set"] is None else _restore_kernel_set(meta["kernel_set"], arrays)
        if params.get("kernels") == "builders":
            if ks is None:
                raise ValueError("the kernel builders are missing")
            params["kernels"] = ks.builders
        est = MKLClassifier(**params)
        _restore_fitted(est, meta["fitted"], arrays)
        est.kernel_set_ = ks
        est.results_ = []
    except ModelFormatError as exc:
        raise ModelFormatError(f"{str(path)!r}: {exc}") from exc
    except _REBUILD_ERRORS as exc:
        raise ModelFormatError(f"{str(path)!r} is corrupted or incomplete ({type(exc).__name__}: {exc})") from exc
    return est
