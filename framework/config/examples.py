"""The embedded examples of ``multikernel run --example NAME``: one run configuration per body of work.

Each example is a TOML file of ``multikernel/config/data/examples/`` on data shipped with scikit-learn or
generated, and finishes in seconds.  Its first comment lines are its summary; its task kind is the run's
(:func:`multikernel.config.runner.check_config` resolves it).  ``soft_margin`` is the embedded default of
``multikernel run``.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import attrs

from multikernel.config.schema import RunConfig, load_config, read_toml
from multikernel.errors import ConfigError

__all__ = ["Example", "examples", "load_example", "EXAMPLES_DIR"]

EXAMPLES_DIR = Path(__file__).parent / "data" / "examples"


@attrs.frozen
class Example:
    """An embedded example: its name, task kind, one-line summary and configuration file."""

    name: str
    task: str
    summary: str
    path: Path


def _summary(text: str) -> str:
    """The leading comment paragraph of a TOML file, as one line."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    return " ".join(lines)


def examples() -> list[Example]:
    """Every embedded example, by name."""
    out = []
    for path in sorted(EXAMPLES_DIR.glob("*.toml")):
        data = read_toml(path)
        kind = data.get("task", {}).get("kind", "classification")
        out.append(Example(path.stem, kind, _summary(path.read_text(encoding="utf-8")), path))
    return out


def load_example(name: str) -> RunConfig:
    """The run configuration of the example ``name``.

    Raises
    ------
    ConfigError
        For a name that is not an example; the message lists them.
    """
    names = [e.name for e in examples()]
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"no example {name!r}.{hint} Examples: {', '.join(names)}", "--example")
    return load_config(EXAMPLES_DIR / f"{name}.toml")
