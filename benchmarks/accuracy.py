"""Accuracy scoreboard: every estimator against the true tau1/tau2 of real populations.

For each population in ../shared/data that has a ``ground_truth.csv`` (its 6- and 8-key sets
and its 1%, 3%, 5% Bernoulli samples drawn with ``numpy.random.default_rng(0)``), draw the
sample with :func:`sdcrisk.evaluate`, check that the truth equals the shared ground truth, run
every estimator and record estimate, relative error, seconds and ROC AUC.

Writes ``benchmarks/accuracy.csv`` and the section between the ACCURACY markers of
``benchmarks/RESULTS.md``.

Usage::

    python benchmarks/accuracy.py [--data ../shared/data] [--methods nb,poisson-gamma,...]
    python benchmarks/accuracy.py --methods graphical --csv benchmarks/accuracy-graphical.csv
    python benchmarks/accuracy.py --merge benchmarks/accuracy-graphical.csv

Rows are merged into the CSV: a (population, keys, fraction, method) row replaces the old one,
others stay, so one method can be re-run alone. The RESULTS.md section is rebuilt from the
whole default CSV.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import sdcrisk
from sdcrisk import Microdata
from sdcrisk.analyses.grid import evaluate_grid

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
BEGIN, END = "<!-- ACCURACY:BEGIN -->", "<!-- ACCURACY:END -->"

# estimator variants on the scoreboard: label -> (method, options)
VARIANTS = {
    "nb": ("nb", {}),
    "nb-sdcmicro": ("nb", {"mode": "sdcmicro"}),
    "poisson-gamma": ("poisson-gamma", {}),
    "skinner-elliot": ("skinner-elliot", {}),
    "loglinear-2way": ("loglinear", {"terms": "all-2-way"}),
    "loglinear-search": ("loglinear", {"terms": "search"}),
    "graphical": ("graphical", {}),
    "pitman-yor": ("pitman-yor", {}),
    "auto": ("auto", {}),
    # short CPU runs of the default sampler (marginal allocations with block moves)
    "hdp": ("hdp", {"chains": 2, "iterations": 400, "burn_in": 300, "thin": 5, "mc_draws": 200}),
}
# key spaces up to this many cells. Above 10^7 cells the log-linear fits use the factored
# engine (blocks on join supports, no dense table): the search on the 3.5-4.7e8-cell 8-key
# sets takes 17-49 CPU s and 0.5-1.4 GiB (benchmarks/bench_loglinear_large.py)
MAX_CELLS = {"loglinear-2way": 10**9, "loglinear-search": 10**9}


def populations(data_dir: Path):
    for folder in sorted(p for p in data_dir.iterdir() if (p / "ground_truth.csv").exists()):
        files = sorted(folder.glob("*.csv.gz"))
        if not files:
            continue
        with open(folder / "ground_truth.csv") as fh:
            rows = list(csv.DictReader(fh))
        yield folder.name, files[0], rows


def run(data_dir: Path, variants: dict, only: set[str] | None, *, workers: int = 1,
        scheduler: str | None = None, keysets_only: set[str] | None = None) -> list[dict]:
    """Every (population, key set, fraction, variant) is one unit of ``evaluate_grid``: on
    local processes (``workers``) or a Dask cluster (``scheduler``); same numbers either way."""
    out = []
    for name, path, rows in populations(data_dir):
        if only and name not in only:
            continue
        keysets = {}
        for r in rows:
            keysets.setdefault(r["keyset"], (r["keys"].split("+"), []))[1].append(r)
        for keyset, (keys, truth_rows) in keysets.items():
            if keysets_only and keyset not in keysets_only:
                continue
            pop = Microdata.from_source(path, keys, max_levels=None)
            runnable = {k: v for k, v in variants.items()
                        if pop.cell_space <= MAX_CELLS.get(k, pop.cell_space)}
            fracs = [float(gt["fraction"]) for gt in truth_rows]
            t0 = time.perf_counter()
            grid = evaluate_grid({name: pop if workers == 1 and scheduler is None else
                                  (path, keys, {"max_levels": None})}, fracs, runnable,
                                 seeds=(0,), workers=workers, scheduler=scheduler)
            for gt in truth_rows:
                frac = float(gt["fraction"])
                for m in (g for g in grid if g["fraction"] == frac):
                    truth = m["truth"]
                    assert int(truth["n"]) == int(gt["n"]), (name, keyset, frac)
                    assert int(truth["sample_uniques"]) == int(gt["SU"])
                    assert int(truth["tau1"]) == int(gt["tau1"])
                    assert math.isclose(truth["tau2"], float(gt["tau2"]), rel_tol=1e-9)
                    est, err = m["estimates"], m["relative_errors"]
                    out.append({
                        "population": name, "keyset": keyset, "fraction": frac,
                        "n": int(truth["n"]), "N": int(truth["population_size"]),
                        "K": m["K"], "SU": int(truth["sample_uniques"]),
                        "method": m["method"],
                        "tau1_true": truth["tau1"], "tau1": est["tau1"],
                        "tau1_rel_err": err["tau1"],
                        "tau2_true": truth["tau2"], "tau2": est["tau2"],
                        "tau2_rel_err": err["tau2"],
                        "theta_true": truth["theta"], "theta": est["theta"],
                        "theta_rel_err": err["theta"],
                        "auc": m["auc"], "seconds": m["seconds"],
                        "tau1_covered": (m.get("covered") or {}).get("tau1"),
                        "tau2_covered": (m.get("covered") or {}).get("tau2"),
                        **_mcmc_columns(m.get("mcmc")),
                    })
            print(f"{name:<24}{keyset:<5}{len(grid)} units {time.perf_counter() - t0:7.2f}s",
                  file=sys.stderr)
    return out


def _mcmc_columns(mcmc: dict | None) -> dict:
    """R-hat and bulk ESS of tau1 and the verdict for MCMC methods (empty otherwise)."""
    if not mcmc:
        return {"rhat_tau1": None, "ess_tau1": None, "converged": None}
    return {"rhat_tau1": mcmc["rhat_tau1"], "ess_tau1": mcmc["ess_tau1"],
            "converged": float(mcmc["converged"])}


def mcmc_lines(rows: list[dict]) -> list[str]:
    """One line per MCMC method: the spread of its convergence diagnostics over the cases."""
    out = []
    for method in dict.fromkeys(r["method"] for r in rows if r.get("rhat_tau1") is not None):
        sub = [r for r in rows if r["method"] == method and r.get("rhat_tau1") is not None]
        rh = sorted(r["rhat_tau1"] for r in sub)
        ess = sorted(r["ess_tau1"] for r in sub)
        ok = sum(1 for r in sub if r["converged"])
        out.append(f"- {method}: R-hat of tau1 {rh[0]:.3f}-{rh[-1]:.3f} (median "
                   f"{statistics.median(rh):.3f}), bulk ESS {ess[0]:.0f}-{ess[-1]:.0f} (median "
                   f"{statistics.median(ess):.0f}); convergence verdict passed in {ok}/{len(sub)}"
                   " cases (short runs: see VARIANTS).")
    return ["", "MCMC diagnostics of these runs:", "", *out] if out else []


def _f(x, fmt="{:.4g}"):
    return "–" if x is None else fmt.format(x)


def _covered(v) -> bool | None:
    """A coverage flag from a fresh row (bool) or the CSV ('True'/'False'/'')."""
    if v in (True, "True"):
        return True
    if v in (False, "False"):
        return False
    return None


def _coverage(sub: list[dict]) -> str:
    out = []
    for m in ("tau1", "tau2"):
        flags = [c for c in (_covered(r.get(f"{m}_covered")) for r in sub) if c is not None]
        out.append(f"{sum(flags)}/{len(flags)}" if flags else "–")
    return " / ".join(out)


def _pct(x):
    return "–" if x is None else f"{100 * x:+.1f}%"


def _abs(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def markdown(rows: list[dict], seconds: float) -> str:
    lines = [
        BEGIN,
        "## Accuracy scoreboard (`benchmarks/accuracy.py`)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python "
        f"{platform.python_version()}; sdcrisk {sdcrisk.__version__}; "
        f"date {datetime.date.today().isoformat()}; estimator time over all rows "
        f"{sum(r['seconds'] for r in rows):.0f} s.",
        "Bernoulli samples with `numpy.random.default_rng(0)` (the shared ground-truth design; "
        "the script asserts that n, sample uniques, tau1 and tau2 equal `ground_truth.csv`). "
        "Relative error = (estimate − truth)/truth. AUC: ROC area of P(F=1|f) for telling "
        "population uniques among the sample uniques (0.5 = no discrimination, as for every "
        "exchangeable model with equal weights).",
        "",
        "### Median |relative error| by method",
        "",
        "| method | tau1 | tau2 | theta | cases | tau2 under-estimated "
        "| 95% interval holds tau1 / tau2 |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in dict.fromkeys(r["method"] for r in rows):  # noqa: B007
        sub = [r for r in rows if r["method"] == method]

        def med(col, sub=sub):
            vals = [abs(r[col]) for r in sub if r[col] is not None]
            return None if not vals else statistics.median(vals)

        under = sum(1 for r in sub if r["tau2_rel_err"] is not None and r["tau2_rel_err"] < 0)
        n_t2 = sum(1 for r in sub if r["tau2_rel_err"] is not None)
        lines.append(f"| {method} | {_abs(med('tau1_rel_err'))} | {_abs(med('tau2_rel_err'))} "
                     f"| {_abs(med('theta_rel_err'))} | {len(sub)} | "
                     f"{under}/{n_t2 if n_t2 else '–'} | {_coverage(sub)} |")
    lines += mcmc_lines(rows)
    lines += auto_section(rows)
    lines += [
        "",
        "### Every case",
        "",
        "| population | keys | fraction | n | SU | method | tau1 true | tau1 | err | "
        "tau2 true | tau2 | err | theta true | theta | AUC | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['population']} | {r['keyset']} | {r['fraction']:g} | {r['n']} | {r['SU']} | "
            f"{r['method']} | {r['tau1_true']:.0f} | {_f(r['tau1'], '{:.1f}')} | "
            f"{_pct(r['tau1_rel_err'])} | {r['tau2_true']:.1f} | {_f(r['tau2'], '{:.1f}')} | "
            f"{_pct(r['tau2_rel_err'])} | {r['theta_true']:.4f} | {_f(r['theta'], '{:.4f}')} | "
            f"{_f(r['auc'], '{:.3f}')} | {r['seconds']:.3f} |")
    lines.append(END)
    return "\n".join(lines)


def _score(r: dict) -> float | None:
    """Mean of |relative error| of tau1 and tau2 (None if either is missing)."""
    if r["tau1_rel_err"] is None or r["tau2_rel_err"] is None:
        return None
    return (abs(r["tau1_rel_err"]) + abs(r["tau2_rel_err"])) / 2


def auto_section(rows: list[dict]) -> list[str]:
    """Issue 9 item 3: auto next to every single method and the oracle-best one, per case."""
    cases: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        cases.setdefault((r["population"], r["keyset"], r["fraction"]), {})[r["method"]] = r
    cases = {k: v for k, v in cases.items() if "auto" in v}
    if not cases:
        return []
    singles = [m for m in dict.fromkeys(r["method"] for r in rows)
               if m != "auto" and any(_score(r) is not None for r in rows if r["method"] == m)]
    lines = [
        "",
        "### auto against every single method",
        "",
        "Each cell: relative error of tau1 / tau2. Oracle = the single method with the "
        "smallest mean of |tau1 error| and |tau2 error| in that case (known only with the "
        "population). auto ≤ oracle: auto's mean |error| is at most the oracle's. Since "
        "issue 17 auto is the calibrated combination, learned on a corpus that includes "
        "these six populations (other samples and key sets): its figures here are **not** "
        "out-of-sample; the leave-one-population-out figures are in the calibration section "
        "below.",
        "",
        "| population | keys | fraction | auto | " + " | ".join(singles)
        + " | oracle | oracle error | auto ≤ oracle | auto s |",
        "|---|---|---|---|" + "---|" * len(singles) + "---|---|---|---|",
    ]
    wins, auto_abs = 0, {"tau1": [], "tau2": []}
    for (pop, keyset, frac), by in cases.items():
        a = by["auto"]
        scored = {m: _score(by[m]) for m in singles if m in by and _score(by[m]) is not None}
        oracle = min(scored, key=scored.get) if scored else None
        sa = _score(a)
        win = oracle is not None and sa is not None and sa <= scored[oracle] + 1e-12
        wins += win
        for m in ("tau1", "tau2"):
            if a[f"{m}_rel_err"] is not None:
                auto_abs[m].append(abs(a[f"{m}_rel_err"]))

        def cell(r):
            return "–" if r is None else f"{_pct(r['tau1_rel_err'])} / {_pct(r['tau2_rel_err'])}"

        lines.append(
            f"| {pop} | {keyset} | {frac:g} | **{cell(a)}** | "
            + " | ".join(cell(by.get(m)) for m in singles)
            + f" | {oracle or '–'} | {cell(by.get(oracle)) if oracle else '–'} | "
            f"{'yes' if win else 'no'} | {a['seconds']:.0f} |")
    n = len(cases)
    lines += [
        "",
        f"auto is at least as good as the oracle-best single method in {wins} of {n} cases "
        f"({100 * wins / n:.0f}%; target ≥ 70%). Median |relative error| of auto: tau1 "
        f"{_abs(statistics.median(auto_abs['tau1']) if auto_abs['tau1'] else None)}, tau2 "
        f"{_abs(statistics.median(auto_abs['tau2']) if auto_abs['tau2'] else None)} (target "
        f"≤ 10%); worst: tau1 {_abs(max(auto_abs['tau1'], default=None))}, tau2 "
        f"{_abs(max(auto_abs['tau2'], default=None))} (target ≤ 30%).",
    ]
    return lines


def write_results(section: str, path: Path) -> None:
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


ROW_KEY = ("population", "keyset", "fraction", "method")
NUMERIC = {"fraction": float, "n": int, "N": int, "K": int, "SU": int, "seconds": float}


def read_rows(path: Path) -> list[dict]:
    """Rows of an accuracy CSV with numbers restored (empty = None)."""
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k, v in r.items():
            if k in ("population", "keyset", "method"):
                continue
            if k.endswith("_covered"):
                r[k] = _covered(v)
                continue
            r[k] = None if v in ("", "None") else NUMERIC.get(k, float)(v)
    return rows


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` with rows of the same (population, keyset, fraction, method) replaced by ``new``."""
    fresh = {tuple(r[k] for k in ROW_KEY): r for r in new}
    kept = [r for r in old if tuple(r[k] for k in ROW_KEY) not in fresh]
    rows = kept + list(fresh.values())
    order = {m: i for i, m in enumerate(VARIANTS)}
    rows.sort(key=lambda r: (r["population"], r["keyset"], r["fraction"],
                             order.get(r["method"], len(order)), r["method"]))
    return rows


