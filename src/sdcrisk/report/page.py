"""The sections of the risk report as data (blocks of :mod:`sdcrisk.report.blocks`).

:func:`page_context` turns the figures gathered by :mod:`sdcrisk.report.collect` into what
``templates/report.html.j2`` renders: the verdict, the headline cards and one list of blocks
per section. Free text taken from results passes through the external report's
:class:`~sdcrisk.report.formats.Scrubber`; key values of cells are kept only in the internal
report. The sections showing other analyses' outputs (diagnostics, SUDA, uniqueness, truth,
protected file) are in :mod:`sdcrisk.report.page_more`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import charts
from .blocks import bullets, details, figure, h3, h4, kv, method, para, section, table
from .formats import (
    MEASURE_LABELS,
    Scrubber,
    fmt,
    label,
    method_line,
    method_title,
    pct,
    population_source,
)
from .page_more import (
    diagnostics_section,
    protected_section,
    suda_part,
    truth_section,
    uniqueness_section,
)
from .verdict import verdict

__all__ = ["page_context"]


def _cards(data: dict) -> list[dict]:
    res = data["results"][data["primary"]]
    t = data["table"]
    m = res.measures
    cards = []

    def card(key, value, title, sub):
        cards.append({"key": key, "value": value, "label": title, "sub": sub})

    er = m.get("expected_reidentifications")
    if er is not None and er.estimate is not None:
        gr = m.get("global_risk")
        card("expected_reidentifications", fmt(er.estimate), "Expected re-identifications",
             f"{pct(gr.estimate if gr else None)} of {t.n:,} records · method {res.method} · "
             "sdcMicro global_risk_ER")
    for name, title in (("tau2", "Expected correct matches of sample uniques (tau2)"),
                        ("tau1", "Sample uniques that are population unique (tau1)"),
                        ("theta", "P(match to a sample unique is correct), theta")):
        x = m.get(name)
        if x is None or x.estimate is None:
            continue
        sub = f"method {res.method}"
        if x.lower is not None and x.upper is not None:
            sub = f"{x.level:.0%} interval {fmt(x.lower)} – {fmt(x.upper)} · " + sub
        card(name, fmt(x.estimate), title, sub)
    su = res.sample_uniques
    card("sample_uniques", fmt(su), "Sample uniques",
         f"records alone in their key combination (f = 1), {pct(su / t.n)} of the file"
         + ("; missing = wildcard" if t.wildcard is not None else ""))
    card("k3_violations", fmt(data["k_anonymity"][3]), "Records violating 3-anonymity",
         "records in key combinations with f < 3 (sample counts)")
    return cards


def _verdicts(data: dict, scrub) -> list[dict]:
    """The verdict banners: the headline method's on the file, and with a protected file
    first the protected file's (the one to release, and the one ``--fail-above`` gates),
    each naming its file. Each checks the limits of :func:`.verdict.checked_limits` (those
    given, else the method's default max global risk) and says whether it sets the exit
    code."""
    v = _verdict(data)
    prot = data.get("protected")
    if v is None or prot is None:
        return [] if v is None else [v]
    p = verdict(prot["result"], data["limits"])
    v["file"] = f"Original file {scrub(data['table'].source)}: "
    if p is None:
        return [v]
    if v["given"]:  # the exit code follows the protected file only
        v["source"] = ("limits checked: those given (--fail-above); the exit code follows the "
                       "protected file's verdict above, not this one")
    p.update(others_failing=[], file=f"Protected file {scrub(prot['source'])}: ")
    return [p, v]


def _verdict(data: dict) -> dict | None:
    """The headline method's verdict; it fails too when another method of the report fails
    (``--fail-above`` checks every method, so the exit code does)."""
    head = data["results"][data["primary"]]
    v = verdict(head, data["limits"])
    if v is None:
        return None
    others = []
    for lab, res in data["results"].items():
        if lab == data["primary"]:
            continue
        o = verdict(res, data["limits"])
        if o is not None and not o["passes"]:
            others.append(lab)
    v["others_failing"] = others
    v["headline_passes"] = v["passes"]
    v["headline_checked"] = any(c["passes"] is not None for c in v["checks"])
    v["passes"] = v["passes"] and not others
    return v


# --- sections ---------------------------------------------------------------------------------
def _file_section(data: dict) -> dict:
    t = data["table"]
    keys = ", ".join(f"{k} ({m})" for k, m in zip(t.keys, t.n_categories, strict=True))
    items = [("source", t.source), ("records n", fmt(t.n)),
             ("population N", f"{fmt(float(t.population_size))} "
                              f"({population_source(t.population_size_source)})"),
             ("sampling fraction n/N", fmt(t.n / t.population_size)),
             ("key variables (levels)", keys), ("cell space K", fmt(t.cell_space)),
             ("observed key combinations", fmt(t.key_cells)
              + (f" (and {fmt(t.missing_patterns)} with missing values)"
                 if t.missing_patterns else "")),
             # auto's page said 'yes (F_hat = sum of weights)' above its assumption 'survey
             # weights are not used'
             ("survey weights", "yes (nb's F_hat = sum of the weights in the cell; a method "
              "whose assumptions say 'survey weights are not used' ignores them, beyond N "
              "when N is their sum)" if t.weight_sums is not None else "no"),
             ("households", "yes" if t.household is not None else "no")]
    return section("file", "The file", "File", [kv(items)])


def _measure_rows(res) -> list[dict]:
    rows = []
    for name, m in res.measures.items():
        interval = "–"
        if m.lower is not None and m.upper is not None:
            interval = f"{fmt(m.lower)} – {fmt(m.upper)}"
        rows.append({"measure": MEASURE_LABELS.get(name, name), "estimate": m.estimate,
                     "interval": interval,
                     "level": f"{m.level:.0%}" if m.level else "–",
                     "kind": m.interval or "–", "description": m.description})
    return rows


def _thresholds(res, scrub) -> list[tuple[str, str]]:
    out = []
    for k, v in res.thresholds.items():
        if k == "record_risk_threshold" and v is None:
            v = "none needed (target already met)"
        elif k == "record_risk_threshold" and not v:
            v = "0: no threshold among the record risks reaches the target"
        elif isinstance(v, list | tuple):
            v = ", ".join(str(x) for x in v)
        elif k == "ci_level" and isinstance(v, float):
            v = f"{v:.0%}"
        out.append((label(k), scrub(fmt(v) if isinstance(v, float) else v)))
    return out


def _assumption_blocks(label_: str, res, data: dict, scrub) -> list:
    groups = data["assumption_groups"].get(label_)
    if not groups:
        return [h3("Assumptions"), bullets([scrub(a) for a in res.assumptions])] \
            if res.assumptions else []
    out = [h3("Assumptions, by model")]
    for g in groups:
        out += [h4(g["title"]), bullets([scrub(a) for a in g["assumptions"]])]
    return out


def _measures_section(data: dict, scrub) -> dict:
    parts = [para(f"{lab}: failed, not shown: {scrub(why)}")
             for lab, why in data.get("failed", {}).items()]
    for i, (lab, res) in enumerate(data["results"].items()):
        body = [method(method_line(res)),
                table([("measure", "measure"), ("estimate", "estimate", "fmt"),
                       ("interval", "interval"), ("level", "level"),
                       ("kind", "interval kind")], _measure_rows(res))]
        reason = res.fitted.get("reason")
        if isinstance(reason, str) and reason:
            body += [h3("Why this method"), para(scrub(reason), "plain")]
        body += _assumption_blocks(lab, res, data, scrub)
        body += [h3("Thresholds"), kv(_thresholds(res, scrub))]
        law = res.fitted.get("predictive_law")
        if law:
            body.append(para(f"Predictive law of the unseen count F − f: {scrub(law)}"))
        if i == 0:
            parts += [h3(lab), *body]
        else:
            parts.append(details(f"{lab}: measures, assumptions, thresholds", body))
    return section("measures", "Headline measures", "Measures", parts)


def _kanon_section(data: dict) -> dict:
    t = data["table"]
    ka = data["k_anonymity"]
    rows = [{"k": k, "records": ka[k], "share": pct(ka[k] / t.n),
             "cells": data["cells_below"][k]} for k in (2, 3, 5)]
    res = data["results"][data["primary"]]
    weighted = res.diagnostics.get("weighted_k_anonymity_violations")
    cols = [("k", "k", "str"), ("records", "records in cells with f < k", "fmt"),
            ("share", "share of the file", "str"),
            ("cells", "key combinations with f < k", "fmt")]
    if weighted:
        for r in rows:
            r["weighted"] = weighted.get(str(r["k"]))
        cols.append(("weighted", "records in cells with F_hat < k", "fmt"))
    truth = data["truth"]
    if truth is not None:
        for r in rows:
            r["population"] = truth["k_anonymity"].get(r["k"])
        cols.append(("population", "population records in cells with F < k", "fmt"))
    body = [table(cols, rows, caption="k-anonymity: a record violates k-anonymity when fewer "
                  "than k records share its key combination (sample counts f"
                  + ("; a missing key value matches every category, as sdcMicro's freqCalc"
                     if t.wildcard is not None else "") + ")")]
    rec = data.get("record_method")
    if rec is not None:
        r = data["results"][rec]
        m = r.measures
        items = []
        for name in ("expected_reidentifications", "global_risk",
                     "household_expected_reidentifications", "household_global_risk"):
            x = m.get(name)
            if x is not None and x.estimate is not None:
                v = pct(x.estimate) if "global_risk" in name else fmt(x.estimate)
                items.append((MEASURE_LABELS[name], v))
        thr = r.thresholds
        if "max_global_risk" in thr:
            value = thr.get("record_risk_threshold")
            items.append((f"mu-Argus/sdcMicro record-risk threshold for max global risk "
                          f"{fmt(thr['max_global_risk'])}",
                          "none needed (target already met)" if value is None
                          else "0: no threshold among the record risks reaches the target"
                          if not value else fmt(value)))
        hr = data["high_risk"]
        items.append(("records with higher risk than the main part (sdcMicro: risk > median "
                      "+ 3 MAD and > 0.1)", fmt(hr["count"])))
        if data["risk_threshold"] is not None:
            items.append((f"records with risk above {fmt(data['risk_threshold'])}",
                          fmt(data["above_threshold"])))
        body += [h3("sdcMicro global figures"),
                 method(method_line(r, "record risk as sdcMicro measure_risk: sum over "
                                       "records = ER")), kv(items)]
    return section("kanon", "k-anonymity and global risk", "k-anonymity", body)


def _distribution_section(data: dict) -> dict | None:
    rec = data.get("record_method")
    if rec is None:
        return None
    h = data["histogram"]
    res = data["results"][rec]
    markers = []
    drawn = []
    argus = data.get("argus_threshold")
    if argus:
        markers.append(charts.Marker(argus, f"mu-Argus threshold {fmt(argus)}"))
        drawn.append(f"the mu-Argus/sdcMicro threshold {fmt(argus)}: capping the record risks "
                     "at it brings the global risk down to its target")
    thr = data["risk_threshold"]
    if thr is not None and thr != argus:
        markers.append(charts.Marker(thr, f"high-risk threshold {fmt(thr)}",
                                     colour="#CC79A7"))
        drawn.append(f"the high-risk threshold {fmt(thr)}")
    cut = data["high_risk"]["cut"]
    above_one = cut > 1  # no record risk exceeds 1: drawn, it would only stretch the axis
    if not above_one:
        markers.append(charts.Marker(cut, f"sdcMicro high-risk cut {fmt(cut)}",
                                     colour="#009E73"))
        drawn.append(f"sdcMicro's high-risk cut max(median + 3 MAD, 0.1) = {fmt(cut)}")
    target = res.thresholds.get("max_global_risk")
    gr = res.measures.get("global_risk")
    if target is not None and gr is not None and gr.estimate is not None:
        markers.append(charts.Marker(float(target), f"max global risk {fmt(float(target))}",
                                     colour="#555555"))
        markers.append(charts.Marker(gr.estimate, f"mean risk {fmt(gr.estimate)}",
                                     colour="#E69F00"))
        drawn.append(f"the max global risk {fmt(float(target))}, the largest mean record risk "
                     f"allowed, and the mean record risk {fmt(gr.estimate)} (the global risk)")
    svg = charts.histogram(h["edges"], h["counts"], title="Distribution of record risk",
                           xlabel="record re-identification risk (log scale)",
                           ylabel="records", log_x=True, markers=markers)
    cap = (f"Records by re-identification risk, method {res.method}; {fmt(h['n'])} records"
           + (f", {fmt(h['zeros'])} with risk 0 not drawn" if h["zeros"] else "")
           + ". Dashed lines: " + "; ".join(drawn) + ".")
    if above_one:
        cap += (f" sdcMicro's high-risk cut max(median + 3 MAD, 0.1) = {fmt(cut)} is above 1, "
                "the largest risk a record can have: no record is high-risk by it (not drawn).")
    if argus is not None and not argus and target is not None:
        cap += (f" No mu-Argus threshold is drawn: no threshold among the record risks brings "
                f"the global risk down to {fmt(float(target))} (sdcMicro reports 0).")
    elif argus is None and target is not None:
        cap += (f" No mu-Argus threshold is drawn: the global risk already meets max global "
                f"risk {fmt(float(target))}.")
    return section("distribution", "Record-risk distribution", "Distribution",
                   [method(method_line(res)), figure(svg, cap)])


def _drivers_section(data: dict, scrub) -> dict | None:
    body: list = []
    var = data.get("variables")
    if var is not None and len(var) > 1:
        base = var.iloc[0]
        rows = var.to_dict("records")
        rows[0]["dropped"] = "none (all keys)"
        body.append(h3("Per key variable: leave one key out"))
        body.append(method(f"Method: {method_title(base['method'])} · each key dropped in "
                           "turn, cells merged, the method fitted again"
                           + (f" · {data['variables_note']}" if data.get("variables_note")
                              else "")))
        body.append(table(
            [("dropped", "key dropped"), ("sample_uniques", "sample uniques", "fmt"),
             ("su_reduction", "fewer SU", "fmt"),
             ("records_below_3", "records with f < 3", "fmt"),
             ("expected_reidentifications", "expected re-identifications", "fmt"),
             ("er_reduction_pct", "ER reduction", "pct1"), ("tau2", "tau2", "fmt")], rows,
            row_class=lambda r: "base" if r["dropped"] == "none (all keys)" else ""))
        sub = var.iloc[1:]
        if np.isfinite(sub["er_reduction_pct"]).all():
            order = sub.sort_values("er_reduction_pct", ascending=False)
            svg = charts.hbars(list(order["dropped"]), list(order["er_reduction_pct"]),
                               title="Reduction of expected re-identifications by dropping "
                               "each key", xlabel="% reduction of expected re-identifications "
                               f"(method {base['method']})", value_format="{:.1f}%")
            body.append(figure(svg, "The keys whose removal lowers the risk most drive it; "
                               "reductions of different keys do not add up."))
    body += suda_part(data)
    cats = data.get("categories")
    if cats is not None and len(cats):
        meth = data.get("categories_method")
        shown = cats.head(data["top"]).to_dict("records")
        cols = [("key", "key"), ("category", "category"), ("records", "records", "fmt"),
                ("file_share", "share of file", "pct"),
                ("sample_uniques", "sample-unique records", "fmt"),
                ("su_share", "share of SU", "pct")]
        if meth is not None:
            if "above" in cats:
                cols += [("above", f"records with risk > {fmt(data['risk_threshold'])}",
                          "fmt"), ("above_share", "share of them", "pct")]
            cols += [("risk_share", "share of ER", "pct"),
                     ("risk_ratio", "risk ratio", "ratio")]
        else:
            cols += [("risk_ratio", "SU ratio", "ratio")]
        for r in shown:  # a category is a label, even when it looks like a number
            r["category"] = "missing" if r["category"] is None else str(r["category"])
        body.append(h3("Per category"))
        how = (f"Method: {method_title(meth)} · share of ER = expected re-identifications "
               "among the category's records / all" if meth else
               "sample-unique shares (no record risk available)")
        body.append(method(how))
        hidden = data["categories_hidden"]
        cap = (f"The {len(shown)} categories most over-represented among the risky records "
               "(ratio = share of the risk / share of the file; > 1: over-represented).")
        if data["kind"] == "external":
            cap += (f" Categories with fewer than {data['min_count']} records are not listed:"
                    f" {hidden['categories']} such categories, {hidden['records']} records, "
                    f"{hidden['sample_uniques']} sample-unique records.")
        body.append(table(cols, shown, caption=cap))
    if not body:
        return None
    return section("drivers", "What drives the risk", "Drivers", body)


def _cells_section(data: dict) -> dict | None:
    cells = data.get("riskiest")
    if cells is None:
        return None
    res = data["results"][data["record_method"]]
    t = data["table"]
    internal = data["kind"] == "internal"
    cols: list[tuple] = [("rank", "rank", "str")]
    if internal:
        cols += [(k, k) for k in t.keys]
    cols.append(("f", "f (records)", "fmt"))
    if "F_hat" in cells:
        cols.append(("F_hat", "F_hat (sum of weights)", "fmt"))
    if "F" in cells:
        cols.append(("F", "F (population)", "fmt"))
    cols.append(("risk", "risk per record", "fmt"))
    if "p_unique" in cells:
        cols.append(("p_unique", "P(F = 1 | f)", "fmt"))
    cols += [("expected_reidentifications", "f × risk", "fmt"),
             ("er_share", "share of ER", "pct")]
    rows = cells.to_dict("records")
    if internal:
        for r in rows:
            for k in t.keys:
                r[k] = "missing" if r[k] is None else str(r[k])
        note = para("Internal report: the key values of these combinations are listed. Do "
                    "not release this page.", "warn")
    else:
        note = para("External report: key combinations are shown by their counts only, "
                    "never by their values (use the internal report for the values).")
    return section("cells", "Riskiest key combinations", "Key combinations", [
        method(method_line(res)), note,
        table(cols, rows, caption=f"The {len(rows)} key combinations with the highest risk "
              "per record (ties: smaller f first)")])


_COMPARE = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta", "expected_reidentifications",
            "global_risk")


def _comparison_section(data: dict) -> dict | None:
    results = data["results"]
    truth = data["truth"]
    if len(results) + len(data.get("failed", {})) < 2 and truth is None:
        return None
    rows = []
    if truth is not None:
        rows.append({"method": "truth (population)", **{k: truth["measures"].get(k)
                                                        for k in _COMPARE}})
    for lab, res in results.items():
        row: dict[str, Any] = {"method": lab}
        for k in _COMPARE:
            m = res.measures.get(k)
            row[k] = None if m is None else m.estimate
            if m is not None and m.lower is not None and m.upper is not None:
                row[k + "_ci"] = f"{fmt(m.lower)} – {fmt(m.upper)}"
        row["seconds"] = res.diagnostics.get("seconds")
        if truth is not None:
            row["auc"] = truth["methods"][lab]["auc"]
        rows.append(row)
    rows += [{"method": f"{lab} (failed)"} for lab in data.get("failed", {})]
    cols: list[tuple] = [
        ("method", "method"), ("tau1", "tau1", "fmt"), ("tau1_ci", "interval"),
        ("tau2", "tau2", "fmt"), ("tau2_ci", "interval"), ("p_pu", "P(PU)", "fmt"),
        ("p_pu_given_su", "P(PU|SU)", "fmt"), ("theta", "theta", "fmt"),
        ("expected_reidentifications", "ER", "fmt"), ("global_risk", "global risk", "pct")]
    if truth is not None:
        cols.append(("auc", "AUC (PU among SU)", "fmt"))
    cols.append(("seconds", "seconds", "seconds"))
    for r in rows:
        for c in cols:
            r.setdefault(c[0], None)
    title = "Comparison of methods" if len(results) > 1 else "Estimates against the truth"
    cap = ("Point estimates and intervals of every method on the same file"
           + ("; first row: the true values from the population" if truth else "")
           + ". Each method's assumptions are listed under Headline measures; the headline "
           f"method ({data['primary']}) is the one the other sections use.")
    return section("comparison", title, "Comparison", [table(
        cols, rows, caption=cap,
        row_class=lambda r: "base" if r["method"] == "truth (population)" else "")])


def _notes_section(data: dict, scrub) -> dict:
    res = data["results"][data["primary"]]
    prov = res.provenance
    items = [
        "tau1 and tau2 are totals over the sample uniques; expected re-identifications (ER) "
        "sums the record risk over all records (sdcMicro's convention) and global risk is "
        "ER / n.",
        "Intervals are the methods' own (their kind is named with each measure); a method "
        "without an interval shows a dash.",
    ]
    if data["kind"] == "external":
        items.append(f"Non-disclosure rule of this external report: no key combination is "
                     f"listed with its values, and no category with fewer than "
                     f"{data['min_count']} records is named.")
    items += [scrub(n) for n in data["notes"]]
    prov_items = [("sdcrisk", data["version"]), ("input fingerprint",
                                                prov.get("input_fingerprint", "–")),
                  ("seed", prov.get("seed")), ("python", prov.get("python", "–")),
                  ("numpy", prov.get("numpy", "–")), ("date", data["date"])]
    return section("notes", "Notes and provenance", "Notes",
                   [bullets(items), kv([(k, "–" if v is None else v) for k, v in prov_items])])


def page_context(data: dict) -> dict:
    """Everything ``report.html.j2`` shows, from the figures of :func:`collect._collect`."""
    scrub = Scrubber(data)
    t = data["table"]
    title = data["title"] or f"Disclosure risk report: {t.source}"
    sections = [
        _file_section(data),
        _measures_section(data, scrub),
        _kanon_section(data),
        _distribution_section(data),
        _drivers_section(data, scrub),
        _cells_section(data),
        protected_section(data, scrub),
        uniqueness_section(data),
        _comparison_section(data),
        truth_section(data),
        diagnostics_section(data, scrub),
        _notes_section(data, scrub),
    ]
    return {
        "title": title, "kind": data["kind"], "external": data["kind"] == "external",
        "min_count": data["min_count"], "version": data["version"],
        "subtitle": (f"{t.source} · {t.n:,} records · keys {', '.join(t.keys)} · "
                     f"{data['date']} · sdcrisk {data['version']}"),
        "headline": data["primary"],
        "verdicts": _verdicts(data, scrub), "cards": _cards(data),
        "sections": [s for s in sections if s is not None],
    }
