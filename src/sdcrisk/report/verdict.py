"""The verdict line of the report: does a result pass its thresholds?

The thresholds are the ones given: the method's ``max_global_risk`` and the limits of
``build_report(limits=...)`` (the CLI's ``--fail-above MEASURE=LIMIT``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..exceptions import ParameterError
from .formats import fmt, pct

__all__ = ["verdict", "normalise_limits", "figure"]


_TABLE_FIGURES = {"sample_uniques": "sample uniques", "k2_violations": "records violating "
                  "2-anonymity", "k3_violations": "records violating 3-anonymity",
                  "k5_violations": "records violating 5-anonymity"}


def figure(res, name: str, bound: str = "estimate") -> float | None:
    """The figure a limit on ``name`` checks: a measure's estimate (or ``bound``), or a table
    figure (``sample_uniques``, ``k3_violations``...); None when the result has none. The one
    definition the report's verdict and the CLI's ``--fail-above`` share."""
    if name in _TABLE_FIGURES:
        t = res.table
        return float(res.sample_uniques if name == "sample_uniques"
                     else t.k_anonymity_violations((int(name[1]),))[int(name[1])])
    m = res.measures.get(name)
    return None if m is None else getattr(m, bound)


def _limit_text(name: str, bound: str, limit: float) -> str:
    what = _TABLE_FIGURES.get(name, name.replace("_", " "))
    if bound != "estimate":
        what += f" ({bound} bound)"
    shown = pct(limit) if name == "global_risk" else fmt(limit)
    return f"{what} ≤ {shown}"


def verdict(res, limits) -> dict | None:
    """Pass/fail of one result against its max global risk and the limits given.

    Returns ``{"passes": bool, "checks": [{"passes", "text"}], "method"}`` or None when
    there is nothing to check.
    """
    checks = []
    target = res.thresholds.get("max_global_risk")
    gr = res.measures.get("global_risk")
    if target is not None and gr is not None and gr.estimate is not None:
        ok = gr.estimate <= target
        text = (f"{'passes' if ok else 'fails'} max global risk {fmt(float(target))}: global "
                f"risk {fmt(gr.estimate)} ({pct(gr.estimate)} of the records expected to be "
                "re-identified)")
        if gr.upper is not None:
            text += f", upper {gr.level:.0%} bound {pct(gr.upper)}"
        checks.append({"passes": ok, "text": text})
    for name, bound, limit in limits:
        if (name, bound) == ("global_risk", "estimate") and target is not None \
                and limit == target:
            continue  # the same check as the method's max global risk
        value = figure(res, name, bound)
        if value is None:
            continue
        ok = value <= limit
        shown = pct(value) if name == "global_risk" else fmt(value)
        checks.append({"passes": ok, "text": f"{'passes' if ok else 'fails'} "
                       f"{_limit_text(name, bound, limit)}: {shown}"})
    if not checks:
        return None
    return {"passes": all(c["passes"] for c in checks), "checks": checks,
            "method": res.method}




def normalise_limits(limits: Any) -> list[tuple[str, str, float]]:
    """``{"global_risk": 0.01, "tau2.upper": 5}`` or ``[("tau2", "upper", 5.0)]`` ->
    a list of (measure, bound, limit).

    Raises
    ------
    ParameterError
        A bound other than estimate/lower/upper, or a limit that is not a number.
    """
    if limits is None:
        return []
    items: list = []
    if isinstance(limits, Mapping):
        for spec, limit in limits.items():
            name, _, bound = str(spec).partition(".")
            items.append((name, bound or "estimate", limit))
    elif isinstance(limits, Sequence) and not isinstance(limits, str):
        for item in limits:
            if not (isinstance(item, Sequence) and len(item) == 3):
                raise ParameterError(f"limits: {item!r} is not (measure, bound, limit)")
            items.append(tuple(item))
    else:
        raise ParameterError(f"limits={limits!r}: give a dict MEASURE[.BOUND] -> limit")
    out = []
    for name, bound, limit in items:
        if bound not in ("estimate", "lower", "upper"):
            raise ParameterError(f"limits: bound {bound!r} of {name!r} is not estimate, "
                                 "lower or upper")
        try:
            value = float(limit)
        except (TypeError, ValueError):
            raise ParameterError(f"limits: the limit {limit!r} of {name!r} is not a "
                                 "number") from None
        out.append((str(name), bound, value))
    return out
