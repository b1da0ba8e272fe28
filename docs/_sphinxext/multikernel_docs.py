"""Pages generated from the library itself when the documentation is built.

* ``generated/api/``: the API reference, one page for the top-level package (``multikernel.__all__``) and one per
  task package (every subpackage of ``multikernel`` with an ``__all__`` that is not one of the framework's layers);
  an object exported in several places is documented once, where it is first met.
* ``generated/cli.md``: every command of ``multikernel``, from its argument parser.
* ``generated/plugins.md``: every registered plugin by kind, from the registry.

The pages are rewritten only when their text changes, so an incremental build stays incremental.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

#: Subpackages that are layers of the framework (documented through the names the top level re-exports), not
#: task packages with their own estimators.
LAYERS = {"core", "stack", "solve", "estimators", "config", "experiments"}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _summary(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def task_packages() -> list[Any]:
    """The task packages: subpackages of ``multikernel`` with an ``__all__``, outside the framework's layers."""
    import multikernel

    found = []
    for info in pkgutil.iter_modules(multikernel.__path__):
        if info.ispkg and info.name not in LAYERS and not info.name.startswith("_"):
            module = importlib.import_module(f"multikernel.{info.name}")
            if getattr(module, "__all__", None):
                found.append(module)
    return found


def _directive(qualname: str, obj: Any) -> str:
    if inspect.isclass(obj):
        return f".. autoclass:: {qualname}\n   :members:\n   :show-inheritance:\n"
    if callable(obj):
        return f".. autofunction:: {qualname}\n"
    return f".. autodata:: {qualname}\n   :no-value:\n"


def api_page(module: Any, documented: dict[int, str]) -> str:
    """The reST page of ``module``'s public names; ``documented`` maps objects already documented to their name."""
    title = f"``{module.__name__}``"
    lines = [title, "=" * len(title), "", f".. currentmodule:: {module.__name__}", ""]
    intro = _summary(module)
    if intro:
        lines += [intro, ""]
    own, elsewhere = [], []
    for name in module.__all__:
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        key = id(obj)
        if key in documented and not isinstance(obj, (str, int, float, tuple, frozenset)):
            elsewhere.append((name, documented[key]))
        else:
            documented[key] = f"{module.__name__}.{name}"
            own.append((name, obj))
    if own:
        lines += [".. autosummary::", "   :nosignatures:", ""] + [f"   {name}" for name, _ in own] + [""]
    if elsewhere:
        lines += ["Also exported here: " + ", ".join(f":obj:`{name} <{target}>`" for name, target in elsewhere) + ".",
                  ""]
    for name, obj in own:
        lines += [_directive(f"{module.__name__}.{name}", obj), ""]
    return "\n".join(lines)


def write_api(out: Path) -> None:
    import multikernel

    documented: dict[int, str] = {}
    modules = [multikernel, *task_packages()]
    pages = []
    for module in modules:
        page = module.__name__.replace(".", "-")
        _write(out / "api" / f"{page}.rst", api_page(module, documented))
        pages.append(page)
    index = ["API reference", "=============", "",
             "Every public name: the top-level package ``multikernel`` (estimators, plugin contracts, the fit core "
             "and the kernel stack) and the task packages.", "",
             ".. toctree::", "   :maxdepth: 1", ""] + [f"   {p}" for p in pages] + [""]
    _write(out / "api" / "index.rst", "\n".join(index))


def write_cli(out: Path) -> None:
    from multikernel.cli import _parser

    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal width: fix it for reproducible pages
    parser = _parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    lines = ["# Command line reference", "",
             "Generated from the parser of the `multikernel` command. Exit codes: 0 success, 1 failure, 2 usage or "
             "configuration error (the message names the key path).", "",
             "```text", parser.format_help().rstrip(), "```", ""]
    helps = {a.dest: a.help for a in subparsers._choices_actions}
    for name, sub in subparsers.choices.items():
        lines += [f"## `multikernel {name}`", "", (helps.get(name) or "").rstrip(".") + ".", "",
                  "```text", sub.format_help().rstrip(), "```", ""]
    _write(out / "cli.md", "\n".join(lines))


def write_plugins(out: Path) -> None:
    from multikernel.core.registry import get_registry

    infos = get_registry().plugins()
    lines = ["# Registered plugins", "",
             "Every plugin the registry finds in this installation, by kind (`multikernel plugins` prints the same "
             "list). A name is what configurations, the estimators' parameters and `multikernel.create` take.", ""]
    kind = None
    for info in infos:
        if info.kind != kind:
            kind = info.kind
            lines += ["", f"## {kind}", "", "| name | origin | description |", "|---|---|---|"]
        summary = (getattr(info.obj, "summary", None) or _summary(info.obj)).replace("|", "\\|")
        task = f"[{info.obj.task}] " if info.kind == "estimator" else ""
        lines.append(f"| `{info.name}` | {info.origin} | {task}{summary} |")
    _write(out / "plugins.md", "\n".join(lines) + "\n")


def generate(app: Sphinx) -> None:
    out = Path(app.srcdir) / "generated"
    write_api(out)
    write_cli(out)
    write_plugins(out)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
