"""Three out-of-core engines side by side: cell counts of a Parquet file larger than memory
(issue 20 item 2).

Each engine counts the records of every observed key combination (``GROUP BY keys``) in a
fresh subprocess, measured with ``/usr/bin/time -v`` (wall seconds, CPU seconds, peak
resident memory):

* ``pyarrow`` - sdcrisk's own pass 1 (:func:`sdcrisk.data.outofcore.count_part`): record
  batches grouped with Arrow's hash aggregation, partial results merged as they grow;
* ``duckdb`` - ``SELECT keys, count(*) FROM read_parquet(FILE) GROUP BY ALL`` with a
  memory limit and a spill directory (DuckDB's out-of-core hash aggregation);
* ``polars`` - ``scan_parquet(FILE).group_by(keys).len()`` on the streaming engine;
* ``tabulate_file`` - the whole out-of-core tabulation sdcrisk runs (pass 1, coding, and
  pass 2 writing the record -> cell map), for scale.

Every engine must find the same number of cells and the same total; the script checks it.
Threads: ``--threads`` (default 2, the machine's cores) for every engine.

Run::

    python benchmarks/bench_scale.py generate /tmp/scale30m.parquet --rows 30000000 --keys 8
    python benchmarks/bench_engines.py /tmp/scale30m.parquet --keys 8 --memory 1G
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import SHAPES, _time_v  # noqa: E402

ENGINES = ("pyarrow", "duckdb", "polars", "tabulate_file")


def _child(engine: str, path: str, keys: list[str], threads: int, memory: str) -> None:
    if engine == "pyarrow":
        import pyarrow as pa

        pa.set_cpu_count(threads)
        from sdcrisk.data.outofcore import count_part

        part = count_part(path, keys)
        cells, total = part.combos.num_rows, part.n
    elif engine == "tabulate_file":
        import pyarrow as pa

        pa.set_cpu_count(threads)
        from sdcrisk.data.outofcore import tabulate_file

        table = tabulate_file(path, keys)
        cells, total = table.n_cells, int(table.counts.sum())
    elif engine == "duckdb":
        import duckdb

        spill = tempfile.mkdtemp(prefix="duckdb-spill-")
        try:
            con = duckdb.connect(config={"threads": threads, "memory_limit": memory,
                                         "temp_directory": spill,
                                         "preserve_insertion_order": False})
            cols = ", ".join(f'"{k}"' for k in keys)
            cells, total = con.execute(
                f"SELECT count(*), sum(n) FROM (SELECT {cols}, count(*) AS n "
                f"FROM read_parquet('{path}') GROUP BY ALL)").fetchone()
            con.close()
        finally:
            shutil.rmtree(spill, ignore_errors=True)
    elif engine == "polars":
        os.environ["POLARS_MAX_THREADS"] = str(threads)
        import polars as pl

        out = (pl.scan_parquet(path).group_by(keys).len()
               .collect(engine="streaming"))
        cells, total = out.height, int(out["len"].sum())
    else:
        raise SystemExit(f"unknown engine {engine}")
    print(json.dumps({"cells": int(cells), "total": int(total)}))


def measure(engine: str, path: Path, keys: list[str], threads: int, memory: str) -> dict:
    src = HERE.parent / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "POLARS_MAX_THREADS": str(threads)}
    load = os.getloadavg()[0]
    out = subprocess.run(["/usr/bin/time", "-v", sys.executable, __file__, "--child", engine,
                          str(path), "--key-names", ",".join(keys), "--threads", str(threads),
                          "--memory", memory], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"engine": engine, "error": out.stderr.strip().splitlines()[-1][:200]}
    wall, cpu, peak = _time_v(out.stderr)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return {"engine": engine, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "peak_rss_gib": round(peak / 1024**3, 2), "load_before": round(load, 1), **res}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--keys", type=int, choices=sorted(SHAPES), default=8)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory", default="1GB", help="DuckDB's memory_limit (default 1GB)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--key-names", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, args.path, args.key_names.split(","), args.threads, args.memory)
        return 0
    keys = [k for k, _ in SHAPES[args.keys]]
    rows = []
    for engine in args.engines.split(","):
        r = measure(engine, Path(args.path), keys, args.threads, args.memory)
        print(json.dumps(r), flush=True)
        rows.append(r)
    ok = [r for r in rows if "error" not in r]
    if len({(r["cells"], r["total"]) for r in ok}) > 1:
        print("ENGINES DISAGREE", file=sys.stderr)
        return 1
    print("| engine | wall s | CPU s | peak RSS GiB | cells |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['engine']} | failed: {r['error']} | | | |")
        else:
            print(f"| {r['engine']} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_gib']} | "
                  f"{r['cells']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
