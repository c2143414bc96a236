"""The log-linear model with and without the NY structural zeros (spec C.3, G.5 samples).

Fits ``LogLinearRisk`` (all-2-way and the forward search) to Battiston & Rimella's New York
samples with structural zeros (n = 1,000 / 5,000 / 10,000, N = 953,076), once ignoring the
557 conditions and once with them (``structural_zeros=``), and prints tau1 and tau2 against
the published truth of tau1, with the model chosen and the wall seconds.

Usage::

    python benchmarks/loglinear_sz.py
"""

from __future__ import annotations

import time
import warnings

import bench_hdp as b

from sdcrisk import LogLinearRisk


def main() -> None:
    print("| n | terms | structural zeros | tau1 | tau2 | truth tau1 | model | wall s |")
    print("|---:|---|---|---:|---:|---:|---|---:|")
    for n in (1000, 5000, 10000):
        tab = b.table("sz", n)
        for terms in ("all-2-way", "search"):
            for sz in (None, b.conditions()):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = LogLinearRisk(terms=terms, structural_zeros=sz).fit(tab)
                model = res.fitted["model"]
                model = model if len(model) < 50 else model[:47] + "..."
                print(f"| {n:,} | {terms} | {'given' if sz is not None else 'ignored'} | "
                      f"{res.estimate('tau1'):.1f} | {res.estimate('tau2'):.1f} | "
                      f"{b.TRUTH[('sz', n)]} | {model} | {time.perf_counter() - t0:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
