"""Row/column subsets of a kernel stack for the fits of a cross-validation fold."""

from __future__ import annotations

import numpy as np

from multikernel.stack.storage import DenseStack, KernelStack

__all__ = ["subset_stack"]


def subset_stack(stack: KernelStack, rows: np.ndarray, cols: np.ndarray) -> KernelStack:
    """``stack`` restricted to ``rows`` x ``cols``, for the fits of a whole grid.

    An in-memory dense stack gives a contiguous copy (at most the stack's own size; it streams several
    times faster than a view), a memory map or a lazy stack the backend's view, which keeps their memory
    bound; any other stack a copy.
    """
    subset = getattr(stack, "subset", None)
    if subset is not None:
        try:
            view = subset(rows, cols)
        except NotImplementedError:
            pass
        else:
            if type(view) is DenseStack and not isinstance(view.data, np.memmap):
                return view.materialize()
            return view
    return DenseStack(np.stack([np.asarray(stack.kernel(m))[np.ix_(rows, cols)] for m in range(stack.n_kernels)]))
