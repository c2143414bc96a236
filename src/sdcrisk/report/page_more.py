"""Report sections that show other analyses' outputs, as blocks.

Model diagnostics -- what estimators leave in ``RiskResult.diagnostics`` / ``fitted``: the
log-linear search path and partitions, the graphical models kept, MCMC convergence (R-hat,
ESS) with trace plots, auto's method-choice validation, scalar fit figures, all under human
labels --; SUDA2 scores and attribute contributions (:func:`sdcrisk.suda2`); the
population-uniqueness estimators (:func:`sdcrisk.population_uniqueness`) with guidance on
which estimate to trust; the true measures with ROC and calibration plots when the
population is known; and the before/after comparison with a protected file.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace

import numpy as np

from . import charts
from .blocks import (
    details,
    figure,
    generic_table,
    grid,
    h3,
    h4,
    kv,
    method,
    para,
    section,
    table,
)
from .formats import fmt, label, method_line, pct, population_source
from .verdict import verdict

__all__ = ["diagnostics_section", "truth_section", "suda_part", "uniqueness_section",
           "protected_section", "kanon_counts"]


def kanon_counts(table, ks=(2, 3, 5)) -> dict[int, int]:
    """Records in key combinations with f < k; with ``missing="wildcard"`` f is the
    wildcard count (a missing value matches every category, sdcMicro's freqCalc)."""
    if table.wildcard is None:
        return table.k_anonymity_violations(ks)
    f = np.asarray(table.wildcard.counts, float)
    return {int(k): int(table.counts[f < k].sum()) for k in ks}


def _validation_part(rows: list, chosen: list, scrub) -> list:
    """auto's validation table: one row per candidate, errors as percentages."""
    if not all(isinstance(r, Mapping) and "candidate" in r for r in rows):
        return [h3("Method-choice validation"), generic_table(rows, scrub)]
    out = []
    for r in rows:
        out.append({"candidate": r["candidate"], "status": scrub(str(r.get("status", "–"))),
                    "t1abs": r.get("median_abs_rel_err_tau1"),
                    "t1": r.get("median_rel_err_tau1"),
                    "t2abs": r.get("median_abs_rel_err_tau2"),
                    "t2": r.get("median_rel_err_tau2"), "auc": r.get("median_auc"),
                    "seconds": r.get("seconds"),
                    "chosen": "yes" if r["candidate"] in chosen else ""})
    cols = [("candidate", "candidate"), ("status", "status"),
            ("t1abs", label("median_abs_rel_err_tau1"), "pct"),
            ("t1", label("median_rel_err_tau1"), "signed_pct"),
            ("t2abs", label("median_abs_rel_err_tau2"), "pct"),
            ("t2", label("median_rel_err_tau2"), "signed_pct"),
            ("auc", "median AUC", "fmt"), ("seconds", "seconds", "seconds"),
            ("chosen", "chosen")]
    blocks = [h3("Method-choice validation"),
              table(cols, out, caption="Each candidate fitted on sub-samples of this file "
                    "(drawn at the file's sampling fraction, where the true tau1 and tau2 are "
                    "known); error = (estimate - truth) / truth; a negative signed error is "
                    "an under-estimate of the risk",
                    row_class=lambda r: "base" if r["chosen"] else "")]
    per = []
    for r in rows:
        per.append({"candidate": r["candidate"],
                    "e1": ", ".join(_signed(x) for x in r.get("rel_err_tau1") or []),
                    "e2": ", ".join(_signed(x) for x in r.get("rel_err_tau2") or []),
                    "warnings": _warnings_text(r.get("warnings"), scrub)})
    blocks.append(details("errors per sub-sample and warnings", [table(
        [("candidate", "candidate"), ("e1", label("rel_err_tau1")),
         ("e2", label("rel_err_tau2")), ("warnings", "warnings")], per)]))
    return blocks


def _calibrated_part(rows, choice: Mapping, scrub) -> list:
    """auto's calibrated rule: each candidate's own tau1 and tau2 on this file, the figures
    ``assess`` prints under its table and the combination starts from."""
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) and "candidate" in r
                                             for r in rows):
        return []
    out = [{"candidate": r["candidate"], "status": scrub(str(r.get("status", "–"))),
            "tau1": r.get("tau1"), "tau2": r.get("tau2"), "seconds": r.get("seconds"),
            "records": "yes" if r["candidate"] == choice.get("record_risks_from") else ""}
           for r in rows]
    cols = [("candidate", "candidate"), ("status", "status"), ("tau1", "tau1", "fmt"),
            ("tau2", "tau2", "fmt"), ("seconds", "seconds", "seconds"),
            ("records", "record risks from")]
    return [h3("Candidates fitted on this file"),
            table(cols, out, caption="Each candidate's own estimates; auto combined their "
                  "tau1 and tau2 by the regression learned on the calibration corpus "
                  "(docs/auto.md), so the headline figures need not equal any row",
                  row_class=lambda r: "base" if r["records"] else "")]