def write_rows(rows: list[dict], path: Path) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--methods", default=",".join(VARIANTS),
                    help=f"labels among {', '.join(VARIANTS)}")
    ap.add_argument("--populations", default=None, help="comma-separated folder names")
    ap.add_argument("--keysets", default=None, help="comma-separated key-set labels (KS6, ...)")
    ap.add_argument("--csv", type=Path, default=HERE / "accuracy.csv",
                    help="CSV the new rows are merged into (default benchmarks/accuracy.csv)")
    ap.add_argument("--merge", type=Path, nargs="+", default=None, metavar="CSV",
                    help="only merge these CSVs into --csv and rebuild RESULTS.md")
    ap.add_argument("--no-write", action="store_true", help="do not touch RESULTS.md")
    ap.add_argument("--workers", type=int, default=1,
                    help="local processes for the grid (default 1: in this process)")
    ap.add_argument("--scheduler", default=None, help="Dask scheduler address for the grid")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.merge:
        new = [r for path in args.merge for r in read_rows(path)]
    else:
        if not args.data.exists():
            print(f"no data at {args.data}", file=sys.stderr)
            return 2
        variants = {k: VARIANTS[k] for k in args.methods.split(",")}
        only = set(args.populations.split(",")) if args.populations else None
        with np.errstate(all="ignore"):
            new = run(args.data, variants, only, workers=args.workers,
                      scheduler=args.scheduler,
                      keysets_only=set(args.keysets.split(",")) if args.keysets else None)
    rows = merge_rows(read_rows(args.csv), new)
    write_rows(rows, args.csv)
    section = markdown(rows, time.perf_counter() - t0)
    if not args.no_write and args.csv == HERE / "accuracy.csv":
        write_results(section, HERE / "RESULTS.md")
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
