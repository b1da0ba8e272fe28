"""The plugin registry: loads every plugin in the ``multikernel`` entry-point group and resolves names.

The registry is the one source of truth for plugin names: the key a hook returns is the plugin's name in
configs, reports and saved models.  Registration sets the ``name`` attribute of each component class to
that key (or checks it, when the class body sets its own), and :meth:`Registry.name_of` looks a name up by
the exact class of an object, so an unregistered subclass never passes for its registered parent.

Every hook implementation is validated when its plugin is registered: an unknown hook name (a typo such
as ``multikernel_regularizer``), or a hook that returns anything but a mapping of names to components of
the right kind, fails with a :class:`~multikernel.errors.PluginError` naming the plugin and the hook.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

import attrs
import pluggy

from multikernel.core import hookspecs
from multikernel.core.interfaces import Method
from multikernel.core.tasks import TaskEstimator
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
        self._by_class: dict[type, PluginInfo] = {}
        self._lock = threading.Lock()
        if load_entry_points:
            self._load_entry_points()

    # -- registration -----------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        # A distribution's name is parsed from its metadata file at every access: once per package, not per
        # entry point (a third of the registry's first load with the built-ins' 21 entry points).
        names: dict[int, str] = {}
        for ep in entry_points(group=hookspecs.PROJECT):
            key = id(getattr(ep, "dist", None) or ep)
            dist = names[key] if key in names else names.setdefault(key, _dist_name(ep))
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken third-party plugin must not hide which one it is
                raise PluginError(
                    f"could not load the multikernel plugin {ep.name!r} ({ep.value}) from package "
                    f"{dist!r}: {exc}. Uninstall or fix that package."
                ) from exc
            if self._pm.is_registered(plugin):
                continue
            self._add(plugin, f"{dist}:{ep.name}")
        self._build()

    def register(self, plugin: ModuleType | object, name: str | None = None) -> None:
        """Register a plugin object (a module or an instance with ``@hookimpl`` functions).

        Raises
        ------
        PluginError
            If a hook of the plugin is unknown or returns something other than a mapping of names to
            components of its kind, or if it provides a name that another plugin already provides for the
            same kind.  The registry is then left as it was.
        """
        self._add(plugin, name)
        with self._lock:
            self._table = None
        try:
            self._build()
        except PluginError:
            self._pm.unregister(plugin)
            with self._lock:
                self._table = None
            raise

    def _add(self, plugin: ModuleType | object, name: str | None) -> None:
        """Register ``plugin`` with pluggy and refuse hook names that no specification knows."""
        try:
            self._pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:  # e.g. a hook implementation that takes arguments
            raise PluginError(f"plugin {_describe(plugin, name)}: {exc}") from exc
        except ValueError as exc:  # pluggy: the name or the object is registered already
            raise PluginError(f"plugin {_describe(plugin, name)} cannot be registered: {exc}") from exc
        try:
            self._pm.check_pending()
        except pluggy.PluginValidationError as exc:
            culprit = exc.plugin
            label = _describe(culprit, self._pm.get_name(culprit))
            unknown = sorted(caller.name for caller in self._pm.get_hookcallers(culprit) or ()
                             if not caller.has_spec())
            self._pm.unregister(plugin)
            hooks = sorted(hookspecs.KINDS.values())
            advice = "; ".join(
                f"{u!r} is not a multikernel hook"
                + "".join(f" (did you mean {c!r}?)" for c in difflib.get_close_matches(u, hooks, n=1))
                for u in unknown) or str(exc)
            raise PluginError(f"plugin {label}: {advice}. The hooks are {', '.join(hooks)}.") from exc

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
            names: dict[type, tuple[str, PluginInfo]] = {}
            estimator_where: dict[str, str] = {}
            for kind, hook_name in hookspecs.KINDS.items():
                hook = getattr(self._pm.hook, hook_name)
                for impl in hook.get_hookimpls():
                    origin = self._pm.get_name(impl.plugin) or repr(impl.plugin)
                    where = f"plugin {_describe(impl.plugin, origin)}, hook {hook_name}"
                    for name, obj in _provided(impl, where).items():
                        _check_entry(kind, name, obj, where)
                        if kind == "estimator":
                            estimator_where[name] = where
                        if name in table[kind]:
                            raise PluginError(
                                f"two plugins provide the {kind} {name!r}: {table[kind][name].origin!r} "
                                f"and {origin!r}. Rename one of them or uninstall one of the packages."
                            )
                        info = PluginInfo(kind, name, obj, origin)
                        table[kind][name] = info
                        if isinstance(obj, type):
                            if obj in names:
                                raise PluginError(
                                    f"{where}: the class {_qualname(obj)} is registered twice, as "
                                    f"{names[obj][0]!r} and {name!r}; a class has one name (register a "
                                    f"subclass for the second one)")
                            names[obj] = (name, info)
            # Every task estimator names a registered task kind (known only once every plugin is read).
            for info in table["estimator"].values():
                for task in info.obj.tasks:
                    if task not in table["task"]:
                        close = difflib.get_close_matches(str(task), list(table["task"]), n=1)
                        hint = f" Did you mean {close[0]!r}?" if close else ""
                        raise PluginError(
                            f"{estimator_where[info.name]}: task estimator {info.name!r}: task "
                            f"{task!r} is not a registered task kind.{hint} Kinds: "
                            f"{', '.join(sorted(table['task'])) or '(none)'}")
            # Everything is valid: only now give the classes their registered names.
            for cls, (name, _) in names.items():
                cls.name = name
            self._table = table
            self._by_class = {cls: info for cls, (_, info) in names.items()}
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
        """Instantiate the plugin class ``name`` of ``kind`` with ``params`` (clear error on bad keys); for a task
        estimator, its factory with its default parameters overridden by ``params``."""
        cls = self.get(kind, name)
        if isinstance(cls, TaskEstimator):  # a factory with defaults: create("estimator", "mlr_gl", C=10)
            cls = cls.create
        try:
            return cls(**params)
        except TypeError as exc:
            raise PluginError(f"bad parameters for {kind} {name!r}: {exc}") from exc

    def lookup_name(self, obj: Any) -> str | None:
        """The registered name of ``obj``'s exact class (or of ``obj`` if it is a class); ``None`` if none."""
        self._build()
        cls = obj if isinstance(obj, type) else type(obj)
        info = self._by_class.get(cls)
        return None if info is None else info.name

    def name_of(self, obj: Any, kind: str | None = None) -> str:
        """The name under which ``obj``'s exact class is registered (of ``kind``, if given).

        Subclasses do not inherit the name: a subclass of a registered plugin is a different plugin.

        Raises
        ------
        PluginError
            If the class is not registered (of that kind); the message says how to register it.
        """
        self._build()
        cls = obj if isinstance(obj, type) else type(obj)
        info = self._by_class.get(cls)
        if info is not None and (kind is None or info.kind == kind):
            return info.name
        parent = next((self._by_class[base] for base in cls.__mro__[1:] if base in self._by_class), None)
        inherited = (f" It subclasses the registered {parent.kind} {parent.name!r}, but a subclass is a "
                     f"different plugin and does not inherit its name." if parent is not None else "")
        what = f"a registered {kind}" if kind else "a registered plugin"
        hook_kind = kind or (parent.kind if parent is not None else None)
        hook = f"{hookspecs.KINDS[hook_kind]}()" if hook_kind else "hook of its kind"
        raise PluginError(
            f"{_qualname(cls)} is not {what}.{inherited} Register it under its own name: a {hook} "
            f"returning {{'my_name': {cls.__name__}}}, in a module advertised in the 'multikernel' entry-point "
            f"group or passed to multikernel.register_plugin.")

    def _kind_table(self, kind: str) -> dict[str, PluginInfo]:
        if kind not in hookspecs.KINDS:
            raise PluginError(f"unknown plugin kind {kind!r}; kinds are {', '.join(hookspecs.KINDS)}")
        return self._build()[kind]