def _warnings_text(w, scrub) -> str:
    if w is None:
        return "–"
    if isinstance(w, int | float):
        return fmt(w)
    if isinstance(w, list | tuple):
        return scrub("; ".join(str(x) for x in w)) or "–"
    return scrub(str(w))


def _signed(x) -> str:
    return "–" if x is None else f"{100 * float(x):+.0f}%"


def _scalars(d: Mapping, fitted: Mapping, scrub) -> list[tuple[str, str]]:
    def show(v):
        return scrub(fmt(v) if not isinstance(v, str) else v)

    out = [(label(k), show(v)) for k, v in d.items()
           if isinstance(v, int | float | str | bool | np.number) and k != "seconds"]
    out += [(f"fitted: {label(k)}", show(v)) for k, v in fitted.items()
            if isinstance(v, int | float | str | bool | np.number)
            and k not in ("predictive_law", "reason") and not (k in d and d[k] == v)]
    if "seconds" in d:
        out.append(("seconds", fmt(float(d["seconds"]), 3)))
    return out


def _diagnostics_parts(lab: str, res, scrub, kind: str) -> list:
    d, fitted = res.diagnostics, res.fitted
    parts: list = []
    path = d.get("search_path")
    if path:
        main = [r for r in path if not str(r.get("step", "")).startswith("candidate")]
        cand = [r for r in path if str(r.get("step", "")).startswith("candidate")]
        cols = ["step", "model", "tau1", "tau2", "Z", "iterations", "chosen"]
        parts += [h3("Log-linear model search path"), generic_table(
            [{c: r.get(c) for c in cols} for r in main], scrub,
            caption="ONS forward search on the minimum-error statistic Z (accept when "
            "0 ≤ Z < 1.96)")]
        if cand:
            parts.append(details(f"{len(cand)} candidate fits", [generic_table(
                [{c: r.get(c) for c in cols[:-1]} for r in cand], scrub)]))
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
        parts += [h3("Partitions"), generic_table(rows, scrub)]
    models = fitted.get("models")
    if models:
        rows = [{"rank": i, **{k: m.get(k) for k in ("cliques", "edges",
                                                      "log_marginal_likelihood",
                                                      "posterior_probability", "tau1",
                                                      "tau2")}}
                for i, m in enumerate(models, 1)]
        parts += [h3("Graphical models kept (Occam's window)"),
                  generic_table(rows, scrub, caption="decomposable models averaged, by "
                                "posterior probability")]
    mcmc = d.get("mcmc")
    if mcmc:
        parts += _mcmc_part(mcmc, fitted.get("traces"), scrub)
    validation = d.get("validation")
    choice = fitted.get("choice") if isinstance(fitted.get("choice"), Mapping) else {}
    if validation:
        parts += _validation_part(validation, list(choice.get("candidates", [])), scrub)
    elif choice.get("rule") == "calibrated":
        parts += _calibrated_part(d.get("candidates"), choice, scrub)
    design = d.get("validation_design")
    if isinstance(design, Mapping) and design:
        items = [(label(k), scrub(fmt(v) if not isinstance(v, str | list | dict) else
                                  (v if isinstance(v, str) else str(v))))
                 for k, v in design.items() if not isinstance(v, list | dict)]
        if items:
            parts += [h4("Validation design"), kv(items)]
    failed = d.get("failed_on_full_file")
    if isinstance(failed, Mapping) and failed:
        parts += [h4("Candidates that failed on the whole file"),
                  kv([(k, scrub(v)) for k, v in failed.items()])]
    chosen = d.get("chosen_diagnostics")
    if isinstance(chosen, Mapping) and chosen:
        labels = list(choice.get("candidates", []))
        if labels and set(chosen) == set(labels) and all(isinstance(v, Mapping)
                                                         for v in chosen.values()):
            sub = []
            for cand in labels:  # a blend: the diagnostics of every candidate
                inner = SimpleNamespace(diagnostics=chosen[cand], fitted={})
                got = _diagnostics_parts(cand, inner, scrub, kind)
                if got:
                    sub += [h4(f"candidate {cand}"), *got]
        else:
            inner = SimpleNamespace(diagnostics=chosen, fitted={})
            sub = _diagnostics_parts(lab, inner, scrub, kind)
        if sub:
            source = choice.get("record_risks_from") if choice.get("rule") == "calibrated" \
                else None  # the calibrated rule chooses no method: one gives record risks
            parts.append(details(f"diagnostics of {source}, whose record risks auto uses"
                                 if source else "diagnostics of the chosen method", sub))
    scalars = _scalars(d, fitted, scrub)
    if scalars:
        parts += [h3("Fit"), kv(scalars)]
    return parts


