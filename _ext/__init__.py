"""Compiled hot loops (Cython). Import the public wrappers from :mod:`multikernel` instead."""
