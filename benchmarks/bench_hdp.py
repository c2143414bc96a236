"""HDP / mixed-membership benchmarks on Battiston & Rimella's New York samples (issue 5).

Measurements, each merged into ``benchmarks/hdp_results.json`` and written to the
section between the HDP markers of ``benchmarks/RESULTS.md``:

* ``sweeps``: CPU and wall seconds per MCMC sweep (spec E.2 steps 1-6, plus the
  structural-zero steps 7-9 by App. C) and per saved draw (tau by BR App. B, M = 500) for
  n = 1,000 / 5,000 / 10,000, one chain, after a warm-up so that the number of components
  has settled; ``--code before`` with an older checkout first on ``PYTHONPATH`` labels the
  rows of the code it measured; ``--allocation`` picks the sampler (``marginal+blocks``,
  the default of ``HdpRisk``: marginal allocations followed by block moves);
* ``mixing``: one allocation sampler against another with the same seed and run length
  (NY clean, 4 chains, seed 7): R-hat and bulk ESS of tau1 and K, CPU seconds;
* ``default``: wall and CPU time and diagnostics of ``HdpRisk()`` with its defaults (4
  chains, adaptive run length) on one sample;
* ``paper``: the reproduction of spec G.5 (posterior mean, sd and interval of tau1 against
  the truth and BR's estimate; per-chain means and the multimodality flag);
* ``noise``: the Monte Carlo part of the variance of the traced tau1 (App. B, M = 500);
* ``szdefault``: ``HdpRisk()``'s default adaptive run on NY with structural zeros, with
  the verdict (R-hat, bulk / tail ESS and chain means of tau1, tau2, omega and K) at every
  check, CPU seconds and load (issue 20 item 4);
* ``trace``: one chain on the sample with structural zeros, printing every ``--every``
  iterations N_0, omega, K, alpha_0, tau1 and, for the four heaviest components, their
  weight beta_k, their own mass on the structural zeros (sum over conditions of the
  product of theta_kj(c_j)), and their observed and augmented records (allocations / J):
  the diagnosis of the drift of omega (issue 5).

Usage::

    python benchmarks/bench_hdp.py sweeps [--n 1000 5000 10000] [--kind clean sz]
        [--allocation marginal+blocks|marginal|collapsed|sequential] [--code LABEL]
    python benchmarks/bench_hdp.py mixing --n 10000 --iterations 4000 \
        --allocation marginal+blocks marginal
    python benchmarks/bench_hdp.py noise [--n 1000 10000]   # Monte Carlo noise of tau1
    python benchmarks/bench_hdp.py default --kind clean --n 10000 [--code LABEL]
    python benchmarks/bench_hdp.py paper --cases clean-1000 sz-5000 ... [--compat]
        [--iterations I --burn-in B --chains C]
    python benchmarks/bench_hdp.py trace --n 5000 --seed 3 --iterations 4000 \
        [--set allocation=sequential sz_cap=inf sz_method=exact ...]
    python benchmarks/bench_hdp.py szdefault --n 10000 [--label L] [--set block_moves=true]
        [--max-iterations I]   # HdpRisk()'s adaptive run with the verdict at every check
    python benchmarks/bench_hdp.py write      # only rebuild the RESULTS.md section

The machine is shared: every record carries the load average (``os.getloadavg``) seen
while it ran.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import sdcrisk
from sdcrisk import ConvergenceWarning, HdpRisk, Microdata, tabulate
from sdcrisk.data.structural_zeros import StructuralZeros
from sdcrisk.estimators import _mm_model as mm
from sdcrisk.estimators import _mm_sz as szk

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "bnp_dr_ny"
STORE = HERE / "hdp_results.json"
BEGIN, END = "<!-- HDP:BEGIN -->", "<!-- HDP:END -->"

SIZES = {
    "clean": dict(AGE=5, SEX=2, MARST=6, RACESING=5, EDUC=11, EMPSTAT=3, DISABWRK=2,
                  VETSTAT=2),
    "sz": dict(OWNERSHP=3, MORTGAGE=4, AGE=9, SEX=2, MARST=6, RACESING=5, EDUC=11, EMPSTAT=4,
               DISABWRK=3, VETSTAT=3),
}
POP = {"clean": 712_174, "sz": 953_076}
# spec G.5: true tau1 and BR's posterior mean +- sd
TRUTH = {("clean", 1000): 9, ("clean", 5000): 27, ("clean", 10000): 53,
         ("sz", 1000): 11, ("sz", 5000): 55, ("sz", 10000): 88}
PAPER = {("clean", 1000): "7.49 ± 5.32", ("clean", 5000): "38.80 ± 12.00",
         ("clean", 10000): "66.72 ± 10.85", ("sz", 1000): "10.81 ± 1.66",
         ("sz", 5000): "56.16 ± 3.78", ("sz", 10000): "bimodal 189.5 ± 5.8 / 102.0 ± 5.3",
         ("sz-ignored", 1000): "68.64 ± 19.11", ("sz-ignored", 5000): "186.06 ± 46.67",
         ("sz-ignored", 10000): "288.70 ± 47.15"}


def table(kind: str, n: int):
    name = "ny_clean" if kind == "clean" else "ny_structural_zeros"
    sizes = SIZES[kind]
    md = Microdata.from_source(DATA / f"{name}_n{n}.csv.gz", list(sizes),
                               population_size=POP[kind],
                               levels={k: list(range(v)) for k, v in sizes.items()})
    return tabulate(md)


def conditions() -> StructuralZeros:
    sizes = SIZES["sz"]
    return StructuralZeros.from_csv(DATA / "ny_structural_zeros_disjoint_conditions.csv",
                                    keys=list(sizes),
                                    levels=[list(range(d)) for d in sizes.values()],
                                    coding="bnpdr")


def load() -> dict:
    return json.loads(STORE.read_text()) if STORE.exists() else {}


def save(store: dict) -> None:
    STORE.write_text(json.dumps(store, indent=1, sort_keys=True) + "\n")


def stamp() -> dict:
    return {"date": datetime.date.today().isoformat(), "load_avg": os.getloadavg()[0],
            "sdcrisk": sdcrisk.__version__}


# --- measurements ------------------------------------------------------------------------------
def _estimator_options(allocation: str) -> dict:
    """Sampler options of an allocation label: "marginal+blocks" (the default of HdpRisk)
    or one of the allocations without block moves."""
    name, _, extra = allocation.partition("+")
    return {"allocation": name, "block_moves": extra == "blocks"}


def bench_mixing(n: int, iterations: int, allocation: str, seed: int = 7) -> dict:
    """Same-seed, same-length 4-chain run of one allocation sampler (NY clean)."""
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = HdpRisk(iterations=iterations, burn_in=1000, thin=10, random_state=seed,
                      progress=False, **_estimator_options(allocation)).fit(table("clean", n))
    cpu = time.process_time() - c0
    d = res.diagnostics["mcmc"]
    post = res.fitted["posterior"]["tau1"]
    return {"kind": "clean", "n": n, "its": iterations, "alloc": allocation, "cpu": cpu,
            "tau1": post["mean"], "sd": post["sd"], "rhat": d["rhat"]["tau1"],
            "ess": d["ess_bulk"]["tau1"], "ess_tail": d["ess_tail"]["tau1"],
            "rhat_K": d["rhat"]["components"], "ess_K": d["ess_bulk"]["components"],
            "K": res.fitted["components_mean"],
            "chain_means": [round(m, 2) for m in d["chain_means"]["tau1"]],
            "load_avg": os.getloadavg()[0], "date": stamp()["date"]}


def bench_sweeps(kind: str, n: int, warm: int, sweeps: int, draws: int,
                 allocation: str = "sequential") -> dict:
    """Wall and CPU seconds per sweep and per saved draw, one chain.

    The CPU time (``time.thread_time``) of this thread is the better measure on a shared
    machine: the wall time also counts the time the thread waited for a core. Each figure
    is the smallest over 5 repeats of ``sweeps`` sweeps (``draws`` draws).
    """
    tab = table(kind, n)
    data = mm.MMData.from_table(tab, conditions() if kind == "sz" else None)
    params = mm.HdpParams(**_estimator_options(allocation))
    rng = np.random.default_rng(0)
    state = mm.hdp_init(rng, data, params)
    mm.hdp_step(rng, state, data, params)          # compile / load the kernels
    mm.hdp_observe(rng, state, data, params)
    for _ in range(warm):
        mm.hdp_step(rng, state, data, params)
    loads = [os.getloadavg()[0]]
    ks = []
    best = {"sweep": np.inf, "sweep_cpu": np.inf, "draw": np.inf, "draw_cpu": np.inf}
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(sweeps):
            mm.hdp_step(rng, state, data, params)
            ks.append(state.K)
        best["sweep"] = min(best["sweep"], (time.perf_counter() - t0) / sweeps)
        best["sweep_cpu"] = min(best["sweep_cpu"], (time.thread_time() - c0) / sweeps)
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(draws):
            mm.hdp_observe(rng, state, data, params)
        best["draw"] = min(best["draw"], (time.perf_counter() - t0) / draws)
        best["draw_cpu"] = min(best["draw_cpu"], (time.thread_time() - c0) / draws)
    loads.append(os.getloadavg()[0])
    return {"kind": kind, "n": n, "allocation": allocation,
            "seconds_per_sweep": best["sweep"], "cpu_seconds_per_sweep": best["sweep_cpu"],
            "seconds_per_draw": best["draw"], "cpu_seconds_per_draw": best["draw_cpu"],
            "components": float(np.mean(ks)), "warm_up": warm, "sweeps": sweeps,
            "load_avg": float(np.mean(loads)), "date": stamp()["date"],
            "sdcrisk": sdcrisk.__version__}


def bench_noise(kind: str, n: int, warm: int, states: int, repeats: int) -> dict:
    """Monte Carlo noise of tau1 (BR App. B, M = 500) at fixed states against its spread.

    At each of ``states`` states (``warm`` sweeps apart) tau1 is computed ``repeats`` times
    with fresh membership draws: the mean within-state variance is the Monte Carlo part of
    the variance of the traced tau1, the variance of the state means the posterior part.
    """
    tab = table(kind, n)
    data = mm.MMData.from_table(tab, conditions() if kind == "sz" else None)
    params = mm.HdpParams()
    rng, obs = np.random.default_rng(0), np.random.default_rng(1)
    state = mm.hdp_init(rng, data, params)
    for _ in range(1000):
        mm.hdp_step(rng, state, data, params)
    vals = np.empty((states, repeats))
    for s in range(states):
        for _ in range(warm):
            mm.hdp_step(rng, state, data, params)
        for r in range(repeats):
            vals[s, r] = mm.hdp_observe(obs, state, data, params).scalars["tau1"]
    within = float(vals.var(axis=1, ddof=1).mean())
    between = float(vals.mean(axis=1).var(ddof=1))
    return {"kind": kind, "n": n, "states": states, "repeats": repeats, "sweeps_apart": warm,
            "mc_sd": within ** 0.5, "state_sd": between ** 0.5,
            "mc_share_of_variance": within / (within + between), "date": stamp()["date"]}


def component_sz_mass(theta_ext: np.ndarray, sz) -> np.ndarray:
    """Mass of each component's own profile on the structural zeros (pure membership)."""
    return szk._draw_products(np.ascontiguousarray(theta_ext.T), sz.cols, sz.lens).sum(axis=0)


