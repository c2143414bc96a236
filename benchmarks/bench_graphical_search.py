"""Seconds of GraphicalRisk's Occam's window search on the corpus cases where it is slowest.

Small samples with many keys say little about how the keys depend on each other, so very
many decomposable models lie within the window's ratio of the best and the search scores
them all (``benchmarks/corpus.py`` had to stop one after 120 s). Prints, per case and prior
weight: the records, keys, models scored, whether the search stopped at ``max_visited``,
the whole fit's seconds, and tau1 / tau2 (which a faster search must leave unchanged).
Run it on an older checkout to compare.

Usage::

    python benchmarks/bench_graphical_search.py [--cases 378,385,420,480] [--max-visited N]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import corpus  # noqa: E402

from sdcrisk import GraphicalRisk, Microdata, tabulate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="378,385,420,480")
    ap.add_argument("--max-visited", type=int, default=None,
                    help="GraphicalRisk's max_visited (default: the estimator's default)")
    a = ap.parse_args()
    all_cases = corpus.cases()
    print("| case | population | n | keys | prior weight | models scored | stopped | seconds "
          "| tau1 | tau2 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for idx in (int(x) for x in a.cases.split(",")):
        case = all_cases[idx]
        sample, truth = corpus.draw(case)
        table = tabulate(Microdata.from_source(sample, list(case.keys),
                                               population_size=truth["N"]))
        for pw in (1.0, 50.0):
            opts = {} if a.max_visited is None else {"max_visited": a.max_visited}
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = GraphicalRisk(prior_weight=pw, **opts).fit(table)
            sec = time.perf_counter() - t0
            search = res.diagnostics["model_search"]
            print(f"| {idx} | {case.population} | {table.n:,} | {len(case.keys)} | {pw:g} | "
                  f"{search['models_visited']:,} | "
                  f"{'yes' if search.get('stopped_at_max_visited') else 'no'} | {sec:.2f} | "
                  f"{res.measures['tau1'].estimate:.3f} | {res.measures['tau2'].estimate:.3f} |",
                  flush=True)


if __name__ == "__main__":
    main()
