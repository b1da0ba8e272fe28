"""What each regularizer offers and what each solver needs, and the check that pairs them.

A solver can only run with a regularizer that provides the operations it calls: block coordinate
descent calls ``closed_form_update``, projected gradient ``project``, the level method a projection, a
polyhedral domain with a known cap and the tangents of the penalty.  The vocabulary is the small enum
:class:`Capability`.  A regularizer's capabilities are *derived*, not declared, wherever the code allows:

======================  =============================================================================
capability              offered when
======================  =============================================================================
``closed_form``         the class overrides :meth:`~multikernel.core.interfaces.Regularizer.closed_form_update`
``projection``          the class overrides :meth:`~multikernel.core.interfaces.Regularizer.project`
``penalty_gradient``    the class has no penalty (does not override ``penalty``), or overrides
                        ``penalty_gradient`` too
``simplex``             ``domain == "simplex"``: the domain is the unit simplex ``{mu >= 0, sum mu = 1}``
``polyhedral``          ``domain`` is one of :data:`POLYHEDRAL_DOMAINS`: ``{sum mu = 1, 0 <= mu <= cap}``,
                        the domain the level method's linear programs describe
``lp_ball``             ``domain == "lp_ball"``: the domain is ``{mu >= 0, ||mu||_p <= 1}`` and the instance
                        has the exponent ``p`` (SMO-MKL needs the closed-form weights of this ball)
``cap``                 the cap of that domain is known: 1 for the simplex, ``1/M`` for the single point,
                        else the class defines ``cap(n_kernels)``
``strongly_convex``     :meth:`~multikernel.core.interfaces.Regularizer.strong_convexity` is positive for the
                        regularizer's parameters
``boundary``            the class overrides :meth:`~multikernel.core.interfaces.Regularizer.onto_boundary`
======================  =============================================================================

so a class cannot claim an operation it does not implement.  The one declaration is the class attribute
``domain`` (the shape of the domain cannot be read off the code); the tests check each built-in's
projection lands in the domain it declares.  A solver declares the capabilities it needs in its class
attribute ``requires`` (a set of :class:`Capability`).

A solver that accepts a regularizer's domain but does not minimise the problem's objective
``F = Omega + J`` (EasyMKL reads its weights off one QP, then solves one SVM) declares so in its class
attribute ``replaces_objective``: a short statement of what it computes instead (``None``, the default, for
the solvers of ``F``).  :func:`replaced_objective` reads it, so that tools comparing solvers on ``F``
(benchmarks, the reference tests) can leave such solvers out without knowing their names.

:func:`check_compatible` is called wherever a method's parts are built (the estimator, configs, the
experiment runner), so an impossible pair fails before any kernel is computed, with a message that names
what is missing and the registered solvers that would work.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from multikernel.core.interfaces import InnerCapability, Regularizer, Solver
from multikernel.core.registry import Registry, get_registry
from multikernel.errors import PluginError

__all__ = [
    "Capability",
    "IncompatiblePartsError",
    "POLYHEDRAL_DOMAINS",
    "check_compatible",
    "check_inner",
    "check_loss_form",
    "compatible_solvers",
    "offered_by",
    "replaced_objective",
    "required_by",
]


class Capability(str, enum.Enum):
    """An operation a regularizer offers and a solver may need (values are the names used in messages)."""

    CLOSED_FORM = "closed_form"
    PROJECTION = "projection"
    PENALTY_GRADIENT = "penalty_gradient"
    SIMPLEX = "simplex"
    POLYHEDRAL = "polyhedral"
    CAP = "cap"
    STRONGLY_CONVEX = "strongly_convex"
    LP_BALL = "lp_ball"
    BOUNDARY = "boundary"

    def __str__(self) -> str:
        return self.value


POLYHEDRAL_DOMAINS = frozenset({"simplex", "box_simplex", "point"})
"""Values of ``Regularizer.domain`` whose domain is ``{sum mu = 1, 0 <= mu <= cap}`` (``point``: cap = 1/M)."""

# What a third party implements to offer each capability: the advice of the error message.
_HOW = {
    Capability.CLOSED_FORM: "implement closed_form_update(mu, q)",
    Capability.PROJECTION: "implement project(v), the Euclidean projection onto the domain",
    Capability.PENALTY_GRADIENT: "implement penalty_gradient(mu), since the class overrides penalty",
    Capability.SIMPLEX: 'declare domain = "simplex" if the domain is the unit simplex',
    Capability.POLYHEDRAL: 'declare domain = "simplex", "box_simplex" or "point" if the domain is '
                           '{sum mu = 1, 0 <= mu <= cap}',
    Capability.CAP: "define cap(n_kernels), the upper bound of every weight",
    Capability.STRONGLY_CONVEX: "return a positive modulus from strong_convexity()",
    Capability.LP_BALL: 'declare domain = "lp_ball" (with the exponent as attribute p) if the domain is '
                        '{mu >= 0, ||mu||_p <= 1}',
    Capability.BOUNDARY: "implement onto_boundary(v), v scaled onto the boundary where the optimum lies",
}


class IncompatiblePartsError(PluginError):
    """A solver paired with a regularizer that lacks an operation the solver needs.

    ``missing`` holds the missing capabilities and ``alternatives`` the registered solvers that would work.
    """

    def __init__(self, message: str, missing: Iterable[Capability] = (), alternatives: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.missing = frozenset(missing)
        self.alternatives = tuple(alternatives)


def _overrides(cls: type, method: str) -> bool:
    """Whether ``cls`` replaces the base :class:`Regularizer`'s ``method``."""
    return getattr(cls, method, None) is not getattr(Regularizer, method)