def _mcmc_part(mcmc: Mapping, traces: Mapping | None, scrub) -> list:
    out: list = [h3("MCMC convergence")]
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
    cols: list[tuple] = [("quantity", "quantity"), ("rhat", "R-hat (rank-normalised)", "fmt"),
                         ("ess_bulk", "bulk ESS", "fmt")]
    if ess_tail:
        cols.append(("ess_tail", "tail ESS", "fmt"))
    cols.append(("check", "R-hat < 1.01 and bulk ESS ≥ 400"))
    if rows:
        out.append(table(cols, rows, caption="R-hat below 1.01 and bulk ESS above 400 are "
                         "the usual convergence checks"))
    flags = [(label(k), scrub(fmt(v) if not isinstance(v, str) else v))
             for k, v in mcmc.items() if k not in ("rhat", "ess_bulk", "ess_tail")
             and isinstance(v, int | float | str | bool | np.number)]
    if flags:
        out.append(kv(flags))
    if traces:
        figs = []
        for name, chains in traces.items():
            arr = [np.asarray(c, float).ravel() for c in chains]
            if not arr or not any(a.size for a in arr):
                continue
            series = [charts.Series(f"chain {i + 1}", np.arange(a.size), a)
                      for i, a in enumerate(arr)]
            svg = charts.lines(series, title=f"Trace of {name}", xlabel="draw",
                               ylabel=str(name), height=220, width=500)
            figs.append(figure(svg, f"Trace of {name} by chain (thinned for display)"))
        if figs:
            out.append(grid(figs))
    return out


def diagnostics_section(data: dict, scrub) -> dict | None:
    parts: list = []
    for lab, res in data["results"].items():
        p = _diagnostics_parts(lab, res, scrub, data["kind"])
        if p:
            parts += [h3(lab), method(method_line(res)), *p]
    if not parts:
        return None
    return section("diagnostics", "Model diagnostics", "Diagnostics", parts)


