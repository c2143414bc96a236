"""Sections of the HTML risk report that show other methods' outputs.

Model diagnostics -- what estimators leave in ``RiskResult.diagnostics`` / ``fitted``: the
log-linear search path and partitions, the graphical models kept, MCMC convergence (R-hat,
ESS) with trace plots, a method-choice validation table, scalar fit figures --; SUDA2 scores
and attribute contributions (:func:`sdcrisk.suda2`); the population-uniqueness estimators
(:func:`sdcrisk.population_uniqueness`); and, when the population is known, the true
measures with ROC and calibration plots. Free text taken from results passes through the
external report's scrubber.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import charts as plots
from .markup import e, figure, fmt, kv, method_line, pct, section, table

__all__ = ["diagnostics_section", "truth_section", "suda_part", "uniqueness_section"]


def _format_cell(v: Any) -> Any:
    """Lists as text: nested lists as {a, b}; numbers formatted; long lists shortened."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
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


def _generic_table(rows: Sequence[Mapping], scrub, caption: str | None = None) -> str:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    out = []
    for r in rows:
        row = {}
        for k in cols:
            v = _format_cell(r.get(k))
            row[k] = scrub(v) if isinstance(v, str) else v
        out.append(row)
    return table([(c, c) for c in cols], out, caption=caption)


def _diagnostics_parts(label: str, res, scrub, kind: str) -> list[str]:
    d, fitted = res.diagnostics, res.fitted
    parts = []
    path = d.get("search_path")
    if path:
        main = [r for r in path if not str(r.get("step", "")).startswith("candidate")]
        cand = [r for r in path if str(r.get("step", "")).startswith("candidate")]
        cols = ["step", "model", "tau1", "tau2", "Z", "iterations", "chosen"]
        parts.append("<h3>Log-linear model search path</h3>" + _generic_table(
            [{c: r.get(c) for c in cols} for r in main], scrub,
            caption="ONS forward search on the minimum-error statistic Z (accept when "
            "0 ≤ Z < 1.96)"))
        if cand:
            parts.append(f"<details><summary>{len(cand)} candidate fits</summary>"
                         + _generic_table([{c: r.get(c) for c in cols[:-1]} for r in cand],
                                          scrub) + "</details>")
    partitions = d.get("partitions")
    if partitions:
        rows = []
        for i, r in enumerate(partitions, 1):
            row = {k: v for k, v in r.items() if k in ("partition", "n", "cells",
                                                         "sample_uniques", "model", "tau1",
                                                         "tau2", "Z_tau1", "Z_tau2",
                                                         "iterations", "converged")}
            if kind == "external":
                row["partition"] = f"band {i}"
            rows.append(row)
        parts.append("<h3>Partitions</h3>" + _generic_table(rows, scrub))
    models = fitted.get("models")
    if models:
        rows = [{"rank": i, **{k: m.get(k) for k in ("cliques", "edges",
                                                      "log_marginal_likelihood",
                                                      "posterior_probability", "tau1",
                                                      "tau2")}}
                for i, m in enumerate(models, 1)]
        parts.append("<h3>Graphical models kept (Occam's window)</h3>"
                     + _generic_table(rows, scrub, caption="decomposable models averaged, "
                                      "by posterior probability"))
    mcmc = d.get("mcmc")
    if mcmc:
        parts.append(_mcmc_part(mcmc, fitted.get("traces"), scrub))
    validation = d.get("validation")
    if validation:
        parts.append("<h3>Method-choice validation</h3>" + _generic_table(validation, scrub))
    chosen = d.get("chosen_diagnostics")
    if isinstance(chosen, Mapping) and chosen:
        inner = SimpleNamespace(diagnostics=chosen, fitted={})
        sub = _diagnostics_parts(label, inner, scrub, kind)
        if sub:
            parts.append("<details><summary>diagnostics of the chosen method</summary>"
                         + "".join(sub) + "</details>")
    scalars = [(k, scrub(fmt(v) if not isinstance(v, str) else v)) for k, v in d.items()
               if isinstance(v, int | float | str | bool | np.number) and k != "seconds"]
    scalars += [(f"fitted: {k}", scrub(fmt(v) if not isinstance(v, str) else v))
                for k, v in fitted.items()
                if isinstance(v, int | float | str | bool | np.number) and k != "predictive_law"
                and not (k in d and d[k] == v)]
    if "seconds" in d:
        scalars.append(("seconds", fmt(float(d["seconds"]), 3)))
    if scalars:
        parts.append("<h3>Fit</h3>" + kv(scalars))
    return parts


