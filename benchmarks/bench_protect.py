"""Local suppression to k-anonymity (``sdcrisk protect``): seconds, values suppressed and
records below k, on sdcMicro's testdata (4,580 records) and UCI Adult (48,842 records).

    python benchmarks/bench_protect.py [--synthetic ROWS ...]

Needs ../shared/data. Prints one line per case; figures go to benchmarks/RESULTS.md.
``--synthetic ROWS`` adds files of ROWS records drawn with a fixed seed: five independent keys
of 5, 2, 90, 40 and 4 categories (144,000 combinations), the shape of a census extract.
``--whole-command ROWS`` writes such a file as CSV with text keys and times the whole
``sdcrisk protect FILE --k-anonymity 3 --method nb`` process (wall seconds, peak RSS).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sdcrisk.analyses.protect import (
    k_anonymity_violations,
    local_suppression,
    microdata_of,
    read_frame,
)
from sdcrisk.data.wildcard import wildcard_record_counts

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CASES = [
    ("sdcmicro_testdata", "sdcmicro_testdata/sdcmicro_testdata.csv.gz",
     ["urbrur", "roof", "walls", "water", "sex"]),
    ("sdcmicro_testdata", "sdcmicro_testdata/sdcmicro_testdata.csv.gz",
     ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]),
    ("uci_adult", "uci_adult/uci_adult.csv.gz",
     ["age", "sex", "race", "marital_status", "education"]),
]


def synthetic(rows: int):
    """ROWS records of five independent keys (seed 0)."""
    from sdcrisk import Microdata

    rng = np.random.default_rng(0)
    data = {name: rng.integers(0, size, rows) for name, size in
            (("region", 5), ("sex", 2), ("age", 90), ("job", 40), ("edu", 4))}
    return Microdata.from_source(data, list(data), missing="wildcard")


def whole_command(rows: int) -> None:
    """Time ``sdcrisk protect`` on a CSV of ROWS records with text keys (seed 0)."""
    import resource
    import subprocess
    import sys
    import tempfile

    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "region": rng.choice(["north", "south", "east", "west", "centre"], rows),
        "sex": rng.choice(["m", "f"], rows), "age": rng.integers(0, 90, rows).astype(str),
        "job": rng.choice([f"j{i:02d}" for i in range(40)], rows),
        "edu": rng.choice(["a", "b", "c", "d"], rows), "income": rng.normal(size=rows)})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text_keys.csv"
        frame.to_csv(path, index=False)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sdcrisk", "protect", str(path), "--keys",
                        "region,sex,age,job,edu", "--k-anonymity", "3", "--population-size",
                        str(20 * rows), "--method", "nb", "--quiet", "--out",
                        str(Path(tmp) / "out.csv")], check=True, capture_output=True)
        wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(f"whole command, {rows:,} records x 5 text keys, k = 3: {wall:.1f} s wall, "
          f"{peak:.2f} GiB peak RSS")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, nargs="*", default=[], metavar="ROWS")
    parser.add_argument("--whole-command", type=int, nargs="*", default=[], metavar="ROWS")
    args = parser.parse_args()
    for rows in args.whole_command:
        whole_command(rows)
    print(f"{'data':<18}{'keys':>5}{'k':>3}{'n':>10}{'below k':>9}{'suppressed':>11}"
          f"{'after':>7}{'seconds':>9}")
    cases = [(name, SHARED / rel, keys) for name, rel, keys in CASES]
    cases += [(f"synthetic {rows:,}", rows, None) for rows in args.synthetic]
    for name, path, keys in cases:
        if keys is None:
            md = synthetic(path)
            keys = md.keys
        elif not path.exists():
            print(f"{name}: {path} not present, skipped")
            continue
        else:
            md = microdata_of(read_frame(path), keys)
        for k in (3, 5):
            before = k_anonymity_violations(md, k)
            t0 = time.perf_counter()
            sup = local_suppression(md, k)
            secs = time.perf_counter() - t0
            codes = [np.array(c) for c in md.codes]
            levels = list(md.levels)
            for j in range(len(keys)):
                rows = sup[sup[:, 1] == j, 0]
                if len(rows):
                    if None not in levels[j]:
                        levels[j] = (*levels[j], None)
                    codes[j] = codes[j].astype(np.int64)
                    codes[j][rows] = levels[j].index(None)
            fk, _ = wildcard_record_counts(codes, levels)
            print(f"{name:<18}{len(keys):>5}{k:>3}{md.n:>10,}{before:>9,}{len(sup):>11,}"
                  f"{int((fk < k).sum()):>7}{secs:>9.2f}")


if __name__ == "__main__":
    main()
