"""Kernels from features or precomputed: the input handling that every kernel estimator shares.

:class:`KernelInputMixin` turns ``X`` into a training stack in ``fit`` and into a cross stack at prediction, so
that :class:`~multikernel.MKLClassifier` and the other kernel estimators (the multi-label rankers) take the same
inputs, with the same checks and messages: features through a :class:`~multikernel.stack.KernelSet` (standardized,
kernels fitted on the training rows), or precomputed kernels in scikit-learn's pairwise layout
(n_samples, n_train, n_kernels), the library's (n_kernels, n_samples, n_train), one (n_samples, n_train) kernel,
or a :class:`~multikernel.stack.KernelStack`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_array
from sklearn.utils.validation import validate_data

from multikernel.core.interfaces import KernelBuilder
from multikernel.core.registry import get_registry
from multikernel.core.validation import (
    Boolean,
    Constraint,
    InstanceOf,
    Integer,
    NoneValue,
    Options,
    Real,
)
from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack, KernelStack

__all__ = ["KernelInputMixin", "KernelsParam", "KERNEL_INPUT_CONSTRAINTS"]


class KernelsParam(Constraint):
    """The ``kernels`` parameter: ``"precomputed"``, a registered kernel family (several kernels) or kernel builder
    name (one kernel, with ``kernel_params``), or a non-empty list of :class:`KernelBuilder` instances."""

    def check(self, value: object) -> str | None:
        registry = get_registry()
        if isinstance(value, str):
            if value == "precomputed" or value in registry.names("family") or value in registry.names("kernel"):
                return None
            known = registry.names("family") + registry.names("kernel")
            return f"got {value!r}, which is neither 'precomputed', a kernel family nor a kernel builder " \
                   f"(known: {', '.join(known)}; `multikernel plugins` lists them)"
        if isinstance(value, (list, tuple)) and value and all(isinstance(b, KernelBuilder) for b in value):
            return None
        if isinstance(value, (list, tuple)):
            bad = next((b for b in value if not isinstance(b, KernelBuilder)), None)
            return "got an empty list" if not value else \
                f"got a list with an element of type {type(bad).__name__}"
        return f"got {value!r} of type {type(value).__name__}"

    def describe(self) -> str:
        return "'precomputed', a kernel family or kernel name, or a list of KernelBuilder instances"


#: The constraints of the parameters the mixin owns (merged into each estimator's by the base class).
KERNEL_INPUT_CONSTRAINTS: dict[str, list[Constraint]] = {
    "kernels": [KernelsParam()],
    "kernel_params": [InstanceOf(dict, label="a dict"), NoneValue()],
    "normalize": [Options("none", "trace", "unit_diagonal", "center")],
    "standardize": [Boolean()],
    "kernel_dtype": [Options("float64", "float32")],
    "kernel_backend": [Options("dense", "memmap", "lazy", "factored", "auto")],
    "memory_budget": [Integer(low=1), InstanceOf(str, label="a size such as '4GB'"), NoneValue()],
    "cache_size": [Real(low=0)],
}


class KernelInputMixin:
    """Kernel input of an estimator whose parameters include ``kernels``, ``kernel_params``, ``normalize``,
    ``standardize``, ``kernel_dtype``, ``kernel_backend`` and ``memory_budget``.

    ``fit`` calls :meth:`_fit_stack`, prediction :meth:`_cross_stack`; a subclass passes further
    :class:`~multikernel.stack.KernelSet` options through :meth:`_kernel_set_options`.
    """

    @property
    def _precomputed(self) -> bool:
        return isinstance(self.kernels, str) and self.kernels == "precomputed"

    def _kernel_set_options(self) -> dict[str, Any]:
        return {}

    _parameter_constraints = KERNEL_INPUT_CONSTRAINTS

    def _builders(self, n_features: int) -> list[KernelBuilder]:
        registry = get_registry()
        if isinstance(self.kernels, str) and self.kernels not in registry.names("family"):
            # one registered kernel builder (``kernels="rbf"``), with ``kernel_params`` as its parameters
            return [registry.create("kernel", self.kernels, **(self.kernel_params or {}))]
        if isinstance(self.kernels, str):
            family = registry.get("family", self.kernels)
            return list(family(n_features, **(self.kernel_params or {})))
        builders = list(self.kernels)
        for b in builders:
            if not isinstance(b, KernelBuilder):
                raise TypeError(f"kernels must be a family name, 'precomputed' or a list of KernelBuilder "
                                f"instances; got an element of type {type(b).__name__}")
        return [clone(b) for b in builders]

    def _fit_stack(self, X: Any, y: Any = None, first_weights: Callable[[int], np.ndarray] | None = None
                   ) -> tuple[KernelStack, Any]:
        """The training stack and ``y`` (validated with ``X`` when given); sets ``kernel_set_``, ``kernel_names_``,
        ``n_features_in_``.

        ``first_weights(M)`` gives the weights of the fit's first combination (the regularizer's initial
        weights): precomputed kernels are then combined at them in the read that checks them.
        """
        if self.standardize and self._precomputed:
            raise ValueError("standardize=True needs features; it cannot apply to precomputed kernels")
        if self._precomputed:
            if y is not None:
                y = check_array(y, ensure_2d=False, dtype=None, input_name="y")
            stack = self._training_stack(X, first_weights)
            self.kernel_set_ = None
            self.kernel_names_ = [f"K{m}" for m in range(stack.n_kernels)]
            return stack, y
        if y is None:
            X = validate_data(self, X, dtype=np.float64)
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, multi_output=True)
        self.kernel_set_ = KernelSet(self._builders(X.shape[1]), normalize=self.normalize, dtype=self.kernel_dtype,
                                     backend=self.kernel_backend, memory_budget=self.memory_budget,
                                     standardize=self.standardize, **self._kernel_set_options())
        stack = self.kernel_set_.fit_stack(X)
        self.kernel_names_ = self.kernel_set_.describe()
        return stack, y

    # Precomputed kernels go through scikit-learn's checks (NaN/inf, sparse, complex and empty input get its
    # messages); n_features_in_ is the number of training samples, as for SVC(kernel="precomputed").
    _ARRAY_CHECKS = {"allow_nd": True, "dtype": (np.float64, np.float32), "accept_sparse": False}

    def _training_stack(self, X: Any, first_weights: Callable[[int], np.ndarray] | None = None) -> KernelStack:
        if isinstance(X, KernelStack):
            self.precomputed_layout_ = "stack"
            stack = X
        else:
            # finiteness is checked with the rest of the training checks, in the same read (DenseStack.checked)
            arr = validate_data(self, X, reset=True, ensure_all_finite=False, **self._ARRAY_CHECKS)
            if arr.ndim == 2:
                arr, self.precomputed_layout_ = arr[:, :, None], "samples_first"
            elif arr.ndim == 3 and arr.shape[0] == arr.shape[1]:
                self.precomputed_layout_ = "samples_first"
            elif arr.ndim == 3 and arr.shape[1] == arr.shape[2]:
                self.precomputed_layout_ = "kernels_first"
            else:
                raise ValueError(f"with kernels='precomputed', X must be the training kernels of shape "
                                 f"(n_samples, n_samples, n_kernels), (n_kernels, n_samples, n_samples) or "
                                 f"(n_samples, n_samples); got shape {arr.shape}")
            stack = self._as_stack(arr, training=True, first_weights=first_weights)
        if stack.n_rows != stack.n_cols:
            raise ValueError(f"the training kernels must be square; got {stack.n_rows} x {stack.n_cols}")
        self.n_train_ = stack.n_rows
        return stack

    def _as_stack(self, arr: np.ndarray, training: bool = False,
                  first_weights: Callable[[int], np.ndarray] | None = None) -> DenseStack:
        # NaN/inf are refused, a non-symmetric training kernel is symmetrized with a warning (the SMO reads
        # row i as column i), and an indefinite one is flagged, all in one read of the stack, which also
        # forms the fit's first combination when its weights are known.
        if self.precomputed_layout_ == "samples_first":
            arr = np.ascontiguousarray(np.moveaxis(arr, 2, 0))
        if not training:
            return DenseStack(arr)
        weights = None
        if first_weights is not None:
            try:
                weights = np.asarray(first_weights(arr.shape[0]), dtype=np.float64)
            except (ValueError, TypeError):
                weights = None  # the fit reports a bad regularizer itself, with its own message
        return DenseStack.checked(arr, first_weights=weights)

    def _cross_stack(self, X: Any) -> KernelStack:
        if not self._precomputed:
            X = validate_data(self, X, dtype=np.float64, reset=False)
            return self.kernel_set_.cross_stack(X)
        if isinstance(X, KernelStack):
            return X
        M, n_train = len(self.kernel_names_), self.n_train_
        layout = getattr(self, "precomputed_layout_", "kernels_first")
        if layout == "samples_first":
            arr = validate_data(self, X, reset=False, **self._ARRAY_CHECKS)
            arr = arr[:, :, None] if arr.ndim == 2 and M == 1 else arr
            ok, shown = arr.ndim == 3 and arr.shape[1:] == (n_train, M), f"(n_test, {n_train}, {M})"
        else:
            arr = check_array(X, **self._ARRAY_CHECKS)
            ok, shown = arr.ndim == 3 and (arr.shape[0], arr.shape[2]) == (M, n_train), f"({M}, n_test, {n_train})"
        if not ok:
            raise ValueError(f"with kernels='precomputed', X must hold the test x train kernels of shape {shown}, "
                             f"the layout of the training kernels; got shape {arr.shape}")
        return self._as_stack(arr)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed
        return tags


def _kernel_input_fitted() -> dict:
    from multikernel.estimators.base import FittedSpec

    return {
        "kernel_names_": FittedSpec("text", (1,)),
        "kernel_set_": FittedSpec("any", required=False),
        "n_features_in_": FittedSpec("int", (0,)),
        "feature_names_in_": FittedSpec("text", (1,), required=False),
        "n_train_": FittedSpec("int", (0,), required=False),
        "precomputed_layout_": FittedSpec("text", (0,), required=False),
    }


#: The fitted attributes :class:`KernelInputMixin` sets, for an estimator's ``_fitted_schema``
#: (``{**KERNEL_INPUT_FITTED, "coef_": ...}``).
KERNEL_INPUT_FITTED = _kernel_input_fitted()


def check_loaded_kernel_input(est: KernelInputMixin, n_coef_rows: int) -> None:
    """A loaded kernel model has its kernel set (features) or its number of training samples (precomputed), and
    coefficients for that many training samples; ``ValueError`` naming what is inconsistent (for
    ``_check_loaded``)."""
    if not est._precomputed and getattr(est, "kernel_set_", None) is None:
        raise ValueError("a model fitted on features without its kernel set")
    if est._precomputed and getattr(est, "n_train_", None) is None:
        raise ValueError("a precomputed-kernel model without its number of training samples")
    n_train = est.kernel_set_.n_train_ if est.kernel_set_ is not None else est.n_train_
    if n_coef_rows != n_train:
        raise ValueError(f"coefficients for {n_coef_rows} training samples, but {n_train} in the kernels")
