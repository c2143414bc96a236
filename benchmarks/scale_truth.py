"""Census-scale accuracy with a known truth (issue 17/20): a synthetic population of 6x10^7
records (``bench_scale.generate``'s latent-class model: 40 classes, 8 keys, K = 11,007,360),
Bernoulli samples of it at ``FRACTIONS``, the true tau1/tau2 from the population's cell
counts, and every method's estimate on the sample (whole process: ``sdcrisk assess``).

The corpus (``benchmarks/corpus.py``) covers n up to ~3x10^4; this checks what auto and its
candidates give where n is a thousand times larger. The population is synthetic (a mixture
model, not one of the candidates' model families), so it is a check, not a calibration.

Usage::

    python benchmarks/scale_truth.py [--rows 60000000] [--fractions 0.1,0.5]
        [--methods auto,nb,pitman-yor,graphical:prior_weight=50]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_scale  # noqa: E402

KEYS = [k for k, _ in bench_scale.SHAPES[8]]


def truth(pop: Path, fraction: float, sample: Path, seed: int) -> dict:
    """Write the Bernoulli sample of ``pop`` and return n, N and the true tau1, tau2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(pop)
    ids = np.zeros(t.num_rows, np.int64)
    for k, d in bench_scale.SHAPES[8]:
        ids = ids * d + (t.column(k).to_numpy().astype(np.int64) - 1)
    big_f = np.bincount(ids)
    take = np.random.default_rng(seed).random(t.num_rows) < fraction
    f = np.bincount(ids[take], minlength=len(big_f))
    su = f == 1
    pq.write_table(t.filter(pa.array(take)), sample, compression="zstd",
                   row_group_size=1_000_000)
    return {"N": t.num_rows, "n": int(take.sum()), "sample_uniques": int(su.sum()),
            "true_tau1": int(np.sum(su & (big_f == 1))),
            "true_tau2": float(np.sum(1.0 / big_f[su]))}


def assess(sample: Path, big_n: int, method: str) -> dict:
    cmd = [sys.executable, "-m", "sdcrisk", "assess", str(sample), "--keys", ",".join(KEYS),
           "--population-size", str(big_n), "--format", "json", "--quiet"]
    if method != "auto":
        name, _, opts = method.partition(":")
        cmd += ["--method", name]
        for opt in filter(None, opts.split(",")):
            k, v = opt.split("=")
            cmd += [f"--{k.replace('_', '-')}", v]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    m = res["measures"]
    return {"seconds": time.perf_counter() - t0,
            **{f"{k}{s}": m[k][v] for k in ("tau1", "tau2")
               for s, v in (("", "estimate"), ("_lo", "lower"), ("_hi", "upper"))}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=60_000_000)
    ap.add_argument("--fractions", default="0.1,0.5")
    ap.add_argument("--methods", default="auto,nb,poisson-gamma,pitman-yor,graphical,"
                    "graphical:prior_weight=50")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args(argv)
    pop = Path(a.dir) / f"scale_population_{a.rows}.parquet"
    if not pop.exists():
        bench_scale.generate(pop, a.rows, 8, seed=7)
    print("| fraction | n | true tau1 | method | tau1 [95%] | error | true tau2 | tau2 [95%] "
          "| error | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for frac in (float(x) for x in a.fractions.split(",")):
        sample = Path(a.dir) / f"scale_sample_{a.rows}_{frac}.parquet"
        tr = truth(pop, frac, sample, seed=11)
        for method in a.methods.split(","):
            r = assess(sample, tr["N"], method)
            e1 = r["tau1"] / tr["true_tau1"] - 1
            e2 = r["tau2"] / tr["true_tau2"] - 1
            print(f"| {frac:.0%} | {tr['n']:,} | {tr['true_tau1']:,} | {method} | "
                  f"{r['tau1']:,.0f} [{r['tau1_lo']:,.0f}, {r['tau1_hi']:,.0f}] | {e1:+.1%} | "
                  f"{tr['true_tau2']:,.0f} | {r['tau2']:,.0f} [{r['tau2_lo']:,.0f}, "
                  f"{r['tau2_hi']:,.0f}] | {e2:+.1%} | {r['seconds']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
