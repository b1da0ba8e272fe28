"""Progress of a fit and what Ctrl-C keeps: one implementation for every iterative estimator.

An estimator's loop calls :meth:`FitProgress.update` once per iteration, with the values worth showing (the
duality gap, the number of selected kernels, ...) and, optionally, ``keep``: a function that stores the best
model found so far as the estimator's fitted state.  With ``verbose >= 1`` the iterations show as a tqdm bar
on a terminal, and as one log line per tenth of the iteration budget (and at the end) elsewhere, so that a
fit in a batch job or a notebook's captured output leaves a readable trace instead of carriage returns.

When the user presses Ctrl-C, :meth:`~multikernel.estimators.base.MultikernelEstimator._fit_context` calls the
last ``keep`` given (so the estimator holds the best model of the completed iterations), warns with
:class:`~multikernel.errors.FitInterruptedWarning` and returns normally.  A loop that gave no ``keep`` has
nothing to keep: the interrupt propagates.  (The MKL solvers handle Ctrl-C themselves and return their best
certified iterate, so MKL fits need no ``keep``.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

from tqdm.auto import tqdm

__all__ = ["FitProgress"]


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


class FitProgress:
    """Progress of one fit: a bar or log lines (``verbose >= 1``), and the latest best-model keeper.

    Parameters
    ----------
    verbose : int
        ``0`` shows nothing.
    total : int, optional
        The iteration budget (``max_iter``), for the bar's length and the log lines' spacing.
    desc : str
        What is iterated, shown first (``"MKLClassifier: l1mkl outer iterations"``).
    stream : file, optional
        Where the output goes; ``sys.stderr`` by default.
    """

    def __init__(self, verbose: int, total: int | None, desc: str, stream: TextIO | None = None) -> None:
        self.verbose = int(verbose or 0)
        self.total, self.desc = total, desc
        self.stream = stream if stream is not None else sys.stderr
        self.n = 0
        self.keep: Callable[[], None] | None = None
        self._bar = None
        self._last: dict[str, Any] = {}
        if self.verbose and self._interactive():
            self._bar = tqdm(total=total, desc=desc, unit="it", leave=False, file=self.stream)

    def _interactive(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def update(self, keep: Callable[[], None] | None = None, **values: Any) -> None:
        """One more iteration; ``values`` are shown beside the count, ``keep`` stores the best model so far."""
        self.n += 1
        if keep is not None:
            self.keep = keep
        if not self.verbose:
            return
        self._last = values
        if self._bar is not None:
            self._bar.update()
            if values:
                self._bar.set_postfix({k: _format(v) for k, v in values.items()}, refresh=False)
            return
        every = max(1, (self.total or 10) // 10)
        if self.n == 1 or self.n % every == 0:
            self._line()

    def _line(self, status: str = "") -> None:
        budget = f"/{self.total}" if self.total else ""
        shown = ", ".join(f"{k} {_format(v)}" for k, v in self._last.items())
        print(f"{self.desc}: {self.n}{budget}" + (f", {shown}" if shown else "") + (f" ({status})" if status else ""),
              file=self.stream, flush=True)

    def close(self, status: str = "done") -> None:
        """End the bar, or write the last log line."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.verbose and self.n:
            self._line(status)

    def as_callback(self) -> Callable[[dict[str, Any]], None]:
        """An outer-loop callback (``fit_mkl(..., callback=)``): one update per outer iteration with its gap."""
        def callback(entry: dict[str, Any]) -> None:
            shown = {"gap": float(entry["gap"])} if "gap" in entry else {}
            if "n_selected" in entry:
                shown["kernels"] = entry["n_selected"]
            self.update(**shown)

        return callback