def bench_szmix(n: int, iterations: int, label: str, options: dict, seed: int = 7,
                burn_in: int = 1000) -> dict:
    """Same-seed, same-length 4-chain run on NY with structural zeros: R-hat and bulk ESS
    of tau1, tau2 and K, CPU seconds, the augmentation's omega and N_0 (issue 20 item 4)."""
    tab = table("sz", n)
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = HdpRisk(iterations=iterations, burn_in=burn_in, thin=10, random_state=seed,
                      progress=False, structural_zeros=conditions(), **options).fit(tab)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = res.diagnostics["mcmc"]
    post = res.fitted["posterior"]
    omega = post.get("omega", {}).get("mean")
    return {"kind": "sz", "n": n, "its": iterations, "burn_in": burn_in, "label": label,
            "options": options, "seed": seed, "cpu": cpu, "wall": wall,
            "tau1": post["tau1"]["mean"], "sd": post["tau1"]["sd"],
            "tau2": post["tau2"]["mean"], "truth": TRUTH[("sz", n)],
            "rhat": d["rhat"]["tau1"], "ess": d["ess_bulk"]["tau1"],
            "ess_tail": d["ess_tail"]["tau1"], "rhat_tau2": d["rhat"]["tau2"],
            "ess_tau2": d["ess_bulk"]["tau2"], "ess_tail_tau2": d["ess_tail"]["tau2"],
            "rhat_K": d["rhat"]["components"], "ess_K": d["ess_bulk"]["components"],
            "K": res.fitted["components_mean"], "omega": omega,
            "n_aug": post["n_augmented"]["mean"], "n_aug_max": post["n_augmented"]["upper"],
            "capped_chains": d.get("capped_chains"), "converged": d["converged"],
            "chain_means": [round(m, 2) for m in d["chain_means"]["tau1"]],
            "load_avg": (load0 + os.getloadavg()[0]) / 2, "date": stamp()["date"]}