def _provided(impl: Any, where: str) -> Mapping[str, Any]:
    """Call one hook implementation and check that it returned a mapping."""
    try:
        provided = impl.function()
    except Exception as exc:  # a third-party hook that fails must say which one it is
        raise PluginError(f"{where} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(provided, Mapping):
        raise PluginError(f"{where} returned {_shown(provided)}; a hook returns a mapping (a dict) of names to "
                          f"implementations, e.g. {{'my_name': MyClass}}")
    return provided


def _check_entry(kind: str, name: Any, obj: Any, where: str) -> None:
    """Refuse an entry of a hook's mapping that is not a name and an implementation of ``kind``."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise PluginError(f"{where}: the key {name!r} is not a name; keys are non-empty strings without "
                          f"surrounding spaces (the plugin's name in configs)")
    base = hookspecs.COMPONENT_TYPES.get(kind)
    if base is not None:
        expected = f"a subclass of multikernel.{base.__qualname__}"  # the public name of every interface
        if not isinstance(obj, type):
            hint = (f"; return the class itself: {{{name!r}: {type(obj).__name__}}}" if isinstance(obj, base)
                    else "")
            raise PluginError(f"{where}: {name!r} maps to {_shown(obj)}, not a class{hint}. A {kind} is "
                              f"registered as {expected}")
        if not issubclass(obj, base):
            raise PluginError(f"{where}: {name!r} maps to the class {_qualname(obj)}, which is not {expected}")
        declared = obj.__dict__.get("name")
        if declared and declared != name:
            raise PluginError(
                f"{where}: {name!r} maps to the class {_qualname(obj)}, whose name attribute is {declared!r}. "
                f"The registered name is the plugin's name everywhere: make the key and the attribute agree "
                f"(or drop the attribute; registration sets it)")
    elif kind == "method":
        if not isinstance(obj, Method):
            raise PluginError(f"{where}: {name!r} maps to {_shown(obj)}; a method is a "
                              f"multikernel.Method")
        if obj.name != name:
            raise PluginError(f"{where}: the key {name!r} maps to the method named {obj.name!r}; they must agree")
    elif kind == "estimator":
        if not isinstance(obj, TaskEstimator):
            raise PluginError(f"{where}: {name!r} maps to {_shown(obj)}; a task estimator is a "
                              f"multikernel.TaskEstimator(name, task, factory, params)")
        if obj.name != name:
            raise PluginError(f"{where}: the key {name!r} maps to the task estimator named {obj.name!r}; they must "
                              f"agree")
        problems = obj.problems()
        if problems:
            raise PluginError(f"{where}: task estimator {name!r}: {'; '.join(problems)}")
    elif not callable(obj):  # a family: factory(n_features, **params) -> list of builders
        raise PluginError(f"{where}: {name!r} maps to {_shown(obj)}; a kernel family is a function "
                          f"factory(n_features, **params) returning a list of kernel builders")


def _describe(plugin: Any, registered_as: str | None) -> str:
    """A plugin as a reader finds it: its registered name and its module (or its class, for objects)."""
    if isinstance(plugin, ModuleType):
        source = f"module {plugin.__name__}"
    else:
        source = f"{_qualname(type(plugin))} object"
    # pluggy names an unnamed plugin by its __name__ (modules) or its id(): neither adds anything
    anonymous = not registered_as or registered_as.isdigit() or registered_as == getattr(plugin, "__name__", None)
    return source if anonymous else f"{registered_as!r} ({source})"


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{text[:60]}... ({type(value).__name__})" if len(text) > 60 else f"{text} ({type(value).__name__})"


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
