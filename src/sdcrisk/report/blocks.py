"""The report's building blocks as data: headings, tables, key-value lists, figures.

A section of the page is a list of blocks (plain dicts); ``templates/blocks.html.j2`` renders
each kind, escaping every value (Jinja2 autoescape). Nothing here builds HTML: table cells
keep their raw values and name the number format (a template filter, see
:data:`sdcrisk.report.formats.FORMATS`) that shows them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .formats import fmt, label

__all__ = ["h3", "h4", "method", "para", "table", "generic_table", "kv", "figure", "details",
           "bullets", "grid", "section", "format_cell"]

Block = dict[str, Any]


def h3(text: str) -> Block:
    return {"kind": "h3", "text": text}


def h4(text: str) -> Block:
    return {"kind": "h4", "text": text}


def method(text: str) -> Block:
    """The "Method: ..." line under a heading."""
    return {"kind": "method", "text": text}


def para(text: str, cls: str = "note") -> Block:
    return {"kind": "p", "text": text, "cls": cls}


def table(columns: Sequence[tuple], rows: Sequence[Mapping], *, caption: str | None = None,
          row_class: Callable[[Mapping], str] | None = None) -> Block:
    """``columns``: (key, header[, format name]); a format makes the column numeric."""
    cols = [{"key": c[0], "header": c[1], "fmt": c[2] if len(c) > 2 else None}
            for c in columns]
    out = []
    for r in rows:
        row = dict(r)
        row["_class"] = row_class(r) if row_class else ""
        out.append(row)
    return {"kind": "table", "columns": cols, "rows": out, "caption": caption}


def format_cell(v: Any) -> Any:
    """Lists as text: nested lists as {a, b}; numbers formatted; long lists shortened."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, Mapping):
        return "; ".join(f"{label(k)}: {format_cell(x)}" for k, x in v.items())
    if not isinstance(v, list | tuple):
        return v

    def one(x):
        if isinstance(x, list | tuple | np.ndarray):
            return "{" + ", ".join(str(one(y)) for y in x) + "}"
        return fmt(x) if isinstance(x, int | float | np.number) else str(x)

    items = [one(x) for x in v[:8]]
    if len(v) > 8:
        items.append(f"… ({len(v)} values)")
    return ", ".join(items)


def generic_table(rows: Sequence[Mapping], scrub, caption: str | None = None) -> Block:
    """A table of dicts as they come: every key a column, headed by its words."""
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    out = []
    for r in rows:
        row = {}
        for k in cols:
            v = format_cell(r.get(k))
            row[k] = scrub(v) if isinstance(v, str) else v
        out.append(row)
    return table([(c, label(c)) for c in cols], out, caption=caption)


def kv(items: Sequence[tuple[str, Any]]) -> Block:
    """A definition list; values are shown with the ``fmt`` filter (text stays text)."""
    return {"kind": "kv", "items": [(k, v) for k, v in items]}


def figure(svg: str, caption: str) -> Block:
    """An inline SVG chart of :mod:`sdcrisk.report.charts` (built from escaped text only, so
    the template inserts it with ``|safe``) and its caption (escaped)."""
    return {"kind": "figure", "svg": svg, "caption": caption}


def details(summary: str, blocks: Sequence[Block]) -> Block:
    return {"kind": "details", "summary": summary, "blocks": list(blocks)}


def bullets(items: Sequence[Any]) -> Block:
    return {"kind": "list", "items": [str(i) for i in items]}


def grid(blocks: Sequence[Block]) -> Block:
    return {"kind": "grid", "blocks": list(blocks)}


def section(ident: str, title: str, nav: str, blocks: Sequence[Block | None]) -> dict:
    return {"id": ident, "title": title, "nav": nav, "blocks": [b for b in blocks if b]}


def is_number(v: Any) -> bool:
    """A number shown right-aligned (not a bool); NaN counts (shown as a dash)."""
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(
        v, bool | np.bool_)


def is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))