def bench_szdefault(n: int, options: dict, label: str, max_iterations: int | None = None
                    ) -> dict:
    """``HdpRisk()``'s adaptive run (4 chains, its defaults plus ``options``) on NY with
    structural zeros, recording the verdict at every check (block end): R-hat and bulk /
    tail ESS of tau1, tau2, omega (the model's mass on the structural zeros) and K, the
    chain means of tau1, tau2 and omega, CPU seconds (both threads) and the load; then the
    final result (issue 20 item 4)."""
    from sdcrisk.runtime import mcmc

    tab = table("sz", n)
    opts = dict(options)
    if max_iterations is not None:
        opts["max_iterations"] = max_iterations
    checks = []
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    original = mcmc.assess

    def assess(draws, **kw):
        d = original(draws, **kw)
        row = {"draws": int(next(iter(draws.values())).shape[1]),
               "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
               "load": os.getloadavg()[0], "failures": d["failures"]}
        for k in ("tau1", "tau2", "omega", "components"):
            if k in draws:
                row[k] = {"rhat": d["rhat"][k], "ess_bulk": d["ess_bulk"][k],
                          "ess_tail": d["ess_tail"][k],
                          "chain_means": [round(m, 4) for m in d["chain_means"][k]]}
        checks.append(row)
        print(json.dumps(row), flush=True)
        return d

    mcmc.assess = assess
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = HdpRisk(structural_zeros=conditions(), progress=False, **opts).fit(tab)
    finally:
        mcmc.assess = original
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = res.diagnostics["mcmc"]
    post = res.fitted["posterior"]
    return {"n": n, "label": label, "options": {k: str(v) for k, v in opts.items()},
            "wall": wall, "cpu": cpu, "load_avg": (load0 + os.getloadavg()[0]) / 2,
            "iterations": d["iterations"], "converged": d["converged"],
            "failures": d["failures"], "truth": TRUTH[("sz", n)],
            "tau1": post["tau1"], "tau2": post["tau2"], "omega": post.get("omega"),
            "rhat": {k: d["rhat"][k] for k in ("tau1", "tau2", "omega", "components")},
            "ess_bulk": {k: d["ess_bulk"][k] for k in ("tau1", "tau2", "omega")},
            "chain_means": {k: d["chain_means"][k] for k in ("tau1", "tau2", "omega")},
            "blocks_moved": d["step_info"].get("blocks_moved"), "checks": checks,
            "date": stamp()["date"]}


