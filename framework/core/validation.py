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

import numpy as np

from multikernel.errors import InvalidParameterError

__all__ = [
    "check_real", "check_positive_real", "check_nonnegative_real", "check_positive_integer",
    "Constraint", "Real", "Integer", "Options", "Boolean", "NoneValue", "InstanceOf", "RandomState", "Plugin",
    "check_param", "validate_params", "check_class_labels", "shown",
]


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


# --------------------------------------------------------------------------------------------------
# Declarative parameter constraints: what every estimator's ``_parameter_constraints`` is made of
# --------------------------------------------------------------------------------------------------
class Constraint:
    """One accepted form of a parameter's value.  ``check`` returns a message when ``value`` is not of this
    form (``None`` when it is); ``describe`` says what the form is, for the error that lists the choices."""

    def check(self, value: Any) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - interface
        raise NotImplementedError


class Real(Constraint):
    """A real number (NumPy scalars included, ``bool`` and strings refused) in a range.

    Parameters
    ----------
    low, high : float, optional
        Bounds; open (excluded) unless ``closed`` says otherwise.
    closed : {"neither", "left", "right", "both"}, default="neither"
    allow_inf : bool, default=False
        Whether ``+inf`` is accepted (NaN never is).
    """

    def __init__(self, low: float | None = None, high: float | None = None, closed: str = "neither",
                 allow_inf: bool = False) -> None:
        self.low, self.high, self.closed, self.allow_inf = low, high, closed, allow_inf

    def _in_range(self, x: float) -> bool:
        left = self.closed in ("left", "both")
        right = self.closed in ("right", "both")
        if self.low is not None and (x < self.low or (x == self.low and not left)):
            return False
        return not (self.high is not None and (x > self.high or (x == self.high and not right)))

    def check(self, value: Any) -> str | None:
        if not _is_real(value):
            return f"got {value!r} of type {type(value).__name__}"
        x = float(value)
        if math.isnan(x) or (math.isinf(x) and not (self.allow_inf and x > 0)) or not self._in_range(x):
            return f"got {value!r}"
        return None

    def describe(self) -> str:
        finite = "" if self.allow_inf else "finite "
        if self.low == 0 and self.high is None:
            return f"a {'non-negative' if self.closed in ('left', 'both') else 'positive'} {finite}number"
        if self.low is None and self.high is None:
            return f"a {finite}number"
        lo = "[" if self.closed in ("left", "both") else "("
        hi = "]" if self.closed in ("right", "both") else ")"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"a number in {lo}{low}, {high}{hi}"


class Integer(Constraint):
    """A whole number (``int``, NumPy integers, and integer-valued floats as TOML/JSON give them) in a range;
    ``bool`` and ``2.5`` refused."""

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high

    def check(self, value: Any) -> str | None:
        if not _is_real(value) or not math.isfinite(float(value)) or float(value) != int(value):
            return f"got {value!r}"
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return f"got {value!r}"
        return None

    def describe(self) -> str:
        if self.low == 1 and self.high is None:
            return "a positive integer"
        if self.low == 0 and self.high is None:
            return "a non-negative integer"
        return f"an integer in [{'-inf' if self.low is None else self.low}, " \
               f"{'inf' if self.high is None else self.high}]"


class Options(Constraint):
    """One of a fixed set of strings."""

    def __init__(self, *options: str) -> None:
        self.options = options

    def check(self, value: Any) -> str | None:
        return None if isinstance(value, str) and value in self.options else f"got {value!r}"

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.options)


class Boolean(Constraint):
    """``True`` or ``False`` (``numpy.bool_`` too); not ``0``/``1`` or strings."""

    def check(self, value: Any) -> str | None:
        return None if isinstance(value, (bool, np.bool_)) else f"got {value!r} of type {type(value).__name__}"

    def describe(self) -> str:
        return "True or False"


class NoneValue(Constraint):
    """``None`` (the parameter's 'not set' value)."""

    def check(self, value: Any) -> str | None:
        return None if value is None else f"got {value!r}"

    def describe(self) -> str:
        return "None"


class InstanceOf(Constraint):
    """An instance of one of the given classes (a callable for ``type=callable``)."""

    def __init__(self, *types: type, label: str | None = None) -> None:
        self.types, self.label = types, label

    def check(self, value: Any) -> str | None:
        return None if isinstance(value, self.types) else f"got {value!r} of type {type(value).__name__}"

    def describe(self) -> str:
        return self.label or "an instance of " + " or ".join(t.__name__ for t in self.types)


