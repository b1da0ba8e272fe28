"""Build the Cython extensions in ``_ext/``.

Every ``_ext/*.pyx`` becomes ``multikernel._ext.<name>``. OpenMP is used when the compiler accepts
``-fopenmp``; otherwise the extensions build without it (the ``prange`` loops then run serially).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent


def _compiler_supports_openmp() -> bool:
    if os.environ.get("MULTIKERNEL_NO_OPENMP"):
        return False
    if sys.platform == "win32":
        return True  # MSVC: /openmp
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc.split()[0]) is None:
        return False
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.c"
        src.write_text("#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n")
        result = subprocess.run(
            [*cc.split(), "-fopenmp", str(src), "-o", str(Path(tmp) / "t")],
            capture_output=True,
        )
        return result.returncode == 0


def _extensions() -> list[Extension]:
    openmp = _compiler_supports_openmp()
    if sys.platform == "win32":
        compile_args, link_args = (["/O2", "/openmp"] if openmp else ["/O2"]), []
    else:
        compile_args = ["-O3"] + (["-fopenmp"] if openmp else [])
        link_args = ["-fopenmp"] if openmp else []
    exts = []
    for pyx in sorted((HERE / "_ext").glob("*.pyx")):
        exts.append(
            Extension(
                f"multikernel._ext.{pyx.stem}",
                [str(pyx.relative_to(HERE))],
                include_dirs=[np.get_include()],
                extra_compile_args=compile_args,
                extra_link_args=link_args,
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    return cythonize(
        exts,
        # the shared .pxd helpers of _ext/ (cimported by their plain names: the source directory is not named
        # like the package, so a relative cimport would look for multikernel/_ext/)
        include_path=[str(HERE / "_ext")],
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
        compile_time_env={"HAVE_OPENMP": openmp},
    )


setup(ext_modules=_extensions())