def offered_by(regularizer: Regularizer) -> frozenset[Capability]:
    """The capabilities a regularizer instance offers, derived from its class and parameters."""
    cls = type(regularizer)
    offered = set()
    if _overrides(cls, "closed_form_update"):
        offered.add(Capability.CLOSED_FORM)
    if _overrides(cls, "project"):
        offered.add(Capability.PROJECTION)
    if _overrides(cls, "onto_boundary"):
        offered.add(Capability.BOUNDARY)
    if not _overrides(cls, "penalty") or _overrides(cls, "penalty_gradient"):
        offered.add(Capability.PENALTY_GRADIENT)
    domain = getattr(cls, "domain", "")
    if domain == "simplex":
        offered.add(Capability.SIMPLEX)
    if domain == "lp_ball":
        offered.add(Capability.LP_BALL)
    if domain in POLYHEDRAL_DOMAINS:
        offered.add(Capability.POLYHEDRAL)
        if domain in ("simplex", "point") or callable(getattr(cls, "cap", None)):
            offered.add(Capability.CAP)
    try:
        if float(regularizer.strong_convexity()) > 0.0:
            offered.add(Capability.STRONGLY_CONVEX)
    except ValueError:
        pass  # invalid parameters: ``check`` reports them with its own message; no solver needs this one
    return frozenset(offered)


def required_by(solver: Solver | type[Solver]) -> frozenset[Capability]:
    """The capabilities a solver (instance or class) declares in ``requires``.

    Raises
    ------
    PluginError
        If ``requires`` names something that is not a :class:`Capability`.
    """
    cls = solver if isinstance(solver, type) else type(solver)
    declared = getattr(cls, "requires", frozenset())
    try:
        return frozenset(Capability(c) for c in declared)
    except (TypeError, ValueError) as exc:
        raise PluginError(
            f"solver class {cls.__module__}.{cls.__qualname__} declares requires={declared!r}: {exc}. "
            f"Capabilities are {', '.join(c.value for c in Capability)}") from exc


def replaced_objective(solver: Solver | type[Solver]) -> str | None:
    """What ``solver`` (instance or class) computes instead of minimising ``F``, or ``None`` if it minimises it.

    Read from the class attribute ``replaces_objective`` (see the module docstring).

    Raises
    ------
    PluginError
        If ``replaces_objective`` is neither ``None`` nor a non-empty string.
    """
    cls = solver if isinstance(solver, type) else type(solver)
    declared = getattr(cls, "replaces_objective", None)
    if declared is None:
        return None
    if not (isinstance(declared, str) and declared.strip()):
        raise PluginError(f"solver class {cls.__module__}.{cls.__qualname__} declares replaces_objective="
                          f"{declared!r}: it must be None (the solver minimises the problem's objective) or a "
                          f"non-empty string saying what the solver computes instead")
    return declared


def compatible_solvers(regularizer: Regularizer, registry: Registry | None = None) -> list[str]:
    """Names of the registered solvers whose requirements ``regularizer`` meets, sorted."""
    registry = registry or get_registry()
    offered = offered_by(regularizer)
    return [info.name for info in registry.plugins("solver") if required_by(info.obj) <= offered]


