"""Where independent units of work run: this process and its joblib workers, or a Dask cluster.

Every parallel loop of the library (experiment units, per-class fits) is a joblib ``Parallel`` call, so it
runs on whichever joblib backend is active.  Two ways to send the work to a Dask cluster:

* an experiment configuration with ``engine = "dask"`` and ``scheduler = "tcp://host:8786"`` in its
  ``[experiment]`` table (:func:`engine_backend` opens the client and the backend for the run);
* ``with joblib.parallel_config(backend="dask"):`` around a fit or a grid search, with a
  ``dask.distributed.Client`` created beforehand (joblib's own Dask backend; nothing here is needed).

Large inputs go to the workers once per parallel call, not once per task: the experiment runner scatters
its data sets (joblib's ``scatter=``), and kernel stacks passed to a task report their size to Dask
(:func:`register_sizeof`, loaded through the ``dask.sizeof`` entry point), so that joblib's Dask backend
scatters them (a lazy stack is its features and fitted builders, O(n M), never its kernels).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from multikernel.errors import ConfigError

__all__ = ["ENGINES", "check_engine", "engine_backend", "register_sizeof"]

ENGINES = ("local", "dask")
"""``local``: joblib's default backend (processes on this machine); ``dask``: a Dask cluster."""

_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc)://[^\s/:]+(:\d+)?/?$")
_INSTALL = "install it with: pip install 'multikernel[dask]'"


def check_engine(engine: str, scheduler: str | None, where: str = "experiment") -> None:
    """Check an engine choice without contacting the cluster (``multikernel validate`` runs this too).

    Raises
    ------
    ConfigError
        For an unknown engine, a Dask engine without a scheduler address (or with a malformed one), a
        scheduler address with the local engine, or a Dask engine when ``dask.distributed`` is missing.
    """
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(map(repr, ENGINES))}",
                          f"{where}.engine")
    if engine == "local":
        if scheduler is not None:
            raise ConfigError(f"a scheduler address ({scheduler!r}) is only used with engine = \"dask\"; set "
                              "engine = \"dask\" or remove scheduler", f"{where}.scheduler")
        return
    if scheduler is None:
        raise ConfigError("engine = \"dask\" needs the address of the Dask scheduler, e.g. scheduler = "
                          "\"tcp://head-node:8786\" (printed by the `dask scheduler` command)", f"{where}.scheduler")
    if not _ADDRESS.match(scheduler):
        raise ConfigError(f"{scheduler!r} is not a scheduler address; expected protocol://host:port, e.g. "
                          "\"tcp://head-node:8786\"", f"{where}.scheduler")
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"engine = \"dask\" needs dask.distributed, which is not installed; {_INSTALL}",
                          f"{where}.engine") from exc


@contextlib.contextmanager
def engine_backend(engine: str, scheduler: str | None, scatter: Sequence[Any] = (),
                   where: str = "experiment") -> Iterator[None]:
    """The joblib backend of ``engine`` for the ``Parallel`` calls inside the block.

    With ``engine="dask"`` a client connects to ``scheduler`` (closed on exit) and ``scatter`` (arrays
    the tasks share, passed to them as top-level arguments) is broadcast to every worker once.  The local
    engine leaves joblib's configuration as it is (so an enclosing ``parallel_config`` still applies).
    """
    check_engine(engine, scheduler, where)
    if engine == "local":
        yield
        return
    from distributed import Client
    from joblib import parallel_config

    try:
        client = Client(scheduler, set_as_default=False)  # timeout: distributed.comm.timeouts.connect
    except OSError as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); start it with "
                          "`dask scheduler` and workers with `dask worker ADDRESS` (docs/cluster.md)",
                          f"{where}.scheduler") from exc
    try:
        with parallel_config(backend="dask", client=client, scatter=list(scatter) or None):
            yield
    finally:
        client.close()


def register_sizeof(sizeof: Any) -> None:
    """Teach Dask the size of a kernel stack (the ``dask.sizeof`` entry point calls this).

    joblib's Dask backend scatters a task argument once per parallel call when Dask sizes it above 1 kB;
    without this, a stack object would count as a few bytes and be pickled into every task.
    """
    from multikernel.stack.storage import KernelStack

    @sizeof.register(KernelStack)
    def _sizeof_stack(stack: KernelStack) -> int:
        return int(stack.nbytes) + 1024