def truth_section(data: dict) -> dict | None:
    truth = data["truth"]
    if truth is None:
        return None
    t = truth["measures"]
    body: list = [kv([("population N", fmt(truth["population_size"])),
                      ("population uniques", fmt(truth["population_uniques"])),
                      ("true tau1", fmt(int(t["tau1"]))), ("true tau2", fmt(t["tau2"])),
                      ("true P(PU|SU)", fmt(t["p_pu_given_su"])),
                      ("true theta", fmt(t["theta"])),
                      ("true expected re-identifications, sum of 1/F over records",
                       fmt(t["expected_reidentifications"]))])]
    figs = []
    roc = [(lab, m) for lab, m in truth["methods"].items() if m["roc"] is not None]
    if roc:
        series = [charts.Series(f"{lab} (AUC {m['auc']:.3f})", *m["roc"]) for lab, m in roc]
        svg = charts.lines(series, title="ROC: detecting population uniques among sample "
                           "uniques", xlabel="false positive rate",
                           ylabel="true positive rate", xlim=(0, 1), ylim=(0, 1),
                           diagonal=True, width=500)
        figs.append(figure(svg, "Sample uniques ranked by P(F = 1 | f); positives: the "
                           "population uniques. Dashed diagonal: chance."))
    cal = [(lab, m["calibration"]) for lab, m in truth["methods"].items()
           if m["calibration"] is not None]
    if cal:
        series = [charts.Series(lab, c["predicted"], c["observed"], points=True)
                  for lab, c in cal]
        svg = charts.lines(series, title="Calibration of record risk",
                           xlabel="mean predicted risk E[1/F | f] (log)",
                           ylabel="mean true 1/F (log)", log_x=True, log_y=True,
                           diagonal=True, width=500)
        figs.append(figure(svg, f"Records in {data['bins']} groups of equal size by "
                           "predicted risk; on the diagonal the risk is calibrated."))
    calpu = [(lab, m["calibration_pu"]) for lab, m in truth["methods"].items()
             if m["calibration_pu"] is not None]
    if calpu:
        series = [charts.Series(lab, c["predicted"], c["observed"], points=True)
                  for lab, c in calpu]
        svg = charts.lines(series, title="Calibration of P(population unique | sample "
                           "unique)", xlabel="mean predicted P(F = 1 | f = 1)",
                           ylabel="share population unique", xlim=(0, 1), ylim=(0, 1),
                           diagonal=True, width=500)
        figs.append(figure(svg, f"Sample uniques in {data['bins']} groups by prediction."))
    if figs:
        body.append(grid(figs))
    return section("truth", "Against the truth (population known)", "Truth", body)


def suda_part(data: dict) -> list:
    """SUDA2: attribute contributions, DIS-SUDA bands, the variable combinations that single
    records out (names and counts only) and the categories carrying the SUDA score."""
    suda = data.get("suda")
    if suda is None:
        return []
    kind = "Elliot et al. (2002) scores, (M - k)! for an MSU of size k" if \
        suda["original_scores"] else "legacy IHSN scores"
    out: list = [h3("SUDA2: special uniques"), method(
        f"Method: SUDA2 minimal sample uniques (sdcMicro suda2), {kind}; DIS-SUDA with "
        f"sampling fraction {suda['dis_fraction_text']}")]
    if suda.get("bound_note"):
        out.append(para(f"Bounded search: {suda['bound_note']}", cls="warn"))
    rows = suda["summary"]
    out.append(table([("variable", "key"),
                      ("contribution", "attribute contribution", "pct1"),
                      ("msus", "MSUs containing it", "fmt")], rows,
                     caption="Share of the total SUDA score carried by MSUs that contain each "
                     "key (sdcMicro attribute_contributions; sums to more than 100%)"))
    finite = [r for r in rows if r["contribution"] == r["contribution"]]
    if finite:
        ordered = sorted(rows, key=lambda r: -r["contribution"] if r["contribution"] ==
                         r["contribution"] else 0)
        svg = charts.hbars([r["variable"] for r in ordered],
                           [r["contribution"] if r["contribution"] == r["contribution"]
                            else 0.0 for r in ordered], title="SUDA attribute contributions",
                           xlabel="% of the total SUDA score", value_format="{:.1f}%")
        out.append(figure(svg, "Keys by their SUDA attribute contribution."))
    out.append(kv([("records with a SUDA score > 0", fmt(suda["scored_records"])),
                   ("minimal sample uniques (MSUs)", fmt(suda["n_msus"])),
                   ("MSUs by size", ", ".join(f"{k}: {v:,}" for k, v in
                                              suda["msu_size_totals"].items() if v)),
                   ("total SUDA score", fmt(suda["total_score"])),
                   ("DIS (probability a unique match is correct)", fmt(suda["dis"]))]))
    bands = suda["dis_table"]
    out.append(table([(b, b, "fmt") for b in bands], [bands],
                     caption="Records by DIS-SUDA score (sdcMicro's bands)"))
    combos = suda["combinations"][:10]
    if combos:
        out.append(table([("keys", "keys of the MSU"), ("size", "size", "fmt"),
                          ("records", "records", "fmt")],
                         [{"keys": " × ".join(k), "size": len(k), "records": c}
                          for k, c in combos],
                         caption="Key combinations that single records out most often (names "
                         "and counts only)"))
    levels = suda["levels"]
    if len(levels):
        rows = [{"variable": r["variable"], "level": "missing" if r["level"] is None
                 else str(r["level"]), "records": int(r["records"]),
                 "contribution": r["contribution"]} for _, r in levels.iterrows()]
        cap = "Categories carrying each key's SUDA contribution (sdcMicro " \
              "attribute_level_contributions)"
        if data["kind"] == "external":
            cap += (f"; categories with fewer than {data['min_count']} records are not listed "
                    f"({suda['levels_hidden']})")
        out.append(details(f"SUDA contribution by category ({len(rows)} largest)", [table(
            [("variable", "key"), ("level", "category"), ("records", "records", "fmt"),
             ("contribution", "share of the key's contribution", "pct1")], rows,
            caption=cap)]))
    return out


