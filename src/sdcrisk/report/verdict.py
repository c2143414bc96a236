"""The verdict line of the report: does a result pass the limits this run checks?

One rule, shared by the report page and the CLI's exit code (:func:`checked_limits`): the
limits given (``build_report(limits=...)``, the CLI's ``--fail-above MEASURE=LIMIT``) when
there are any; otherwise the stated default, the method's ``max_global_risk`` on the global
risk estimate. Only given limits set the exit code (3 when the verdict fails); a verdict on the
default says that it does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..exceptions import ParameterError
from .formats import fmt, pct

__all__ = ["verdict", "normalise_limits", "figure", "checked_limits", "passes", "check_limit",
           "split_limit_name", "check_bound", "BOUNDS", "compared_digits"]


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


def passes(value: float, limit: float) -> bool:
    """Whether a figure passes its limit: at or below it (a NaN figure fails). The one
    comparison of the report's verdict and the CLI's ``--fail-above``."""
    return bool(value <= limit)


def compared_digits(value: float, limit: float, digits: int) -> int:
    """Significant digits, ``digits`` or more, at which a figure above its limit prints above
    it (at or below it, ``digits``). At a fixed number of digits the report's verdict said
    "fails tau2 ≤ 80.62: 80.62" (tau2 80.6218157, limit 80.6218) and ``--fail-above``
    "tau2 = 80.6218 exceeds the limit 80.6218". The one rule of both (the CLI prints 6
    digits, the report 4)."""
    for d in range(digits, 17):
        if float(f"{value:.{d}g}") > float(f"{limit:.{d}g}") or not value > limit:
            return d
    return 17


def checked_limits(res, limits: Sequence[tuple[str, str, float]]
                   ) -> tuple[list[tuple[str, str, float]], bool]:
    """The limits a run checks on ``res``, and whether they were given.

    The limits given (normalised, see :func:`normalise_limits`) when there are any; else the
    stated default: ``("global_risk", "estimate", max_global_risk)`` with the method's
    ``max_global_risk`` (none when the result has no such threshold). The report's verdict
    checks these; the CLI's exit code follows the same check for given limits only.
    """
    if limits:
        return list(limits), True
    target = res.thresholds.get("max_global_risk")
    return ([] if target is None else [("global_risk", "estimate", float(target))]), False


def _shown(name: str, x: float, value: float, limit: float) -> str:
    """``x`` (the figure or its limit) as the page shows it, with the digits that tell the
    figure from the limit (:func:`compared_digits`)."""
    if name == "global_risk":
        return pct(x, compared_digits(value, limit, 3))
    return fmt(x, compared_digits(value, limit, 4))


def _limit_text(name: str, bound: str, limit: float, value: float) -> str:
    what = _TABLE_FIGURES.get(name, name.replace("_", " "))
    if bound != "estimate":
        what += f" ({bound} bound)"
    return f"{what} ≤ {_shown(name, limit, value, limit)}"


def _default_text(res, ok: bool, limit: float) -> str:
    gr = res.measures["global_risk"]
    d = compared_digits(gr.estimate, limit, 4)
    text = (f"{'passes' if ok else 'fails'} max global risk {fmt(limit, d)}: global "
            f"risk {fmt(gr.estimate, d)} ({pct(gr.estimate)} of the records expected to be "
            "re-identified)")
    if gr.upper is not None:
        text += f", upper {gr.level:.0%} bound {pct(gr.upper)}"
    return text


def verdict(res, limits) -> dict | None:
    """Pass/fail of one result against the limits this run checks (:func:`checked_limits`).

    Returns ``{"passes", "checks": [{"passes", "text"}], "method", "given", "what",
    "source"}`` or None when there is nothing to check. ``given`` says whether the limits
    were given (they set the CLI's exit code) or are the method's default max global risk
    (they do not); ``what`` and ``source`` say so in words. A limit given on a figure the
    result lacks is listed as not checked (``passes`` None; the other methods may have it).
    """
    limits = normalise_limits(limits)
    checked, given = checked_limits(res, limits)
    checks = []
    for name, bound, limit in checked:
        value = figure(res, name, bound)
        if value is None:  # said, so that a page with limits given always has its verdict
            if given:
                what = name if bound == "estimate" else f"{bound} bound of {name}"
                checks.append({"passes": None, "text": f"not checked: "
                               f"{_limit_text(name, bound, limit, limit)} (method "
                               f"{res.method} gives no {what})"})
            continue
        ok = passes(value, limit)
        if not given:
            text = _default_text(res, ok, limit)
        else:
            text = (f"{'passes' if ok else 'fails'} {_limit_text(name, bound, limit, value)}: "
                    f"{_shown(name, value, value, limit)}")
        checks.append({"passes": ok, "text": text})
    if not checks:
        return None
    target = res.thresholds.get("max_global_risk")
    if given:
        what = "the limit given" if len(checked) == 1 else "the limits given"
        source = ("limits checked: those given (--fail-above), which set the exit code (3 "
                  "when this verdict fails)")
        if target is not None:
            source += (f"; the default max global risk {fmt(float(target))} is checked only "
                       "when no limit is given")
    else:
        what = "the default limit"
        source = (f"limit checked: the default, the method's max global risk "
                  f"{fmt(float(target))} (--max-global-risk); no limit was given "
                  "(--fail-above), so this verdict does not set the exit code (0)")
    return {"passes": all(c["passes"] is not False for c in checks), "checks": checks,
            "method": res.method, "given": given, "what": what, "source": source}


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
            items.append((*split_limit_name(str(spec), f"limits: {spec!r}"), limit))
    elif isinstance(limits, Sequence) and not isinstance(limits, str):
        for item in limits:
            if not (isinstance(item, Sequence) and len(item) == 3):
                raise ParameterError(f"limits: {item!r} is not (measure, bound, limit)")
            items.append(tuple(item))
    else:
        raise ParameterError(f"limits={limits!r}: give a dict MEASURE[.BOUND] -> limit")
    out = []
    for name, bound, limit in items:
        check_bound(bound, f"limits: {name!r}")
        try:
            value = float(limit)
        except (TypeError, ValueError):
            raise ParameterError(f"limits: the limit {limit!r} of {name!r} is not a "
                                 "number") from None
        out.append((str(name), bound, check_limit(value, f"limits: {name!r}")))
    return out


#: the figures of a measure a limit may be put on
BOUNDS = ("estimate", "lower", "upper")


def split_limit_name(spec: str, where: str) -> tuple[str, str]:
    """``"tau2.upper"`` -> ``("tau2", "upper")``, ``"tau2"`` -> ``("tau2", "estimate")``: the
    one reading of a limit's name, for ``--fail-above`` and ``build_report(limits=...)``.
    ``where`` opens the message.

    Raises
    ------
    ParameterError
        A bound other than estimate, lower or upper.
    """
    name, dot, bound = spec.strip().rpartition(".")
    if not dot:
        return bound, "estimate"
    return name, check_bound(bound, where)


def check_bound(bound: str, where: str) -> str:
    """``bound`` if it is one of :data:`BOUNDS`, else a ParameterError naming them."""
    if bound not in BOUNDS:
        raise ParameterError(f"{where}: {bound!r} is not a bound; use MEASURE, MEASURE.upper "
                             "or MEASURE.lower")
    return bound


def check_limit(value: float, where: str) -> float:
    """A limit on a risk figure, checked for both ways of giving one (``--fail-above`` and
    ``build_report(limits=...)``): a number, and not below 0, since no risk figure or count
    is (a limit of -1 failed every file, with "0 exceeds -1"). ``where`` opens the message.

    Raises
    ------
    ParameterError
        NaN, or a negative limit.
    """
    if value != value:
        raise ParameterError(f"{where}: the limit is not a number")
    if value < 0:
        raise ParameterError(f"{where}: the limit {value:g} is below 0, which every risk "
                             "figure and count is at least, so every file would fail it; give "
                             "0 or more")
    return value