_INNER_NEEDS = {
    InnerCapability.LABELLED_BLOCKS: "a sample loss on class labels (the SVM inner problem of a classification "
                                     "task), not a task's own inner problem",
    InnerCapability.SINGLE_BLOCK: "one binary problem, not several blocks sharing the kernel weights",
    InnerCapability.SEPARABLE: "independent blocks it can sample (the inner problem's split()), not coupled ones",
}


def check_loss_form(loss: Any, solver: Any) -> None:
    """Raise :class:`IncompatiblePartsError` if ``solver`` declares ``loss_forms`` and ``loss`` is not of one."""
    forms = getattr(solver, "loss_forms", None)
    if forms is None or loss is None or getattr(loss, "form", None) in forms:
        return
    name = getattr(solver, "name", type(solver).__name__)
    raise IncompatiblePartsError(
        f"solver {name!r} solves the {' or '.join(sorted(forms))} loss only; got loss "
        f"{getattr(loss, 'name', type(loss).__name__)!r}. Use 'bcd' or 'projected_gradient' for other losses",
        frozenset(), [])


def check_inner(inner: Any, solver: Any) -> None:
    """Raise :class:`IncompatiblePartsError` if ``inner`` lacks what ``solver`` declares in ``requires_inner``
    (or, for a sample-loss inner problem, its loss is not of the solver's ``loss_forms``)."""
    if inner is None:
        return
    offered = inner.capabilities()
    missing = frozenset(getattr(solver, "requires_inner", frozenset())) - offered
    name = getattr(solver, "name", type(solver).__name__)
    if missing:
        needs = "; ".join(_INNER_NEEDS[c] for c in InnerCapability if c in missing)
        raise IncompatiblePartsError(
            f"solver {name!r} needs {needs}; the inner problem {type(inner).__name__} does not offer it. Use a "
            f"deterministic solver such as 'level', 'bcd' or 'projected_gradient' (`multikernel plugins` lists "
            f"them)", missing, [])
    if InnerCapability.LABELLED_BLOCKS in offered:
        check_loss_form(inner.loss, solver)


def check_compatible(regularizer: Any, solver: Any, registry: Registry | None = None) -> None:
    """Check that ``solver`` can run with ``regularizer``.

    Parameters
    ----------
    regularizer : Regularizer
    solver : Solver
    registry : Registry, optional
        Where to look up names and the solvers that would work (default: the process-wide registry).

    Raises
    ------
    IncompatiblePartsError
        If either part is of the wrong kind, or the regularizer lacks a capability the solver needs; the
        message names what is missing, how to provide it and the registered solvers that would work.
    """
    registry = registry or get_registry()
    for part, kind, base in ((regularizer, "regularizer", Regularizer), (solver, "solver", Solver)):
        if not isinstance(part, base):
            raise IncompatiblePartsError(f"the {kind} must be a multikernel.{base.__qualname__} instance; got "
                                         f"{part!r} of type {type(part).__qualname__}")
    missing = required_by(solver) - offered_by(regularizer)
    if not missing:
        return
    reg_name, solver_name = _label(registry, regularizer), _label(registry, solver)
    alternatives = compatible_solvers(regularizer, registry)
    # A cap means something only for a polyhedral domain: name it alone when the domain is the issue.
    shown = missing - {Capability.CAP} if Capability.POLYHEDRAL in missing else missing
    needs = "; ".join(f"{c.value} (to offer it, {_HOW[c]})" for c in _ordered(shown))
    if alternatives:
        works = f"Solvers that work with {reg_name}: {', '.join(alternatives)}."
    else:
        offered = offered_by(regularizer)
        lacks = "; ".join(f"{info.name} lacks {_listed(required_by(info.obj) - offered)}"
                          for info in registry.plugins("solver"))
        works = f"No registered solver works with {reg_name} ({lacks})."
    raise IncompatiblePartsError(
        f"solver {solver_name} cannot run with regularizer {reg_name}, which lacks: {needs}. {works}",
        missing, alternatives)


def _ordered(capabilities: Iterable[Capability]) -> list[Capability]:
    return sorted(capabilities, key=list(Capability).index)


def _listed(capabilities: Iterable[Capability]) -> str:
    return ", ".join(c.value for c in _ordered(capabilities))


def _label(registry: Registry, part: Any) -> str:
    """The registered name of ``part`` in quotes, or its class name for an unregistered class."""
    name = registry.lookup_name(part)
    return repr(name) if name is not None else f"{type(part).__name__} (an unregistered class)"