def _parse_set(items, fields) -> dict:
    out = {}
    for item in items:
        key, value = item.split("=", 1)
        kind = type(getattr(fields, key))
        out[key] = (value.lower() in ("1", "true", "yes") if kind is bool
                    else kind(value) if kind in (int, float) else value)
    return out


def bench_trace(n: int, seed: int, iterations: int, every: int, settings: dict):
    """Yield one record every ``every`` iterations of a single chain (NY with SZ)."""
    data = mm.MMData.from_table(table("sz", n), conditions())
    params = mm.HdpParams(**settings)
    rng = np.random.default_rng(seed)
    state = mm.hdp_init(rng, data, params)
    for it in range(1, iterations + 1):
        mm.hdp_step(rng, state, data, params)
        if it % every:
            continue
        K = state.K
        weights, theta_ext = mm._extended(state, data)
        mass = component_sz_mass(theta_ext, data.sz)
        observed = np.bincount(state.z.ravel(), minlength=K)[:K] / data.n_vars
        augmented = state.aug_c[:K].sum(axis=1) / data.n_vars
        top = np.argsort(-weights[:K])[:4]
        obs = mm.hdp_observe(rng, state, data, params)
        yield {"iteration": it, "n_augmented": state.n_aug, "omega": state.omega,
               "components": K, "alpha0": float(state.scal[1]),
               "tau1": obs.scalars["tau1"],
               "top": [[round(float(weights[k]), 4), round(float(mass[k]), 4),
                        round(float(observed[k]), 1), round(float(augmented[k]), 1)]
                       for k in top]}