def _mcmc_part(mcmc: Mapping, traces: Mapping | None, scrub) -> str:
    out = ["<h3>MCMC convergence</h3>"]
    rhat, ess = mcmc.get("rhat") or {}, mcmc.get("ess_bulk") or {}
    ess_tail = mcmc.get("ess_tail") or {}
    names = list(dict.fromkeys([*rhat, *ess, *ess_tail]))
    def verdict(n):
        r, b = rhat.get(n), ess.get(n)
        if r is None and b is None:
            return "–"
        ok = (r is None or r < 1.01) and (b is None or b >= 400)
        return "ok" if ok else "not converged"

    rows = [{"quantity": n, "rhat": rhat.get(n), "ess_bulk": ess.get(n),
             "ess_tail": ess_tail.get(n), "check": verdict(n)} for n in names]
    cols = [("quantity", "quantity"), ("rhat", "R-hat (rank-normalised)", fmt),
            ("ess_bulk", "bulk ESS", fmt)]
    if ess_tail:
        cols.append(("ess_tail", "tail ESS", fmt))
    cols.append(("check", "R-hat < 1.01 and bulk ESS ≥ 400"))
    if rows:
        out.append(table(cols, rows, caption="R-hat below 1.01 and bulk ESS above 400 are "
                         "the usual convergence checks"))
    flags = [(k, scrub(fmt(v) if not isinstance(v, str) else v)) for k, v in mcmc.items()
             if k not in ("rhat", "ess_bulk", "ess_tail")
             and isinstance(v, int | float | str | bool | np.number)]
    if flags:
        out.append(kv(flags))
    if traces:
        charts = []
        for name, chains in traces.items():
            arr = [np.asarray(c, float).ravel() for c in chains]
            if not arr or not any(a.size for a in arr):
                continue
            series = [plots.Series(f"chain {i + 1}", np.arange(a.size), a)
                      for i, a in enumerate(arr)]
            svg = plots.lines(series, title=f"Trace of {name}", xlabel="draw",
                              ylabel=str(name), height=220, width=500)
            charts.append(figure(svg, f"Trace of {name} by chain (thinned for display)"))
        if charts:
            out.append('<div class="grid2">' + "".join(charts) + "</div>")
    return "".join(out)


def diagnostics_section(data: dict, scrub) -> str:
    parts = []
    for label, res in data["results"].items():
        p = _diagnostics_parts(label, res, scrub, data["kind"])
        if p:
            parts.append(f"<h3>{e(label)}</h3>{method_line(res)}" + "".join(p))
    if not parts:
        return ""
    return section("diagnostics", "Model diagnostics", "".join(parts))


