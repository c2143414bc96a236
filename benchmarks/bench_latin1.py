"""Streaming (out-of-core) tabulation of a UTF-8 CSV and of the same records in Latin-1.

    python benchmarks/bench_latin1.py [--rows 1000000] [--repeat 3]

Writes three CSVs of ``--rows`` records (4 keys: a city name with accents, sex, age, region)
to a temporary folder: UTF-8, Latin-1 (detected in the first 64 KiB: keys read as bytes from
the start) and UTF-8 with one Latin-1 value on the last line (pass 1 fails there and starts
again with the keys as bytes: the worst case). Each is tabulated by
:func:`sdcrisk.data.outofcore.tabulate_file` in a fresh process; prints the best wall
seconds, that run's CPU seconds and peak RSS. Run with ``PYTHONPATH`` at an older ``src`` to
compare (a reader that refuses Latin-1 prints the refusal).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CITIES = ["Zürich", "Genève", "Köln", "München", "Málaga", "Besançon", "Łódź", "Ærøskøbing",
          "Bern", "Paris", "Wien", "Praha", "Umeå", "Lübeck", "Cádiz", "Tórshavn"]
CITIES = [c for c in CITIES if all(ord(ch) < 256 for ch in c)]  # Latin-1 can write them

CHILD = """
import sys
from sdcrisk.data.outofcore import tabulate_file
try:
    t = tabulate_file(sys.argv[1], ["city", "sex", "age", "region"])
    print(t.n, len(t.counts), int((t.counts == 1).sum()))
except Exception as exc:
    print("refused:", str(exc)[:90])
# this process's peak resident memory (VmHWM: getrusage's maxrss would count the parent's
# memory forked before exec)
hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0].split()[1]
print(int(hwm) // 1024)
"""


def write(folder: Path, rows: int) -> dict[str, Path]:
    rng = np.random.default_rng(1)
    city = np.array(CITIES)[rng.integers(0, len(CITIES), rows)]
    cols = [city, rng.integers(1, 3, rows).astype(str), rng.integers(0, 100, rows).astype(str),
            rng.integers(1, 60, rows).astype(str)]
    text = "city,sex,age,region\n" + "\n".join(",".join(r) for r in zip(*cols, strict=True)) \
        + "\n"
    out = {"utf8": folder / "utf8.csv", "latin1": folder / "latin1.csv",
           "utf8, last line latin1": folder / "late.csv"}
    out["utf8"].write_bytes(text.encode())
    out["latin1"].write_bytes(text.encode("latin-1"))
    out["utf8, last line latin1"].write_bytes(text.encode() + "Zürich,1,1,0\n".encode("latin-1"))
    return out


def run(path: Path) -> tuple[float, float, float, str]:
    """Wall s, CPU s (user + system) and peak RSS (MiB) of one child; its output."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    out, rss = proc.stdout.read().strip().rsplit("\n", 1)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, float(rss), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write(Path(tmp), args.rows)
        print(f"rows {args.rows:,}; load {os.getloadavg()[0]:.2f}")
        for name, path in files.items():
            best = min((run(path) for _ in range(args.repeat)), key=lambda r: r[0])
            wall, cpu, rss, out = best
            print(f"{name:24s} {path.stat().st_size / 2**20:6.1f} MiB  wall {wall:5.2f} s  "
                  f"cpu {cpu:5.2f} s  rss {rss:5.0f} MiB  -> {out}")


if __name__ == "__main__":
    main()
