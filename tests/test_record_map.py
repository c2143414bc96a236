"""auto's record map (issue 17, 2026-11-25): the benchmark that learns it and the runtime
that applies it must agree, and its fit must recover a known map."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from conftest import benchmark_module
from sdcrisk import AutoRisk, Microdata, tabulate


@pytest.fixture(scope="module")
def ca():
    return benchmark_module("calibrate_auto")


def test_fit_record_map_recovers_a_known_map(ca):
    """Records whose population uniqueness is drawn from logit P = a + b logit p + c log f
    with a, b, c = -0.3, 0.7, 0.2: the fit (cases weighted once, populations equally) gives
    them back within sampling error, for the 0/1 outcome (tau1) and for a fractional one with
    the same mean (tau2)."""
    rng = np.random.default_rng(5)
    rows = []
    for case in range(60):
        su = int(rng.integers(200, 2000))
        frac = float(rng.choice([0.005, 0.01, 0.03, 0.1]))
        p = rng.beta(0.6, 0.9, su)
        lp = np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
        q = 1 / (1 + np.exp(-(-0.3 + 0.7 * lp + 0.2 * math.log(frac))))
        rows.append(pd.DataFrame({"case": case, "population": f"P{case % 3}", "su": float(su),
                                  "p1": p, "r2": p, "pu": (rng.random(su) < q).astype(float),
                                  "inv_f": q, "log_fraction": math.log(frac)}))
    recs = pd.concat(rows, ignore_index=True)
    a, b, c = ca.fit_record_map(recs, "tau1")
    assert (a, b, c) == pytest.approx((-0.3, 0.7, 0.2), abs=0.08)
    # a fractional outcome equal to the probability itself: the map is recovered exactly
    assert ca.fit_record_map(recs, "tau2") == pytest.approx([-0.3, 0.7, 0.2], abs=1e-3)


def test_benchmark_and_runtime_map_the_same_risks(ca):
    """On the bundled example, the record-calibrated estimates the calibration computes
    (``calibrate_auto.sample_records`` + ``record_sums`` with the shipped map) are the sums of
    the mapped risks auto computes at run time, and auto's reported record risks are those
    mapped risks held to its tau (so they sum to it)."""
    from sdcrisk.analyses import auto as auto_mod
    from sdcrisk.analyses._auto_calibrated import load_params

    md = Microdata.from_source("example:uk_census2011",
                               keys="region,sex,age_band,marital_status,ethnic_group",
                               population_size=560_759)
    table = tabulate(md)
    params = load_params()
    recs = ca.sample_records(table, 0, "example")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AutoRisk().fit(table)
    g50 = ca.RECORD_SOURCE
    from sdcrisk.analyses.validation import Candidate

    fits = {g50: Candidate.parse(ca.RECORD_SPEC).estimator().fit(table)}
    mapped = auto_mod._mapped_record_risks(table, fits, params, [g50])
    su = table.counts == 1
    for m, kind in (("tau1", "population_unique"), ("tau2", "reidentification")):
        bench = float(ca.record_sums(recs, params["record_map"], m, ["case"]).iloc[0])
        assert bench == pytest.approx(float(mapped[m].sum()), rel=1e-12)
        tau = res.measures[m].estimate
        assert res.cell_risk_values[kind][su] == pytest.approx(
            np.clip(mapped[m] * tau / mapped[m].sum(), 0, 1), rel=1e-9)