def truth_section(data: dict) -> str:
    truth = data["truth"]
    if truth is None:
        return ""
    t = truth["measures"]
    body = [kv([("population N", fmt(truth["population_size"])),
                ("population uniques", fmt(truth["population_uniques"])),
                ("true tau1", fmt(int(t["tau1"]))), ("true tau2", fmt(t["tau2"])),
                ("true P(PU|SU)", fmt(t["p_pu_given_su"])), ("true theta", fmt(t["theta"])),
                ("true expected re-identifications, sum of 1/F over records",
                 fmt(t["expected_reidentifications"]))])]
    charts = []
    roc = [(lab, m) for lab, m in truth["methods"].items() if m["roc"] is not None]
    if roc:
        series = [plots.Series(f"{lab} (AUC {m['auc']:.3f})", *m["roc"]) for lab, m in roc]
        svg = plots.lines(series, title="ROC: detecting population uniques among sample "
                          "uniques", xlabel="false positive rate", ylabel="true positive rate",
                          xlim=(0, 1), ylim=(0, 1), diagonal=True, width=500)
        charts.append(figure(svg, "Sample uniques ranked by P(F = 1 | f); positives: the "
                             "population uniques. Dashed diagonal: chance."))
    cal = [(lab, m["calibration"]) for lab, m in truth["methods"].items()
           if m["calibration"] is not None]
    if cal:
        series = [plots.Series(lab, c["predicted"], c["observed"], points=True)
                  for lab, c in cal]
        svg = plots.lines(series, title="Calibration of record risk",
                          xlabel="mean predicted risk E[1/F | f] (log)",
                          ylabel="mean true 1/F (log)", log_x=True, log_y=True, diagonal=True,
                          width=500)
        charts.append(figure(svg, f"Records in {data['bins']} groups of equal size by "
                             "predicted risk; on the diagonal the risk is calibrated."))
    calpu = [(lab, m["calibration_pu"]) for lab, m in truth["methods"].items()
             if m["calibration_pu"] is not None]
    if calpu:
        series = [plots.Series(lab, c["predicted"], c["observed"], points=True)
                  for lab, c in calpu]
        svg = plots.lines(series, title="Calibration of P(population unique | sample unique)",
                          xlabel="mean predicted P(F = 1 | f = 1)",
                          ylabel="share population unique", xlim=(0, 1), ylim=(0, 1),
                          diagonal=True, width=500)
        charts.append(figure(svg, f"Sample uniques in {data['bins']} groups by prediction."))
    if charts:
        body.append('<div class="grid2">' + "".join(charts) + "</div>")
    return section("truth", "Against the truth (population known)", "".join(body))


def suda_part(data: dict) -> str:
    """SUDA2: attribute contributions, DIS-SUDA bands, the variable combinations that single
    records out (names and counts only) and the categories carrying the SUDA score."""
    suda = data.get("suda")
    if suda is None:
        return ""
    res = suda["result"]
    kind = "Elliot et al. (2002) scores, (M - k)! for an MSU of size k" if \
        res.original_scores else "legacy IHSN scores"
    line = (f"Method: SUDA2 minimal sample uniques (sdcMicro suda2), {kind}; DIS-SUDA with "
            f"sampling fraction {suda['dis_fraction_text']}")
    out = ["<h3>SUDA2: special uniques</h3>", f'<p class="method">{e(line)}</p>']
    summary = res.summary()
    rows = [{"variable": k, "contribution": r["contribution"], "msus": int(r["msus"])}
            for k, r in summary.iterrows()]
    out.append(table([("variable", "key"), ("contribution", "attribute contribution",
                                             lambda v: f"{v:.1f}%"),
                      ("msus", "MSUs containing it", fmt)], rows,
                     caption="Share of the total SUDA score carried by MSUs that contain each "
                     "key (sdcMicro attribute_contributions; sums to more than 100%)"))
    ordered = sorted(rows, key=lambda r: -r["contribution"] if r["contribution"] ==
                     r["contribution"] else 0)
    if any(r["contribution"] == r["contribution"] for r in rows):
        svg = plots.hbars([r["variable"] for r in ordered],
                          [r["contribution"] if r["contribution"] == r["contribution"] else 0.0
                           for r in ordered], title="SUDA attribute contributions",
                          xlabel="% of the total SUDA score", value_format="{:.1f}%")
        out.append(figure(svg, "Keys by their SUDA attribute contribution."))
    score = res.score
    items = [("records with a SUDA score > 0", fmt(int(np.count_nonzero(score > 0)))),
             ("minimal sample uniques (MSUs)", fmt(res.n_msus)),
             ("MSUs by size", ", ".join(f"{k}: {v:,}" for k, v in res.msu_size_totals().items()
                                        if v)),
             ("total SUDA score", fmt(res.total_score)),
             ("DIS (probability a unique match is correct)", fmt(res.dis))]
    out.append(kv(items))
    bands = res.dis_table()
    out.append(table([(b, b, fmt) for b in bands], [bands],
                     caption="Records by DIS-SUDA score (sdcMicro's bands)"))
    combos = suda["combinations"][:10]
    if combos:
        out.append(table([("keys", "keys of the MSU"), ("size", "size", fmt),
                          ("records", "records", fmt)],
                         [{"keys": " × ".join(k), "size": len(k), "records": c}
                          for k, c in combos],
                         caption="Key combinations that single records out most often (names "
                         "and counts only)"))
    levels = suda["levels"]
    if len(levels):
        rows = [{"variable": r["variable"], "level": "missing" if r["level"] is None
                 else r["level"], "records": int(r["records"]),
                 "contribution": r["contribution"]} for _, r in levels.iterrows()]
        cap = "Categories carrying each key's SUDA contribution (sdcMicro " \
              "attribute_level_contributions)"
        if data["kind"] == "external":
            cap += (f"; categories with fewer than {data['min_count']} records are not listed "
                    f"({suda['levels_hidden']})")
        out.append(f"<details><summary>SUDA contribution by category ({len(rows)} "
                   "largest)</summary>" + table(
                       [("variable", "key"), ("level", "category"),
                        ("records", "records", fmt),
                        ("contribution", "share of the key's contribution",
                         lambda v: "–" if v != v else f"{v:.1f}%")], rows, caption=cap)
                   + "</details>")
    return "".join(out)


