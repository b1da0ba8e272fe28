"""Saving and loading fitted estimators without pickle.

A model file is a NumPy ``.npz`` archive read with ``allow_pickle=False``: the arrays, plus one
``__meta__`` entry holding JSON (library version, format version, the estimator's parameters, the
kernel builders by registered name with their parameters, and the layout of the arrays).  Loading
therefore runs no code from the file; kernel builders are re-created from the plugin registry.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from multikernel._version import __version__
from multikernel.core.interfaces import Component
from multikernel.core.registry import get_registry
from multikernel.errors import ModelFormatError

__all__ = ["save_model", "load_model", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_FITTED_ESTIMATOR = ("classes_", "target_type_", "dual_coef_", "intercept_", "weights_", "n_iter_", "objective_",
                     "dual_gap_", "support_", "fit_time_", "n_features_in_", "n_train_", "feature_names_in_",
                     "precomputed_layout_")


def _fitted_state(obj: Any) -> dict[str, Any]:
    """Fitted attributes (trailing underscore) of a builder or kernel set that are arrays or numbers."""
    state = {}
    for key, value in vars(obj).items():
        if not key.endswith("_") or key.startswith("_"):
            continue
        if isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            state[key] = ("list", value)
        elif isinstance(value, (np.ndarray, int, float, np.number, bool, str)):
            state[key] = ("value", value)
        elif isinstance(value, list) and all(isinstance(v, (int, float, np.number)) for v in value):
            state[key] = ("value", np.asarray(value))
        elif value is not None:
            # A fitted attribute we cannot write as arrays (a 'product' keeps fitted builders): refuse
            # rather than write a model that would not predict after loading.
            raise ValueError(f"this model cannot be saved without pickle: {type(obj).__name__}.{key} is a "
                             f"{type(value).__name__}; use pickle or joblib.dump for it")
    return state


def _part_spec(value: Any) -> Any:
    if isinstance(value, Component):
        # The name of the exact class: an unregistered subclass must not be saved as its parent.
        return {"__plugin__": get_registry().name_of(value), "params": _jsonable(value.get_params(deep=False))}
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Component):
        return _part_spec(value)
    return value


def save_model(est: Any, path: str | Path) -> None:
    """Write a fitted :class:`~multikernel.MKLClassifier` to ``path``."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est)
    arrays: dict[str, np.ndarray] = {}
    fitted = {}
    for key in _FITTED_ESTIMATOR:
        if hasattr(est, key):
            arrays[f"est/{key}"] = np.asarray(getattr(est, key))
            fitted[key] = f"est/{key}"
    params = {k: _part_spec(v) for k, v in est.get_params(deep=False).items()}
    if not isinstance(est.kernels, str):
        params["kernels"] = "builders"
    meta: dict[str, Any] = {"library": "multikernel", "version": __version__, "format_version": FORMAT_VERSION,
                            "estimator": type(est).__name__, "params": _jsonable(params), "fitted": fitted,
                            "kernel_names": list(est.kernel_names_), "kernel_set": None}
    ks = est.kernel_set_
    if ks is not None:
        builders = []
        for i, b in enumerate(ks.builders):
            builders.append({"name": get_registry().name_of(b, "kernel"), "params": _jsonable(b.get_params(deep=False)),
                             "state": _store_state(arrays, f"builder{i}", _fitted_state(b))})
        meta["kernel_set"] = {"normalize": ks.normalize, "dtype": str(ks.dtype), "backend": ks.backend,
                              "memory_budget": ks.memory_budget, "standardize": ks.standardize,
                              "builders": builders,
                              "state": _store_state(arrays, "kernelset", _fitted_state(ks))}
    try:
        text = json.dumps(meta)
    except TypeError as exc:
        # e.g. a 'distance' or 'precomputed' builder holding a matrix, or a 'product' of builders
        raise ValueError(f"this model cannot be saved without pickle: a kernel builder or plugin parameter is not "
                         f"a plain value ({exc}); use pickle or joblib.dump for it") from exc
    arrays["__meta__"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    path = Path(path)
    with path.open("wb") as fh:
        np.savez_compressed(fh, **arrays)


def _store_state(arrays: dict[str, np.ndarray], prefix: str, state: dict[str, Any]) -> dict[str, Any]:
    layout = {}
    for key, (kind, value) in state.items():
        if kind == "list":
            for j, v in enumerate(value):
                arrays[f"{prefix}/{key}/{j}"] = v
            layout[key] = {"list": len(value)}
        else:
            arrays[f"{prefix}/{key}"] = np.asarray(value)
            layout[key] = {"value": f"{prefix}/{key}"}
    return layout


def _restore_state(obj: Any, data: Any, prefix: str, layout: dict[str, Any]) -> None:
    for key, spec in layout.items():
        if "list" in spec:
            setattr(obj, key, [data[f"{prefix}/{key}/{j}"] for j in range(spec["list"])])
        else:
            setattr(obj, key, _scalar_or_array(data[spec["value"]]))


def _scalar_or_array(a: np.ndarray) -> Any:
    return a.item() if a.ndim == 0 else a


def _restore_part(value: Any, key: str = "") -> Any:
    if isinstance(value, dict) and "__plugin__" in value:
        registry = get_registry()
        # The estimator's parameter says the kind (the same name may be a loss and a kernel, say).
        kinds = [key] if key in ("loss", "regularizer", "solver") else ["loss", "regularizer", "solver", "kernel"]
        cls_kind = next((kind for kind in kinds if value["__plugin__"] in registry.names(kind)), None)
        if cls_kind is None:
            raise ModelFormatError(f"the model uses the plugin {value['__plugin__']!r}, which is not installed")
        return registry.create(cls_kind, value["__plugin__"], **value["params"])
    return value


def load_model(path: str | Path) -> Any:
    """Read a model written by :func:`save_model`.

    Raises
    ------
    ModelFormatError
        If the file is not a multikernel model, is corrupted, or was written by an incompatible version.
    """
    from multikernel.estimators.classifier import MKLClassifier
    from multikernel.stack.kernelset import KernelSet

    path = Path(path)
    try:
        data = np.load(path, allow_pickle=False)
        meta = json.loads(bytes(data["__meta__"]).decode("utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"{str(path)!r} is not a readable multikernel model file ({exc})") from exc
    if meta.get("library") != "multikernel":
        raise ModelFormatError(f"{str(path)!r} was not written by multikernel")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} uses model format {meta.get('format_version')} (written by multikernel "
            f"{meta.get('version')}); this is multikernel {__version__}, which reads format {FORMAT_VERSION}. "
            f"Refit the model, or load it with the version that wrote it.")
    try:
        params = {k: _restore_part(v, k) for k, v in meta["params"].items()}
        ks_meta = meta["kernel_set"]
        builders = None
        if ks_meta is not None:
            registry = get_registry()
            builders = []
            for i, spec in enumerate(ks_meta["builders"]):
                b = registry.create("kernel", spec["name"], **spec["params"])
                _restore_state(b, data, f"builder{i}", spec["state"])
                builders.append(b)
        if params.get("kernels") == "builders":
            params["kernels"] = builders
        est = MKLClassifier(**params)
        for key, name in meta["fitted"].items():
            setattr(est, key, _scalar_or_array(data[name]))
        est.kernel_names_ = meta["kernel_names"]
        if ks_meta is not None:
            ks = KernelSet(builders, normalize=ks_meta["normalize"], dtype=ks_meta["dtype"],
                           backend=ks_meta.get("backend", "dense"), memory_budget=ks_meta.get("memory_budget"),
                           standardize=ks_meta.get("standardize", False))
            _restore_state(ks, data, "kernelset", ks_meta["state"])
            est.kernel_set_ = ks
        else:
            est.kernel_set_ = None
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{str(path)!r} is corrupted or incomplete ({exc})") from exc
    est.results_ = []
    return est
