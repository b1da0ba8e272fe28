"""Helpers for save/load tests of any estimator of the library: a round trip and a battery of damaged files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from multikernel.errors import ModelFormatError


def rewrite_meta(src: Path, dst: Path, change: Callable[[dict], Any]) -> None:
    """Copy the model file ``src`` to ``dst`` with its metadata JSON changed by ``change(meta)``."""
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(bytes(arrays["__meta__"]).decode())
    change(meta)
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(dst, **arrays)


def round_trip(est: Any, path: Path, methods: dict[str, tuple]) -> Any:
    """Save ``est``, load it back and check that every method in ``methods`` (name -> arguments) gives the same
    result (labels exactly; numbers to 1e-12 relative: a restored array's memory layout may change the order of
    a BLAS sum); returns the loaded estimator."""
    est.save(path)
    loaded = type(est).load(path)
    assert type(loaded) is type(est)
    assert loaded.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    for name, args in methods.items():
        got, want = getattr(loaded, name)(*args), getattr(est, name)(*args)
        if np.asarray(want).dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
    return loaded


def _real_array_key(fitted: dict) -> str:
    return next(k for k, v in fitted.items() if isinstance(v, dict) and "array" in v)


def assert_damaged_files_refused(path: Path, cls: type, tmp_path: Path) -> None:
    """Every one of these damages of a valid model file ``path`` raises ``ModelFormatError`` at load: no fitted
    state, each fitted attribute missing in turn, an array replaced by text, an unknown attribute, a parameter of
    the wrong type, another class, a truncated file."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(bytes(data["__meta__"]).decode())
    fitted = meta["model"]["fitted"]
    schema = cls._fitted_schema or {}
    required = [k for k in fitted if k in schema and schema[k].required]
    changes: list[tuple[str, Callable[[dict], Any]]] = [("no fitted state", lambda m: m["model"].update(fitted={}))]
    changes += [(f"without {k}", lambda m, k=k: m["model"]["fitted"].pop(k)) for k in required]
    key = _real_array_key(fitted)
    changes.append((f"{key} as text", lambda m: m["model"]["fitted"].update({key: {"json": "text"}})))
    changes.append(("unknown attribute", lambda m: m["model"]["fitted"].update(
        surprise_=m["model"]["fitted"][key])))
    changes.append(("private attribute", lambda m: m["model"]["fitted"].update(
        _private={"json": 1})))
    numeric = next(k for k, v in meta["model"]["params"].items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool))
    changes.append((f"{numeric}='abc'", lambda m: m["model"]["params"].update({numeric: "abc"})))
    changes.append(("another class", lambda m: m["model"].update({"class": "multikernel.nothing.Here"})))
    for i, (what, change) in enumerate(changes):
        bad = tmp_path / f"bad{i}.npz"
        rewrite_meta(path, bad, change)
        with pytest.raises(ModelFormatError, match=f"bad{i}.npz"):
            cls.load(bad)
            pytest.fail(f"a model file {what} was loaded")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(ModelFormatError, match="truncated.npz"):
        cls.load(truncated)
