"""Saving and loading fitted estimators without pickle: one format for every estimator of the library.

A model file is a ZIP archive of ``.npy`` arrays (what :func:`numpy.savez_compressed` writes) plus one
``__meta__`` entry holding JSON: library and format versions, the estimator's class (a subclass of
:class:`~multikernel.estimators.base.MultikernelEstimator`), its parameters, the kernel builders by registered
name with their parameters, the dtype and shape of every array, and where each fitted attribute is stored.
Fitted values may be arrays, numbers, strings, lists, tuples and string-keyed dicts of those, kernel sets,
registered plugins and fitted estimators of the library (stored recursively), so a new estimator needs no code
here.

Why not skops.io: skops rebuilds objects from the module paths and ``__dict__`` contents a file names, within a
list of trusted types the caller passes; here the classes come from two closed lists (the library's estimator
classes and the plugin registry), a loaded model is checked against its class's parameter constraints and fitted
schema before it is returned, and the archive's members are checked against the metadata before a byte is
inflated.  It also keeps a scikit-learn-ecosystem dependency out of the install.

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
- **Sizes before reading.**  The metadata (read first, at most :data:`MAX_META_BYTES`) declares every array's
  dtype and shape; a member the metadata does not declare, or whose uncompressed size differs from what its
  declaration needs, is refused before it is inflated, and so is a model whose arrays would not fit in memory.
- **Checked at load, never later.**  The loaded estimator's parameters pass the same checks as at ``fit``, its
  fitted attributes match the class's ``_fitted_schema``, and its own ``_check_loaded`` passes; otherwise
  :class:`~multikernel.errors.ModelFormatError`.
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

#: Version of the file layout.  Files of other formats are refused with a message (refit the model).
FORMAT_VERSION = 3

#: The largest metadata entry a model file may have (the JSON of parameters and layout, not the arrays).
MAX_META_BYTES = 64 * 2**20


_FITTED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*_")
_JSON_SCALARS = (str, int, float, bool, type(None))

# What reading a damaged archive can raise, from zipfile, zlib, struct and numpy's header parser.
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, IndexError,
                struct.error, NotImplementedError, RuntimeError, OverflowError, RecursionError, SyntaxError,
                TypeError, UnicodeDecodeError)
# What rebuilding an estimator from inconsistent metadata can raise.
_REBUILD_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError)


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

    def declarations(self) -> dict[str, dict[str, Any]]:
        return {name: {"dtype": a.dtype.str, "shape": list(a.shape)} for name, a in self.arrays.items()}


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
    from multikernel.estimators.base import MultikernelEstimator
    from multikernel.stack.kernelset import KernelSet

    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            # String labels from pandas or lists: JSON, restored as an object array of the same values.
            return {"object": [_plain(v, where) for v in value.ravel().tolist()], "shape": list(value.shape)}
        if value.dtype.kind not in "biufc" and value.dtype.kind != "U":
            raise ValueError(f"this model cannot be saved without pickle: {where} is an array of dtype "
                             f"{value.dtype}; use pickle or joblib.dump for it")
        return {"array": store.add(value)}
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return {"scalar": store.add(np.asarray(value))}
    if isinstance(value, _JSON_SCALARS):
        return {"json": value}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple":
                [_encode_value(v, store, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: _encode_value(v, store, f"{where}[{k!r}]") for k, v in value.items()}}
    if isinstance(value, KernelSet):
        return {"kernel_set": _encode_kernel_set(value, store)}
    if isinstance(value, MultikernelEstimator):
        return {"estimator": _encode_estimator(value, store)}
    if isinstance(value, Component):
        return {"plugin": _encode_plugin(value, store)}
    # A fitted attribute we cannot write as arrays (a 'product' keeps fitted builders): refuse rather
    # than write a model that would not predict after loading.
    raise ValueError(f"this model cannot be saved without pickle: {where} is a {type(value).__name__}; "
                     f"use pickle or joblib.dump for it")


def _encode_fitted(obj: Any, store: _ArrayStore, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """Layout of the fitted attributes (``name_``, not private) of ``obj``."""
    return {key: _encode_value(value, store, f"{type(obj).__name__}.{key}")
            for key, value in vars(obj).items()
            if _FITTED_NAME.fullmatch(key) and key not in skip}


def _jsonable(value: Any) -> Any:
    """Parameters as JSON: plugin instances by registered name and parameters, estimators by class."""
    from multikernel.estimators.base import MultikernelEstimator, class_key

    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Component):
        # The name of the exact class: an unregistered subclass must not be saved as its parent.
        return {"__plugin__": get_registry().name_of(value), "params": _jsonable(value.get_params(deep=False))}
    if isinstance(value, MultikernelEstimator):
        return {"__estimator__": class_key(type(value)), "params": _jsonable(value.get_params(deep=False))}
    return value


def _encode_plugin(obj: Component, store: _ArrayStore) -> dict[str, Any]:
    derived = tuple(getattr(obj, "derived_from_training_features", ()))
    spec = {"name": get_registry().name_of(obj), "params": _jsonable(obj.get_params(deep=False)),
            "state": _encode_fitted(obj, store, skip=derived)}
    if derived and hasattr(obj, "training_features"):
        spec["training_features"] = store.add(obj.training_features())
    return spec


def _encode_kernel_set(ks: Any, store: _ArrayStore) -> dict[str, Any]:
    return {"normalize": ks.normalize, "dtype": str(ks.dtype), "backend": ks.backend,
            "memory_budget": ks.memory_budget, "standardize": ks.standardize, "cache_size": ks.cache_size,
            "builders": [_encode_plugin(b, store) for b in ks.builders], "state": _encode_fitted(ks, store)}


def _encode_estimator(est: Any, store: _ArrayStore) -> dict[str, Any]:
    from multikernel.estimators.base import class_key

    return {"class": class_key(type(est)), "params": _jsonable(est.get_params(deep=False)),
            "fitted": _encode_fitted(est, store, skip=tuple(type(est)._unsaved_attributes))}


def save_model(est: Any, path: str | Path) -> None:
    """Write a fitted estimator of the library to ``path``.

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
    meta: dict[str, Any] = {"library": "multikernel", "version": __version__, "format_version": FORMAT_VERSION,
                            "model": _encode_estimator(est, store)}
    meta["arrays"] = store.declarations()
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
def _parse_npy(raw: bytes, declared: dict[str, Any] | None = None) -> np.ndarray:
    """One ``.npy`` member: plain dtypes only, exactly as many bytes as the header announces, and the dtype and
    shape the metadata declared."""
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
    if declared is not None and (dtype.str != declared["dtype"] or list(shape) != list(declared["shape"])):
        raise ValueError(f"an array of shape {shape} ({dtype}) declared as {declared}")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    offset = fh.tell()
    if count < 0 or count * dtype.itemsize != len(raw) - offset:
        raise ValueError(f"an array of shape {shape} ({dtype}) with {len(raw) - offset} bytes of data")
    flat = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy()


