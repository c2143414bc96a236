"""Tabulation speed and memory: figures for the foundation issue.

Requirement: "10^7 in-memory records x 8 keys tabulate in <= 0.5 s (mixed-radix integer keys +
bincount measured 0.24 s on this machine; pandas groupby is ~6x slower); key spaces too large
for a dense bincount switch to sorting/unique without blowing memory."

Run::

    python benchmarks/bench_tabulate.py                   # 10^7 records (about 2-3 minutes)
    python benchmarks/bench_tabulate.py --records 100000  # quick run

What it measures (best of ``--repeat`` runs, ``time.perf_counter``):

(a) ``Microdata.from_source`` on a dict of int64 arrays (level coding of 8 keys);
(b) ``tabulate(microdata)`` on the result: the requirement's figure; with a breakdown of
    its steps (``_cells.cell_ids``, ``_cells.observed_cells``, ``_cells.decode_cells``) and
    the peak of numpy allocations during the call (``tracemalloc``, which numpy reports to);
(c) pandas ``DataFrame.groupby(keys).size()`` over the same 8 columns, for comparison, and
    the bare "mixed-radix ids + np.bincount" kernel the issue quotes;
(d) key spaces far too large for a dense bincount: 10 keys (K ~ 1.8e15, the sorting path)
    and 16 keys x 40 levels (K ~ 4.3e25 > 2**62, ids compressed to ranks on the way), on
    ``--large-records`` records: seconds, tracemalloc peak and the increase of the peak RSS
    (``ru_maxrss`` after the call minus the resident size before it).

Every case runs in a fresh subprocess so that memory figures do not mix. The data are
synthetic but not uniform: a latent-class mixture (20 classes) of skewed Dirichlet(0.5)
marginals, so keys are associated and cells clumpy like a census table (a few per cent
of K observed at 10^7 records); the first records cycle through every level so that K is
exactly the product of the level counts. (b) is also timed on independent uniform keys, the
most spread-out table, because the time grows with the number of observed cells (random
access into the K-long count and lookup arrays).
The 8-key shape is the ONS paper's: levels (11, 96, 2, 7, 6, 5, 5, 5), K = 11,088,000.

The output ends with a markdown section that can be pasted into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

ONS_LEVELS = (11, 96, 2, 7, 6, 5, 5, 5)
WIDE_LEVELS = (90, 80, 70, 60, 50, 40, 30, 20, 10, 5)
HUGE_LEVELS = (40,) * 16
TARGET_S = 0.5
MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# data


def make_source(levels, n, seed, *, classes=20, concentration=1.0, floor=0.02, dtype=np.int64):
    """dict name -> integer array of codes 1..d: skewed keys, dependent through latent classes.

    Each key has a skewed base distribution (Dirichlet(0.5) with a ``floor`` mixed in); each of
    ``classes`` latent classes (weights Dirichlet(1)) draws its own distribution of every key
    around that base, Dirichlet(concentration * d * base), so keys are associated and the
    table is clumpy like a census table, neither uniform nor independent.
    """
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(classes))
    z = rng.choice(classes, size=n, p=weights).astype(np.int8 if classes < 128 else np.int64)
    order = np.argsort(z, kind="stable")
    bounds = np.searchsorted(z[order], np.arange(classes + 1))
    src = {}
    for j, d in enumerate(levels):
        base = (1 - floor) * rng.dirichlet(np.full(d, 0.5)) + floor / d
        x = np.empty(n, dtype)
        for c in range(classes):
            rows = order[bounds[c]:bounds[c + 1]]
            p = rng.dirichlet(concentration * d * base)
            x[rows] = rng.choice(d, size=len(rows), p=p)
        m = min(d, n)
        x[:m] = np.arange(m)  # every level occurs: K is the full product
        x += 1
        src[f"k{j}"] = x
    return src


def make_uniform_source(levels, n, seed):
    """Independent uniform keys: the most spread-out table (worst case for cache locality)."""
    rng = np.random.default_rng(seed + 1)
    return {f"k{j}": rng.integers(1, d + 1, n) for j, d in enumerate(levels)}


# ---------------------------------------------------------------------------------------------
# measuring


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def rss_now_bytes():
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def maxrss_bytes():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def tracemalloc_peak(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base), out


def step_profile(md):
    """Time spent in each _cells step of one tabulate call (whatever steps exist)."""
    from sdcrisk.data import _cells, table

    spent, originals = {}, {}
    for name in ("cell_ids", "observed_cells", "decode_cells"):
        f = getattr(_cells, name, None)
        if f is None:
            continue
        originals[name] = f

        def timed(*a, _f=f, _name=name, **k):
            t = time.perf_counter()
            try:
                return _f(*a, **k)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t

        setattr(_cells, name, timed)
    try:
        t = time.perf_counter()
        table.tabulate(md)
        total = time.perf_counter() - t
    finally:
        for name, f in originals.items():
            setattr(_cells, name, f)
    spent["other (CellTable, scatter/stack if any)"] = total - sum(spent.values())
    spent["total"] = total
    return spent


def tabulate_memory(md):
    """(tracemalloc peak, RSS high-water increase) of one tabulate call, in bytes."""
    from sdcrisk import tabulate

    rss0, hw0 = rss_now_bytes(), maxrss_bytes()
    tabulate(md)
    hw1 = maxrss_bytes()
    rss_inc = None if rss0 is None else hw1 - rss0
    rss_exact = hw1 > hw0  # the call set a new high-water mark, so the increase is its own
    peak, _ = tracemalloc_peak(lambda: tabulate(md))
    return peak, rss_inc, rss_exact


# ---------------------------------------------------------------------------------------------
# cases (each in its own process)


def case_main(n, repeat, seed, pandas_too):
    from sdcrisk import Microdata, tabulate

    src = make_source(ONS_LEVELS, n, seed)
    keys = list(src)
    out = {"case": "main", "n": n, "levels": ONS_LEVELS, "K": math.prod(ONS_LEVELS)}

    out["from_source_s"], md = best_of(lambda: Microdata.from_source(src, keys), repeat)
    # memory first: the timed runs would otherwise have set the RSS high-water mark already
    out["mem_peak"], out["rss_inc"], out["rss_exact"] = tabulate_memory(md)
    out["tabulate_s"], tab = best_of(lambda: tabulate(md), repeat)
    out["n_cells"], out["sample_uniques"] = tab.n_cells, tab.sample_uniques
    out["steps"] = step_profile(md)

    def kernel():  # the bare kernel quoted by the issue: mixed-radix ids + dense bincount
        ids = np.zeros(n, np.int64)
        for c, d in zip(md.codes, md.n_levels, strict=True):
            ids *= d
            ids += c
        return np.bincount(ids, minlength=md.cell_space)

    out["kernel_s"], counts = best_of(kernel, repeat)
    assert int(np.count_nonzero(counts)) == tab.n_cells
    del counts

    uni = make_uniform_source(ONS_LEVELS, n, seed)
    md_uni = Microdata.from_source(uni, list(uni))
    del uni
    out["uniform_tabulate_s"], tab_uni = best_of(lambda: tabulate(md_uni), repeat)
    out["uniform_n_cells"] = tab_uni.n_cells
    out["uniform_sample_uniques"] = tab_uni.sample_uniques
    del tab_uni

    if pandas_too:
        import pandas as pd

        df = pd.DataFrame(src)
        del src
        out["pandas_s"], size = best_of(lambda: df.groupby(keys).size(), repeat)
        assert len(size) == tab.n_cells
        out["pandas_version"] = pd.__version__
    return out


def case_large(name, levels, n, repeat, seed):
    from sdcrisk import Microdata, tabulate
    from sdcrisk.data import _cells

    src = make_source(levels, n, seed, dtype=np.int8 if max(levels) < 127 else np.int64)
    md = Microdata.from_source(src, list(src))
    del src
    out = {"case": name, "n": n, "levels": levels, "K": md.cell_space}
    dense_ok = md.cell_space <= _cells.DENSE_MAX_CELLS and md.cell_space <= max(16 * n, 1 << 20)
    out["path"] = ("dense bincount" if dense_ok else "sort (np.unique)") + (
        "" if md.cell_space < (1 << 62) else " + rank compression (K >= 2**62)")
    out["mem_peak"], out["rss_inc"], out["rss_exact"] = tabulate_memory(md)
    out["tabulate_s"], tab = best_of(lambda: tabulate(md), repeat)
    out["n_cells"], out["sample_uniques"] = tab.n_cells, tab.sample_uniques
    del tab
    out["codes_mib"] = sum(c.nbytes for c in md.codes) / MIB
    return out


# ---------------------------------------------------------------------------------------------
# report


def machine_info():
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        mem = f"{kb / 1024**2:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    import pandas as pd

    return {
        "platform": platform.platform(),
        "cpu": cpu or "unknown",
        "cores": f"{usable} usable (os.cpu_count() = {os.cpu_count()})",
        "memory": mem or "unknown",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "date": datetime.date.today().isoformat(),
    }


def fmt_s(x):
    return "—" if x is None else f"{x:.3f} s"


def fmt_mib(x):
    return "—" if x is None else f"{x / MIB:,.0f} MiB"


def report(info, main, large, argv):
    lines = ["## Tabulation speed (issue: foundation)", ""]
    lines.append("Command: `python benchmarks/bench_tabulate.py" + (" " + " ".join(argv) if argv
                                                                     else "") + "`")
    lines.append("")
    lines.append("| machine | |")
    lines.append("|---|---|")
    for k, v in info.items():
        lines.append(f"| {k} | {v} |")
    lines.append("")
    n = main["n"]
    lines.append(
        f"8 keys, levels {tuple(main['levels'])} (ONS), K = {main['K']:,}; n = {n:,} records "
        f"(skewed keys associated through 20 latent classes; see the script): {main['n_cells']:,} "
        f"observed cells, {main['sample_uniques']:,} sample uniques. Best of "
        f"{main['repeat']} runs."
    )
    lines.append("")
    lines.append("| step | time | note |")
    lines.append("|---|---:|---|")
    t = main["tabulate_s"]
    verdict = "meets" if t <= TARGET_S else "**misses**"
    lines.append(f"| (a) `Microdata.from_source` (dict of int64 arrays) | "
                 f"{fmt_s(main['from_source_s'])} | level coding of 8 columns |")
    lines.append(f"| (b) `tabulate(microdata)` | **{fmt_s(t)}** | {verdict} the {TARGET_S} s "
                 f"target; numpy peak {fmt_mib(main['mem_peak'])} |")
    for step, s in main["steps"].items():
        if step != "total":
            lines.append(f"| &nbsp;&nbsp;(b) step: {step} | {fmt_s(s)} | one profiled call |")
    lines.append(f"| (b') `tabulate`, independent uniform keys (worst case) | "
                 f"{fmt_s(main['uniform_tabulate_s'])} | {main['uniform_n_cells']:,} observed "
                 "cells, "
                 f"{main['uniform_sample_uniques']:,} sample uniques |")
    if main.get("pandas_s") is not None:
        lines.append(f"| (c) pandas `groupby(8 keys).size()` | {fmt_s(main['pandas_s'])} | "
                     f"{main['pandas_s'] / t:.1f}x the tabulate time |")
    lines.append(f"| (c) bare kernel: mixed-radix ids + `np.bincount` | "
                 f"{fmt_s(main['kernel_s'])} | counts only, no record map or cell codes |")
    lines.append("")
    if large:
        lines.append("(d) Key spaces too large for a dense bincount (`tabulate` only; memory is "
                     "the peak of numpy allocations during the call by `tracemalloc`, and the "
                     "rise of the process's peak RSS over its resident size before the call):")
        lines.append("")
        lines.append("| keys | K | n | path | time | observed cells | numpy peak | "
                     "peak RSS increase |")
        lines.append("|---|---:|---:|---|---:|---:|---:|---:|")
        for r in large:
            rss = fmt_mib(r["rss_inc"])
            if r["rss_inc"] is not None and not r["rss_exact"]:
                rss = "≤ " + rss
            lvl = r["levels"]
            desc = (f"{len(lvl)} x {lvl[0]} levels" if len(set(lvl)) == 1
                    else f"{len(lvl)}: {tuple(lvl)}")
            lines.append(f"| {desc} | {r['K']:.2e} | {r['n']:,} | {r['path']} | "
                         f"{fmt_s(r['tabulate_s'])} | {r['n_cells']:,} | {fmt_mib(r['mem_peak'])} "
                         f"| {rss} |")
        lines.append("")
        lines.append(f"Memory grows with n (about {large[-1]['mem_peak'] / large[-1]['n']:.0f} "
                     "bytes a record at the largest n), never with K.")
        lines.append("")
    return "\n".join(lines)


def run_child(args_list):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(args_list)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"case {args_list[0]} failed (exit {res.returncode})")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        spec = json.loads(argv[1])
        kind = spec.pop(0)
        out = case_main(*spec) if kind == "main" else case_large(kind, *spec)
        print(json.dumps(out))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=float, default=1e7, help="records for (a)-(c) [1e7]")
    p.add_argument("--large-records", default=None,
                   help="comma-separated record counts for (d) [records/10,records]")
    p.add_argument("--repeat", type=int, default=3, help="timing repeats, best kept [3]")
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument("--no-pandas", action="store_true", help="skip the pandas comparison")
    p.add_argument("--no-large", action="store_true", help="skip the large key space cases")
    a = p.parse_args(argv)
    n = int(a.records)
    if a.large_records:
        large_ns = [int(float(x)) for x in a.large_records.split(",") if x.strip()]
    else:
        large_ns = sorted({max(n // 10, 1000), n})

    info = machine_info()
    print(f"sdcrisk tabulate benchmark: n={n:,}, repeat={a.repeat}", file=sys.stderr)
    main_res = run_child(["main", n, a.repeat, a.seed, not a.no_pandas])
    main_res["repeat"] = a.repeat
    print(f"  from_source {main_res['from_source_s']:.3f} s, tabulate "
          f"{main_res['tabulate_s']:.3f} s", file=sys.stderr)
    large = []
    if not a.no_large:
        for levels, name in ((WIDE_LEVELS, "wide"), (HUGE_LEVELS, "huge")):
            for m in large_ns:
                r = run_child([name, list(levels), m, a.repeat, a.seed])
                print(f"  {name} n={m:,}: {r['tabulate_s']:.3f} s, "
                      f"peak {r['mem_peak'] / MIB:.0f} MiB", file=sys.stderr)
                large.append(r)
    print(report(info, main_res, large, argv))
    t = main_res["tabulate_s"]
    print(f"\ntarget: tabulate of {n:,} x 8 keys <= {TARGET_S} s: "
          f"{'met' if t <= TARGET_S else 'NOT met'} ({t:.3f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
