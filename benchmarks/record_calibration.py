"""Are auto's record-level risks calibrated, record by record, on populations they were not
fitted on?

``auto`` (calibrated rule) reports graphical(prior_weight=50)'s per-cell risks P(F = 1 | f = 1)
and E[1/F | f] after the corpus-learned record map (``calibrate_auto.RecordMaps``; since
2026-11-25), held on the sample uniques to its combined tau1 and tau2
(``AutoRisk._calibrated_result``: ``clip(r' * tau_auto / sum r', 0, 1)``; before, the raw risks
were rescaled, ``clip(r * tau_auto / tau_g50, 0, 1)``). Here the map is the one fitted on the
other populations (leave-one-population-out, as the tau are). For every
corpus case (``benchmarks/corpus.py``) this script draws the sample, fits
graphical(prior_weight=50) as auto does, and keeps, for each sample-unique record, its raw
risks, the truth (its cell's population count F) and the case's leave-one-population-out
(LOPO) auto tau1/tau2 from ``benchmarks/calibration.csv`` (held within bounds and ordered as
``auto`` does), so that the rescaled risks are those auto would have reported had the case's
population not been in the calibration corpus. Then, pooled over the records of all cases and
per population: reliability tables by predicted-risk bin, Brier score (with its binned
decomposition) against constants, expected calibration error, the ROC AUC per case, and the
records a threshold picks.

Per-case results are cached in ``benchmarks/corpus/recordcal/`` (git-ignored): an interrupted
run resumes; ``--report`` only reads the cache. Cases are run in a strided order, so a run cut
short has scored a spread of populations, key sets and fractions.

Usage::

    nice -n 10 python benchmarks/record_calibration.py [--every K] [--time-limit S] [--report]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

CACHE = corpus.OUT / "recordcal"
SOURCE = "graphical:prior_weight=50"  # auto's record-risk source (RECORD_RISK_FROM)
BINS = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0 + 1e-12])
THRESHOLDS = (0.5, 0.8, 0.9)


# --- per case ----------------------------------------------------------------------------
def cache_path(case) -> Path:
    return CACHE / f"case-{case.index}.npz"


def run_case(case) -> dict:
    """Fit auto's record-risk source on the case; its risks and the truth of every sample
    unique (written to the cache)."""
    from sdcrisk import Microdata, tabulate
    from sdcrisk.analyses.validation import Candidate

    sample, truth, record_f = corpus.draw_records(case)
    table = tabulate(Microdata.from_source(sample, list(case.keys),
                                           population_size=truth["N"]))
    t0 = time.process_time()
    res, error = corpus.fit_or_error(Candidate.parse(SOURCE).estimator(), table)
    seconds = time.process_time() - t0
    out = {"case": case.index, "cpu_seconds": seconds, "error": error or ""}
    if res is not None:
        su_cells = table.counts == 1
        su = su_cells[table.record_cell]
        p1 = res.cell_risk("population_unique")
        r2 = res.cell_risk("reidentification")
        out.update(p1=p1[table.record_cell][su], r2=r2[table.record_cell][su],
                   big_f=record_f[su].astype(np.int64),
                   g50_tau1=res.measures["tau1"].estimate,
                   g50_tau2=res.measures["tau2"].estimate,
                   # what the rescaling assumes: the measures are the sums over the SU cells
                   sum_p1=float(p1[su_cells].sum()), sum_r2=float(r2[su_cells].sum()),
                   su=int(su_cells.sum()), n=table.n, N=table.population_size)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cache_path(case).with_suffix(".tmp.npz")
    np.savez(tmp, **out)
    tmp.replace(cache_path(case))
    return out


def _order(cs):
    """Strided order: every 8th case first (bit-reversed residues), so that a cut-off run
    covers the whole corpus thinly and ``--every 2/4/8`` sets complete early."""
    rank = {r: i for i, r in enumerate((0, 4, 2, 6, 1, 5, 3, 7))}
    return sorted(cs, key=lambda c: (rank[c.index % 8], c.index))


def run_all(selected, limit: float | None) -> None:
    todo = [c for c in _order(selected) if not cache_path(c).exists()]
    print(f"{len(selected)} cases selected, {len(todo)} to run", flush=True)
    start = time.time()
    for i, case in enumerate(todo):
        if limit is not None and time.time() - start > limit:
            print(f"time limit reached; {len(todo) - i} cases left (re-run to resume)")
            break
        t0 = time.time()
        out = run_case(case)
        print(f"case {case.index} {case.population} {case.keyset} {case.design} "
              f"{case.fraction}: SU {out.get('su', '-')}, {time.time() - t0:.1f}s"
              + (f" FAILED {out['error']}" if out["error"] else ""), flush=True)


# --- auto's LOPO tau1/tau2 and the rescaling ---------------------------------------------
def auto_taus(row, su: float, n: float, big_n: float) -> tuple[float, float]:
    """auto's LOPO tau1/tau2 as ``_within_bounds`` and ``_ordered`` would hold them."""
    floor = max(0.0, su - math.ceil(big_n - n - 1e-9))
    t1, t2 = (min(max(float(row[f"auto:{m}"]), floor), su) for m in ("tau1", "tau2"))
    if t1 > t2:
        t1 = t2 = (t1 + t2) / 2
    return t1, t2


