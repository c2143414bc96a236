"""Seed stability of auto (issue 17 item 5): tau1 and tau2 over seeds 0-9 on corpus cases.

For one case per population (KS8, 1% Bernoulli sample; the corpus's own draw), fit
``AutoRisk(random_state=s)`` for s = 0..9 and print the largest deviation from the median
(also written to ``benchmarks/corpus_seeds.md``, which ``calibrate_auto.py --write`` puts in
RESULTS.md).

Usage::

    nice -n 10 python benchmarks/corpus_seeds.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import corpus  # noqa: E402

from sdcrisk import AutoRisk, Microdata, tabulate  # noqa: E402


def main() -> None:
    lines = ["| population | n | true tau1 | tau1 median | tau1 spread | tau2 spread |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines))
    for case in corpus.cases():
        if case.keyset != "KS8" or case.design != "bernoulli" or case.fraction != 0.01:
            continue
        sample, truth = corpus.draw(case)
        table = tabulate(Microdata.from_source(sample, list(case.keys),
                                               population_size=truth["N"]))
        t1, t2 = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for seed in range(10):
                res = AutoRisk(random_state=seed).fit(table)
                t1.append(res.measures["tau1"].estimate)
                t2.append(res.measures["tau2"].estimate)

        def spread(v):
            med = float(np.median(v))
            return max(abs(x / med - 1) for x in v) if med else 0.0

        lines.append(f"| {case.population} | {truth['n']:,} | {truth['true_tau1']} | "
                     f"{np.median(t1):.1f} | {100 * spread(t1):.2f}% | "
                     f"{100 * spread(t2):.2f}% |")
        print(lines[-1], flush=True)
    (HERE / "corpus_seeds.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
