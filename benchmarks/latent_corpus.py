"""The latent-class candidate on the calibration corpus (issue 17 item 2), beside pitman-yor,
the copula and the calibrated auto; and (``--stretch``) auto's leave-one-population-out
figures with and without the latent-class model's log(tau / SU) as a sixth candidate/feature.

Reads ``benchmarks/corpus.csv`` after ``corpus.py --latent`` and ``--merge-latent``, and
``benchmarks/calibration.csv`` (auto's LOPO estimates). Every variant of the pass
(``corpus.LATENT``) is reported, so the reader can account for the choice among them.
``--write`` puts the tables in the LATENT section of RESULTS.md (after the COPULA section).
Nothing here changes auto: the stretch only prints.

Usage::

    python benchmarks/latent_corpus.py [--write] [--stretch] [--timing]
"""

from __future__ import annotations

import argparse
import datetime
import platform
from pathlib import Path

import calibrate_auto as cal
import copula_corpus
import numpy as np
import pandas as pd
from corpus import LATENT, LATENT_EXTRA

from sdcrisk.analyses.validation import Candidate

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- LATENT:BEGIN -->", "<!-- LATENT:END -->"
VARIANTS = [Candidate.parse(s).label for s in (*LATENT, *LATENT_EXTRA)]
DEFAULT = VARIANTS[0]
OTHERS = ["pitman-yor", "graphical(prior_weight=50)", "copula", "auto"]


def load() -> pd.DataFrame:
    df = cal.load(HERE / "corpus.csv")
    if f"{DEFAULT}:tau1" not in df:
        raise SystemExit("corpus.csv has no latent-class columns: run corpus.py --latent, "
                         "then --merge-latent")
    auto = pd.read_csv(HERE / "calibration.csv")
    cols = [c for c in auto.columns if c.startswith("auto:")]
    return df.merge(auto[["case", *cols]], on="case", how="left")


def bias_lines(df: pd.DataFrame) -> list[str]:
    lines = ["| variant | tau1 above truth | median estimate / truth (tau1) | median classes | "
             "median seconds | max seconds | failures | median AUC |",
             "|---|---|---|---|---|---|---|---|"]
    t = df["true_tau1"].to_numpy(float)
    for lab in VARIANTS:
        e = df[f"{lab}:tau1"].to_numpy(float)
        ok = (t > 0) & np.isfinite(e)
        ratio = e[ok] / t[ok]
        auc = df[f"{lab}:auc"].dropna().to_numpy(float)
        lines.append(f"| {lab} | {np.mean(ratio > 1):.0%} | {np.median(ratio):.2f} | "
                     f"{df[f'{lab}:classes'].median():.0f} | "
                     f"{df[f'{lab}:seconds'].median():.2f} | {df[f'{lab}:seconds'].max():.1f} "
                     f"| {int(df[f'{lab}:tau1'].isna().sum())} | "
                     f"{np.median(auc) if auc.size else float('nan'):.3f} |")
    other = [c for c in ("graphical(prior_weight=50):auc", "copula:auc") if c in df]
    if other:
        both = df[[f"{DEFAULT}:auc", *other]].dropna()
        lines += ["", "ROC AUC of the record risk P(F = 1 | f = 1) for \"this sample unique is "
                  f"population unique\" on the {len(both)} cases where every one has it: "
                  f"{DEFAULT} median {both[f'{DEFAULT}:auc'].median():.3f}; "
                  + "; ".join(f"{c.split(':')[0]} median {both[c].median():.3f} "
                              f"({DEFAULT} higher in "
                              f"{np.mean(both[f'{DEFAULT}:auc'] > both[c]):.0%} of them)"
                              for c in other) + "."]
    return lines


