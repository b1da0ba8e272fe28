"""Checks of scalar parameters shared by the estimator and the plugins.

One place decides what counts as a number: every real type (Python ``int`` and ``float``, NumPy scalars
such as ``np.float32(1.0)`` or ``np.int64(10)``, ``fractions.Fraction``, ...) through :class:`numbers.Real`,
never ``bool`` (``C=True`` is a mistake, not ``C=1``).  Each check returns the value converted to a
Python ``float`` or ``int``, so the caller stores or passes on a plain number.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["check_real", "check_positive_real", "check_nonnegative_real", "check_positive_integer"]


def _is_real(value: Any) -> bool:
    # numpy.bool_ is not registered as numbers.Real; bool is (as a subclass of int) and is refused.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_real(name: str, value: Any, *, low: float | None = None, strict: bool = True,
               allow_inf: bool = False) -> float:
    """``value`` as a ``float`` after checking that it is a real number in range.

    Parameters
    ----------
    name : str
        How the error message names the parameter (``"C"``, ``"rbf: gamma"``).
    value : object
        The value to check.
    low : float, optional
        Lower bound; ``value > low`` with ``strict``, ``value >= low`` otherwise.
    strict : bool, default=True
        Whether ``low`` itself is excluded.
    allow_inf : bool, default=False
        Whether ``+inf`` is accepted (NaN never is).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a non-number (including ``bool`` and strings), NaN, an infinity (unless allowed) or a value
        out of range; the message names the parameter and the accepted range.
    """
    finite = "" if allow_inf else "finite "
    if low is None:
        wanted = f"a {finite}number"
    elif low == 0:
        wanted = f"a {'positive' if strict else 'non-negative'} {finite}number"
    else:
        wanted = f"a {finite}number {'>' if strict else '>='} {low:g}"
    if not _is_real(value):
        raise ValueError(f"{name} must be {wanted}; got {value!r} of type {type(value).__name__}")
    x = float(value)
    bad = math.isnan(x) or (math.isinf(x) and not (allow_inf and x > 0))
    if low is not None:
        bad = bad or (x <= low if strict else x < low)
    if bad:
        raise ValueError(f"{name} must be {wanted}; got {value!r}")
    return x


def check_positive_real(name: str, value: Any) -> float:
    """``value`` as a ``float``, checked to be a positive finite real number (``C``, ``gamma``, ``tol``).

    Accepts every :class:`numbers.Real` except ``bool``: ``1``, ``2.5``, ``np.float32(1.0)``,
    ``np.int64(10)``.

    Raises
    ------
    ValueError
        ``"<name> must be a positive finite number; got ..."``.
    """
    return check_real(name, value, low=0.0, strict=True)


def check_nonnegative_real(name: str, value: Any) -> float:
    """``value`` as a ``float``, checked to be a finite real number ``>= 0`` (an offset such as ``coef0``)."""
    return check_real(name, value, low=0.0, strict=False)


def check_positive_integer(name: str, value: Any) -> int:
    """``value`` as an ``int``, checked to be a whole number ``>= 1`` (``degree``, ``max_iter``).

    Integer-valued reals (``2.0``, as TOML or JSON may give them) are accepted; ``2.5`` and ``bool`` are
    not.

    Raises
    ------
    ValueError
        ``"<name> must be a positive integer; got ..."``.
    """
    if not _is_real(value) or not math.isfinite(float(value)) or float(value) != int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


# attrs validators on the same rules, for the settings classes (configs and the fit core's settings)
def positive(instance: Any, attribute: Any, value: Any) -> None:
    """attrs validator: a finite number > 0 (``None`` passes: the key is optional)."""
    if value is not None:
        check_positive_real(attribute.name, value)


def positive_integer(instance: Any, attribute: Any, value: Any) -> None:
    """attrs validator: a whole number >= 1 (``None`` passes: the key is optional)."""
    if value is not None:
        check_positive_integer(attribute.name, value)
