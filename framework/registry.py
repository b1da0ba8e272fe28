"""The plugin registry: loads every plugin in the ``multikernel`` entry-point group and resolves names."""

from __future__ import annotations

import difflib
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

import attrs
import pluggy

from multikernel import hookspecs
from multikernel.errors import PluginError

__all__ = ["Registry", "PluginInfo", "get_registry", "register_plugin"]


@attrs.frozen
class PluginInfo:
    """One registered implementation: its kind, public name, the object and the package it came from."""

    kind: str
    name: str
    obj: Any
    origin: str


class Registry:
    """Resolves plugin names of every kind.

    Parameters
    ----------
    load_entry_points : bool
        Load the plugins advertised in the ``multikernel`` entry-point group (built-ins included).
    """

    def __init__(self, load_entry_points: bool = True) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._table: dict[str, dict[str, PluginInfo]] | None = None
        self._lock = threading.Lock()
        if load_entry_points:
            self._load_entry_points()

    # -- registration -----------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        for ep in entry_points(group=hookspecs.PROJECT):
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party plugin must not hide which one it is
                raise PluginError(
                    f"could not load the multikernel plugin {ep.name!r} ({ep.value}) from package "
                    f"{_dist_name(ep)!r}: {exc}. Uninstall or fix that package."
                ) from exc
            if self._pm.is_registered(plugin):
                continue
            self._pm.register(plugin, name=f"{_dist_name(ep)}:{ep.name}")

    def register(self, plugin: ModuleType | object, name: str | None = None) -> None:
        """Register a plugin object (a module or an instance with ``@hookimpl`` functions).

        Raises
        ------
        PluginError
            If it provides a name that another plugin already provides for the same kind.
        """
        self._pm.register(plugin, name=name)
        with self._lock:
            self._table = None
        try:
            self._build()
        except PluginError:
            self._pm.unregister(plugin)
            with self._lock:
                self._table = None
            raise

    def unregister(self, plugin: ModuleType | object) -> None:
        """Remove a plugin registered with :meth:`register`."""
        self._pm.unregister(plugin)
        with self._lock:
            self._table = None

    # -- lookup -----------------------------------------------------------------------------------
    def _build(self) -> dict[str, dict[str, PluginInfo]]:
        with self._lock:
            if self._table is not None:
                return self._table
            table: dict[str, dict[str, PluginInfo]] = {kind: {} for kind in hookspecs.KINDS}
            for kind, hook_name in hookspecs.KINDS.items():
                hook = getattr(self._pm.hook, hook_name)
                for impl in hook.get_hookimpls():
                    provided: Mapping[str, Any] = impl.function() or {}
                    origin = self._pm.get_name(impl.plugin) or repr(impl.plugin)
                    for name, obj in provided.items():
                        if name in table[kind]:
                            raise PluginError(
                                f"two plugins provide the {kind} {name!r}: {table[kind][name].origin!r} "
                                f"and {origin!r}. Rename one of them or uninstall one of the packages."
                            )
                        table[kind][name] = PluginInfo(kind, name, obj, origin)
            self._table = table
            return table

    def names(self, kind: str) -> list[str]:
        """Sorted names of the registered plugins of ``kind``."""
        return sorted(self._kind_table(kind))

    def plugins(self, kind: str | None = None) -> list[PluginInfo]:
        """Every registered plugin (of one kind, if given), sorted by kind and name."""
        kinds = [kind] if kind else list(hookspecs.KINDS)
        return [info for k in kinds for _, info in sorted(self._kind_table(k).items())]

    def get(self, kind: str, name: str) -> Any:
        """The implementation registered as ``name`` for ``kind``.

        Raises
        ------
        PluginError
            For an unknown kind or name; the message lists what is available.
        """
        table = self._kind_table(kind)
        if not isinstance(name, str) or name not in table:
            available = sorted(table)
            close = difflib.get_close_matches(str(name), available, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise PluginError(
                f"unknown {kind} {name!r}.{hint} Available: {', '.join(available) or '(none)'}. "
                f"Run `multikernel plugins` to list every plugin."
            )
        return table[name].obj

    def create(self, kind: str, name: str, **params: Any) -> Any:
        """Instantiate the plugin class ``name`` of ``kind`` with ``params`` (clear error on bad keys)."""
        cls = self.get(kind, name)
        try:
            return cls(**params)
        except TypeError as exc:
            raise PluginError(f"bad parameters for {kind} {name!r}: {exc}") from exc

    def _kind_table(self, kind: str) -> dict[str, PluginInfo]:
        if kind not in hookspecs.KINDS:
            raise PluginError(f"unknown plugin kind {kind!r}; kinds are {', '.join(hookspecs.KINDS)}")
        return self._build()[kind]


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "name", None) or ep.value.split(".")[0]


_REGISTRY: Registry | None = None
_REGISTRY_LOCK = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _REGISTRY
    with _REGISTRY_LOCK:
        if _REGISTRY is None:
            _REGISTRY = Registry()
        return _REGISTRY


def register_plugin(plugin: ModuleType | object, name: str | None = None) -> None:
    """Register a plugin in the process-wide registry (for plugins that are not installed packages)."""
    get_registry().register(plugin, name=name)
