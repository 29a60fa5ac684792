"""Sphinx configuration of the toolnexus-django documentation site.

Why Sphinx (with the Furo theme and MyST-Parser):

- autodoc documents the public Python API from the code's own docstrings;
- Django's own documentation is Sphinx: a Django developer knows its shape;
- MyST keeps the pages in Markdown, the format the project already writes;
- ``sphinx-build -W`` turns every broken internal reference (a ``{doc}``, a ``{ref}``,
  a Markdown link to a page or a heading) into an error, so the site cannot rot silently;
- Read the Docs builds it as it is (.readthedocs.yaml).

Build: ``.ci/docs`` (installs ``.[docs]``, builds with warnings as errors).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

# autodoc imports the package, which needs Django set up: the demo project's settings.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
django.setup()

project = "toolnexus-django"
author = "toolnexus-django developers"
copyright = "toolnexus-django developers"
release = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "toolnexus_reference",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "examples/**"]

myst_enable_extensions = ["colon_fence", "deflist"]
# Headings up to ### get anchors, so [text](page.md#a-heading) links are checked too.
myst_heading_anchors = 4

# Every warning is an error under -W (.ci/docs); nitpicky stays off: autodoc's signatures
# name Django's and toolnexus's types, whose docs are not all reachable without the internet.
nitpicky = False

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}

# Intersphinx would fetch inventories over the internet: none is configured, so the build
# needs no network. External links are not checked (see docs/README.md).
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}
linkcheck_ignore = [r"https?://.*"]

html_theme = "furo"
html_title = "toolnexus-django"
html_static_path: list[str] = []