def load(selected) -> tuple[pd.DataFrame, list[str]]:
    """One row per sample-unique record of every cached case, with raw and rescaled risks."""
    cal = pd.read_csv(HERE / "calibration.csv").set_index("case")
    frames, notes = [], []
    for case in selected:
        path = cache_path(case)
        if not path.exists():
            continue
        z = dict(np.load(path, allow_pickle=False))
        if str(z["error"]):
            notes.append(f"case {case.index} ({case.population} {case.keyset} {case.design} "
                         f"{case.fraction}): graphical(prior_weight=50) failed "
                         f"({str(z['error'])[:80]}); auto reports pitman-yor's constant "
                         "risks there, left out")
            continue
        su = float(z["su"])
        if su == 0 or case.index not in cal.index:
            continue
        t1, t2 = auto_taus(cal.loc[case.index], su, float(z["n"]), float(z["N"]))
        g1 = float(z["g50_tau1"])
        p1, r2 = z["p1"].astype(float), z["r2"].astype(float)
        big_f = z["big_f"]
        frames.append(pd.DataFrame({
            "case": case.index, "population": case.population, "design": case.design,
            "fraction": case.fraction, "su": su,
            "p1": p1, "r2": r2,
            "t1_auto": t1, "t2_auto": t2,
            "log_fraction": math.log(float(z["n"]) / float(z["N"])),
            "const_auto": t1 / su, "const_auto2": t2 / su,
            "pu": (big_f == 1).astype(float), "inv_f": 1.0 / big_f, "big_f": big_f,
            "sum_gap": abs(float(z["sum_p1"]) - g1) / max(g1, 1e-12),
        }))
    df = pd.concat(frames, ignore_index=True)
    _auto_risks(df)
    # the oracle constant: each case's true tau1 / SU (tau2 / SU) for every sample unique
    g = df.groupby("case")
    df["const_true"] = g["pu"].transform("mean")
    df["const_true2"] = g["inv_f"].transform("mean")
    return df, notes


def _auto_risks(df: pd.DataFrame) -> None:
    """auto's record risks (in place: ``p1_auto``, ``r2_auto``): g50's risks after the
    record map fitted on the **other** populations (``calibrate_auto.RecordMaps``, as
    ``AutoRisk`` maps them with the shipped one), held to the case's LOPO tau1 / tau2."""
    import calibrate_auto as ca

    recs = df.assign(pu=(df["big_f"] == 1).astype(float), inv_f=1.0 / df["big_f"])
    maps = ca.RecordMaps(recs)
    for measure, out, tau in (("tau1", "p1_auto", "t1_auto"), ("tau2", "r2_auto", "t2_auto")):
        mapped = np.empty(len(df))
        for pop, idx in df.groupby("population").indices.items():
            mapped[idx] = ca.mapped_risks(recs.iloc[idx], maps.without(pop), measure)
        total = pd.Series(mapped).groupby(df["case"].to_numpy()).transform("sum").to_numpy()
        df[out] = np.clip(mapped * df[tau].to_numpy(float) / np.maximum(total, 1e-300), 0, 1)


