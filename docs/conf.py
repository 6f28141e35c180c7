"""Sphinx configuration of the fastldp documentation site.

Build with ``python -m sphinx -W docs docs/_build`` (the ``docs`` extra holds
what it needs). The API reference is generated from the numpydoc docstrings;
the user guides and the evaluation pages are reStructuredText and Markdown
(MyST) files in this folder.
"""

import os
import sys

import glob

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Document the source tree when its kernels are built in place
# (python setup.py build_ext --inplace); otherwise the installed fastldp.
if glob.glob(os.path.join(ROOT, "src", "fastldp", "_kernels", "_hash*.so")):
    sys.path.insert(0, os.path.join(ROOT, "src"))

import fastldp  # noqa: E402

project = "fastldp"
author = "The fastldp developers"
copyright = "2026, The fastldp developers"
version = release = fastldp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"

autosummary_generate = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()
numpydoc_xref_param_type = False
myst_heading_anchors = 3
# The packages re-export their modules' members and the API pages document some
# of them under the re-exporting name too. Following those imports made viewcode
# pair a source page with an anchor on the wrong API page (54 broken "[docs]"
# back-links); without it, each object links to the source of the module that
# documents it, both ways (tests/test_docs.py checks every link of the built site).
viewcode_follow_imported_members = False
# numpydoc "References" sections list sources without citing them inline
suppress_warnings = ["myst.header", "ref.citation"]

html_theme = "pydata_sphinx_theme"
html_title = f"fastldp {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path: list = []