def bench_fit(kind: str, n: int, options: dict, label: str) -> dict:
    tab = table(kind.replace("-ignored", ""), n)
    opts = dict(options)
    if kind == "sz":
        opts["structural_zeros"] = conditions()
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        res = HdpRisk(**opts).fit(tab)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = res.diagnostics["mcmc"]
    post = res.fitted["posterior"]["tau1"]
    key = (kind, n)
    return {
        "label": label, "kind": kind, "n": n, "options": {k: v for k, v in options.items()},
        "seconds": wall, "cpu_seconds": cpu, "load_avg": (load0 + os.getloadavg()[0]) / 2,
        "allocation": res.parameters["allocation"],
        "tau1_mean": post["mean"], "tau1_sd": post["sd"], "tau1_lower": post["lower"],
        "tau1_upper": post["upper"], "truth": TRUTH.get((kind.replace("-ignored", ""), n)),
        "paper": PAPER.get(key), "components_mean": res.fitted["components_mean"],
        "iterations": d["iterations"], "burn_in": d["burn_in"], "chains": d["chains"],
        "draws_per_chain": d["draws_per_chain"], "converged": d["converged"],
        "rhat_tau1": d["rhat"]["tau1"], "ess_bulk_tau1": d["ess_bulk"]["tau1"],
        "ess_tail_tau1": d["ess_tail"]["tau1"], "rhat_components": d["rhat"]["components"],
        "ess_bulk_components": d["ess_bulk"]["components"],
        "chain_means_tau1": d["chain_means"]["tau1"], "multimodal": d["multimodal"],
        "modes": d["modes"].get("tau1"), "warnings": [str(w.message)[:200] for w in caught],
        "date": stamp()["date"],
    }


