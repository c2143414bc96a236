"""Local suppression to k-anonymity (``sdcrisk protect``): seconds, values suppressed and
records below k, on sdcMicro's testdata (4,580 records) and UCI Adult (48,842 records).

    python benchmarks/bench_protect.py

Needs ../shared/data. Prints one line per case; figures go to benchmarks/RESULTS.md.
"""

from __future__ import annotations

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


def main() -> None:
    print(f"{'data':<18}{'keys':>5}{'k':>3}{'n':>8}{'below k':>9}{'suppressed':>11}"
          f"{'after':>7}{'seconds':>9}")
    for name, rel, keys in CASES:
        path = SHARED / rel
        if not path.exists():
            print(f"{name}: {path} not present, skipped")
            continue
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
            print(f"{name:<18}{len(keys):>5}{k:>3}{md.n:>8,}{before:>9,}{len(sup):>11,}"
                  f"{int((fk < k).sum()):>7}{secs:>9.2f}")


if __name__ == "__main__":
    main()
