"""Whole-process cost of ``sdcrisk assess FILE.parquet`` at census scale (issue 20 item 1).

Two subcommands::

    python benchmarks/bench_scale.py generate /tmp/scale30m.parquet --rows 30000000 --keys 8
    python benchmarks/bench_scale.py run /tmp/scale30m.parquet --keys 8 --method nb
    python benchmarks/bench_scale.py run /tmp/scale30m.parquet --keys 8            # default (auto)

``generate`` writes a deterministic Parquet file (seed 0) row group by row group, never all
in memory: integer keys (int16) of census-like shapes drawn from skewed distributions within
40 latent classes, so the keys are associated and the table is clumpy, with millions of
observed cells and many small ones. ``--keys 8`` has K = 11,007,360 cells; ``--keys 10``
K = 1.09e10 (the shapes of ``bench_outofcore.py``).

``asc`` writes the records of such a Parquet file as mu-Argus microdata: ``OUT.asc`` (fixed
format, each key right-aligned in as many columns as its largest code has digits, no blanks
between; ``--free``: values separated by ``;``) and ``OUT.rda`` beside it, so that
``run OUT.rda`` measures the same records read from mu-Argus files::

    python benchmarks/bench_scale.py asc /tmp/scale30m.parquet /tmp/scale30m.rda
    python benchmarks/bench_scale.py run /tmp/scale30m.rda --keys 8 --method nb -- --out-of-core

``run`` starts ``python -m sdcrisk assess FILE --keys ... --population-size N --format json``
as a fresh process under ``/usr/bin/time -v`` (the sources of this checkout first on
PYTHONPATH) and prints wall seconds, CPU seconds (user + system: the figure to compare on a
shared machine, where wall time follows the load) and peak resident memory (Arrow's
allocations included),
with the answer's tau1, tau2 and observed cells. ``--profile`` runs it under cProfile
instead and prints the top functions by cumulative time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))
SHAPES = {
    8: (("sex", 2), ("age", 91), ("region", 12), ("marital", 7), ("tenure", 6),
        ("health", 4), ("education", 6), ("ethnicity", 5)),
    10: (("sex", 2), ("age", 101), ("region", 12), ("marital", 7), ("tenure", 6),
         ("occupation", 16), ("country", 20), ("education", 10), ("health", 5),
         ("household_size", 8)),
}
CLASSES = 40


def generate(path: Path, rows: int, n_keys: int, *, chunk: int = 5_000_000,
             seed: int = 0) -> float:
    """Write the synthetic file chunk by chunk (deterministic for a seed); returns seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    shapes = SHAPES[n_keys]
    rng = np.random.default_rng(seed)
    # per latent class and key: a skewed distribution (p_i ~ 1/(i+1)^1.5) over a
    # class-specific order of levels, drawn through a quantised inverse-cdf table
    grid = (np.arange(1 << 14) + 0.5) / (1 << 14)
    luts = []
    for _, d in shapes:
        base = 1.0 / np.arange(1, d + 1) ** 1.5
        lut = np.empty((CLASSES, grid.size), np.int16)
        for c in range(CLASSES):
            p = base[rng.permutation(d)]
            lut[c] = np.minimum(np.searchsorted(np.cumsum(p / p.sum()), grid), d - 1)
        luts.append(lut)
    schema = pa.schema([(k, pa.int16()) for k, _ in shapes])
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        done = 0
        while done < rows:
            m = min(chunk, rows - done)
            cls = rng.integers(0, CLASSES, m)
            cols = {}
            for (k, d), lut in zip(shapes, luts, strict=True):
                codes = lut[cls, rng.integers(0, grid.size, m)]
                if done == 0:
                    codes[:d] = np.arange(d)  # every level occurs
                cols[k] = pa.array(codes + 1)  # 1-based codes, as census files have them
            writer.write_table(pa.table(cols, schema=schema), row_group_size=1_000_000)
            done += m
    return time.perf_counter() - t0


