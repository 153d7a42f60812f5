"""Sphinx configuration of the API reference (make docs: sphinx-build -W,
every warning is an error).  The reference is generated from the
docstrings: the operator methods' docstrings come from the operator table
and the spec (webnn/_api.py, webnn/_opdocs.py)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import webnn  # noqa: E402

project = "webnn"
author = "the webnn authors"
release = webnn.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
exclude_patterns = ["_build", "adding-operators.md", "architecture.md"]
html_theme = "alabaster"
html_static_path = []
suppress_warnings = []


def skip_aliases(app, what, name, obj, skip, options):
    """camelCase aliases (b.gatherND is b.gather_nd) are not documented twice."""
    target = getattr(obj, "__name__", None)
    if callable(obj) and target and target != name and target.lower() != name.lower() \
            and re.sub(r"_", "", target).lower() == name.lower():
        return True
    if isinstance(obj, property) and name != name.lower() and "_" not in name \
            and any(c.isupper() for c in name):
        return True                    # dataType, deviceType property aliases
    return skip


_STAR = re.compile(r"(?<![\\`*])\*(?![*`])")


def escape_stars(app, what, name, obj, options, lines):
    """Spec text quoted in docstrings may hold a lone '*' (a product):
    escape it outside literals so reST does not start emphasis."""
    for i, line in enumerate(lines):
        if "*" in line and "`" not in line:
            body = line.lstrip()
            head = line[:len(line) - len(body)]
            if body.startswith("* "):          # a bullet stays a bullet
                head, body = head + "* ", body[2:]
            lines[i] = head + _STAR.sub(r"\\*", body)


def setup(app):
    app.connect("autodoc-skip-member", skip_aliases)
    app.connect("autodoc-process-docstring", escape_stars)