# --- scores ------------------------------------------------------------------------------
def reliability(pred: np.ndarray, obs: np.ndarray) -> pd.DataFrame:
    b = np.clip(np.searchsorted(BINS, pred, side="right") - 1, 0, len(BINS) - 2)
    rows = []
    for i in range(len(BINS) - 1):
        m = b == i
        if not m.any():
            continue
        rows.append({"bin": f"{BINS[i]:.1f}-{min(BINS[i + 1], 1):.1f}", "records": int(m.sum()),
                     "mean_pred": pred[m].mean(), "observed": obs[m].mean()})
    return pd.DataFrame(rows)


def scores(pred: np.ndarray, obs: np.ndarray) -> dict:
    """Brier, its binned Murphy decomposition and the expected calibration error."""
    rel = reliability(pred, obs)
    w = rel["records"].to_numpy() / len(pred)
    obar = obs.mean()
    return {"brier": float(np.mean((pred - obs) ** 2)),
            "reliability": float(np.sum(w * (rel["mean_pred"] - rel["observed"]) ** 2)),
            "resolution": float(np.sum(w * (rel["observed"] - obar) ** 2)),
            "uncertainty": float(np.var(obs)),  # obar (1 - obar) for a 0/1 truth
            "ece": float(np.sum(w * np.abs(rel["mean_pred"] - rel["observed"]))),
            "mean_pred": float(pred.mean()), "observed": float(obar)}


def auc_median(df: pd.DataFrame, col: str) -> tuple[float, int]:
    from sdcrisk import roc_auc

    aucs = []
    for _, g in df.groupby("case"):
        a = roc_auc(g[col].to_numpy(), g["pu"].to_numpy() == 1)
        if a is not None and np.isfinite(a):
            aucs.append(a)
    return float(np.median(aucs)), len(aucs)


def _f(x, d=3) -> str:
    return f"{x:.{d}f}"


def reliability_md(df: pd.DataFrame, cols: list[tuple[str, str]], obs: str) -> list[str]:
    """One table, a column group per predictor: records, mean predicted, observed, ratio."""
    tabs = {label: reliability(df[c].to_numpy(), df[obs].to_numpy()).set_index("bin")
            for label, c in cols}
    bins = sorted(set().union(*(t.index for t in tabs.values())))
    head = "| predicted bin | " + " | ".join(
        f"{lab}: records | mean predicted | observed | obs / pred" for lab in tabs) + " |"
    lines = [head, "|---|" + "---:|" * 4 * len(tabs)]
    for b in bins:
        cells = []
        for t in tabs.values():
            if b in t.index:
                r = t.loc[b]
                cells += [f"{int(r['records']):,}", _f(r["mean_pred"]), _f(r["observed"]),
                          _f(r["observed"] / r["mean_pred"], 2) if r["mean_pred"] > 0 else "-"]
            else:
                cells += ["0", "", "", ""]
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    return lines


