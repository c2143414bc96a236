"""HTML building blocks of the report: escaping, number formats, tables, sections.

Every value goes through :func:`e` (HTML escaping) before it reaches the page."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

import numpy as np

from ..analyses.methods import ESTIMATORS

__all__ = ["MEASURE_LABELS", "fmt", "pct", "e", "table", "kv", "section", "figure",
           "method_title", "method_line"]


MEASURE_LABELS = {
    "tau1": "tau1: sample uniques that are population unique",
    "tau2": "tau2: expected correct matches of sample uniques",
    "p_pu": "P(PU): share of the population that is unique",
    "p_pu_given_su": "P(PU|SU): share of sample uniques that are population unique",
    "theta": "theta: probability a match to a sample unique is correct",
    "expected_reidentifications": "Expected re-identifications (sdcMicro global_risk_ER)",
    "global_risk": "Global risk = ER / n (sdcMicro global_risk)",
    "household_expected_reidentifications": "Household expected re-identifications "
    "(sdcMicro hier_risk_ER)",
    "household_global_risk": "Household global risk (sdcMicro hier_risk)",
}


def fmt(x: Any, digits: int = 4) -> str:
    """A number for the page: integers with separators, others to ``digits`` significant."""
    if x is None:
        return "–"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    if isinstance(x, float | np.floating):
        x = float(x)
        if not math.isfinite(x):
            return "–"
        if x == 0:
            return "0"
        a = abs(x)
        if a >= 10 ** digits:
            return f"{x:,.0f}"
        if a >= 1e-3:
            text = f"{x:.{digits}g}"
            if "e" in text:
                return f"{x:,.0f}"
            return text
        return f"{x:.{digits - 1}e}"
    return str(x)


def pct(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{100 * float(x):.{digits}g}%"


def e(x: Any) -> str:
    return escape(str(x), quote=True)


def _cell(value: Any, formatter: Callable | None = None) -> str:
    if formatter is not None:
        return f'<td class="num">{e(formatter(value))}</td>'
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(
            value, bool | np.bool_):
        return f'<td class="num">{e(fmt(value))}</td>'
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<td class="num">–</td>'
    return f"<td>{e(value)}</td>"


def table(columns: Sequence[tuple], rows: Sequence[Mapping], *, caption: str | None = None,
          row_class: Callable[[Mapping], str] | None = None, cls: str = "") -> str:
    """``columns``: (key, header[, formatter]); a formatter makes the column numeric."""
    head = "".join(
        f'<th class="num">{e(c[1])}</th>' if len(c) > 2 else f"<th>{e(c[1])}</th>"
        for c in columns)
    body = []
    for row in rows:
        klass = row_class(row) if row_class else ""
        attr = f' class="{klass}"' if klass else ""
        cells = "".join(_cell(row.get(c[0]), c[2] if len(c) > 2 else None) for c in columns)
        body.append(f"<tr{attr}>{cells}</tr>")
    cap = f"<caption>{e(caption)}</caption>" if caption else ""
    klass = f' class="{cls}"' if cls else ""
    return (f"<table{klass}>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
            "</tbody></table>")


def kv(items: Sequence[tuple[str, Any]]) -> str:
    return '<dl class="kv">' + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items) \
        + "</dl>"


def section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{e(title)}</h2>{body}</section>'


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{e(caption)}</figcaption></figure>"


def method_title(name: str) -> str:
    cls = ESTIMATORS.get(name)
    doc = (cls.__doc__ or "").strip().splitlines() if cls is not None else []
    return f"{name}: {doc[0].rstrip('.').replace('``', '')}" if doc else name


def method_line(res, extra: str = "") -> str:
    thr = res.thresholds
    parts = [f"Method: {method_title(res.method)}"]
    if "ci_level" in thr:
        parts.append(f"intervals at {thr['ci_level']:.0%}")
    if extra:
        parts.append(extra)
    return f'<p class="method">{e(" · ".join(parts))}</p>'