def by_population(df: pd.DataFrame) -> list[str]:
    lines = ["| population | method | tau1 median | tau1 p90 | tau1 worst | tau1 coverage | "
             "tau1 width | tau2 median | tau2 p90 | tau2 worst | tau2 coverage | tau2 width | "
             "cases |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p, g in df.groupby("population"):
        for lab in (DEFAULT, "pitman-yor", "auto"):
            if f"{lab}:tau1" not in g or not g[f"{lab}:tau1"].notna().any():
                continue
            s1, s2 = cal.summary(g, lab, "tau1"), cal.summary(g, lab, "tau2")
            if not s1:
                continue
            lines.append(f"| {p} | {lab} | " + " | ".join(
                cal._pct(s[k]) for s in (s1, s2) for k in ("median", "p90", "worst",
                                                           "coverage", "width"))
                + f" | {s1['cases']} |")
    return lines


def stretch(df: pd.DataFrame) -> list[str]:
    """auto's LOPO with and without each latent-class variant as a sixth candidate (printed
    only; on the cases where every candidate of the largest set ran, so the rows compare
    like with like)."""
    base = cal.CANDIDATE_SETS["full"]
    df = cal.usable(df, [*base, *VARIANTS])
    lines = ["| auto candidates | tau1 median | tau1 p90 | tau1 worst | tau1 coverage | "
             "tau1 width | tau2 median | tau2 p90 | tau2 worst | tau2 coverage | tau2 width | "
             "cases |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    sets = [("today's five", base)] + [(f"+ {v}", [*base, v]) for v in VARIANTS]
    sets.append((f"{DEFAULT} in place of graphical(prior_weight=50)",
                 [c if c != "graphical(prior_weight=50)" else DEFAULT for c in base]))
    if "copula:tau1" in df:
        sets.append((f"+ copula + {DEFAULT}", [*base, "copula", DEFAULT]))
    runs = [(name, cands, False) for name, cands in sets]
    runs.append((f"+ {DEFAULT} + log of its K as a feature", [*base, DEFAULT], True))
    for name, cands, with_k in runs:
        res = _lopo_with_classes(df, cands) if with_k else cal.lopo(df, cands)
        s1, s2 = cal.summary(res, "auto", "tau1"), cal.summary(res, "auto", "tau2")
        lines.append(f"| {name} | " + " | ".join(
            cal._pct(s[k]) for s in (s1, s2) for k in ("median", "p90", "worst", "coverage",
                                                       "width")) + f" | {s1['cases']} |")
    return lines


def timing(n_cases: int = 3) -> list[str]:
    """The default fit's CPU and wall seconds on the corpus cases with the most observed
    cells (re-drawn here), and the process's peak RSS."""
    import os
    import resource
    import time

    import corpus

    from sdcrisk import LatentClassRisk, Microdata, tabulate

    df = cal.load(HERE / "corpus.csv").sort_values("n_cells", ascending=False)
    by_index = {c.index: c for c in corpus.cases()}
    lines = ["| case | population | keys | n | observed cells | classes | CPU s | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    for idx in df["case"].head(n_cases):
        case = by_index[int(idx)]
        sample, truth = corpus.draw(case)
        table = tabulate(Microdata.from_source(sample, list(case.keys),
                                               population_size=truth["N"]))
        c0, w0 = time.process_time(), time.perf_counter()
        res = LatentClassRisk().fit(table)
        lines.append(f"| {idx} | {case.population} | {len(case.keys)} | {table.n:,} | "
                     f"{table.n_cells:,} | {res.diagnostics['classes']} | "
                     f"{time.process_time() - c0:.1f} | {time.perf_counter() - w0:.1f} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += ["", f"Peak RSS of the process {rss:.0f} MiB; load average "
              f"{os.getloadavg()[0]:.2f} at the end (`latent_corpus.py --timing`)."]
    return lines


def _lopo_with_classes(df: pd.DataFrame, cands: list[str]) -> pd.DataFrame:
    """cal.lopo with log(K of the default latent-class fit) as one more feature."""
    return cal.lopo(df, cands, extra=lambda frame, measure: pd.DataFrame(
        {"log_latent_classes": np.log(frame[f"{DEFAULT}:classes"].to_numpy(float))}))


def write(lines: list[str]) -> None:
    text = (HERE / "RESULTS.md").read_text()
    cal.write_section(BEGIN, END, lines, after=copula_corpus.END if copula_corpus.END in text
                      else cal.END)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    ap.add_argument("--stretch", action="store_true",
                    help="also auto's LOPO with each latent-class variant added")
    ap.add_argument("--timing", action="store_true",
                    help="also time the default fit on the largest corpus cases")
    args = ap.parse_args(argv)
    df = load()
    VARIANTS[:] = [v for v in VARIANTS if f"{v}:tau1" in df]  # passes not merged yet: skipped
    lines = [
        "### The latent-class candidate on the corpus (`benchmarks/corpus.py --latent`, "
        "`benchmarks/latent_corpus.py`)",
        "",
        f"Machine: 2 cores (shared), {platform.platform()}, Python "
        f"{platform.python_version()}; date {datetime.date.today()}. `{DEFAULT}` = "
        "`LatentClassRisk()` with its defaults (K = 1..8 chosen by held-out likelihood on a "
        "fixed 20% of the records, smoothing 0.5, 4 starts, 16 Bayesian-bootstrap replicates "
        "for the interval). Every variant run on the corpus is listed: the first five in one "
        "pass (the default was set before it from 6 corpus cases and one synthetic "
        "population, so its figures are not free of selection either), max_classes=16 in a "
        "second pass after seeing the first (`corpus.py --latent --latent-extra`). auto's "
        "figures are its leave-one-population-out estimates from `calibration.csv`; the "
        "single methods have no fitted part. Columns as in the CALIBRATION table.",
        "",
        *cal.table_md(df, [*VARIANTS, *OTHERS]),
        "",
        *bias_lines(df),
        "",
        "By population:",
        "",
        *by_population(df),
    ]
    if args.stretch:
        lines += ["", "auto's calibrated combination refitted leave-one-population-out with and "
                  "without a latent-class variant's log(tau / SU) as a sixth feature "
                  "(`--stretch`; not shipped: auto_params.json and auto's candidates are "
                  "unchanged; on the cases where every candidate ran):", "", *stretch(df)]
    if args.timing:
        lines += ["", "Time of the default fit (all K tried, held-out criterion, 16 bootstrap "
                  "refits) on the three corpus cases with the most observed cells:", "",
                  *timing()]
    print("\n".join(lines))
    if args.write:
        write(lines)


if __name__ == "__main__":
    main()
