"""Sphinx configuration of the multikernel documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W -b html docs docs/_build/html

The API reference, the CLI reference and the plugin lists are generated at build time (``_sphinxext``), from
``multikernel.__all__`` and the task packages' ``__all__``, from the command line's parser and from the plugin
registry, so a new estimator, command or plugin appears without editing the documentation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import multikernel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_sphinxext"))

project = "multikernel"
author = "multikernel developers"
copyright = "multikernel developers"
release = multikernel.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "multikernel_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "README.md",  # the folder readme of docs/ on GitHub; index.md is the site's front page
    "experiments/*/figures",
    "**/units.jsonl",
]

# Offline build: no intersphinx, nothing fetched.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
myst_links_external_new_tab = False

autodoc_default_options = {"members": False}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

html_theme = "pydata_sphinx_theme"
html_title = f"multikernel {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "getting-started": []}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",  # every plot_*.py example is executed
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    # the four works in the guide's order; a new folder of examples comes after them
    "subsection_order": ["../examples/mkl", "../examples/iokl_itml", "../examples/bucak", "../examples/kobayashi", "*"],
    "min_reported_time": 0,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
}
