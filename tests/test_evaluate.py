"""Sampling designs and the comparison with the truth."""

from __future__ import annotations

import numpy as np
import pytest

import sdcrisk
from sdcrisk import Bernoulli, HouseholdBernoulli, Microdata, SimpleRandomSample, draw_sample


@pytest.fixture
def pop():
    rng = np.random.default_rng(11)
    n = 4000
    # skewed categories, so that the table has population uniques and is overdispersed
    def skewed(k):
        return rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.5)))

    return Microdata.from_source(
        {"a": skewed(60), "b": skewed(9), "c": skewed(4),
         "hh": np.repeat(np.arange(n // 4), 4)}, keys=["a", "b", "c"], household="hh")


def test_bernoulli_is_the_ground_truth_design(pop):
    rows = draw_sample(pop, Bernoulli(0.1), seed=7)
    expected = np.flatnonzero(np.random.default_rng(7).random(pop.n) < 0.1)
    np.testing.assert_array_equal(rows, expected)


def test_srs_and_households(pop):
    rows = draw_sample(pop, SimpleRandomSample(250), seed=1)
    assert len(rows) == 250 and len(np.unique(rows)) == 250
    rows = draw_sample(pop, HouseholdBernoulli(0.2), seed=1)
    hh = pop.household[rows]
    # every sampled household is complete (4 members each)
    assert np.all(np.bincount(hh)[np.unique(hh)] == 4)
    with pytest.raises(sdcrisk.InputError):
        draw_sample(pop, SimpleRandomSample(pop.n + 1))


def test_evaluate_truth_estimates_and_auc(pop):
    ev = sdcrisk.evaluate(pop, ["nb", sdcrisk.PoissonGammaRisk(), "skinner-elliot"],
                          design=Bernoulli(0.05), seed=2)
    t = ev.truth
    take = np.random.default_rng(2).random(pop.n) < 0.05
    codes = np.stack(pop.codes, axis=1)
    cells, big_f = np.unique(codes, axis=0, return_counts=True)
    s_cells, f = np.unique(codes[take], axis=0, return_counts=True)
    lookup = {tuple(c): F for c, F in zip(cells.tolist(), big_f, strict=True)}
    F_su = np.array([lookup[tuple(c)] for c in s_cells[f == 1].tolist()])
    assert t["tau1"] == (F_su == 1).sum()
    assert t["tau2"] == pytest.approx((1 / F_su).sum())
    assert t["p_pu"] == pytest.approx((big_f == 1).sum() / pop.n)
    assert t["theta"] == pytest.approx(len(F_su) / F_su.sum())
    nb = ev.methods["nb"]
    # equal weights: every sample unique has P(F=1|f) = n/N, so the AUC is exactly 1/2
    assert nb.auc == pytest.approx(0.5)
    assert nb.estimates["tau1"] == pytest.approx(len(F_su) * take.sum() / pop.n)
    assert ev.methods["skinner-elliot"].auc is None
    d = ev.to_dict()
    assert set(d["estimates"]) == {"nb", "poisson-gamma", "skinner-elliot"}
    assert d["truth"]["sample_uniques"] == len(F_su)


def test_evaluate_needs_exactly_one_of_design_or_sample(pop):
    with pytest.raises(sdcrisk.ParameterError):
        sdcrisk.evaluate(pop, ["nb"])