def uniqueness_section(data: dict) -> str:
    """Pitman, Zayatz, SNB and Dankar's choice (ARX), with the method's P(PU) and the truth."""
    pu = data.get("uniqueness")
    if pu is None:
        return ""
    rows = []
    for name, est in pu.estimates.items():
        rows.append({"model": name, "uniques": est.uniques, "share": est.share,
                     "available": "yes" if est.available else "no", "note": est.note})
    rows.append({"model": f"Dankar's rule: {pu.dankar_model}", "uniques": pu.dankar.uniques,
                 "share": pu.dankar.share, "available": "yes" if pu.dankar.available else "no",
                 "note": pu.dankar_reason})
    for label, res in data["results"].items():
        m = res.measures.get("p_pu")
        if m is not None and m.estimate is not None:
            rows.append({"model": f"{label}: P(PU) × N", "uniques": m.estimate *
                         res.population_size, "share": m.estimate, "available": "yes",
                         "note": "the method's predictive P(PU)"})
    truth = data.get("truth")
    if truth is not None:
        rows.append({"model": "truth (population)", "uniques": truth["population_uniques"],
                     "share": truth["measures"]["p_pu"], "available": "yes", "note": ""})
    t = data["table"]
    line = ("Method: superpopulation models of the frequency of frequencies (ARX "
            f"RiskModelPopulationUniqueness); N = {fmt(float(pu.population_size))} "
            f"({t.population_size_source}), sampling fraction {fmt(pu.sampling_fraction)}")
    body = [f'<p class="method">{e(line)}</p>',
            table([("model", "model"), ("uniques", "population uniques", fmt),
                   ("share", "share of the population", pct), ("available", "usable"),
                   ("note", "how")], rows,
                  caption="Estimated number of population uniques (cells with F = 1); Dankar "
                  "et al. (2012): Pitman when n/N <= 0.1, else the smaller of Zayatz and SNB",
                  row_class=lambda r: "base" if r["model"].startswith("Dankar") else ""),
            kv([("sample uniqueness (share of records with f = 1)", pct(pu.sample_uniqueness)),
                ("average prosecutor risk (mean of 1/f)", fmt(pu.average_prosecutor_risk)),
                ("highest prosecutor risk (1 / smallest f)", fmt(pu.highest_prosecutor_risk))])]
    return section("uniqueness", "Population uniqueness (ARX models)", "".join(body))
