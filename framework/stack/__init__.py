"""Layer 2, the kernel stack: the M base kernels, their storage and the fused operations on them.

:mod:`~multikernel.stack.storage` holds the stack types (dense, memory-mapped, lazy) and their ``combine`` /
``quad_forms``; :mod:`~multikernel.stack.kernelset` turns features into a training stack and cross stacks
(standardization, kernel builders, normalization, memory budget); :mod:`~multikernel.stack.combination` keeps
the combined kernel ``K(mu)`` up to date for the solvers.
"""

from multikernel.stack.kernelset import KernelSet
from multikernel.stack.storage import DenseStack, KernelStack, LazyStack, MemmapStack

__all__ = ["KernelStack", "DenseStack", "MemmapStack", "LazyStack", "KernelSet"]
