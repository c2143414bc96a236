"""Reading the same records as CSV, mu-Argus fixed and free format (.rda + .asc) and Excel.

    python benchmarks/bench_inputs.py [--records 1000000] [--excel-records 100000]

Writes the records once into a temporary folder, then reads the 8 columns with
``sdcrisk.data.io.read_columns`` in a fresh process per format (so each peak RSS is its own)
and prints wall and CPU seconds and the peak resident memory of that process. Excel is
read with fewer records (openpyxl parses XML cell by cell; ~1 minute per 10^6 cells).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = ["k0", "k1", "k2", "k3", "k4", "k5", "sex", "w"]


def write(folder: Path, n: int, n_excel: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({f"k{j}": rng.integers(0, 20, n) for j in range(6)})
    frame["sex"] = rng.choice(["F", "M"], n)
    frame["w"] = rng.uniform(1, 100, n).round(2)
    frame.to_csv(folder / "c.csv", index=False)
    text = {c: frame[c].astype(str) for c in frame.columns}
    widths = {c: int(text[c].str.len().max()) for c in frame.columns}
    fixed = text[COLUMNS[0]].str.rjust(widths[COLUMNS[0]])
    rda, start = [], 1
    for c in COLUMNS:
        if c != COLUMNS[0]:
            fixed = fixed + " " + text[c].str.rjust(widths[c])
        rda.append(f"{c} {start} {widths[c]}\n  <IDLEVEL> 1")
        start += widths[c] + 1
    (folder / "fx.rda").write_text("\n".join(rda) + "\n")
    (folder / "fx.asc").write_text("\n".join(fixed) + "\n")
    (folder / "fr.rda").write_text('<SEPARATOR> ";"\n' + "\n".join(f"{c} 10" for c in COLUMNS))
    frame.to_csv(folder / "fr.asc", index=False, header=False, sep=";")
    frame.head(n_excel).to_excel(folder / "x.xlsx", index=False)
    frame.head(n_excel).to_csv(folder / "x.csv", index=False)


def read_one(source: str) -> None:
    from sdcrisk.data.io import read_columns

    t0, c0 = time.perf_counter(), time.process_time()
    _, n = read_columns(source, COLUMNS)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # VmHWM: this process's own peak (ru_maxrss keeps the parent's peak across exec)
    status = Path("/proc/self/status").read_text().split("VmHWM:", 1)[1]
    rss = int(status.split()[0]) / 1024
    print(f"| {Path(source).name} | {n:,} | {wall:.2f} | {cpu:.2f} | {rss:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--excel-records", type=int, default=100_000)
    parser.add_argument("--read", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        read_one(args.read)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write(folder, args.records, args.excel_records)
        print(f"load average before reading: {os.getloadavg()[0]:.2f}")
        print("| file | records | wall s | CPU s | peak RSS MiB |\n|---|---:|---:|---:|---:|")
        for name in ("c.csv", "fx.rda", "fr.rda", "x.csv", "x.xlsx"):
            subprocess.run([sys.executable, __file__, "--read", str(folder / name)],
                           check=True)


if __name__ == "__main__":
    main()