def scores_md(df: pd.DataFrame, preds: list[tuple[str, str]], obs: str) -> list[str]:
    lines = ["| predictor | mean predicted | observed | Brier | reliability (miscalibration) "
             "| resolution | uncertainty | ECE |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, c in preds:
        s = scores(df[c].to_numpy(), df[obs].to_numpy())
        lines.append(f"| {label} | {_f(s['mean_pred'])} | {_f(s['observed'])} | "
                     f"{_f(s['brier'], 4)} | {_f(s['reliability'], 4)} | "
                     f"{_f(s['resolution'], 4)} | {_f(s['uncertainty'], 4)} | "
                     f"{_f(s['ece'], 3)} |")
    return lines


def threshold_md(df: pd.DataFrame) -> list[str]:
    lines = ["| risk | threshold | records at or above | share of SU | mean predicted | "
             "observed PU share | PU caught (recall) |", "|---|---:|---:|---:|---:|---:|---:|"]
    total_pu = df["pu"].sum()
    for label, c in (("g50 raw", "p1"), ("auto (LOPO mapped)", "p1_auto")):
        for t in THRESHOLDS:
            m = df[c].to_numpy() >= t
            if not m.any():
                lines.append(f"| {label} | {t} | 0 | 0% | | | 0% |")
                continue
            lines.append(f"| {label} | {t} | {int(m.sum()):,} | {m.mean():.1%} | "
                         f"{_f(df.loc[m, c].mean())} | {_f(df.loc[m, 'pu'].mean())} | "
                         f"{df.loc[m, 'pu'].sum() / total_pu:.1%} |")
    return lines


def per_population_md(df: pd.DataFrame) -> list[str]:
    lines = ["| left-out population | cases | SU records | observed PU share | g50 mean "
             "predicted | auto mean predicted | Brier g50 | Brier auto | Brier constant "
             "(auto tau1/SU) | Brier constant (true tau1/SU) | ECE g50 | ECE auto | AUC median "
             "g50 | auto >= 0.5: mean predicted / observed PU share (records) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    groups = [*df.groupby("population"), ("all", df)]
    for pop, g in groups:
        sg, sa = scores(g["p1"].to_numpy(), g["pu"].to_numpy()), \
            scores(g["p1_auto"].to_numpy(), g["pu"].to_numpy())
        bc = np.mean((g["const_auto"] - g["pu"]) ** 2)
        bt = np.mean((g["const_true"] - g["pu"]) ** 2)
        auc, _ = auc_median(g, "p1")
        m = g["p1_auto"] >= 0.5
        at = (f"{g.loc[m, 'p1_auto'].mean():.3f} / {g.loc[m, 'pu'].mean():.3f} "
              f"({int(m.sum()):,})" if m.any() else "- (0)")
        lines.append(f"| {pop} | {g['case'].nunique()} | {len(g):,} | {_f(sg['observed'])} | "
                     f"{_f(sg['mean_pred'])} | {_f(sa['mean_pred'])} | {_f(sg['brier'], 4)} | "
                     f"{_f(sa['brier'], 4)} | {_f(bc, 4)} | {_f(bt, 4)} | {_f(sg['ece'])} | "
                     f"{_f(sa['ece'])} | {_f(auc)} | {at} |")
    return lines


def case_weighted_md(df: pd.DataFrame) -> list[str]:
    """Per-case calibration-in-the-large and ECE, median over cases (every case counts once,
    whatever its number of sample uniques)."""
    rows = []
    for _, g in df.groupby("case"):
        o = g["pu"].to_numpy()
        rows.append({"obs": o.mean(), "g": g["p1"].mean(), "a": g["p1_auto"].mean(),
                     "ece_g": scores(g["p1"].to_numpy(), o)["ece"],
                     "ece_a": scores(g["p1_auto"].to_numpy(), o)["ece"]})
    r = pd.DataFrame(rows)
    return [f"Per case (each case once): median ECE g50 {_f(r['ece_g'].median())}, auto "
            f"{_f(r['ece_a'].median())}; median ratio mean predicted / observed PU share "
            f"g50 {_f((r['g'] / r['obs']).replace(np.inf, np.nan).median(), 2)}, auto "
            f"{_f((r['a'] / r['obs']).replace(np.inf, np.nan).median(), 2)} "
            f"({len(r)} cases)."]


COARSE = (0.0, 0.2, 0.5, 0.8, 1.0 + 1e-12)


def coarse_md(df: pd.DataFrame, by: str, col: str) -> list[str]:
    """Observed share / mean predicted of ``col`` in coarse bins, per value of ``by``."""
    names = [f"{COARSE[i]:.1f}-{min(COARSE[i + 1], 1):.1f}" for i in range(len(COARSE) - 1)]
    lines = [f"| {by} | cases | " + " | ".join(f"{b}: records, obs / pred" for b in names)
             + " |", "|---|---:|" + "---:|" * len(names)]
    for key, g in [*df.groupby(by), ("all", df)]:
        b = np.clip(np.searchsorted(COARSE, g[col].to_numpy(), side="right") - 1, 0,
                    len(names) - 1)
        cells = []
        for i in range(len(names)):
            m = b == i
            if not m.any():
                cells.append("0")
                continue
            ratio = g["pu"].to_numpy()[m].mean() / g[col].to_numpy()[m].mean()
            cells.append(f"{int(m.sum()):,}, {ratio:.2f}")
        lines.append(f"| {key} | {g['case'].nunique()} | " + " | ".join(cells) + " |")
    return lines


# --- what a recalibration would give (exploration; nothing here is shipped) ----------------
def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def fit_platt(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted logistic regression of y on [1, logit p] (Newton)."""
    x = np.column_stack([np.ones(len(p)), _logit(p)])
    beta = np.array([0.0, 1.0])
    for _ in range(50):
        q = 1 / (1 + np.exp(-(x @ beta)))
        g = x.T @ (w * (y - q))
        h = (x * (w * q * (1 - q))[:, None]).T @ x
        step = np.linalg.solve(h, g)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


def fit_isotonic(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted isotonic (pool-adjacent-violators) fit of y on p: knots (x, fitted y)."""
    o = np.argsort(p, kind="stable")
    xs, ys, ws = p[o], y[o], w[o]
    vals, wts, xmax = [], [], []
    for xv, yv, wv in zip(xs, ys, ws, strict=True):
        vals.append(yv)
        wts.append(wv)
        xmax.append(xv)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            v, wt = vals.pop(), wts.pop()
            xmax.pop()
            vals[-1] = (vals[-1] * wts[-1] + v * wt) / (wts[-1] + wt)
            wts[-1] += wt
            xmax[-1] = xv
    return np.array(xmax), np.array(vals)


def lopo_recalibrated(df: pd.DataFrame, col: str) -> pd.DataFrame:
    """``col`` recalibrated per held-out population by a monotone map fitted on the records
    of the other populations (each population weighted equally): Platt (logistic on the
    logit) and isotonic."""
    out = df.copy()
    out["platt"] = np.nan
    out["isotonic"] = np.nan
    pops = df["population"].to_numpy()
    w = 1.0 / df.groupby("population")["pu"].transform("size").to_numpy()
    p, y = df[col].to_numpy(), df["pu"].to_numpy()
    for pop in np.unique(pops):
        tr, te = pops != pop, pops == pop
        beta = fit_platt(p[tr], y[tr], w[tr])
        out.loc[te, "platt"] = 1 / (1 + np.exp(-(beta[0] + beta[1] * _logit(p[te]))))
        kx, ky = fit_isotonic(p[tr], y[tr], w[tr])
        idx = np.clip(np.searchsorted(kx, p[te], side="left"), 0, len(kx) - 1)
        out.loc[te, "isotonic"] = ky[idx]
    return out


def recalibration_md(df: pd.DataFrame) -> list[str]:
    r = lopo_recalibrated(df, "p1_auto")
    beta = fit_platt(df["p1_auto"].to_numpy(), df["pu"].to_numpy(),
                     1.0 / df.groupby("population")["pu"].transform("size").to_numpy())
    lines = scores_md(r, [("auto LOPO mapped", "p1_auto"),
                          ("+ LOPO Platt", "platt"), ("+ LOPO isotonic", "isotonic")], "pu")
    lines += ["", f"Platt map fitted on all six populations: logit p' = {beta[0]:.3f} + "
              f"{beta[1]:.3f} logit p. Records at or above 0.5 after the LOPO maps:", ""]
    lines += ["| risk | records at or above 0.5 | mean predicted | observed PU share | "
              "tau1 implied / true (pooled) |", "|---|---:|---:|---:|---:|"]
    for label, c in (("auto LOPO mapped", "p1_auto"), ("+ LOPO Platt", "platt"),
                     ("+ LOPO isotonic", "isotonic")):
        m = r[c].to_numpy() >= 0.5
        lines.append(f"| {label} | {int(m.sum()):,} | {_f(r.loc[m, c].mean())} | "
                     f"{_f(r.loc[m, 'pu'].mean())} | {r[c].sum() / r['pu'].sum():.3f} |")
    return lines


def report(df: pd.DataFrame, notes: list[str]) -> list[str]:
    auc_g, n_auc = auc_median(df, "p1")
    auc_a, _ = auc_median(df, "p1_auto")
    gap = df.groupby("case")["sum_gap"].first()
    out = [f"{df['case'].nunique()} cases, {len(df):,} sample-unique records, "
           f"{df['population'].nunique()} populations; observed PU share among them "
           f"{df['pu'].mean():.3f}. ROC AUC per case (cases with both classes, {n_auc}): "
           f"median g50 raw {auc_g:.3f}, auto {auc_a:.3f} (only the cap at 1 can "
           f"change the ranking). Check: g50's tau1 = sum of its SU cell risks within "
           f"{gap.max():.1e} relative (max over cases).", ""]
    out += ["**P(F = 1 | f = 1) against population uniqueness** (pooled records; "
            "obs / pred = observed PU share / mean predicted):", ""]
    out += reliability_md(df, [("g50 raw", "p1"), ("auto LOPO mapped", "p1_auto")], "pu")
    out += ["", "Brier score (binned decomposition: Brier ≈ reliability − resolution + "
            "uncertainty; reliability is the miscalibration term) against constants per case: "
            "auto's LOPO tau1/SU (what an exchangeable model with auto's tau1 gives) and the "
            "oracle true tau1/SU:", ""]
    out += scores_md(df, [("g50 raw", "p1"), ("auto LOPO mapped", "p1_auto"),
                          ("constant auto tau1/SU", "const_auto"),
                          ("constant true tau1/SU (oracle)", "const_true")], "pu")
    out += ["", *case_weighted_md(df), "", "Records a threshold picks (pooled):", ""]
    out += threshold_md(df)
    out += ["", "Per left-out population (auto's tau1 for a case of population P was learned "
            "without P):", ""]
    out += per_population_md(df)
    out += ["", "auto's risk, observed PU share / mean predicted in coarse bins, per "
            "left-out population:", ""]
    out += coarse_md(df, "population", "p1_auto")
    out += ["", "The same per sampling design and fraction:", ""]
    out += coarse_md(df.assign(design=df["design"] + " " + df["fraction"].astype(str)),
                     "design", "p1_auto")
    out += ["", "What a monotone recalibration of auto's risk would give, fitted "
            "leave-one-population-out on the records (populations weighted equally; "
            "exploration, not shipped; it no longer adds up to auto's tau1):", ""]
    out += recalibration_md(df)
    out += ["", "**E[1/F | f = 1] against the truth 1/F** (pooled sample-unique records; "
            "observed = mean of 1/F in the bin):", ""]
    out += reliability_md(df, [("g50 raw", "r2"), ("auto LOPO mapped", "r2_auto")], "inv_f")
    out += [""]
    out += scores_md(df, [("g50 raw", "r2"), ("auto LOPO mapped", "r2_auto"),
                          ("constant auto tau2/SU", "const_auto2"),
                          ("constant true tau2/SU (oracle)", "const_true2")], "inv_f")
    if notes:
        out += ["", *notes]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="every K-th corpus case (default 1)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="stop fitting after this many seconds (resumable)")
    ap.add_argument("--report", action="store_true", help="only report from the cache")
    args = ap.parse_args(argv)
    selected = [c for c in corpus.cases() if c.index % args.every == 0]
    if not args.report:
        run_all(selected, args.time_limit)
    df, notes = load(selected)
    print("\n".join(report(df, notes)))


if __name__ == "__main__":
    main()
