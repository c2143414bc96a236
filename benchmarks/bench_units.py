"""Size and pickling cost of one MCMC work unit (docs/scale.md, "Units inside one fit").

A chain unit (``sdcrisk.runtime.mcmc.advance_chain``) carries a chain's state, generators,
running sums and traced draws to wherever it runs, and comes back without the model's data.
This script fits ``HdpRisk`` on the HDP paper's NY sample through an executor that sends each
unit and its result through ``pickle`` (as process pools and Dask do) and records the bytes
each way, the seconds spent pickling and unpickling, and the seconds of one sweep.

Usage::

    python benchmarks/bench_units.py [--n 1000] [--iterations 500]
"""

from __future__ import annotations

import argparse
import pickle
import platform
import statistics
import sys
import time
import warnings
from concurrent.futures import Executor, Future
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


class MeasuringExecutor(Executor):
    """Runs each unit at once, sending it and its result through pickle; records sizes and
    the seconds of pickling (both ways) and of the unit itself."""

    def __init__(self):
        self.out_bytes: list[int] = []
        self.back_bytes: list[int] = []
        self.pickle_s: list[float] = []
        self.run_s: list[float] = []

    def submit(self, fn, /, *args, **kwargs):
        t0 = time.perf_counter()
        blob = pickle.dumps((args, kwargs))
        args, kwargs = pickle.loads(blob)
        t1 = time.perf_counter()
        result = fn(*args, **kwargs)
        t2 = time.perf_counter()
        back = pickle.dumps(result)
        result = pickle.loads(back)
        t3 = time.perf_counter()
        self.out_bytes.append(len(blob))
        self.back_bytes.append(len(back))
        self.pickle_s.append((t1 - t0) + (t3 - t2))
        self.run_s.append(t2 - t1)
        fut: Future = Future()
        fut.set_result(result)
        return fut


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, choices=(1000, 5000, 10000))
    ap.add_argument("--block", type=int, default=500,
                    help="burn-in and block length of the adaptive run (default 500)")
    a = ap.parse_args()
    import bench_hdp

    if not bench_hdp.DATA.exists():
        sys.exit(f"{bench_hdp.DATA} is absent (../shared/data)")
    from sdcrisk import HdpRisk

    table = bench_hdp.table("clean", a.n)
    # the default adaptive run, with short blocks and a cap of three blocks, so that there
    # are later units (advanced chains) as well as first ones
    est = HdpRisk(chains=4, burn_in=a.block, block=a.block, max_iterations=3 * a.block,
                  random_state=7)
    ex = MeasuringExecutor()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = est.fit(table, executor=ex)
    mb = 1 / 2**20
    first, later = slice(0, 4), slice(4, None)
    med = statistics.median
    print(f"{platform.platform()}, Python {platform.python_version()}")
    print(f"NY clean n = {table.n:,} ({len(table.counts):,} cells), HdpRisk, 4 chains, "
          f"burn-in {a.block}, blocks of {a.block}: {len(ex.out_bytes)} units, "
          f"tau1 {res.measures['tau1'].estimate:.2f}")
    print(f"first units (fresh chain, {2 * a.block} sweeps): out "
          f"{med(ex.out_bytes[first]) * mb:.2f} MB, back {med(ex.back_bytes[first]) * mb:.2f} MB")
    if ex.out_bytes[later]:
        print(f"later units (advanced chain, {a.block} sweeps): out "
              f"{med(ex.out_bytes[later]) * mb:.2f} MB, "
              f"back {med(ex.back_bytes[later]) * mb:.2f} MB")
        sweep = med(ex.run_s[later]) / a.block
    else:
        sweep = med(ex.run_s[first]) / (2 * a.block)
    print(f"pickling (both ways): median {1e3 * med(ex.pickle_s):.1f} ms per unit")
    print(f"one sweep: median {1e3 * sweep:.2f} ms")


if __name__ == "__main__":
    main()