class RandomState(Constraint):
    """What :func:`sklearn.utils.check_random_state` accepts: ``None``, a non-negative integer seed, or a
    :class:`numpy.random.RandomState`."""

    def check(self, value: Any) -> str | None:
        if value is None or isinstance(value, np.random.RandomState):
            return None
        return Integer(low=0, high=2**32 - 1).check(value)

    def describe(self) -> str:
        return "None, an integer seed in [0, 2**32 - 1] or a numpy.random.RandomState"


class Plugin(Constraint):
    """A registered plugin of one kind: its name, or an instance of its interface (scikit-learn nested
    parameters).  The registry is read when checking, so plugins registered later are accepted."""

    def __init__(self, kind: str, instances: bool = True) -> None:
        self.kind, self.instances = kind, instances

    def check(self, value: Any) -> str | None:
        from multikernel.core import interfaces
        from multikernel.core.registry import get_registry
        from multikernel.errors import PluginError

        if isinstance(value, str):
            try:
                get_registry().get(self.kind, value)
            except PluginError as exc:
                return f"got {value!r}: {exc}"
            return None
        interface = {"loss": interfaces.SampleLoss, "regularizer": interfaces.Regularizer,
                     "solver": interfaces.Solver, "kernel": interfaces.KernelBuilder}.get(self.kind)
        if self.instances and interface is not None and isinstance(value, interface):
            return None
        return f"got {value!r} of type {type(value).__name__}"

    def describe(self) -> str:
        return f"a registered {self.kind} name" + (" or instance" if self.instances else "")


def check_param(owner: str, name: str, value: Any, constraints: list[Constraint]) -> None:
    """Raise :class:`~multikernel.errors.InvalidParameterError` (a ``ValueError``) unless ``value`` satisfies one
    of ``constraints``.

    The message names the estimator, the parameter, what it accepts and what it got:
    ``"MKLClassifier: C must be a positive finite number or None; got 'abc' of type str"``.
    """
    reasons = [c.check(value) for c in constraints]
    if any(r is None for r in reasons):
        return
    wanted = " or ".join(c.describe() for c in constraints)
    got = next((r for r in reasons if r and "unknown" in r), reasons[0])
    raise InvalidParameterError(f"{owner}: {name} must be {wanted}; {got}")


def validate_params(owner: str, params: dict[str, Any], constraints: dict[str, list[Constraint]]) -> None:
    """Check every parameter named in ``constraints`` (see :func:`check_param`); others are not checked."""
    for name, accepted in constraints.items():
        if name in params:
            check_param(owner, name, params[name], accepted)


# --------------------------------------------------------------------------------------------------
# Class labels: one check, one message, for every classifier of the library
# --------------------------------------------------------------------------------------------------
def shown(value: Any) -> Any:
    """A label as a user wrote it: ``1.0`` rather than numpy's ``np.float64(1.0)`` in messages."""
    return value.item() if isinstance(value, np.generic) else value


def check_class_labels(y: Any, what: str = "y") -> np.ndarray:
    """``y`` as a 1-D array of class labels, or ``ValueError`` naming what is wrong with it.

    Accepts numbers, strings, booleans and objects of one type (pandas and lists included).  Refuses, with a
    message that says what to do, labels mixing types (``[1, "a"]``: numpy would fail comparing them),
    complex numbers, NaN or infinite labels, and ``None``.
    """
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D array of class labels; got shape {arr.shape}")
    if arr.dtype.kind == "c":
        raise ValueError(f"{what} holds complex numbers; class labels are numbers, strings or booleans")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{what} holds NaN or infinite labels; every sample needs a class label (remove the "
                         f"unlabelled samples, or use a semi-supervised estimator)")
    if arr.dtype.kind == "O":
        kinds = {("number" if isinstance(v, numbers.Number) and not isinstance(v, bool) else type(v).__name__)
                 for v in arr.tolist()}
        if "NoneType" in kinds:
            raise ValueError(f"{what} holds None; every sample needs a class label")
        if len(kinds) > 1:
            raise ValueError(f"{what} mixes labels of different types ({', '.join(sorted(kinds))}); use one type "
                             f"for all labels, e.g. y.astype(str)")
        if kinds == {"number"} and any(isinstance(v, complex) or (isinstance(v, float) and not math.isfinite(v))
                                       for v in arr.tolist()):
            raise ValueError(f"{what} holds complex, NaN or infinite labels")
    return arr