def write_asc(parquet: Path, rda: Path, free: bool = False) -> float:
    """The Parquet file's records as ``rda`` + its ``.asc`` (row group by row group, with
    numpy: no Python work per record); returns seconds."""
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    src = pq.ParquetFile(parquet)
    names = src.schema_arrow.names
    top = {}
    for g in range(src.metadata.num_row_groups):
        for j, c in enumerate(names):
            st = src.metadata.row_group(g).column(j).statistics
            top[c] = max(top.get(c, 0), int(st.max))
    widths = [len(str(top[c])) for c in names]
    starts = np.concatenate([[0], np.cumsum(widths)])
    if free:
        meta = '<SEPARATOR> ";"\n' + "".join(f"{c} {w}\n  <IDLEVEL> 1\n"
                                             for c, w in zip(names, widths, strict=True))
    else:
        meta = "".join(f"{c} {a + 1} {w}\n  <IDLEVEL> 1\n"
                       for c, a, w in zip(names, starts[:-1], widths, strict=True))
    rda.write_text(meta)
    length = int(starts[-1]) + (len(names) - 1 if free else 0) + 1
    with open(rda.with_suffix(".asc"), "wb") as out:
        for g in range(src.metadata.num_row_groups):
            tbl = src.read_row_group(g)
            m = tbl.num_rows
            if free:  # values as text, joined by ";": pyarrow's CSV writer
                import pyarrow.csv as pacsv

                pacsv.write_csv(tbl, out, pacsv.WriteOptions(include_header=False,
                                                             delimiter=";", quoting_style="none"))
                continue
            rec = np.full((m, length), ord(" "), np.uint8)
            rec[:, -1] = ord("\n")
            for c, a, w in zip(names, starts[:-1], widths, strict=True):
                v = tbl.column(c).to_numpy().astype(np.int64)
                for d in range(w):  # digit d from the right, blank where the number ends
                    digit = (v // 10 ** d) % 10
                    col = int(a) + w - 1 - d
                    rec[:, col] = np.where((v >= 10 ** d) | (d == 0), ord("0") + digit,
                                           ord(" "))
            out.write(rec.tobytes())
    return time.perf_counter() - t0


def _rows(path: Path) -> int:
    """Records of a Parquet file, or of the data file of an ``.rda``."""
    if path.suffix.lower() == ".rda":
        n = 0
        with open(path.with_suffix(".asc"), "rb") as fh:
            while chunk := fh.read(1 << 24):
                n += chunk.count(b"\n")
        return n
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def _time_v(stderr: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS bytes from ``time -v``."""
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", stderr).group(1))
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", stderr).group(1))
    h, m, s = wall.groups()
    return (int(h or 0) * 3600 + int(m) * 60 + float(s), user + system,
            int(rss.group(1)) * 1024)


def run(path: Path, n_keys: int, method: str | None, population: float, extra: list[str],
        profile: bool = False, keys: str | None = None) -> dict:
    keys = keys or ",".join(k for k, _ in SHAPES[n_keys])
    args = ["-m", "sdcrisk", "assess", str(path), "--keys", keys, "--population-size",
            f"{population:.0f}", "--format", "json", *extra]
    if method:
        args += ["--method", method]
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if profile:
        with tempfile.NamedTemporaryFile(suffix=".prof") as prof:
            subprocess.run([sys.executable, "-m", "cProfile", "-o", prof.name, *args],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            import pstats

            pstats.Stats(prof.name).sort_stats("cumulative").print_stats(40)
        return {}
    load = os.getloadavg()[0]
    out = subprocess.run(["/usr/bin/time", "-v", sys.executable, *args], env=env,
                         capture_output=True, text=True)
    seconds, cpu, peak = _time_v(out.stderr)
    if out.returncode != 0:  # e.g. the memory guard refused the fit: report how far it got
        lines = [x for x in out.stderr.splitlines() if x.strip() and not x.startswith("\t")
                 and not x.startswith("Command exited")]
        return {"method": method, "exit": out.returncode, "wall_s": round(seconds, 2),
                "cpu_s": round(cpu, 2), "peak_rss_gib": round(peak / 1024**3, 3),
                "load_before": round(load, 1), "error": lines[-1][:300] if lines else ""}
    d = json.loads(out.stdout)
    m = d["measures"]
    return {"method": d.get("method"), "wall_s": round(seconds, 2), "cpu_s": round(cpu, 2),
            "peak_rss_gib": round(peak / 1024**3, 3), "load_before": round(load, 1),
            "tau1": m["tau1"]["estimate"], "tau2": m["tau2"]["estimate"],
            "cells": d.get("observed_cells")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("path")
    g.add_argument("--rows", type=int, default=30_000_000)
    g.add_argument("--keys", type=int, choices=sorted(SHAPES), default=8)
    g.add_argument("--outofcore-shapes", action="store_true",
                   help="10 int8 keys drawn as benchmarks/bench_outofcore.py draws them "
                   "(steeper skew: 25 million cells at 1e8 rows, the file of issue 20's "
                   "220 s / 4.2 GiB figure)")
    a = sub.add_parser("asc", help="write a generated Parquet file's records as mu-Argus "
                       "microdata (.rda + .asc)")
    a.add_argument("parquet")
    a.add_argument("rda")
    a.add_argument("--free", action="store_true", help="free format (';') instead of fixed")
    r = sub.add_parser("run")
    r.add_argument("path")
    r.add_argument("--keys", type=int, choices=sorted(SHAPES), default=8)
    r.add_argument("--method", default=None, help="default: the CLI's default (auto)")
    r.add_argument("--outofcore-shapes", action="store_true",
                   help="the file has bench_outofcore.py's 10 keys")
    r.add_argument("--population-factor", type=float, default=2.0,
                   help="N = factor x rows (default 2)")
    r.add_argument("--profile", action="store_true")
    r.add_argument("extra", nargs="*", help="more assess arguments (after --), e.g. -- "
                   "--out-of-core")
    args, unknown = p.parse_known_args(argv)
    if unknown and (args.cmd != "run" or unknown[0] != "--"):
        p.error(f"unrecognized arguments: {' '.join(unknown)}")
    if unknown:
        args.extra = [*args.extra, *unknown[1:]]
    path = Path(getattr(args, "path", "") or ".")
    if args.cmd == "generate" and args.outofcore_shapes:
        import bench_outofcore

        s = bench_outofcore.generate(path, args.rows)
        print(f"generated {args.rows:,} rows x 10 keys (bench_outofcore shapes) in {s:.1f} s "
              f"({path.stat().st_size / 1e6:.0f} MB)")
        return 0
    if args.cmd == "asc":
        out = Path(args.rda)
        s = write_asc(Path(args.parquet), out, args.free)
        print(f"wrote {out} and {out.with_suffix('.asc')} in {s:.1f} s "
              f"({out.with_suffix('.asc').stat().st_size / 1e6:.0f} MB)")
        return 0
    if args.cmd == "generate":
        s = generate(path, args.rows, args.keys)
        print(f"generated {args.rows:,} rows x {args.keys} keys in {s:.1f} s "
              f"({path.stat().st_size / 1e6:.0f} MB)")
        return 0
    rows = _rows(path)
    names = None
    if args.outofcore_shapes:
        import bench_outofcore

        names = ",".join(bench_outofcore.KEYS)
    res = run(path, args.keys, args.method, args.population_factor * rows, args.extra,
              args.profile, names)
    if res:
        res["rows"] = rows
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
