"""HTML rendering of the risk report (:func:`sdcrisk.report.build_report`).

Takes the figures collected by :mod:`sdcrisk.report.collect` and writes one self-contained page:
inline CSS, inline SVG charts (:mod:`sdcrisk.report.charts`), no scripts, no external
resources (a Content-Security-Policy forbids loading any). Every string that comes from the
data or a result is escaped. Key values of cells are written only in the internal report;
free text taken from diagnostics passes through :class:`_Scrubber` in the external one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from . import charts as plots
from .markup import (
    MEASURE_LABELS,
    e,
    figure,
    fmt,
    kv,
    method_line,
    method_title,
    pct,
    section,
    table,
)
from .sections import diagnostics_section, suda_part, truth_section, uniqueness_section

__all__ = ["render", "fmt"]

CSS = """
:root{--ink:#1d2433;--muted:#5b6475;--line:#d9dee7;--bg:#f6f7f9;--accent:#0b5cad;
--warn:#a3370b;--ok:#1d7a46;--card:#fff}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
sans-serif;color:var(--ink);background:var(--bg)}
header.top{background:#14213d;color:#fff;padding:22px 0 16px}
.wrap{max-width:1080px;margin:0 auto;padding:0 24px}
h1{font-size:24px;margin:0 0 4px;font-weight:650}
.subtitle{color:#c9d2e3;font-size:13px}
.banner{margin-top:12px;padding:8px 12px;border-radius:6px;font-size:13px}
.banner.external{background:#e6f2ea;color:#0f4a2a}
.banner.internal{background:#fde8e1;color:#7a1f04;font-weight:600}
nav.toc{font-size:13px;margin:14px 0 0}
nav.toc a{color:#c9d2e3;margin-right:14px;text-decoration:none}
nav.toc a:hover{text-decoration:underline}
main{padding:8px 0 40px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px;
margin:16px 0;overflow-x:auto}
h2{font-size:18px;margin:0 0 8px;font-weight:650}
h3{font-size:15px;margin:16px 0 6px;font-weight:650}
p{margin:6px 0}
.method{color:var(--muted);font-size:12.5px;margin:2px 0 10px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;
margin:14px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 14px}
.card .value{font-size:24px;font-weight:650;font-variant-numeric:tabular-nums}
.card .label{font-size:13px;font-weight:600;margin-top:2px}
.card .sub{font-size:12px;color:var(--muted);margin-top:4px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0 8px}
caption{caption-side:top;text-align:left;color:var(--muted);font-size:12.5px;padding:0 0 4px}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{text-align:left;background:#f0f2f6;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.base td{font-weight:600;background:#fafbfc}
tbody tr:hover td{background:#f7f9fc}
.note{color:var(--muted);font-size:12.5px}
.warn{color:var(--warn)}
.good{color:var(--ok)}
ul.assume{margin:4px 0 8px 18px;padding:0}
ul.assume li{margin:2px 0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0;
font-size:13px}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;font-variant-numeric:tabular-nums}
figure{margin:10px 0 14px}
figcaption{color:var(--muted);font-size:12.5px;margin-top:2px}
svg.chart{width:100%;max-width:720px;height:auto;display:block;font-family:inherit}
svg .plotbg{fill:#fbfcfd;stroke:none}
svg .grid{stroke:#e6e9ef;stroke-width:1}
svg .axis{stroke:#6b7385;stroke-width:1}
svg .tick{font-size:11px;fill:#4a5263}
svg .label{font-size:12px;fill:#2b3242}
svg .legend{font-size:11px;fill:#2b3242}
svg .marker{font-size:11px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:16px}
details{margin:6px 0}
summary{cursor:pointer;color:var(--accent);font-size:13px}
footer{color:var(--muted);font-size:12px;padding:0 0 30px}
@media print{body{background:#fff}header.top{background:#fff;color:#000}
.subtitle,nav.toc a{color:#333}section{break-inside:avoid;border:none;padding:8px 0}}
"""

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")


# --- formatting --------------------------------------------------------------------------------


class _Scrubber:
    """Withholds rare category labels from free text of an external report."""

    def __init__(self, data: dict):
        self.active = data["kind"] == "external"
        self.words: list[str] = []
        if not self.active:
            return
        table = data["table"]
        f = table.counts
        for j, levels in enumerate(table.levels):
            counts = np.bincount(table.cell_codes[:, j], weights=f, minlength=len(levels))
            for c in np.flatnonzero((counts > 0) & (counts < data["min_count"])):
                word = str(levels[c])
                if len(word) >= 2 and not re.fullmatch(r"[-+0-9.eE ]+", word):
                    self.words.append(word)
        self.words.sort(key=len, reverse=True)

    def __call__(self, text: Any) -> str:
        text = str(text)
        for w in self.words:
            if w in text:
                text = text.replace(w, "[withheld]")
        return text


# --- sections ------------------------------------------------------------------------------------
def _cards(data: dict) -> str:
    res = data["results"][data["primary"]]
    t = data["table"]
    m = res.measures
    cards = []

    def card(key, value, label, sub):
        cards.append(f'<div class="card"><div class="value" data-figure="{e(key)}">{e(value)}'
                     f'</div><div class="label">{e(label)}</div><div class="sub">{e(sub)}'
                     "</div></div>")

    er = m.get("expected_reidentifications")
    if er is not None and er.estimate is not None:
        gr = m.get("global_risk")
        card("expected_reidentifications", fmt(er.estimate), "Expected re-identifications",
             f"{pct(gr.estimate if gr else None)} of {t.n:,} records · method {res.method} · "
             "sdcMicro global_risk_ER")
    for name, label in (("tau2", "Expected correct matches of sample uniques (tau2)"),
                        ("tau1", "Sample uniques that are population unique (tau1)"),
                        ("theta", "P(match to a sample unique is correct), theta")):
        x = m.get(name)
        if x is None or x.estimate is None:
            continue
        sub = f"method {res.method}"
        if x.lower is not None and x.upper is not None:
            sub = (f"{x.level:.0%} interval {fmt(x.lower)} – {fmt(x.upper)} · " + sub)
        card(name, fmt(x.estimate), label, sub)
    card("sample_uniques", fmt(t.sample_uniques), "Sample uniques",
         f"records alone in their key combination (f = 1), {pct(t.sample_uniques / t.n)} "
         "of the file")
    card("k3_violations", fmt(data["k_anonymity"][3]), "Records violating 3-anonymity",
         "records in key combinations with f < 3 (sample counts)")
    return '<div class="cards">' + "".join(cards) + "</div>"


def _file_section(data: dict) -> str:
    t = data["table"]
    keys = ", ".join(f"{k} ({len(lv)})" for k, lv in zip(t.keys, t.levels, strict=True))
    items = [("source", t.source), ("records n", fmt(t.n)),
             ("population N", f"{fmt(float(t.population_size))} ({t.population_size_source})"),
             ("sampling fraction n/N", fmt(t.n / t.population_size)),
             ("key variables (levels)", keys), ("cell space K", fmt(t.cell_space)),
             ("observed key combinations", fmt(t.n_cells)),
             ("survey weights", "yes (F_hat = sum of weights)" if t.weight_sums is not None
              else "no"),
             ("households", "yes" if t.household is not None else "no")]
    return section("file", "The file", kv(items))


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


def _thresholds_text(res, scrub) -> list[tuple[str, str]]:
    out = []
    for k, v in res.thresholds.items():
        if k == "record_risk_threshold" and v is None:
            v = "none needed (target already met)"
        out.append((k, scrub(fmt(v) if isinstance(v, float) else v)))
    return out


def _measures_section(data: dict, scrub) -> str:
    parts = []
    for i, (label, res) in enumerate(data["results"].items()):
        body = [method_line(res)]
        body.append(table([("measure", "measure"), ("estimate", "estimate", fmt),
                           ("interval", "interval"), ("level", "level"),
                           ("kind", "interval kind")], _measure_rows(res)))
        if res.assumptions:
            body.append("<h3>Assumptions</h3><ul class=\"assume\">" + "".join(
                f"<li>{e(scrub(a))}</li>" for a in res.assumptions) + "</ul>")
        body.append("<h3>Thresholds</h3>" + kv(_thresholds_text(res, scrub)))
        law = res.fitted.get("predictive_law")
        if law:
            body.append(f'<p class="note">Predictive law of the unseen count F − f: '
                        f"{e(scrub(law))}</p>")
        content = "".join(body)
        if i == 0:
            parts.append(f"<h3>{e(label)}</h3>{content}")
        else:
            parts.append(f"<details><summary>{e(label)}: measures, assumptions, thresholds"
                         f"</summary>{content}</details>")
    return section("measures", "Headline measures", "".join(parts))


def _kanon_section(data: dict) -> str:
    t = data["table"]
    ka = data["k_anonymity"]
    rows = [{"k": k, "records": ka[k], "share": pct(ka[k] / t.n),
             "cells": data["cells_below"][k]} for k in (2, 3, 5)]
    res = data["results"][data["primary"]]
    weighted = res.diagnostics.get("weighted_k_anonymity_violations")
    cols = [("k", "k", str), ("records", "records in cells with f < k", fmt),
            ("share", "share of the file", str), ("cells", "key combinations with f < k", fmt)]
    if weighted:
        for r in rows:
            r["weighted"] = weighted.get(str(r["k"]))
        cols.append(("weighted", "records in cells with F_hat < k", fmt))
    truth = data["truth"]
    if truth is not None:
        for r in rows:
            r["population"] = truth["k_anonymity"].get(r["k"])
        cols.append(("population", "population records in cells with F < k", fmt))
    body = [table(cols, rows, caption="k-anonymity: a record violates k-anonymity when fewer "
                  "than k records share its key combination (sample counts f)")]
    items = []
    rec = data.get("record_method")
    if rec is not None:
        r = data["results"][rec]
        m = r.measures
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
                          else fmt(value)))
        hr = data["high_risk"]
        items.append(("records with higher risk than the main part (sdcMicro: risk > median "
                      "+ 3 MAD and > 0.1)", fmt(hr["count"])))
        if data["risk_threshold"] is not None:
            items.append((f"records with risk above {fmt(data['risk_threshold'])}",
                          fmt(data["above_threshold"])))
        body.append("<h3>sdcMicro global figures</h3>" + method_line(
            r, "record risk as sdcMicro measure_risk: sum over records = ER") + kv(items))
    return section("kanon", "k-anonymity and global risk", "".join(body))


def _distribution_section(data: dict) -> str:
    rec = data.get("record_method")
    if rec is None:
        return ""
    h = data["histogram"]
    res = data["results"][rec]
    markers = []
    if data.get("argus_threshold"):
        markers.append(plots.Marker(data["argus_threshold"], "mu-Argus threshold "
                                    f"{fmt(data['argus_threshold'])}"))
    if data["risk_threshold"] is not None and data["risk_threshold"] != data.get(
            "argus_threshold"):
        markers.append(plots.Marker(data["risk_threshold"],
                                    f"high-risk threshold {fmt(data['risk_threshold'])}",
                                    colour="#CC79A7"))
    markers.append(plots.Marker(data["high_risk"]["cut"], "sdcMicro high-risk cut "
                                f"{fmt(data['high_risk']['cut'])}", colour="#009E73"))
    svg = plots.histogram(h["edges"], h["counts"], title="Distribution of record risk",
                          xlabel="record re-identification risk (log scale)",
                          ylabel="records", log_x=True, markers=markers)
    cap = (f"Records by re-identification risk, method {res.method}; {fmt(h['n'])} records"
           + (f", {fmt(h['zeros'])} with risk 0 not drawn" if h["zeros"] else "")
           + ". Lines: the thresholds used (mu-Argus threshold for the target global risk "
           "when it is not met; sdcMicro's high-risk cut max(median + 3 MAD, 0.1)).")
    return section("distribution", "Record-risk distribution",
                   method_line(res) + figure(svg, cap))


def _drivers_section(data: dict, scrub) -> str:
    body = []
    var = data.get("variables")
    if var is not None and len(var) > 1:
        base = var.iloc[0]
        rows = var.to_dict("records")
        rows[0]["dropped"] = "none (all keys)"
        body.append("<h3>Per key variable: leave one key out</h3>")
        body.append(f'<p class="method">{e("Method: " + method_title(base["method"]))} · '
                    "each key dropped in turn, cells merged, the method fitted again</p>")
        body.append(table(
            [("dropped", "key dropped"), ("sample_uniques", "sample uniques", fmt),
             ("su_reduction", "fewer SU", fmt),
             ("records_below_3", "records with f < 3", fmt),
             ("expected_reidentifications", "expected re-identifications", fmt),
             ("er_reduction_pct", "ER reduction", lambda v: "–" if v != v else
              f"{v:.1f}%"),
             ("tau2", "tau2", fmt)], rows,
            row_class=lambda r: "base" if r["dropped"] == "none (all keys)" else ""))
        sub = var.iloc[1:]
        metric = "er_reduction_pct" if np.isfinite(sub["er_reduction_pct"]).all() else None
        if metric:
            order = sub.sort_values(metric, ascending=False)
            svg = plots.hbars(list(order["dropped"]), list(order[metric]),
                              title="Reduction of expected re-identifications by dropping "
                              "each key", xlabel="% reduction of expected re-identifications "
                              f"(method {base['method']})", value_format="{:.1f}%")
            body.append(figure(svg, "The keys whose removal lowers the risk most drive it; "
                               "reductions of different keys do not add up."))
    body.append(suda_part(data))
    cats = data.get("categories")
    if cats is not None and len(cats):
        method = data.get("categories_method")
        shown = cats.head(data["top"]).to_dict("records")
        cols = [("key", "key"), ("category", "category"), ("records", "records", fmt),
                ("file_share", "share of file", pct),
                ("sample_uniques", "sample-unique records", fmt),
                ("su_share", "share of SU", pct)]
        if method is not None:
            if "above" in cats:
                cols += [("above", f"records with risk > {fmt(data['risk_threshold'])}", fmt),
                         ("above_share", "share of them", pct)]
            cols += [("risk_share", "share of ER", pct),
                     ("risk_ratio", "risk ratio", lambda v: f"{v:.2f}")]
        else:
            cols += [("risk_ratio", "SU ratio", lambda v: f"{v:.2f}")]
        for r in shown:
            r["category"] = "missing" if r["category"] is None else r["category"]
        body.append("<h3>Per category</h3>")
        how = (f"Method: {method_title(method)} · share of ER = expected re-identifications "
               "among the category's records / all" if method else
               "sample-unique shares (no record risk available)")
        body.append(f'<p class="method">{e(how)}</p>')
        hidden = data["categories_hidden"]
        cap = (f"The {len(shown)} categories most over-represented among the risky records "
               "(ratio = share of the risk / share of the file; > 1: over-represented).")
        if data["kind"] == "external":
            cap += (f" Categories with fewer than {data['min_count']} records are not listed:"
                    f" {hidden['categories']} such categories, {hidden['records']} records, "
                    f"{hidden['sample_uniques']} sample-unique records.")
        body.append(table(cols, shown, caption=cap))
    if not any(body):
        return ""
    return section("drivers", "What drives the risk", "".join(body))


def _cells_section(data: dict) -> str:
    cells = data.get("riskiest")
    if cells is None:
        return ""
    res = data["results"][data["record_method"]]
    t = data["table"]
    internal = data["kind"] == "internal"
    cols = [("rank", "rank", str)]
    if internal:
        cols += [(k, k) for k in t.keys]
    cols.append(("f", "f (records)", fmt))
    if "F_hat" in cells:
        cols.append(("F_hat", "F_hat (sum of weights)", fmt))
    if "F" in cells:
        cols.append(("F", "F (population)", fmt))
    cols.append(("risk", "risk per record", fmt))
    if "p_unique" in cells:
        cols.append(("p_unique", "P(F = 1 | f)", fmt))
    cols += [("expected_reidentifications", "f × risk", fmt), ("er_share", "share of ER", pct)]
    rows = cells.to_dict("records")
    if internal:
        for r in rows:
            for k in t.keys:
                r[k] = "missing" if r[k] is None else r[k]
        note = ('<p class="warn">Internal report: the key values of these combinations are '
                "listed. Do not release this page.</p>")
    else:
        note = ('<p class="note">External report: key combinations are shown by their counts '
                "only, never by their values (use the internal report for the values).</p>")
    return section("cells", "Riskiest key combinations", method_line(res) + note + table(
        cols, rows, caption=f"The {len(rows)} key combinations with the highest risk per "
        "record (ties: smaller f first)"))


_COMPARE = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta", "expected_reidentifications",
            "global_risk")


def _comparison_section(data: dict) -> str:
    results = data["results"]
    truth = data["truth"]
    if len(results) < 2 and truth is None:
        return ""
    rows = []
    if truth is not None:
        rows.append({"method": "truth (population)", **{k: truth["measures"].get(k)
                                                        for k in _COMPARE}})
    for label, res in results.items():
        row: dict[str, Any] = {"method": label}
        for k in _COMPARE:
            m = res.measures.get(k)
            row[k] = None if m is None else m.estimate
            if m is not None and m.lower is not None and m.upper is not None:
                row[k + "_ci"] = f"{fmt(m.lower)} – {fmt(m.upper)}"
        row["seconds"] = res.diagnostics.get("seconds")
        if truth is not None:
            row["auc"] = truth["methods"][label]["auc"]
        rows.append(row)
    cols = [("method", "method"), ("tau1", "tau1", fmt), ("tau1_ci", "interval"),
            ("tau2", "tau2", fmt), ("tau2_ci", "interval"), ("p_pu", "P(PU)", fmt),
            ("p_pu_given_su", "P(PU|SU)", fmt), ("theta", "theta", fmt),
            ("expected_reidentifications", "ER", fmt), ("global_risk", "global risk", pct)]
    if truth is not None:
        cols.append(("auc", "AUC (PU among SU)", fmt))
    cols.append(("seconds", "seconds", lambda v: "–" if v is None else f"{v:.3g}"))
    for r in rows:
        for c in cols:
            r.setdefault(c[0], None)
    title = "Comparison of methods" if len(results) > 1 else "Estimates against the truth"
    cap = ("Point estimates and intervals of every method on the same file"
           + ("; first row: the true values from the population" if truth else "")
           + ". Each method's assumptions are listed under Headline measures.")
    return section("comparison", title, table(
        cols, rows, caption=cap,
        row_class=lambda r: "base" if r["method"] == "truth (population)" else ""))


def _notes_section(data: dict, scrub) -> str:
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
    return section("notes", "Notes and provenance",
                   '<ul class="assume">' + "".join(f"<li>{e(i)}</li>" for i in items)
                   + "</ul>" + kv([(k, "–" if v is None else v) for k, v in prov_items]))


def render(data: dict) -> str:
    """The whole page from the figures collected by :func:`sdcrisk.report._collect`."""
    scrub = _Scrubber(data)
    t = data["table"]
    title = data["title"] or f"Disclosure risk report: {t.source}"
    external = data["kind"] == "external"
    if external:
        banner = (f'<div class="banner external">External report (non-disclosive): no key '
                  f"combination is listed with its values; categories with fewer than "
                  f"{data['min_count']} records are not named.</div>")
    else:
        banner = ('<div class="banner internal">INTERNAL report: lists key values of risky '
                  "records. For the data owner only; do not release.</div>")
    sections = [
        ("file", _file_section(data)),
        ("measures", _measures_section(data, scrub)),
        ("kanon", _kanon_section(data)),
        ("distribution", _distribution_section(data)),
        ("drivers", _drivers_section(data, scrub)),
        ("cells", _cells_section(data)),
        ("uniqueness", uniqueness_section(data)),
        ("comparison", _comparison_section(data)),
        ("truth", truth_section(data)),
        ("diagnostics", diagnostics_section(data, scrub)),
        ("notes", _notes_section(data, scrub)),
    ]
    names = {"file": "File", "measures": "Measures", "kanon": "k-anonymity",
             "distribution": "Distribution", "drivers": "Drivers", "cells": "Key combinations",
             "uniqueness": "Uniqueness", "comparison": "Comparison", "truth": "Truth",
             "diagnostics": "Diagnostics", "notes": "Notes"}
    toc = "".join(f'<a href="#{k}">{names[k]}</a>' for k, s in sections if s)
    sub = (f"{e(t.source)} · {t.n:,} records · keys {e(', '.join(t.keys))} · "
           f"{e(data['date'])} · sdcrisk {e(data['version'])}")
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="sdcrisk {e(data["version"])}">'
        f'<meta name="report-kind" content="{data["kind"]}">'
        '<link rel="icon" href="data:,">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{e(title)}</h1>'
        f'<div class="subtitle">{sub}</div>{banner}<nav class="toc">{toc}</nav></div></header>'
        f'<main class="wrap">{_cards(data)}'
        + "".join(s for _, s in sections)
        + f'</main><footer class="wrap">Generated by sdcrisk {e(data["version"])}; methods '
        "and equations in the package documentation. Figures are estimates under the stated "
        "assumptions.</footer></body></html>"
    )