#: A ``.npy`` header is at most this long (format 2.0 allows more, but numpy writes a few hundred bytes).
_MAX_NPY_HEADER = 2**16 + 16


def _declared_bytes(decl: Any) -> int:
    """The data bytes an array declaration needs (``ValueError`` for a malformed declaration)."""
    if not (isinstance(decl, dict) and isinstance(decl.get("dtype"), str) and isinstance(decl.get("shape"), list)
            and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in decl["shape"])):
        raise ValueError(f"a malformed array declaration {decl!r}")
    dtype = np.dtype(decl["dtype"])
    if dtype.hasobject or dtype.kind not in "biufcU":
        raise ValueError(f"an array of dtype {dtype}, which a model file never holds")
    return int(np.prod(decl["shape"], dtype=object)) * dtype.itemsize


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The member's bytes, inflating at most ``limit`` (a member larger than it announced is damaged)."""
    if info.file_size > limit:
        raise ValueError(f"member {info.filename!r} announces {info.file_size} bytes, more than the "
                         f"{limit} its declaration allows")
    with zf.open(info) as fh:
        raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"member {info.filename!r} inflates beyond {limit} bytes")
    return raw


def _read_archive(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every array of the file (sizes checked against the metadata before inflating, CRC-checked) and the
    metadata."""
    from multikernel.stack.memory import available_memory

    with path.open("rb") as fh:  # FileNotFoundError, IsADirectoryError, PermissionError: as they are
        if fh.read(4) != b"PK\x03\x04":
            raise ModelFormatError(f"{str(path)!r} is not a multikernel model file (not a ZIP/.npz archive; "
                                   f"models are written by the estimators' save method)")
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as zf:
                members = {}
                for info in zf.infolist():
                    if not info.filename.endswith(".npy") or info.filename[:-4] in members:
                        raise ValueError(f"unexpected member {info.filename!r}")
                    members[info.filename[:-4]] = info
                if "__meta__" not in members:
                    raise ModelFormatError(f"{str(path)!r} is not a multikernel model file (an .npz archive "
                                           f"without the model metadata; models are written by the estimators' "
                                           f"save method)")
                meta_array = _parse_npy(_read_member(zf, members.pop("__meta__"), MAX_META_BYTES))
                meta = json.loads(meta_array.tobytes().decode("utf-8"))
                _check_meta_header(path, meta)
                declared = meta.get("arrays")
                if not isinstance(declared, dict):
                    raise ValueError("the metadata does not declare the arrays")
                unexpected = sorted(set(members) - set(declared))
                missing = sorted(set(declared) - set(members))
                if unexpected or missing:
                    raise ValueError(f"the archive's members do not match the metadata (undeclared: "
                                     f"{unexpected[:3]}, missing: {missing[:3]})")
                needs = {name: _declared_bytes(decl) for name, decl in declared.items()}
                total = sum(needs.values())
                if total > available_memory():
                    raise ValueError(f"its arrays would take {total} bytes, more than the memory available")
                arrays = {name: _parse_npy(_read_member(zf, members[name], needs[name] + _MAX_NPY_HEADER),
                                           declared[name])
                          for name in declared}
        except ModelFormatError:
            raise
        except _READ_ERRORS as exc:
            raise ModelFormatError(f"{str(path)!r} is not a readable multikernel model file: it is damaged or "
                                   f"truncated ({type(exc).__name__}: {exc})") from exc
    return arrays, meta


def _check_meta_header(path: Path, meta: Any) -> None:
    if not isinstance(meta, dict) or meta.get("library") != "multikernel":
        raise ModelFormatError(f"{str(path)!r} was not written by multikernel")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} uses model format {meta.get('format_version')} (written by multikernel "
            f"{meta.get('version')}); this is multikernel {__version__}, which reads format {FORMAT_VERSION}. "
            f"Refit the model, or load it with the version that wrote it.")


class _Decoder:
    """Rebuilds values from the layout; one object per stored array, so arrays shared at save time (the
    training features of every builder) are shared again."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays
        self.depth = 0

    def array(self, name: Any) -> np.ndarray:
        if not isinstance(name, str) or name not in self.arrays:
            raise ValueError(f"a reference to a missing array {name!r}")
        return self.arrays[name]

    def value(self, spec: Any) -> Any:
        if not isinstance(spec, dict) or len(spec) not in (1, 2):
            raise ValueError(f"unknown layout entry {spec!r}")
        if "array" in spec:
            return self.array(spec["array"])
        if "scalar" in spec:
            value = self.array(spec["scalar"])
            if value.ndim != 0:
                raise ValueError(f"a scalar stored as an array of shape {value.shape}")
            return value[()]
        if "json" in spec:
            if not isinstance(spec["json"], _JSON_SCALARS):
                raise ValueError("a scalar that is not a plain value")
            return spec["json"]
        if "object" in spec:
            values = spec["object"]
            if not isinstance(values, list) or not all(isinstance(v, _JSON_SCALARS) for v in values):
                raise ValueError("an object array that is not a list of plain values")
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out.reshape(spec["shape"])
        self.depth += 1
        try:
            if self.depth > 20:
                raise ValueError("values nested more than 20 levels deep")
            if "list" in spec:
                return [self.value(s) for s in _as_list(spec["list"])]
            if "tuple" in spec:
                return tuple(self.value(s) for s in _as_list(spec["tuple"]))
            if "dict" in spec:
                if not isinstance(spec["dict"], dict):
                    raise ValueError("a dict entry that is not a mapping")
                return {k: self.value(v) for k, v in spec["dict"].items()}
            if "kernel_set" in spec:
                return self.kernel_set(spec["kernel_set"])
            if "estimator" in spec:
                return self.estimator(spec["estimator"])
            if "plugin" in spec:
                return self.plugin(spec["plugin"])
        finally:
            self.depth -= 1
        raise ValueError(f"unknown layout entry {spec!r}")

    def restore_fitted(self, obj: Any, layout: Any) -> None:
        if not isinstance(layout, dict):
            raise ValueError("the fitted attributes are not a mapping")
        for key, spec in layout.items():
            if not isinstance(key, str) or not _FITTED_NAME.fullmatch(key):
                # Only fitted attributes are set from a file: never a method or a private attribute.
                raise ValueError(f"{key!r} is not the name of a fitted attribute")
            if callable(getattr(type(obj), key, None)) or isinstance(getattr(type(obj), key, None), property):
                raise ValueError(f"{key!r} is a method or property of {type(obj).__name__}, not a fitted attribute")
            setattr(obj, key, self.value(spec))

    def plugin(self, spec: Any, kind: str = "kernel") -> Any:
        registry = get_registry()
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise ValueError(f"a malformed plugin entry {spec!r}")
        kinds = [kind] + [k for k in ("kernel", "loss", "regularizer", "solver") if k != kind]
        found = next((k for k in kinds if spec["name"] in registry.names(k)), None)
        if found is None:
            raise ModelFormatError(f"the model uses the plugin {spec['name']!r}, which is not installed")
        obj = registry.create(found, spec["name"], **_params(spec.get("params", {})))
        self.restore_fitted(obj, spec.get("state", {}))
        if "training_features" in spec:
            obj.set_training_features(self.array(spec["training_features"]))
        return obj

    def kernel_set(self, spec: Any) -> Any:
        from multikernel.stack.kernelset import KernelSet

        if not isinstance(spec, dict) or not isinstance(spec.get("builders"), list):
            raise ValueError("a kernel set without its list of builders")
        builders = [self.plugin(b, "kernel") for b in spec["builders"]]
        ks = KernelSet(builders, normalize=spec["normalize"], dtype=spec["dtype"],
                       backend=spec.get("backend", "dense"), memory_budget=spec.get("memory_budget"),
                       standardize=spec.get("standardize", False), cache_size=spec.get("cache_size", 200.0))
        self.restore_fitted(ks, spec["state"])
        for b, b_spec in zip(builders, spec["builders"], strict=True):
            if "training_features" in b_spec and len(b.training_features()) != ks.n_train_:
                raise ValueError(f"builder {b.name!r} has {len(b.training_features())} training samples, the kernel "
                                 f"set {ks.n_train_}")
        return ks

    def estimator(self, spec: Any, expected: type | None = None) -> Any:
        from multikernel.estimators.base import saveable_class

        if not isinstance(spec, dict):
            raise ValueError("a malformed estimator entry")
        cls = saveable_class(spec.get("class"))
        if cls is None:
            raise ValueError(f"unknown estimator {spec.get('class')!r} (import the package that defines it before "
                             f"loading)")
        if expected is not None and not issubclass(cls, expected):
            raise ValueError(f"it holds a {cls.__name__}, not a {expected.__name__}")
        params = spec.get("params")
        if not isinstance(params, dict):
            raise ValueError("the estimator's parameters are not a mapping")
        est = cls(**_params(params))
        self.restore_fitted(est, spec.get("fitted"))
        _check_state(est)
        est._restore_unsaved()
        return est


def _as_list(value: Any) -> list:
    if not isinstance(value, list):
        raise ValueError("a list entry that is not a list")
    return value


def _params(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise ValueError("parameters that are not a mapping")
    return {k: _restore_param(v, k) for k, v in params.items()}


def _restore_param(value: Any, key: str = "") -> Any:
    from multikernel.estimators.base import saveable_class

    if isinstance(value, dict) and "__plugin__" in value:
        name, registry = value["__plugin__"], get_registry()
        # The estimator's parameter says the kind (the same name may be a loss and a kernel, say).
        kinds = [key] if key in ("loss", "regularizer", "solver") else ["loss", "regularizer", "solver", "kernel"]
        kind = next((k for k in kinds if isinstance(name, str) and name in registry.names(k)), None)
        if kind is None:
            raise ModelFormatError(f"the model uses the plugin {name!r}, which is not installed")
        return registry.create(kind, name, **_params(value.get("params", {})))
    if isinstance(value, dict) and "__estimator__" in value:
        cls = saveable_class(value["__estimator__"])
        if cls is None:
            raise ValueError(f"unknown estimator {value['__estimator__']!r}")
        return cls(**_params(value.get("params", {})))
    if isinstance(value, list):
        return [_restore_param(v) for v in value]
    return value


def _check_state(est: Any) -> None:
    """The loaded estimator's parameters pass fit's checks, its fitted attributes its class's schema, and its own
    consistency checks (``ValueError`` naming what is wrong)."""
    est._validate_params()
    schema = type(est)._fitted_schema
    if schema is not None:
        fitted = {k for k in vars(est) if _FITTED_NAME.fullmatch(k)}
        unknown = sorted(fitted - set(schema) - {"fit_time_", "interrupted_"})
        if unknown:
            raise ValueError(f"{type(est).__name__} has no fitted attribute {unknown[0]!r}")
        for name, spec in schema.items():
            if name not in fitted:
                if spec.required:
                    raise ValueError(f"the fitted attribute {name!r} is missing")
                continue
            _check_spec(name, getattr(est, name), spec)
    est._check_loaded()


def _check_spec(name: str, value: Any, spec: Any) -> None:
    if spec.kind == "any":
        return
    arr = np.asarray(value)
    if spec.ndim is not None and arr.ndim not in spec.ndim:
        raise ValueError(f"the fitted attribute {name!r} has {arr.ndim} dimension(s), not "
                         f"{' or '.join(map(str, spec.ndim))}")
    kinds = {"real": "biuf", "int": "biu", "labels": "biufUO", "text": "UO"}[spec.kind]
    if arr.dtype.kind not in kinds:
        raise ValueError(f"the fitted attribute {name!r} holds values of dtype {arr.dtype}, which a fitted "
                         f"{spec.kind} value cannot have")


def load_model(path: str | Path, expected: type | None = None) -> Any:
    """Read a model written by :func:`save_model`.

    Parameters
    ----------
    path : str or Path
    expected : type, optional
        The class the caller asked for (``MKLClassifier.load``): a model of another class is refused.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ModelFormatError
        If the file is not a multikernel model (of ``expected``), is damaged or truncated, was written by an
        incompatible version, is inconsistent, or needs a plugin that is not installed; the message names the file.
    """
    path = Path(path)
    arrays, meta = _read_archive(path)
    try:
        est = _Decoder(arrays).estimator(meta.get("model"), expected)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{str(path)!r}: {exc}") from exc
    except _REBUILD_ERRORS as exc:
        raise ModelFormatError(f"{str(path)!r} is corrupted or incomplete ({type(exc).__name__}: {exc})") from exc
    return est
