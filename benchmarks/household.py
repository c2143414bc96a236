"""Household-level keys (spec C.7) on the two populations with households: eusilcP and ghanaS.

For each population, household size and fraction: draw whole households (Bernoulli on household
ids, ``numpy.random.default_rng(0)``), build one record per household of that size (members
ordered by sex then age, as Longhurst & Vickers recommend; region as a household variable) for
population and sample, and compare estimators with the true household-level tau1/tau2.

Writes the section between the HOUSEHOLD markers of ``benchmarks/RESULTS.md``.

Usage::

    python benchmarks/household.py [--data ../shared/data] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import sdcrisk
from sdcrisk import (
    HouseholdBernoulli,
    LogLinearRisk,
    Microdata,
    NegativeBinomialRisk,
    PoissonGammaRisk,
    draw_sample,
    evaluate,
    household_microdata,
)

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
BEGIN, END = "<!-- HOUSEHOLD:BEGIN -->", "<!-- HOUSEHOLD:END -->"

# population folder -> (file, household id, sex, age, household variable)
POPULATIONS = {
    "eusilcP": ("eusilcP.csv.gz", "hid", "gender", "age", "region"),
    "ghanaS": ("ghanaS.csv.gz", "hhid", "sex", "age", "region"),
}
FRACTIONS = (0.01, 0.03, 0.05)
SIZES = (2,)
METHODS = {
    "nb": NegativeBinomialRisk(),
    "poisson-gamma": PoissonGammaRisk(),
    "loglinear-2way": LogLinearRisk(terms="all-2-way"),
    "loglinear-search": LogLinearRisk(terms="search"),
}


def run(data: Path) -> list[dict]:
    rows = []
    for name, (file, hid, sex, age, region) in POPULATIONS.items():
        path = data / name / file
        pop = Microdata.from_source(path, [sex, age, region], household=hid, max_levels=None)
        for size in SIZES:
            pop_h = household_microdata(pop, [sex, age], household_keys=[region], size=size,
                                        order=[sex, age])
            for frac in FRACTIONS:
                take = draw_sample(pop, HouseholdBernoulli(frac), seed=0)
                sample = pop.subset(take, population_size=pop.n)
                smp_h = household_microdata(sample, [sex, age], household_keys=[region],
                                            size=size, order=[sex, age],
                                            population_households=pop_h.n)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", sdcrisk.ConvergenceWarning)
                    ev = evaluate(pop_h, list(METHODS.values()), sample=smp_h)
                t = ev.truth
                for label, m in zip(METHODS, ev.methods.values(), strict=True):
                    rows.append({
                        "population": name, "size": size, "fraction": frac,
                        "households": pop_h.n, "n": smp_h.n, "K": pop_h.cell_space,
                        "SU": int(t["sample_uniques"]), "method": label,
                        "tau1_true": t["tau1"], "tau1": m.estimates["tau1"],
                        "tau1_err": m.relative_errors["tau1"],
                        "tau2_true": t["tau2"], "tau2": m.estimates["tau2"],
                        "tau2_err": m.relative_errors["tau2"], "auc": m.auc,
                        "seconds": m.seconds,
                    })
                print(f"{name} size {size} fraction {frac:g}: n={smp_h.n}", file=sys.stderr)
    return rows


def _pct(x):
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:+.0f}%"


def markdown(rows: list[dict]) -> str:
    lines = [
        BEGIN,
        "## Household-level keys (`benchmarks/household.py`)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}; sdcrisk "
        f"{sdcrisk.__version__}; date {datetime.date.today().isoformat()}.",
        "One record per household of the given size: region (household variable) and sex, age "
        "of each member, members ordered by sex then age (LV's recommendation). Whole "
        "households drawn by Bernoulli sampling of household ids (`default_rng(0)`); the "
        "truth is the household-level tau1/tau2 of the population's households of that size.",
        "",
        "| population | size | fraction | households N | n | K | SU | method | tau1 true | "
        "tau1 | err | tau2 true | tau2 | err | AUC | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        auc = "–" if r["auc"] is None else f"{r['auc']:.3f}"
        lines.append(
            f"| {r['population']} | {r['size']} | {r['fraction']:g} | {r['households']} | "
            f"{r['n']} | {r['K']:,} | {r['SU']} | {r['method']} | {r['tau1_true']:.0f} | "
            f"{r['tau1']:.1f} | {_pct(r['tau1_err'])} | {r['tau2_true']:.1f} | "
            f"{r['tau2']:.1f} | {_pct(r['tau2_err'])} | {auc} | {r['seconds']:.2f} |")
    lines.append(END)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"no data at {args.data}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        rows = run(args.data)
    section = markdown(rows)
    print(section)
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if not args.no_write:
        write_results_between(section)
    return 0


def write_results_between(section: str) -> None:
    path = HERE / "RESULTS.md"
    text = path.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