# --- report ------------------------------------------------------------------------------------
def _f(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def render(store: dict) -> str:
    lines = [BEGIN, "## HDP / mixed-membership MCMC (issue 5)", "",
             "Command: `python benchmarks/bench_hdp.py sweeps|mixing|default|paper|trace` "
             "(raw numbers in `benchmarks/hdp_results.json`).", "",
             f"Machine: {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy "
             f"{np.__version__}. **The machine was shared with 3-5 other workers running "
             "tests and benchmarks**: the load average (on 2 cores) is given with every row; "
             "at a load of 8 a sweep takes 2-4 times as long as on an idle machine.", ""]
    sw = store.get("sweeps", {})
    if sw:
        lines += ["### Seconds per sweep (one chain, after the warm-up)", "",
                  "CPU = CPU seconds of the sampling thread (`time.thread_time`, smallest of 5 "
                  "repeats), the figure that does not depend on the load; wall = elapsed.", "",
                  "| data | n | code | allocation | CPU s / sweep | wall s / sweep | "
                  "CPU s / saved draw (tau, M = 500) | components | load avg |",
                  "|---|---:|---|---|---:|---:|---:|---:|---:|"]
        for key in sorted(sw, key=lambda k: (sw[k]["kind"], sw[k]["n"],
                                             sw[k].get("code", ""),
                                             sw[k].get("allocation", ""))):
            r = sw[key]
            cpu = r.get("cpu_seconds_per_sweep")
            dcpu = r.get("cpu_seconds_per_draw")
            lines.append(f"| NY {r['kind']} | {r['n']:,} | {r.get('code', '-')} | "
                         f"{r.get('allocation', 'sequential')} | "
                         f"{'-' if cpu is None else f'{cpu:.4f}'} | "
                         f"{r['seconds_per_sweep']:.4f} | "
                         f"{'-' if dcpu is None else f'{dcpu:.4f}'} | "
                         f"{r['components']:.1f} | {r['load_avg']:.1f} |")
        lines.append("")
    fits = store.get("fits", {})
    for title, pick in (("Default runs (`HdpRisk()`: 4 chains, burn-in 1,000, adaptive "
                         "length in blocks of 500 up to 10,000, thin 10)", "default"),
                        ("Paper reproduction (spec G.5)", "paper")):
        rows = [r for r in fits.values() if r["label"].startswith(pick)]
        if not rows:
            continue
        lines += [f"### {title}", "",
                  "| case | code | settings | wall s | CPU s | load | iterations | "
                  "tau1 mean ± sd [95%] | truth | BR | K | R-hat / bulk ESS (tau1) | "
                  "converged | chain means | modes |",
                  "|---|---|---|---:|---:|---:|---:|---|---:|---|---:|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: (r["kind"], r["n"], r["label"],
                                             r.get("code", ""))):
            opts = ", ".join(f"{k}={v}" for k, v in r["options"].items()) or "defaults"
            opts += f" ({r.get('allocation', 'sequential')})"
            modes = r.get("modes") or []
            mtxt = ("; ".join(f"{g['chains']}: {g['mean']:.1f}" for g in modes)
                    if r["multimodal"] else "one")
            cpu = r.get("cpu_seconds")
            lines.append(
                f"| NY {r['kind']} n={r['n']:,} | {r.get('code', '-')} | {opts} | "
                f"{r['seconds']:.0f} | {'-' if cpu is None else f'{cpu:.0f}'} | "
                f"{r['load_avg']:.1f} | {r['iterations']:,} x {r['chains']} | "
                f"{_f(r['tau1_mean'])} ± {_f(r['tau1_sd'])} [{_f(r['tau1_lower'], 1)}, "
                f"{_f(r['tau1_upper'], 1)}] | {r['truth'] if r['truth'] is not None else '-'}"
                f" | {r['paper'] or '-'} | {r['components_mean']:.1f} | "
                f"{_f(r['rhat_tau1'], 3)} / {r['ess_bulk_tau1']:.0f} | "
                f"{'yes' if r['converged'] else 'no'} | "
                f"{', '.join(f'{m:.1f}' for m in r['chain_means_tau1'])} | {mtxt} |")
        lines.append("")
    notes = store.get("notes")
    if notes:
        lines += ["Notes:", ""] + [f"- {x}" for x in notes] + [""]
    # hand-written subsections kept in the store (e.g. the structural-zero diagnosis)
    for block in store.get("sections", []):
        lines += [block.rstrip("\n"), ""]
    mix = store.get("mixing", {})
    if mix:
        lines += ["### Mixing of the allocation samplers (NY clean, 4 chains, seed 7, burn-in "
                  "1,000, thin 10)", "",
                  "Same seed and length for each sampler; CPU seconds of the whole run (both "
                  "threads). ESS estimates from chains with R-hat above 1.01 are rough.", "",
                  "| n | iterations | allocation | CPU s | tau1 mean ± sd | R-hat tau1 | "
                  "bulk ESS tau1 | ESS / CPU min | R-hat / ESS of K | chain means |",
                  "|---:|---:|---|---:|---|---:|---:|---:|---|---|"]
        order = {"marginal+blocks": -1, "marginal": 0, "collapsed": 1, "sequential": 2}
        for key in sorted(mix, key=lambda k: (mix[k]["n"], order.get(mix[k]["alloc"], 9))):
            r = mix[key]
            lines.append(f"| {r['n']:,} | {r['its']:,} | {r['alloc']} | {r['cpu']:.0f} | "
                         f"{r['tau1']:.2f} ± {r['sd']:.2f} | {r['rhat']:.3f} | "
                         f"{r['ess']:.0f} | {60 * r['ess'] / r['cpu']:.1f} | "
                         f"{r['rhat_K']:.3f} / {r['ess_K']:.0f} | "
                         f"{', '.join(f'{m:.1f}' for m in r['chain_means'])} |")
        lines.append("")
    szm = store.get("szmix", {})
    if szm:
        lines += ["### Structural zeros: mixing and target of the augmentation variants "
                  "(NY with structural zeros, 4 chains, seed 7, thin 10; issue 20 item 4)", "",
                  "Same seed and length for each variant; CPU seconds of the whole run. "
                  "`exact`: `sz_method=\"exact\"` (records simulated until n are admissible, "
                  "remainder allocations instantiate components, concentrations from the "
                  "prior, tables with each record's own alpha beta_k: an exact Gibbs step for "
                  "the augmented records), with block moves on. ESS from chains with R-hat "
                  "above 1.01 is rough.", "",
                  "| n | burn-in + iterations | variant | CPU s | load | tau1 mean ± sd | truth "
                  "| R-hat / bulk ESS tau1 | ESS tau1 / CPU min | R-hat / bulk ESS tau2 | "
                  "R-hat / ESS of K | omega | N_0 mean (max) | capped chains | chain means |",
                  "|---:|---|---|---:|---:|---|---:|---|---:|---|---|---:|---|---|---|"]
        for key in sorted(szm, key=lambda k: (szm[k]["n"], szm[k]["label"], szm[k]["its"])):
            r = szm[key]
            om = "-" if r["omega"] is None else f"{r['omega']:.3f}"
            lines.append(
                f"| {r['n']:,} | {r['burn_in']:,} + {r['its']:,} | {r['label']} | "
                f"{r['cpu']:.0f} | {r['load_avg']:.1f} | {r['tau1']:.2f} ± {r['sd']:.2f} | "
                f"{r['truth']} | {r['rhat']:.3f} / {r['ess']:.0f} | "
                f"{60 * r['ess'] / r['cpu']:.1f} | {r['rhat_tau2']:.3f} / "
                f"{r['ess_tau2']:.0f} | {r['rhat_K']:.3f} / {r['ess_K']:.0f} | {om} | "
                f"{r['n_aug']:,.0f} ({r['n_aug_max']:,.0f}) | {r['capped_chains']} | "
                f"{', '.join(f'{m:.1f}' for m in r['chain_means'])} |")
        lines.append("")
    noise = store.get("noise", {})
    if noise:
        lines += ["### Monte Carlo noise of tau1 (M = 500) at fixed states", "",
                  "| data | n | MC sd | sd between states | MC share of the variance |",
                  "|---|---:|---:|---:|---:|"]
        for key in sorted(noise, key=lambda k: (noise[k]["kind"], noise[k]["n"])):
            r = noise[key]
            lines.append(f"| NY {r['kind']} | {r['n']:,} | {r['mc_sd']:.3f} | "
                         f"{r['state_sd']:.3f} | {r['mc_share_of_variance']:.1%} |")
        lines.append("")
    szd = store.get("szdefault", {})
    if szd or store.get("szdefault_text"):
        lines += ["### Structural zeros: the default run at n = 10,000 and its verdict "
                  "(2026-11-24, issue 20 item 4)", ""]
        lines += store.get("szdefault_text", [])
    if szd:
        lines += ["| n | run | iterations | CPU s (both threads) | wall s | load | converged | "
                  "tau1 mean [95%] | tau2 mean [95%] | R-hat tau1 / tau2 / omega / K | "
                  "bulk ESS tau1 / tau2 / omega | chain means tau1 | chain means tau2 | "
                  "chain means omega |",
                  "|---:|---|---:|---:|---:|---:|---|---|---|---|---|---|---|---|"]
        for key in sorted(szd):
            r = szd[key]
            rh, es, cm = r["rhat"], r["ess_bulk"], r["chain_means"]
            lines.append(
                f"| {r['n']:,} | {r['label']} | {r['iterations']:,} x 4 | {r['cpu']:.0f} | "
                f"{r['wall']:.0f} | {r['load_avg']:.1f} | {'yes' if r['converged'] else 'no'} "
                f"| {r['tau1']['mean']:.2f} [{r['tau1']['lower']:.1f}, "
                f"{r['tau1']['upper']:.1f}] | {r['tau2']['mean']:.1f} "
                f"[{r['tau2']['lower']:.1f}, {r['tau2']['upper']:.1f}] | "
                f"{rh['tau1']:.3f} / {rh['tau2']:.3f} / {rh['omega']:.3f} / "
                f"{rh['components']:.2f} | {es['tau1']:.0f} / {es['tau2']:.0f} / "
                f"{es['omega']:.0f} | {', '.join(f'{m:.1f}' for m in cm['tau1'])} | "
                f"{', '.join(f'{m:.1f}' for m in cm['tau2'])} | "
                f"{', '.join(f'{m:.4f}' for m in cm['omega'])} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def write_results(store: dict) -> None:
    path = HERE / "RESULTS.md"
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    block = render(store)
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweeps")
    s.add_argument("--n", type=int, nargs="+", default=[1000, 5000, 10000])
    s.add_argument("--kind", nargs="+", default=["clean", "sz"])
    s.add_argument("--warm", type=int, default=200)
    s.add_argument("--sweeps", type=int, default=100)
    s.add_argument("--draws", type=int, default=20)
    s.add_argument("--allocation", default="marginal+blocks",
                   help="marginal+blocks (HdpRisk's default), marginal, collapsed, sequential")
    s.add_argument("--code", default="current",
                   help="label of the code measured (e.g. 'before' for an older checkout on "
                        "PYTHONPATH)")
    z = sub.add_parser("noise")
    z.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    z.add_argument("--kind", nargs="+", default=["clean"])
    z.add_argument("--states", type=int, default=30)
    z.add_argument("--repeats", type=int, default=10)
    z.add_argument("--apart", type=int, default=50)
    x = sub.add_parser("mixing")
    x.add_argument("--n", type=int, default=10000)
    x.add_argument("--iterations", type=int, default=4000)
    x.add_argument("--allocation", nargs="+", default=["marginal+blocks"])
    d = sub.add_parser("default")
    d.add_argument("--kind", default="clean")
    d.add_argument("--n", type=int, default=10000)
    d.add_argument("--code", default="current")
    q = sub.add_parser("paper")
    q.add_argument("--cases", nargs="+", required=True,
                   help="kind-n, kind in clean, sz, sz-ignored (e.g. clean-1000 sz-5000)")
    q.add_argument("--compat", action="store_true", help="compat_bnpdr + fast allocation")
    q.add_argument("--iterations", type=int, default=None)
    q.add_argument("--burn-in", type=int, default=None)
    q.add_argument("--chains", type=int, default=None)
    q.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("trace")
    t.add_argument("--n", type=int, default=5000)
    t.add_argument("--seed", type=int, default=3)
    t.add_argument("--iterations", type=int, default=4000)
    t.add_argument("--every", type=int, default=50)
    t.add_argument("--set", nargs="*", default=[],
                   help="HdpParams fields, e.g. allocation=sequential sz_cap=inf")
    y = sub.add_parser("szmix")
    y.add_argument("--n", type=int, default=1000)
    y.add_argument("--iterations", type=int, default=3000)
    y.add_argument("--burn-in", type=int, default=1000)
    y.add_argument("--seed", type=int, default=7)
    y.add_argument("--label", required=True)
    y.add_argument("--set", nargs="*", default=[],
                   help="HdpRisk options, e.g. sz_method=exact block_moves=true")
    q = sub.add_parser("szdefault")
    q.add_argument("--n", type=int, default=10000)
    q.add_argument("--label", default="default")
    q.add_argument("--max-iterations", type=int, default=None)
    q.add_argument("--set", nargs="*", default=[], help="HdpRisk options, e.g. block_moves=true")
    sub.add_parser("write")
    sub.add_parser("note").add_argument("text")
    args = p.parse_args(argv)
    if args.cmd == "trace":
        settings = _parse_set(args.set, mm.HdpParams())
        for row in bench_trace(args.n, args.seed, args.iterations, args.every, settings):
            print(json.dumps(row), flush=True)
        return
    store = load()
    if args.cmd == "sweeps":
        for kind in args.kind:
            for n in args.n:
                r = bench_sweeps(kind, n, args.warm, args.sweeps, args.draws, args.allocation)
                r["code"] = args.code
                print(json.dumps(r), flush=True)
                store.setdefault("sweeps", {})[f"{kind}-{n}-{args.allocation}-{args.code}"] = r
                save(store)
    elif args.cmd == "noise":
        for kind in args.kind:
            for n in args.n:
                r = bench_noise(kind, n, args.apart, args.states, args.repeats)
                print(json.dumps(r), flush=True)
                store.setdefault("noise", {})[f"{kind}-{n}"] = r
                save(store)
    elif args.cmd == "mixing":
        for alloc in args.allocation:
            r = bench_mixing(args.n, args.iterations, alloc)
            print(json.dumps(r), flush=True)
            store.setdefault("mixing", {})[f"clean-{args.n}-{alloc}-{args.iterations}"] = r
            save(store)
    elif args.cmd == "szmix":
        opts = {}
        for item in args.set:
            key, value = item.split("=", 1)
            opts[key] = ({"true": True, "false": False}.get(value.lower(), value)
                         if key != "sz_cap" else float(value))
        r = bench_szmix(args.n, args.iterations, args.label, opts, args.seed, args.burn_in)
        print(json.dumps(r), flush=True)
        store.setdefault("szmix", {})[f"sz-{args.n}-{args.label}-{args.iterations}"] = r
    elif args.cmd == "szdefault":
        opts = {}
        for key, value in _parse_set(args.set, HdpRisk()).items():
            opts[key] = ({"true": True, "false": False}.get(value.lower(), value)
                         if isinstance(value, str) else value)
        r = bench_szdefault(args.n, opts, args.label, args.max_iterations)
        print(json.dumps({k: v for k, v in r.items() if k != "checks"}), flush=True)
        store.setdefault("szdefault", {})[f"sz-{args.n}-{args.label}"] = r
    elif args.cmd == "default":
        r = bench_fit(args.kind, args.n, {}, "default")
        r["code"] = args.code
        print(json.dumps(r), flush=True)
        store.setdefault("fits", {})[f"default-{args.kind}-{args.n}-{args.code}"] = r
    elif args.cmd == "paper":
        opts = {}
        if args.compat:
            opts.update(compat_bnpdr=True, allocation="fast")
        for name, value in (("iterations", args.iterations), ("burn_in", args.burn_in),
                            ("chains", args.chains)):
            if value is not None:
                opts[name] = value
        if args.seed:
            opts["random_state"] = args.seed
        for case in args.cases:
            kind, n = case.rsplit("-", 1)
            label = "paper" + ("-compat" if args.compat else "")
            r = bench_fit(kind, int(n), opts, label)
            print(json.dumps(r), flush=True)
            store.setdefault("fits", {})[f"{label}-{case}-{args.seed}"] = r
            save(store)
    elif args.cmd == "note":
        store.setdefault("notes", []).append(args.text)
    save(store)
    write_results(store)


if __name__ == "__main__":
    main()
