"""benchmarks/combine_explore.py (issue 17): its re-implementation of the shipped rule must
give calibrate_auto.py's leave-one-population-out figures, and no variant may read the truth."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
CORPUS = BENCH / "corpus.csv"

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="benchmarks/corpus.csv absent")


@pytest.fixture(scope="module")
def ce():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("combine_explore")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def full(ce):
    return ce.ca.usable(ce.ca.load(CORPUS), ce.FULL)


def test_shipped_variant_reproduces_calibrate_auto(ce, full):
    """Same estimates and intervals, case by case, as calibrate_auto.lopo (to 1e-9)."""
    ref = ce.ca.lopo(full, ce.FULL)
    res, _ = ce.lopo_variant(full, ce.by_name("shipped"), nested=False)
    for m in ("tau1", "tau2"):
        for i, suf in enumerate(("", "_lo", "_hi")):
            np.testing.assert_allclose(res[m][i], ref[f"auto:{m}{suf}"].to_numpy(float),
                                       rtol=1e-9)


def test_no_variant_feature_reads_the_truth(ce, full):
    """Every feature group is unchanged when the truth and population columns are scrambled."""
    groups = ("width", "diff", "ratios", "inter", "square", "cross", "fitted", "spread")
    scrambled = full.copy()
    rng = np.random.default_rng(0)
    for col in [c for c in full.columns if c.startswith(("true_", "pop_"))]:
        scrambled[col] = rng.permutation(scrambled[col].to_numpy())
    scrambled["population"] = "x"
    for m in ("tau1", "tau2"):
        a = ce.feature_frame(full, m, groups)
        b = ce.feature_frame(scrambled, m, groups)
        assert list(a.columns) == list(b.columns) and len(a.columns) > 30
        np.testing.assert_array_equal(a.to_numpy(float), b.to_numpy(float))
