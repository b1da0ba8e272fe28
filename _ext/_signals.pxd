# cython: language_level=3
"""Ctrl-C for the solvers' nogil loops: one check, cimported by every extension that needs it.

A ``.pxd`` with inline functions only: it is compiled into each module that cimports it and has no module of
its own to import at run time.
"""

from cpython.exc cimport PyErr_Clear


# Declared without an exception clause: the -1 is read here, not propagated from a noexcept function.
cdef extern from "Python.h":
    int _check_signals "PyErr_CheckSignals" ()


cdef inline bint signal_pending() noexcept nogil:
    """Whether a signal handler raised (Ctrl-C): long solves stop and report instead of ignoring it.

    The handler's exception is cleared here; the solver raises KeyboardInterrupt once it has stopped.
    """
    cdef bint raised
    with gil:
        raised = _check_signals() != 0
        if raised:
            PyErr_Clear()
    return raised
