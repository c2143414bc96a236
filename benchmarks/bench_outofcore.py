"""Out-of-core tabulation at census scale (issue 8 item 1).

Generates a Parquet file of ``--rows`` records x 10 keys (default 10^8) in a temporary
directory, row group by row group (never all in memory), then tabulates it with
:func:`sdcrisk.data.outofcore.tabulate_file` in a fresh subprocess and reports seconds and the
peak resident memory of that subprocess (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which
includes Arrow's allocations that ``tracemalloc`` does not see). For ``--in-memory-up-to``
rows or fewer the in-memory path (``Microdata.from_source`` + ``tabulate``) is measured the
same way for comparison.

Run::

    df -h /tmp                                    # ~1 GB of disk per 10^8 rows
    python benchmarks/bench_outofcore.py          # 10^8 rows
    python benchmarks/bench_outofcore.py --rows 1000000 10000000 100000000 --write

``--write`` replaces the section between the OUTOFCORE markers of benchmarks/RESULTS.md.

Keys: census-like shapes (levels 2, 101, 12, 7, 6, 16, 20, 10, 5, 8; K = 1.09e10), each drawn
from a skewed distribution (p_i proportional to 1 / (i + 1)^2) within 40 latent classes,
so keys are associated and the table is clumpy like a census, with many small cells.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- OUTOFCORE:BEGIN -->", "<!-- OUTOFCORE:END -->"
LEVELS = (2, 101, 12, 7, 6, 16, 20, 10, 5, 8)
KEYS = ("sex", "age", "region", "marital", "tenure", "occupation", "country", "education",
        "health", "household_size")
CLASSES = 40


def generate(path: Path, rows: int, *, chunk: int = 5_000_000, seed: int = 0) -> float:
    """Write the synthetic file chunk by chunk; returns seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    # per latent class and key: a skewed distribution over a class-specific order of levels,
    # drawn through a quantised inverse-cdf table (resolution 1/4096) so generation is O(1)
    grid = (np.arange(4096) + 0.5) / 4096
    luts = []
    for d in LEVELS:
        base = 1.0 / np.arange(1, d + 1) ** 2.0
        lut = np.empty((CLASSES, grid.size), np.int8)
        for c in range(CLASSES):
            p = base[rng.permutation(d)]
            lut[c] = np.minimum(np.searchsorted(np.cumsum(p / p.sum()), grid), d - 1)
        luts.append(lut)
    schema = pa.schema([(k, pa.int8()) for k in KEYS])
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        done = 0
        while done < rows:
            m = min(chunk, rows - done)
            cls = rng.integers(0, CLASSES, m)
            cols = {}
            for k, d, lut in zip(KEYS, LEVELS, luts, strict=True):
                codes = lut[cls, rng.integers(0, 4096, m)]
                if done == 0:
                    codes[:d] = np.arange(d)  # every level occurs
                cols[k] = pa.array(codes)
            writer.write_table(pa.table(cols, schema=schema), row_group_size=1_000_000)
            done += m
    return time.perf_counter() - t0


def _child(mode: str, path: str, batch_rows: int, workdir: str) -> None:
    """Run one tabulation in this (fresh) process and print JSON."""
    t0 = time.perf_counter()
    if mode == "stream":
        from sdcrisk.data.outofcore import tabulate_file

        table = tabulate_file(path, list(KEYS), batch_rows=batch_rows, workdir=workdir)
    else:
        from sdcrisk import Microdata, tabulate

        table = tabulate(Microdata.from_source(path, list(KEYS)))
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(json.dumps({"mode": mode, "seconds": seconds, "peak_rss": peak, "n": table.n,
                      "cells": table.n_cells, "uniques": table.sample_uniques,
                      "K": table.cell_space, "counts_sum": int(table.counts.sum())}))


def measure(mode: str, path: Path, batch_rows: int, workdir: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path),
                          "--batch-rows", str(batch_rows), "--workdir", str(workdir)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load() -> str:
    try:
        return f"load average before the run {os.getloadavg()[0]:.1f}"
    except OSError:  # pragma: no cover
        return "load average unknown"


def markdown(runs: list[dict], load: str, note: str) -> str:
    gib = 1024**3
    lines = [
        BEGIN,
        "## Out-of-core tabulation (`benchmarks/bench_outofcore.py`)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python "
        f"{platform.python_version()}; date {datetime.date.today().isoformat()}; {load}. "
        f"{note}",
        f"Files: 10 int8 keys (census-like shapes, K = {math.prod(LEVELS):.3g} cells), "
        "Parquet (zstd), generated by the script. Peak memory = `ru_maxrss` of the fresh "
        "subprocess that tabulated (Arrow allocations included).",
        "",
        "| rows | file | path | seconds | peak memory | observed cells | sample uniques |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        for r in run["results"]:
            what = ("streaming `tabulate_file` (2 passes, record map memory-mapped)"
                    if r["mode"] == "stream" else "in memory, `from_source` + `tabulate`")
            lines.append(f"| {run['rows']:,} | {run['bytes'] / gib:.2f} GiB, generated in "
                         f"{run['gen_s']:.0f} s | {what} | {r['seconds']:.1f} | "
                         f"{r['peak_rss'] / gib:.2f} GiB | {r['cells']:,} | {r['uniques']:,} |")
    lines += ["", "Memory of the streaming path is O(observed cells + a few batches of "
              "2^21 records); the records themselves are never held at once. Peak memory "
              "includes the resident pages of the memory-mapped record map (file-backed, 4 "
              "bytes a record) and is otherwise dominated by the observed cells.", END]
    return "\n".join(lines)


def write_results(section: str) -> None:
    path = HERE / "RESULTS.md"
    text = path.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[10**8])
    p.add_argument("--batch-rows", type=int, default=1 << 21)
    p.add_argument("--in-memory-up-to", type=int, default=2 * 10**7,
                   help="also time the in-memory path up to this many rows")
    p.add_argument("--dir", default=None, help="where to write the file (default: a temp dir)")
    p.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    p.add_argument("--note", default="", help="free text added to the RESULTS.md section")
    p.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    p.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child[0], args.child[1], args.batch_rows, args.workdir)
        return 0
    load = _load()
    runs = []
    for rows in args.rows:
        tmp = Path(tempfile.mkdtemp(prefix="sdcrisk-bench-", dir=args.dir))
        try:
            free = shutil.disk_usage(tmp).free
            need = rows * 12 + rows * 4  # generous file size + memory-mapped record map
            if free < need:
                print(f"not enough disk in {tmp}: {free / 1e9:.1f} GB free, about "
                      f"{need / 1e9:.1f} GB needed; use --rows or --dir", file=sys.stderr)
                return 2
            path = tmp / "census.parquet"
            gen_s = generate(path, rows)
            print(f"generated {rows:,} rows in {gen_s:.1f} s "
                  f"({path.stat().st_size / 1e9:.2f} GB)", file=sys.stderr)
            results = [measure("stream", path, args.batch_rows, tmp)]
            print(results[-1], file=sys.stderr)
            if rows <= args.in_memory_up_to:
                results.append(measure("memory", path, args.batch_rows, tmp))
                print(results[-1], file=sys.stderr)
                assert results[0]["cells"] == results[1]["cells"]
                assert results[0]["uniques"] == results[1]["uniques"]
            assert results[0]["counts_sum"] == rows
            runs.append({"rows": rows, "gen_s": gen_s, "bytes": path.stat().st_size,
                         "results": results})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    section = markdown(runs, load, args.note)
    print(section)
    if args.write:
        write_results(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
