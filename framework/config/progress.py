"""Progress of long runs (``multikernel run`` and ``experiment``): a bar on a terminal, one line per finished
item otherwise.

A progress bar redraws itself with carriage returns, which a log file or a CI console shows as one
growing line, or not at all; when stderr is not a terminal each finished item is logged as one line instead,
so the log still shows how far a run got and how long each step took.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """Report ``total`` items as they finish, on ``stream`` (stderr by default).

    Parameters
    ----------
    total : int
        Number of items (including ``initial`` ones already done).
    desc : str
        What is running (``"fitting"``, ``"experiment"``); starts each line.
    unit : str
        The bar's unit.
    show : bool, optional
        ``False``: nothing; otherwise (``True`` or ``None``) a bar when ``stream`` is a terminal and one line
        per item when it is not.
    initial : int
        Items already done (a resumed run).
    stream : file, optional
        Where to write (default: ``sys.stderr`` at construction time).
    """

    def __init__(self, total: int, desc: str, unit: str, show: bool | None = True, initial: int = 0,
                 stream: IO[str] | None = None) -> None:
        self.total, self.desc, self.count = total, desc, initial
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = show is not False
        terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar = (tqdm(total=total, initial=initial, desc=desc, unit=unit, file=self.stream)
                     if self.enabled and terminal else None)

    def done(self, label: str) -> None:
        """One more item finished; ``label`` says which (and how it went)."""
        self.count += 1
        if self._bar is not None:
            self._bar.set_postfix_str(label[-40:])
            self._bar.update()
        elif self.enabled:
            print(f"{self.desc} [{self.count}/{self.total}] {label}", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