_GUIDANCE = (
    "Which estimate to trust: the ARX models (Pitman, Zayatz, SNB, and Dankar's rule, which "
    "picks one of them by the sampling fraction as ARX does) see only how many key "
    "combinations hold 1, 2, 3 ... records, not which keys make a combination rare. The "
    "headline method's P(PU) × N (highlighted) models the keys{validated}: read it as the "
    "estimate and the ARX rows as a cross-check. Where they disagree by a factor of two or "
    "more, the number of population uniques is uncertain: report the range, not one figure.")


def _auto_basis(res) -> str:
    """What auto's headline rests on, in the words of the uniqueness guidance."""
    choice = res.fitted.get("choice")
    rule = choice.get("rule") if isinstance(choice, dict) else None
    if rule == "calibrated":
        return (", and auto combined candidates fitted on this file by a rule learned on real "
                "populations")
    if rule in ("single", "average", "pair"):  # the validated rule (explicit candidates)
        return ", and auto chose it by its error on sub-samples of this very file"
    return ""  # a candidate fitted unvalidated (no sample uniques, a tiny file)


def uniqueness_section(data: dict) -> dict | None:
    """Pitman, Zayatz, SNB and Dankar's choice (ARX), with the method's P(PU) and the truth."""
    pu = data.get("uniqueness")
    if pu is None:
        return None
    rows = []
    for name, est in pu.estimates.items():
        rows.append({"model": name, "uniques": est.uniques, "share": est.share,
                     "available": "yes" if est.available else "no", "note": est.note})
    rows.append({"model": f"Dankar's rule: {pu.dankar_model}", "uniques": pu.dankar.uniques,
                 "share": pu.dankar.share, "available": "yes" if pu.dankar.available else "no",
                 "note": pu.dankar_reason})
    headline = data["primary"]
    for lab, res in data["results"].items():
        m = res.measures.get("p_pu")
        if m is not None and m.estimate is not None:
            rows.append({"model": f"{lab}: P(PU) × N", "uniques": m.estimate *
                         res.population_size, "share": m.estimate, "available": "yes",
                         "note": "the method's predictive P(PU)"
                         + (" (headline method)" if lab == headline else ""),
                         "headline": lab == headline})
    truth = data.get("truth")
    if truth is not None:
        rows.append({"model": "truth (population)", "uniques": truth["population_uniques"],
                     "share": truth["measures"]["p_pu"], "available": "yes", "note": ""})
    t = data["table"]
    line = ("Method: superpopulation models of the frequency of frequencies (ARX "
            f"RiskModelPopulationUniqueness); N = {fmt(float(pu.population_size))} "
            f"({population_source(t.population_size_source)}), sampling fraction "
            f"{fmt(pu.sampling_fraction)}")
    head = data["results"][headline]
    validated = _auto_basis(head) if head.method == "auto" else ""
    body = [method(line),
            para(_GUIDANCE.format(validated=validated), "guidance"),
            table([("model", "model"), ("uniques", "population uniques", "fmt"),
                   ("share", "share of the population", "pct"), ("available", "usable"),
                   ("note", "how")], rows,
                  caption="Estimated number of population uniques (cells with F = 1); Dankar "
                  "et al. (2012): Pitman when n/N <= 0.1, else the smaller of Zayatz and SNB",
                  row_class=lambda r: "base" if r.get("headline") else ""),
            kv([("sample uniqueness (share of records with f = 1)", pct(pu.sample_uniqueness)),
                ("average prosecutor risk (mean of 1/f)", fmt(pu.average_prosecutor_risk)),
                ("highest prosecutor risk (1 / smallest f)", fmt(pu.highest_prosecutor_risk))])]
    return section("uniqueness", "Population uniqueness (ARX models)", "Uniqueness", body)


