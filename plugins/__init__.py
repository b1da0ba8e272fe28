"""The built-in plugins of multikernel.

Each module is registered through the ``multikernel`` entry-point group, exactly like a third-party
plugin package: ``kernels`` (kernel builders and families), ``losses`` (inner problems),
``regularizers`` (domains and penalties of the kernel weights), ``solvers`` (outer loops) and
``methods`` (named presets).
"""
