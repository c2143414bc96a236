"""Population uniqueness (Pitman, Zayatz, SNB, Dankar's rule): ARX's values, exact cases."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sdcrisk
from conftest import shared_data
from sdcrisk import (
    FrequencyProfile,
    pitman_uniques,
    population_uniqueness,
    snb_uniques,
    zayatz_uniques,
)
from sdcrisk.analyses.uniqueness import _shlosser


@pytest.fixture(scope="module")
def adult_table():
    path = shared_data("arx_adult", "adult.csv.gz")
    data = pd.read_csv(path, sep=";", dtype=str)
    assert data.shape == (30162, 9)
    return sdcrisk.tabulate(sdcrisk.Microdata.from_source(data, keys=list(data.columns)))


# --- ARX's published values on its Adult file (TestRiskMetrics.testDecisionRule2 and
# testAverageRisk2, all 9 attributes as quasi-identifiers) ----------------------------------

def test_arx_adult_prosecutor_risk_and_sample_uniqueness(adult_table):
    res = population_uniqueness(adult_table, sampling_fraction=0.1)
    assert res.average_prosecutor_risk == 0.6465751607983555  # exact, as ARX asserts
    assert res.highest_prosecutor_risk == 1.0
    assert res.sample_uniqueness == 0.5142895033485844
    assert res.n == 30162 and res.profile.n_classes == 19502 and res.sample_uniques == 15512


def test_arx_adult_dankar_f01_pitman(adult_table):
    res = population_uniqueness(adult_table, sampling_fraction=0.1)
    assert res.dankar_model == "pitman"
    # ARX stops Newton at |score| <= 1e-6; we solve to convergence: 2e-12 relative apart
    assert res.share == pytest.approx(0.27684993883653597, rel=1e-10)
    # the value ARX's test accepts when Zayatz is chosen instead: reproduced exactly
    assert res.estimates["zayatz"].share == pytest.approx(0.3207402393466189, rel=1e-14)
    assert res.share <= res.sample_uniqueness
    assert res.population_size == 301620.0


def test_arx_adult_dankar_f001_pitman(adult_table):
    res = population_uniqueness(adult_table, sampling_fraction=0.01)
    assert res.dankar_model == "pitman"
    assert res.share == pytest.approx(0.1446083531167384, rel=1e-10)


def test_arx_adult_dankar_f02_with_arx_snb_equations(adult_table):
    res = population_uniqueness(adult_table, sampling_fraction=0.2, snb_equations="arx")
    # ARX's SNB equations have no root here, so the rule falls back to Zayatz
    assert not res.estimates["snb"].available
    assert res.dankar_model == "zayatz"
    assert res.share == pytest.approx(0.3577099234829125, rel=1e-14)


def test_arx_adult_dankar_f1(adult_table):
    for eq in ("arx", "model"):
        res = population_uniqueness(adult_table, sampling_fraction=1.0, snb_equations=eq)
        # everyone sampled: Zayatz and SNB both give the sample uniques
        assert res.share == pytest.approx(0.5142895033485844, rel=1e-14)
        assert res.estimates["zayatz"].uniques == 15512.0


def test_adult_f02_model_equations_choose_snb(adult_table):
    # With the SNB model's own moment equations a root exists at f = 0.2; it is below
    # Zayatz, so Dankar's rule picks it (ARX's published 0.3577 is Zayatz, see above).
    res = population_uniqueness(adult_table, sampling_fraction=0.2)
    snb = res.estimates["snb"]
    assert snb.available and res.dankar_model == "snb"
    assert snb.uniques < res.estimates["zayatz"].uniques
    _check_snb_moments(res.profile, snb)


# --- Pitman ---------------------------------------------------------------------------------

def _pitman_loglik(profile, theta, alpha):
    u, n = profile.n_classes, profile.n
    i = np.arange(1, u)
    ll = np.sum(np.log(theta + i * alpha)) - np.sum(np.log(theta + np.arange(1, n)))
    for j, c in zip(profile.sizes.tolist(), profile.classes.tolist(), strict=True):
        ll += c * np.sum(np.log(np.arange(1, j) - alpha))
    return float(ll)


def test_pitman_is_the_likelihood_maximum(adult_table):
    profile = FrequencyProfile.from_counts(adult_table.counts, 301620.0)
    est = pitman_uniques(profile)
    theta, alpha = est.parameters["theta"], est.parameters["alpha"]
    # the log-likelihood written out term by term (no digamma), differentiated numerically
    h_t, h_a = 1e-3 * theta, 1e-6
    g_t = (_pitman_loglik(profile, theta + h_t, alpha)
           - _pitman_loglik(profile, theta - h_t, alpha)) / (2 * h_t)
    g_a = (_pitman_loglik(profile, theta, alpha + h_a)
           - _pitman_loglik(profile, theta, alpha - h_a)) / (2 * h_a)
    assert abs(g_t) < 1e-6 and abs(g_a) < 1e-2
    best = _pitman_loglik(profile, theta, alpha)
    for dt, da in ((0.01, 0), (-0.01, 0), (0, 0.001), (0, -0.001), (0.01, 0.001)):
        assert _pitman_loglik(profile, theta * (1 + dt), alpha + da) < best
    # S1 = Gamma(theta + 1) / Gamma(theta + alpha) N^alpha, evaluated with mpmath; the
    # double-precision log-gamma difference at theta ~ 3200 (as in ARX) carries ~2e-12
    with mpmath.workdps(40):
        s1 = mpmath.gamma(theta + 1) / mpmath.gamma(theta + alpha) * mpmath.mpf(301620) ** alpha
    assert est.uniques == pytest.approx(float(s1), rel=1e-11)


def test_pitman_unavailable_when_every_class_is_unique():
    # all classes of size 1: the likelihood grows without bound in theta (no MLE)
    profile = FrequencyProfile(np.array([1]), np.array([50]), 1000.0)
    est = pitman_uniques(profile)
    assert not est.available and math.isnan(est.uniques)
    res = population_uniqueness(profile)
    assert res.dankar_model == "zayatz"  # f = 0.05 <= 0.1: Pitman, else Zayatz
    assert "Pitman unavailable" in res.dankar_reason
    # Zayatz: only size-1 classes -> P(F=1|f=1) = 1 and S1 = c1 N / n = N
    assert res.uniques == pytest.approx(1000.0, rel=1e-14)
    no_fallback = population_uniqueness(profile, zayatz_fallback=False)
    assert no_fallback.dankar_model == "none" and no_fallback.uniques == 0.0


# --- Zayatz -----------------------------------------------------------------------------------

def _zayatz_exact(sizes, classes, big_n):
    n = sum(j * c for j, c in zip(sizes, classes, strict=True))
    c1 = dict(zip(sizes, classes, strict=True)).get(1, 0)

    def p1(j):  # hypergeometric P(one of j marked items in a sample of n from N)
        return Fraction(math.comb(j, 1) * math.comb(big_n - j, n - 1), math.comb(big_n, n))

    cond = Fraction(c1) * p1(1) / sum(c * p1(j) for j, c in zip(sizes, classes, strict=True))
    return c1 * cond * Fraction(big_n, n)


@pytest.mark.parametrize("big_n", [24, 25, 60, 1000, 10**6])
def test_zayatz_equals_exact_rational(big_n):
    sizes, classes = [1, 2, 3, 5], [5, 3, 1, 2]  # n = 24
    est = zayatz_uniques(FrequencyProfile(np.array(sizes), np.array(classes), float(big_n)))
    assert est.uniques == pytest.approx(float(_zayatz_exact(sizes, classes, big_n)), rel=1e-13)
    if big_n == 24:
        assert est.uniques == 5.0  # the sample is the population


def test_zayatz_against_scipy_hypergeometric(adult_table):
    profile = FrequencyProfile.from_counts(adult_table.counts, 150810.0)
    p = stats.hypergeom.pmf(1, 150810, profile.sizes, profile.n)
    c1 = profile.count(1)
    expect = c1 * (c1 * p[0] / float(profile.classes @ p)) * 150810.0 / profile.n
    assert zayatz_uniques(profile).uniques == pytest.approx(expect, rel=1e-10)


# --- SNB --------------------------------------------------------------------------------------

def _snb_sample_class_probabilities(alpha, beta, pi, fmax=20000):
    """P(f = 1), P(f = 2) when F = 1 + NegBin(alpha, beta) and f | F ~ Binomial(F, pi)."""
    big_f = np.arange(1, fmax + 1)
    p_f = stats.nbinom.pmf(big_f - 1, alpha, beta)
    assert p_f.sum() > 1 - 1e-12  # the series is summed far enough
    p1 = np.sum(p_f * stats.binom.pmf(1, big_f, pi))
    p2 = np.sum(p_f * stats.binom.pmf(2, big_f, pi))
    return p1, p2


def _check_snb_moments(profile, est):
    alpha, beta, k = (est.parameters[x] for x in ("alpha", "beta", "K"))
    p1, p2 = _snb_sample_class_probabilities(alpha, beta, profile.sampling_fraction)
    assert k * p1 == pytest.approx(profile.count(1), rel=1e-9)
    assert k * p2 == pytest.approx(profile.count(2), rel=1e-9)
    assert est.uniques == pytest.approx(k * stats.nbinom.pmf(0, alpha, beta), rel=1e-12)


def test_snb_solution_reproduces_c1_and_c2_by_series():
    # samples of populations drawn from the SNB model itself
    rng = np.random.default_rng(0)
    for alpha, beta, k, pi in [(0.5, 0.3, 20_000, 0.1), (0.3, 0.2, 50_000, 0.2),
                               (1.0, 0.5, 10_000, 0.05)]:
        big_f = 1 + rng.negative_binomial(alpha, beta, size=k)
        f = rng.binomial(big_f, pi)
        profile = FrequencyProfile.from_counts(f[f > 0], float(big_f.sum()))
        est = snb_uniques(profile)
        assert est.available, est.note
        _check_snb_moments(profile, est)


def test_arx_snb_second_equation_is_not_the_model():
    # ARX writes s^+(alpha+2) where the model has s^-(alpha+2): the series tells them apart
    alpha, beta, pi = 0.4, 0.3, 0.2
    d = (1 - pi) * (1 - beta)
    s = 1 - d
    model = pi**2 * alpha * (1 - beta) * beta**alpha * s ** -(alpha + 2) * (2 - (1 - alpha) * d) / 2
    arx = pi**2 * alpha * (1 - beta) * beta**alpha * s ** (alpha + 2) * (2 - (1 - alpha) * d) / 2
    _, p2 = _snb_sample_class_probabilities(alpha, beta, pi)
    assert model == pytest.approx(p2, rel=1e-12)
    assert abs(arx / p2 - 1) > 0.5


def test_shlosser_by_hand():
    sizes, classes = [1, 2, 3], [6, 3, 1]
    profile = FrequencyProfile(np.array(sizes), np.array(classes), 60.0)
    q = Fraction(15, 60)
    v1 = sum(j * q**2 * (1 - q**2) ** (j - 1) * c for j, c in zip(sizes, classes, strict=True))
    v2 = sum((1 - q) ** j * ((1 + q) ** j - 1) * c for j, c in zip(sizes, classes, strict=True))
    v3 = sum((1 - q) ** j * c for j, c in zip(sizes, classes, strict=True))
    v4 = sum(j * q * (1 - q) ** (j - 1) * c for j, c in zip(sizes, classes, strict=True))
    expect = 10 + 6 * v1 / v2 * (v3 / v4) ** 2
    assert _shlosser(profile, 0.25, arx=False) == pytest.approx(float(expect), rel=1e-14)
    # ARX's arithmetic: sum of ((1-q)^j (1+q)^j c_j - 1)
    v2_arx = sum((1 - q) ** j * (1 + q) ** j * c - 1 for j, c in zip(sizes, classes, strict=True))
    assert _shlosser(profile, 0.25, arx=True) == pytest.approx(
        float(10 + 6 * v1 / v2_arx * (v3 / v4) ** 2), rel=1e-14)
    assert _shlosser(profile, 1.0, arx=False) == 10.0  # everything sampled: K = u


def test_snb_unavailable_without_pairs():
    profile = FrequencyProfile(np.array([1, 3]), np.array([10, 4]), 500.0)
    est = snb_uniques(profile)
    assert not est.available and "no root" in est.note


# --- the rule and the interface ------------------------------------------------------------------

def test_dankar_takes_the_smaller_of_zayatz_and_snb_above_one_tenth():
    # samples of SNB populations where each of the two is the smaller
    rng = np.random.default_rng(0)
    chosen = []
    for alpha, beta, k, pi in [(0.5, 0.3, 20_000, 0.3), (0.1, 0.05, 20_000, 0.4)]:
        big_f = 1 + rng.negative_binomial(alpha, beta, size=k)
        f = rng.binomial(big_f, pi)
        res = population_uniqueness(FrequencyProfile.from_counts(f[f > 0], float(big_f.sum())))
        z, s = res.estimates["zayatz"], res.estimates["snb"]
        assert res.sampling_fraction > 0.1 and z.available and s.available
        assert res.uniques == min(z.uniques, s.uniques)
        assert res.dankar_model == ("zayatz" if z.uniques < s.uniques else "snb")
        chosen.append(res.dankar_model)
    assert chosen == ["snb", "zayatz"]


def test_no_sample_uniques_gives_zero():
    md = sdcrisk.Microdata.from_source({"a": [1, 1, 2, 2]}, keys=["a"], sampling_fraction=0.5)
    res = population_uniqueness(md)
    assert res.dankar_model == "none" and res.uniques == 0.0 and res.share == 0.0
    assert all(e.uniques == 0.0 for e in res.estimates.values())


def test_inputs_agree_and_result_serialises():
    md = sdcrisk.Microdata.from_source("example:uk_census2011", sampling_fraction=0.01,
                                       keys=["region", "sex", "age_band", "ethnic_group",
                                             "religion", "health"])
    table = sdcrisk.tabulate(md)
    a = population_uniqueness(md)
    b = population_uniqueness(table)
    c = population_uniqueness(FrequencyProfile.from_counts(table.counts, md.population_size))
    d = population_uniqueness(table, population_size=1_000_000.0)
    assert a.uniques == b.uniques == c.uniques == d.uniques
    assert a.dankar_model == "pitman" and a.population_size == 1_000_000.0
    payload = json.loads(a.to_json())
    assert payload["dankar"]["model"] == "pitman"
    assert payload["estimates"]["zayatz"]["available"] is True
    assert "PopulationUniqueness(" in repr(a)
    assert list(a.summary().index)[-1] == "dankar (pitman)"
    with pytest.raises(TypeError):
        a.estimates["pitman"] = None


@pytest.mark.parametrize("kwargs", [{"sampling_fraction": 0.0}, {"sampling_fraction": 1.5},
                                    {"sampling_fraction": 0.1, "population_size": 100.0},
                                    {"population_size": 3.0}, {"snb_equations": "chen"}])
def test_bad_parameters(kwargs):
    md = sdcrisk.Microdata.from_source({"a": [1, 2, 2, 3, 4]}, keys=["a"])
    with pytest.raises(sdcrisk.ParameterError):
        population_uniqueness(md, **kwargs)


def test_bad_input():
    with pytest.raises(sdcrisk.InputError):
        population_uniqueness({"a": [1, 2]})
    with pytest.raises(sdcrisk.InputError):
        FrequencyProfile(np.array([2, 1]), np.array([1, 1]), 10.0)


@pytest.mark.slow
def test_close_to_the_true_population_uniques(shared_data):
    # CPS population (299,285 records), 20% Bernoulli sample: Dankar's estimate of the
    # number of population uniques within 20% of the true count (measured: 18% and 12%)
    data = pd.read_csv(shared_data("census_income_kdd", "census_income_kdd.csv.gz"))
    for keys in (["age", "sex", "race", "marital_stat", "education", "citizenship"],
                 ["age", "sex", "race", "education", "major_occupation_code"]):
        pop = sdcrisk.Microdata.from_source(data, keys=keys)
        true = int(np.sum(sdcrisk.tabulate(pop).counts == 1))
        rows = np.flatnonzero(np.random.default_rng(1).random(pop.n) < 0.2)
        res = population_uniqueness(pop.subset(rows, population_size=pop.n))
        assert abs(res.uniques / true - 1) < 0.2, (keys, res.uniques, true)


@pytest.mark.parametrize("sizes,classes", [([1, 2, 3, 4], [143, 73, 29, 6]),
                                           ([1, 2, 3, 4, 5, 6], [53, 49, 37, 20, 8, 3])])
def test_pitman_degenerate_profiles_end_with_a_reason(sizes, classes):
    """Regression: these profiles made the fallback root finder wander to theta -> -inf (hang)
    or overflow exp(); now the fit stays in the parameter space and says why it has no value."""
    import time

    t0 = time.perf_counter()
    est = pitman_uniques(FrequencyProfile(sizes, classes, 40_000))
    assert time.perf_counter() - t0 < 10
    if est.available:
        assert 0 <= est.uniques <= 40_000
    else:
        assert math.isnan(est.uniques) and est.note
