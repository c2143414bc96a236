"""HTML rendering of the risk report with Jinja2 (autoescape on).

Takes the figures collected by :mod:`sdcrisk.report.collect`, turns them into sections of
blocks (:mod:`sdcrisk.report.page`) and renders ``templates/report.html.j2``: one
self-contained page with inline CSS and inline SVG charts, no scripts and no external
resources (a Content-Security-Policy forbids loading any).

Escaping is the default, not a habit: the environment autoescapes every ``.html.j2``
template, so every value that reaches the page -- labels, category names, free text from
results -- is escaped by Jinja2. The one exception is a chart: :mod:`sdcrisk.report.charts`
builds its SVG from numbers and from text it escapes itself, and the template inserts it
with ``|safe``. Number formats are template filters (:data:`sdcrisk.report.formats.FORMATS`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from .blocks import is_number
from .formats import FORMATS, fmt
from .page import page_context

__all__ = ["render", "environment", "CSP"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")

# Newlines between two tags only lay out the templates; escaped text never holds a raw "<"
# or ">", so this removes nothing a reader sees.
_BETWEEN_TAGS = re.compile(r">[ \t]*\n\s*<")


def _format_as(value: Any, name: str) -> str:
    return FORMATS[name](value)


@cache
def environment() -> Environment:
    """The report's Jinja2 environment: package templates, autoescape for HTML."""
    env = Environment(
        loader=PackageLoader("sdcrisk.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"),
                                     default_for_string=True, default=True),
        undefined=StrictUndefined, keep_trailing_newline=False)
    env.filters.update({name: f for name, f in FORMATS.items() if name != "str"})
    env.filters["fmt"] = fmt
    env.filters["format_as"] = _format_as
    env.tests["number_value"] = is_number
    return env


def render(data: dict) -> str:
    """The whole page from the figures collected by :func:`sdcrisk.report.collect._collect`."""
    context = page_context(data)
    html = environment().get_template("report.html.j2").render(csp=Markup(CSP), **context)
    return _BETWEEN_TAGS.sub("><", html)
