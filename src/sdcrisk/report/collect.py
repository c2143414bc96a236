"""The risk report a release panel reads: one self-contained HTML page.

:func:`build_report` turns one or more :class:`~sdcrisk.RiskResult` objects of the same file
into an HTML page (inline CSS and inline SVG charts, no scripts, no external resources) with
the headline measures and their intervals, the method's assumptions and thresholds,
k-anonymity counts, the sdcMicro global figures, the record-risk distribution, what drives
the risk (per key variable and per category), the riskiest key combinations, model
diagnostics, and -- when the population is known -- ROC and calibration plots.

Two kinds (the sdcMicro internal/external split):

* ``"external"`` (default): non-disclosive. No key combination is listed with its values;
  category values appear only for categories with at least ``min_count`` records.
* ``"internal"``: lists the riskiest key combinations with their values. Do not release it.

SUDA2 scores (:func:`sdcrisk.suda2`) and ARX's population-uniqueness estimators
(:func:`sdcrisk.population_uniqueness`) are added as their own sections.

The pieces are public functions that return DataFrames (:func:`variable_contributions` and
:func:`category_contributions`, in :mod:`.contributions`; :func:`riskiest_cells`, :func:`roc_curve`,
:func:`calibration_table`, :func:`sdcmicro_high_risk`), so the numbers can be used and
checked without the HTML.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._version import __version__
from ..core.result import RiskResult
from ..data.sizes import check_number
from ..data.table import CellTable, Microdata
from ..estimators import Estimator
from ..exceptions import ParameterError, SdcRiskError
from .contributions import (
    CONTRIBUTION_REFIT_KEYS,
    SLOW_METHODS,
    category_contributions,
    chosen_candidates,
    quiet_fit,
    variable_contributions,
    wide_refit,
)
from .page_more import kanon_counts
from .render import render
from .truth import calibration_table, population_of, roc_curve, truth_figures
from .verdict import normalise_limits

__all__ = [
    "build_report",
    "check_report_options",
    "write_report",
    "riskiest_cells",
    "roc_curve",
    "calibration_table",
    "sdcmicro_high_risk",
    "FAST_METHODS",
]

ReportKind = Literal["external", "internal"]

#: methods cheap enough to re-fit once per key (kept for compatibility: every method but the
#: MCMC ones of :data:`SLOW_METHODS` is now re-fitted for the leave-one-key-out contributions)
FAST_METHODS = ("nb", "poisson-gamma")


# --- record and cell level figures -----------------------------------------------------------
def _median(values: np.ndarray, counts: np.ndarray | None) -> float:
    """np.median of the values, each repeated ``counts`` times (without the repeats)."""
    if counts is None:
        return float(np.median(values))
    order = np.argsort(values, kind="stable")
    ends = np.cumsum(counts[order])
    n = int(ends[-1])

    def at(k: int) -> float:  # the k-th (0-based) of the sorted repeated values
        return float(values[order[np.searchsorted(ends, k, side="right")]])

    if n % 2:
        return at(n // 2)
    return float(np.mean([at(n // 2 - 1), at(n // 2)]))


def sdcmicro_high_risk(record_risk: np.ndarray, *, counts: np.ndarray | None = None
                       ) -> tuple[int, float]:
    """Records "with higher risk than the main part", as sdcMicro's ``print.measure_risk``.

    Counts records with risk > median + 3 MAD and risk > 0.1, where MAD is R's ``mad``
    (median absolute deviation times 1.4826). With ``counts``, each risk is that many
    records' (a cell's risk and its records): the same figures without n-long arrays.

    Returns
    -------
    count : int
    cut : float
        max(median + 3 MAD, 0.1): records strictly above it are counted.

    References
    ----------
    sdcMicro 5.8.1, ``print.measure_risk`` (R/measure_risk.R).
    """
    r = np.asarray(record_risk, float)
    w = None if counts is None else np.asarray(counts, np.int64)
    med = _median(r, w)
    mad = 1.4826 * _median(np.abs(r - med), w)
    cut = med + 3 * mad
    high = (r > cut) & (r > 0.1)
    return int(np.count_nonzero(high) if w is None else w[high].sum()), max(cut, 0.1)


def riskiest_cells(result: RiskResult, *, top: int = 20, internal: bool = False,
                   population_counts: np.ndarray | None = None) -> pd.DataFrame:
    """The key combinations (cells) with the highest record risk.

    Sorted by re-identification risk per record (ties: smaller f first). Key values are
    only included with ``internal=True``; otherwise each cell is described by its counts.

    Returns
    -------
    DataFrame
        ``rank``, (the key columns when internal), ``f``, ``F_hat`` (sum of weights, when
        weighted), ``F`` (true population count, when given), ``risk`` (per record),
        ``p_unique`` (P(F = 1 | f), when the method gives it), ``expected_reidentifications``
        (f x risk) and ``er_share``.
    """
    if top < 1:
        raise ParameterError(f"top={top} must be >= 1")
    table = result.table
    risk = result.cell_risk("reidentification")
    f = table.counts
    order = np.lexsort((f, -risk))[:top]
    data: dict[str, Any] = {"rank": np.arange(1, len(order) + 1)}
    if internal:
        labels = table.cell_labels(order)
        for j, key in enumerate(table.keys):
            data[key] = [lab[j] for lab in labels]
    data["f"] = f[order]
    if table.weight_sums is not None:
        data["F_hat"] = table.weight_sums[order]
    if population_counts is not None:
        data["F"] = np.asarray(population_counts)[order]
    data["risk"] = risk[order]
    if "population_unique" in result.cell_risk_values:
        data["p_unique"] = result.cell_risk("population_unique")[order]
    er = f * risk
    data["expected_reidentifications"] = er[order]
    total = float(er.sum())
    data["er_share"] = er[order] / total if total > 0 else np.nan
    return pd.DataFrame(data)


# --- SUDA and population-uniqueness estimators --------------------------------------------
def _dis_fraction(table: CellTable) -> tuple[float, str]:
    if table.population_size_source == "assumed_population":
        return 0.01, "0.01 (sdcMicro's default DisFraction: the file's N is not known)"
    f = table.n / table.population_size
    return f, f"{f:.4g} (the file's sampling fraction n/N)"


def _suda_section(table: CellTable, notes: list[str], *, kind: str, min_count: int,
                  top: int, max_size: int | str = "auto") -> dict | None:
    from ..analyses.suda import suda2

    frac, frac_text = _dis_fraction(table)
    try:
        res = suda2(table, dis_fraction=frac,
                    max_size=None if max_size == "all" else max_size)  # type: ignore[arg-type]
    except SdcRiskError as exc:
        notes.append(f"SUDA not computed: {exc}")
        return None
    levels = res.level_contributions()
    f = table.counts
    records: list[int] = []
    for j, _key in enumerate(table.keys):
        counts = np.bincount(table.cell_codes[:, j], weights=f, minlength=len(table.levels[j]))
        present = np.flatnonzero(counts > 0)
        records.extend(int(counts[c]) for c in present)
    levels["records"] = records
    hidden = 0
    if kind == "external":
        small = levels["records"] < min_count
        hidden = int(small.sum())
        levels = levels[~small]
    levels = levels.sort_values("contribution", ascending=False, kind="stable").head(top)
    summary = res.summary()
    # the page's figures, not the result: its per-cell arrays (0.9 GiB at 3x10^7 records,
    # 5.9 million cells) would stay alive through the sections that follow
    return {"original_scores": res.original_scores, "dis_fraction_text": frac_text,
            "max_size": res.max_size, "bound_note": res.bound_note(),
            "summary": [{"variable": k, "contribution": float(r["contribution"]),
                         "msus": int(r["msus"])} for k, r in summary.iterrows()],
            "scored_records": int(table.counts[res.cell_score > 0].sum()),
            "n_msus": res.n_msus, "msu_size_totals": res.msu_size_totals(),
            "total_score": res.total_score, "dis": res.dis, "dis_table": res.dis_table(),
            "levels": levels, "levels_hidden": hidden,
            "combinations": res.msu_combinations(top=top)}


def _uniqueness_section(table: CellTable, notes: list[str]) -> Any:
    from ..analyses.uniqueness import population_uniqueness

    try:
        return population_uniqueness(table)
    except (SdcRiskError, ArithmeticError) as exc:  # an auxiliary section: say, don't fail
        notes.append(f"population-uniqueness estimators not computed: "
                     f"{type(exc).__name__}: {exc}")
        return None


# --- the report --------------------------------------------------------------------------------
def _as_results(results) -> dict[str, RiskResult]:
    if isinstance(results, RiskResult):
        items = [(results.method, results)]
    elif isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    elif isinstance(results, Sequence) and not isinstance(results, str):
        items = [(r.method if isinstance(r, RiskResult) else "?", r) for r in results]
    else:
        raise ParameterError(f"results must be a RiskResult, a list or a dict of them, not "
                             f"{type(results).__name__}")
    if not items:
        raise ParameterError("give at least one RiskResult")
    out: dict[str, RiskResult] = {}
    for label, r in items:
        if not isinstance(r, RiskResult):
            raise ParameterError(f"results: {type(r).__name__} is not a RiskResult")
        if not isinstance(r.table, CellTable):
            raise ParameterError(
                f"results: the {r.method} result was fitted on the frequencies of the cell "
                "counts (a FrequencyTable); the report shows cells, keys and record risks: "
                "fit it on a CellTable (sdcrisk.tabulate, tabulate_file)")
        name, i = label, 2
        while name in out:
            name, i = f"{label} ({i})", i + 1
        out[name] = r
    prints = {r.table.fingerprint() for r in out.values()}
    if len(prints) > 1:
        raise ParameterError(f"the results come from different data (input fingerprints "
                             f"{', '.join(sorted(prints))}); a report describes one file: "
                             "fit every method on the same table")
    return out


def check_report_options(*, kind: str = "external", min_count: int = 3, top: int = 20,
                         risk_threshold: float | None = None, bins: int = 10) -> None:
    """The checks :func:`build_report` makes of its options, for a caller to make before
    fitting the methods (the CLI: ``--top 0`` was refused only after every fit)."""
    _validate(kind, min_count, top, risk_threshold, bins)


def _check_suda_max_size(value, n_keys: int) -> None:
    if not (isinstance(value, str) and value in ("auto", "all")) and (
            isinstance(value, bool) or not isinstance(value, int | np.integer)
            or not 1 <= value <= n_keys):
        raise ParameterError(
            f"suda_max_size={value!r}: give 'auto' (every size when the search fits SUDA's "
            f"work budget, else the largest size that does), 'all', or 1..{n_keys} (keys)")


def _validate(kind, min_count, top, risk_threshold, bins):
    if kind not in ("external", "internal"):
        raise ParameterError(f"kind={kind!r}; use 'external' (non-disclosive, the default) "
                             "or 'internal'")
    if isinstance(min_count, bool) or not isinstance(min_count, int | np.integer) or \
            min_count < 2:
        raise ParameterError(f"min_count={min_count!r} must be an integer >= 2 (categories "
                             "with fewer records are never listed by value)")
    if not isinstance(top, int | np.integer) or top < 1:
        raise ParameterError(f"top={top!r} must be an integer >= 1")
    if risk_threshold is not None and not 0 < check_number("risk_threshold",
                                                           risk_threshold) <= 1:
        raise ParameterError(f"risk_threshold={risk_threshold} must lie in (0, 1]")
    if not isinstance(bins, int | np.integer) or bins < 2:
        raise ParameterError(f"bins={bins!r} must be an integer >= 2")


def _protected(protected, original: RiskResult) -> dict | None:
    """The protected file's fit, checked against the original's (same method and keys)."""
    if protected is None:
        return None
    if not isinstance(protected, RiskResult):
        raise ParameterError(f"protected must be the RiskResult of the protected file, not "
                             f"{type(protected).__name__}")
    if protected.method != original.method:
        raise ParameterError(f"protected: fitted with {protected.method!r}, the headline "
                             f"with {original.method!r}; fit the same method on both files")
    if tuple(protected.table.keys) != tuple(original.table.keys):
        raise ParameterError(f"protected: keys {', '.join(protected.table.keys)} differ from "
                             f"the original's {', '.join(original.table.keys)}")
    return {"result": protected, "source": protected.table.source}


def _risk_histogram(risk: np.ndarray, records: np.ndarray, per_decade: int = 4) -> dict:
    """Histogram of log10 record risk, each of ``risk`` standing for ``records`` records."""
    r = np.asarray(risk, float)
    w = np.asarray(records, np.int64)
    positive = r > 0
    pos = r[positive]
    lo = max(math.floor(math.log10(pos.min())) if pos.size else -1, -12)
    lo = min(lo, -1)
    edges = np.linspace(lo, 0, (0 - lo) * per_decade + 1)
    # in place: one copy of the positive risks (8 bytes a cell), not three
    logr = np.log10(np.clip(pos, 10.0**lo, 1.0, out=pos), out=pos)
    counts, _ = np.histogram(logr, bins=edges, weights=w[positive])
    return {"edges": edges, "counts": counts.astype(np.int64),
            "zeros": int(w[~positive].sum()), "n": int(w.sum())}


def _record_figures(data: dict, rec_res: RiskResult, risk_threshold: float | None
                    ) -> float | None:
    """The record-risk histogram, sdcMicro's high-risk count and the count above the
    threshold, into ``data``; returns the threshold used. Every figure is a sum over records
    whose risk is their cell's, so it is taken over the cells, each counted as its records
    (``table.counts``): the same figures with no n-long array (10^8 records: 0.8 GB each,
    2.2 GB at the section's peak, issue 20)."""
    r = rec_res.cell_risk()
    w = np.asarray(rec_res.table.counts, np.int64)
    data["histogram"] = _risk_histogram(r, w)
    count, cut = sdcmicro_high_risk(r, counts=w)
    data["high_risk"] = {"count": count, "cut": cut}
    thr = rec_res.thresholds.get("record_risk_threshold")
    data["argus_threshold"] = thr
    if risk_threshold is None and thr:
        risk_threshold = float(thr)
    data["risk_threshold"] = risk_threshold
    data["above_threshold"] = (None if risk_threshold is None
                               else int(w[r > risk_threshold].sum()))
    return risk_threshold


def _assumption_groups(results: dict[str, RiskResult], notes: list[str]) -> dict:
    """auto's assumptions split by the model they belong to: one group per chosen candidate
    (labelled with its weights) and auto's own. Other methods: none (a single list)."""
    from ..analyses.validation import Candidate

    out: dict[str, list[dict]] = {}
    for label, res in results.items():
        specs = chosen_candidates(res)
        if not specs:
            continue
        choice = res.fitted["choice"]
        names = list(choice.get("candidates", []))
        weights = choice.get("weights", {})
        own = list(res.assumptions)
        groups = []
        if len(specs) == 1:
            parts = [own[:-1]]
        else:  # a blend: each candidate's own list, from a fit of it on the same table
            shared = {"ci_level": res.parameters.get("ci_level"),
                      "max_global_risk": res.parameters.get("max_global_risk"),
                      "random_state": res.parameters.get("random_state")}
            try:
                parts = [list(quiet_fit(Candidate.parse(s).estimator(**shared), res.table,
                                         None).assumptions) for s in specs]
            except SdcRiskError as exc:
                notes.append(f"auto's assumptions are not split by model: {exc}")
                continue
        for i, (name, items) in enumerate(zip(names, parts, strict=True)):
            w = {m: v[i] for m, v in weights.items() if i < len(v)}
            title = f"candidate {name}"
            if len(specs) > 1 and w:
                title += " · weight " + ", ".join(f"{v:.0%} for {m}" for m, v in w.items())
            groups.append({"title": title, "assumptions": items})
        used = {a for p in parts for a in p}
        groups.append({"title": "auto: the method choice",
                       "assumptions": [a for a in own if a not in used]})
        out[label] = groups
    return out


def _collect(results: dict[str, RiskResult], *, kind, min_count, truth, risk_threshold, top,
             contributions, suda, uniqueness, title, date, bins, limits=(),
             suda_max_size: int | str = "auto",
             protected=None) -> dict:
    notes: list[str] = []
    labels = list(results)
    primary_label = labels[0]
    primary = results[primary_label]
    table = primary.table
    record_label = next((lab for lab in labels
                         if "reidentification" in results[lab].cell_risk_values), None)
    data: dict[str, Any] = {
        "kind": kind, "min_count": min_count, "title": title, "version": __version__,
        "date": date or datetime.date.today().isoformat(), "results": results,
        "primary": primary_label, "record_method": record_label, "table": table,
        "notes": notes, "top": top, "limits": list(limits),
        "assumption_groups": _assumption_groups(results, notes),
        "protected": _protected(protected, primary),
    }
    pop = population_of(table, truth)
    data["k_anonymity"] = kanon_counts(table, (2, 3, 5))
    f = table.counts if table.wildcard is None else np.asarray(table.wildcard.counts, float)
    data["cells_below"] = {k: int(np.count_nonzero(f < k)) for k in (2, 3, 5)}
    if record_label is None:
        notes.append("no method gives record-level risk, so the record-risk distribution, "
                     "the riskiest key combinations and the risk shares are not shown")
    else:
        rec_res = results[record_label]
        risk_threshold = _record_figures(data, rec_res, risk_threshold)
        data["riskiest"] = riskiest_cells(rec_res, top=top, internal=kind == "internal",
                                          population_counts=None if pop is None
                                          else pop.counts)
    data["truth"] = None if pop is None else truth_figures(results, pop, bins)
    cat_res = results[record_label] if record_label else primary
    data["variables_note"] = None
    if contributions is True and cat_res.method in SLOW_METHODS:
        data["variables_note"] = (f"{cat_res.method} is an MCMC method, too slow to fit "
                                  "once per key: nb is fitted instead")
    elif contributions is True and wide_refit(cat_res):
        data["variables_note"] = (
            f"with {len(table.keys)} keys (more than {CONTRIBUTION_REFIT_KEYS}) nb is fitted "
            f"once per key instead of {cat_res.method}, so that the {len(table.keys)} re-fits "
            "take bounded time; the reductions are nb's, not the headline method's "
            "(--contributions METHOD, or variable_contributions(result, estimator=...) in "
            "Python, re-fits another method)")
    elif contributions is True and chosen_candidates(cat_res):
        data["variables_note"] = (
            "on each reduced table auto chooses again among the candidates it chose on the "
            f"whole file ({', '.join(cat_res.fitted['choice']['candidates'])})")
    cats, hidden = category_contributions(
        cat_res, min_count=min_count if kind == "external" else 1,
        threshold=data.get("risk_threshold") if record_label else None)
    data["categories"] = cats
    data["categories_hidden"] = hidden
    data["categories_method"] = cat_res.method if record_label else None
    if contributions is not False and len(table.keys) >= 2:
        try:
            data["variables"] = variable_contributions(
                cat_res, estimator=None if contributions is True else contributions,
                notes=notes)
        except (SdcRiskError, MemoryError) as exc:
            notes.append(f"leave-one-key-out contributions not computed: {exc}")
            data["variables"] = None
    else:
        data["variables"] = None
        if len(table.keys) < 2:
            notes.append("leave-one-key-out contributions need at least two keys")
    data["suda"] = (_suda_section(table, notes, kind=kind, min_count=min_count, top=top,
                                  max_size=suda_max_size)
                    if suda else None)
    data["uniqueness"] = _uniqueness_section(table, notes) if uniqueness else None
    data["bins"] = bins
    return data


def build_report(
    results: RiskResult | Sequence[RiskResult] | Mapping[str, RiskResult],
    *,
    kind: ReportKind = "external",
    min_count: int = 3,
    truth: Microdata | None = None,
    title: str | None = None,
    risk_threshold: float | None = None,
    top: int = 20,
    contributions: bool | str | Estimator = True,
    suda: bool = True,
    suda_max_size: int | Literal["auto", "all"] = "auto",
    uniqueness: bool = True,
    bins: int = 10,
    date: str | None = None,
    limits: Mapping[str, float] | Sequence[tuple[str, str, float]] | None = None,
    protected: RiskResult | None = None,
    failed: Mapping[str, str] | None = None,
) -> str:
    """The HTML risk report of one file, from the results of one or more methods.

    Parameters
    ----------
    results : RiskResult, list of RiskResult or dict label -> RiskResult
        Fits of the same table (same input fingerprint). The first is the headline method;
        with several, a comparison table is added.
    kind : {"external", "internal"}
        ``external`` (default) lists no key combination with its values and no category
        with fewer than ``min_count`` records; ``internal`` lists the riskiest key
        combinations with their values (for the data owner only).
    min_count : int
        The non-disclosure threshold of the external report (default 3), stated on the page.
    truth : Microdata, optional
        The population the sample was drawn from (coded with the same levels), for the true
        measures, ROC and calibration plots. Not needed when the table was tabulated with
        its population.
    title : str, optional
        Page title (default: "Disclosure risk report: <source>").
    risk_threshold : float, optional
        Record risk above which a record counts as "high risk" in the report; default the
        mu-Argus/sdcMicro threshold of the result when the target global risk is not met.
    top : int
        Number of riskiest key combinations listed (default 20).
    contributions : bool, method name or Estimator
        Leave-one-key-out contributions: ``True`` (default) re-fits the headline method
        (``auto`` among the candidates it chose; ``nb`` for the MCMC methods, said on the
        page); a name or estimator chooses; ``False`` skips them.
    suda : bool
        Include SUDA2 scores and attribute contributions (:func:`sdcrisk.suda2`).
    suda_max_size : int, "auto" or "all"
        Largest MSU size SUDA searches. ``"auto"`` (default): every size when that search fits
        SUDA's work budget (always with at most 10 keys below census scale), else the largest size
        whose search does, said in the SUDA section with what the bound means for the scores (wide
        key sets: the full search grows steeply with the number of keys). ``"all"``: every size,
        whatever it takes (sdcMicro's suda2).
    uniqueness : bool
        Include the population-uniqueness estimators of ARX (Pitman, Zayatz, SNB and
        Dankar's rule, :func:`sdcrisk.population_uniqueness`).
    bins : int
        Calibration groups when the truth is known (default 10).
    date : str, optional
        Date printed in the header (default today, ISO format).
    limits : dict, optional
        The limits the verdict line checks:
        ``{"global_risk": 0.01, "tau2.upper": 5, "k3_violations": 0}`` (MEASURE[.BOUND] ->
        largest acceptable value; the CLI's ``--fail-above``, whose exit code makes the same
        check). The verdict says "passes" or "fails" for each, for the headline method, and
        fails when another method fails. Without limits it checks the stated default, the
        method's ``max_global_risk`` on the global risk, and says that this does not set the
        CLI's exit code (:func:`sdcrisk.report.verdict.checked_limits`).
    protected : RiskResult, optional
        The same method fitted on the protected version of the file (same keys and N): adds
        a before/after section (measures, sample uniques, k-anonymity violations, missing
        values per key).
    failed : dict, optional
        Label -> message of methods that were asked for but whose fit failed (the CLI's
        ``--methods`` when one raises the package's own error): named as failed, with the
        reason, under Headline measures, in the comparison of methods and in the notes.

    Returns
    -------
    str
        One self-contained HTML document (inline CSS and SVG; no scripts, no external
        resources; a Content-Security-Policy forbids loading any).

    Raises
    ------
    ParameterError
        Bad options, results from different data, or a truth that is not a Microdata.
    InputError
        The population does not match the sample's keys or levels.

    Notes
    -----
    Every figure is labelled with the method that produced it, its assumptions and the
    thresholds used; the sdcMicro conventions (expected re-identifications = sum of record
    risks, global risk = ER / n, the mu-Argus threshold for ``max_global_risk``, the
    "higher risk than the main part" count: risk > median + 3 MAD and > 0.1) are named as
    such. Charts are plain inline SVG, so the report is the same with or without matplotlib.

    References
    ----------
    Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. J. Stat. Softw. 67(4) (internal and external
    reports). Hundepool, A. et al. (2012). Statistical Disclosure Control. Wiley, ch. 3.

    Examples
    --------
    >>> import sdcrisk
    >>> from sdcrisk.report.collect import build_report
    >>> md = sdcrisk.Microdata.from_source("example:uk_census2011",
    ...     keys="region,sex,age_band", population_size=56_075_912)
    >>> html = build_report(sdcrisk.NegativeBinomialRisk().fit(sdcrisk.tabulate(md)))
    >>> html.startswith("<!DOCTYPE html>")
    True
    """
    _validate(kind, min_count, top, risk_threshold, bins)
    res = _as_results(results)
    _check_suda_max_size(suda_max_size, len(next(iter(res.values())).table.keys))
    data = _collect(res, kind=kind, min_count=int(min_count), truth=truth,
                    risk_threshold=risk_threshold, top=int(top), contributions=contributions,
                    suda=suda, suda_max_size=suda_max_size, uniqueness=uniqueness,
                    title=title, date=date,
                    bins=int(bins), limits=normalise_limits(limits), protected=protected)
    data["failed"] = {str(k): str(v) for k, v in (failed or {}).items()}
    data["notes"] += [f"method {k} failed and is not shown: {v}"
                      for k, v in data["failed"].items()]
    return render(data)


def write_report(path: str | Path, results, **options) -> Path:
    """Write :func:`build_report` to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(build_report(results, **options), encoding="utf-8")
    return path