def protected_section(data: dict, scrub) -> dict | None:
    """Before/after: the same method, keys and N on the original and the protected file."""
    prot = data.get("protected")
    if prot is None:
        return None
    before = data["results"][data["primary"]]
    after = prot["result"]
    rows = []

    def add(what, a, b, kind="fmt"):
        rows.append({"figure": what, "before": a, "after": b,
                     "change": None if a is None or b is None else b - a, "_fmt": kind})

    ta, tb = before.table, after.table
    wild = tb.wildcard is not None or ta.wildcard is not None
    # a missing value as a category of its own (assess's default): its patterns are cells
    # here, where protect counted them apart (359 combinations and 252 patterns with missing
    # values on a file the page said had 611 combinations)
    categories = not wild and any(_missing_count(t, key) for t in (ta, tb) for key in ta.keys)
    add("records", ta.n, tb.n)
    # cells of the key space only: under missing = wildcard a pattern with a missing value
    # matches several cells and is counted apart (as assess and the file section do)
    add("observed key combinations" + (" (a missing value as a category)" if categories
                                       else ""), ta.key_cells, tb.key_cells)
    patterns = [t.missing_patterns for t in (ta, tb)]
    if any(patterns):
        add("patterns with missing values (each matches several combinations)", *patterns)
    ka, kb = kanon_counts(ta, (2, 3, 5)), kanon_counts(tb, (2, 3, 5))
    add("sample uniques (f = 1)", before.sample_uniques, after.sample_uniques)
    for k in (2, 3, 5):
        add(f"records violating {k}-anonymity (f < {k})", ka[k], kb[k])
    for name in ("expected_reidentifications", "global_risk", "tau1", "tau2", "theta"):
        ma, mb = before.measures.get(name), after.measures.get(name)
        if ma is None and mb is None:
            continue
        add(label(name), None if ma is None else ma.estimate,
            None if mb is None else mb.estimate, "pct" if name == "global_risk" else "fmt")
    for key in ta.keys:
        miss = [_missing_count(t, key) for t in (ta, tb)]
        if any(miss):
            add(f"missing values of {key} (suppressed)", miss[0], miss[1])
    shown = []
    for r in rows:
        f = pct if r["_fmt"] == "pct" else fmt
        change = r["change"]
        if change is None:
            text = "–"
        elif r["_fmt"] == "pct":
            text = f"{100 * change:+.3g} percentage points"
        else:
            text = ("+" if change > 0 else "") + f(change)
        shown.append({"figure": r["figure"], "before": f(r["before"]), "after": f(r["after"]),
                      "change": text})
    body = [method(method_line(before, f"the same method, keys and population size N = "
                                       f"{fmt(float(ta.population_size))} on both files")),
            kv([("original", scrub(ta.source)), ("protected", scrub(prot["source"]))])]
    v = verdict(after, data["limits"])
    if v is not None:
        body.append(para("Protected file: " + "; ".join(c["text"] for c in v["checks"]),
                         "good" if v["passes"] else "warn"))
    body.append(table([("figure", "figure"), ("before", "original", "str"),
                       ("after", "protected", "str"), ("change", "change", "str")], shown,
                      caption="Risk of the original and the protected file"
                      + ("; f counts a missing key value as matching every category "
                         "(missing = wildcard, as sdcMicro)" if wild else "")
                      + ("; a missing (suppressed) key value is a category of its own, as "
                         "assess reads files by default, which does not credit a suppression "
                         "as protect does (--missing wildcard with --methods nb --mode "
                         "sdcmicro counts it as matching every category)" if categories
                         else "")))
    if tb.keys != ta.keys:
        body.append(para("The protected file's keys differ from the original's.", "warn"))
    return section("protected", "Before and after protection", "Protected", body)


def _missing_count(table, key: str) -> int:
    j = list(table.keys).index(key) if key in table.keys else None
    if j is None:
        return 0
    levels = table.levels[j]
    miss = [c for c, lev in enumerate(levels) if lev is None]
    if not miss:
        return 0
    return int(table.counts[np.isin(table.cell_codes[:, j], miss)].sum())

