"""Exchangeable baselines (spec B): NegativeBinomialRisk, PoissonGammaRisk, SkinnerElliotTheta."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from conftest import records_from_counts
from sdcrisk import (
    ConvergenceWarning,
    InputError,
    Microdata,
    NegativeBinomialRisk,
    ParameterError,
    PoissonGammaRisk,
    SkinnerElliotTheta,
    bf_risk,
    tabulate,
)
from sdcrisk.core.measures import household_risk

BF_GOLDEN = [
    (1, 0.5, 0.6931471806), (1, 0.1, 0.2558427881), (1, 0.01, 0.0465168706),
    (2, 0.5, 0.3068528194), (2, 0.1, 0.0826841347), (2, 0.01, 0.0096311427),
    (3, 0.5, 0.1931471806), (3, 0.1, 0.0463684295), (3, 0.01, 0.0049532208),
    (4, 0.1, 0.0318849893), (5, 0.2, 0.0471446334), (10, 0.05, 0.0055213174),
]
# spec G.2 "sdcMicro approx p/(f-(1-p))" column, f >= 3
SDCMICRO_APPROX = [(3, 0.5, 0.2), (3, 0.1, 0.0476190476), (3, 0.01, 0.0049751244),
                   (4, 0.1, 0.0322580645), (5, 0.2, 0.0476190476), (10, 0.05, 0.0055248619)]


def hyp_ref(f, r, p):
    with mpmath.workdps(30):
        p_ = mpmath.mpf(p)
        return float(p_**r / f * mpmath.hyp2f1(r, f, f + 1, 1 - p_))


def table_from_counts(counts, *, population_size=None, weights=None, household=None,
                      levels=None):
    cells = records_from_counts(counts)
    data = {"c": cells}
    if weights is not None:
        data["w"] = np.asarray(weights, float)
    if household is not None:
        data["h"] = np.asarray(household)
    md = Microdata.from_source(
        data, ["c"], weights="w" if weights is not None else None,
        household="h" if household is not None else None, population_size=population_size,
        levels=None if levels is None else {"c": levels}, max_levels=None)
    return tabulate(md)


# --- bf_risk modes ---------------------------------------------------------------------------

def test_bf_exact_equals_golden_table():
    f = np.array([row[0] for row in BF_GOLDEN])
    p = np.array([row[1] for row in BF_GOLDEN])
    np.testing.assert_allclose(bf_risk(f, p, "exact"), [row[2] for row in BF_GOLDEN],
                               rtol=0, atol=5e-11)


def test_bf_sdcmicro_mode():
    f = np.array([row[0] for row in SDCMICRO_APPROX])
    p = np.array([row[1] for row in SDCMICRO_APPROX])
    got = bf_risk(f, p, "sdcmicro")
    np.testing.assert_allclose(got, [row[2] for row in SDCMICRO_APPROX], rtol=0, atol=5e-11)
    np.testing.assert_allclose(got, p / (f - (1 - p)), rtol=1e-15)
    # f = 1, 2: exact closed forms
    f12 = np.array([1, 1, 1, 2, 2, 2])
    p12 = np.array([0.5, 0.1, 0.01, 0.5, 0.1, 0.01])
    np.testing.assert_allclose(bf_risk(f12, p12, "sdcmicro"), [r[2] for r in BF_GOLDEN[:6]],
                               atol=5e-11, rtol=0)


def _muargus_series(f, p):
    # p/f sum_{m=0}^{7} m! q^m / ((f+1)(f+2)...(f+m))  (mu-Argus 4.1, truncated at m = 7)
    q = 1 - p
    return p / f * sum(math.factorial(m) * q**m / math.prod(f + i for i in range(1, m + 1))
                       for m in range(8))


def test_bf_muargus_mode():
    cases = [(4, 0.1), (5, 0.2), (10, 0.05), (4, 0.9), (25, 0.003)]
    got = bf_risk(np.array([c[0] for c in cases]), np.array([c[1] for c in cases]), "muargus")
    np.testing.assert_allclose(got, [_muargus_series(f, p) for f, p in cases], rtol=1e-13)
    # the truncation makes it a strict underestimate of the exact value
    exact = bf_risk(np.array([c[0] for c in cases]), np.array([c[1] for c in cases]), "exact")
    assert np.all(got < exact)
    # f <= 3: exact closed forms (f = 3 closed form of spec B.2)
    f = np.array([1, 2, 3, 3, 3])
    p = np.array([0.1, 0.1, 0.5, 0.1, 0.01])
    np.testing.assert_allclose(bf_risk(f, p, "muargus"),
                               [0.2558427881, 0.0826841347, 0.1931471806, 0.0463684295,
                                0.0049532208], atol=5e-11, rtol=0)


def test_bf_sdcmicro_legacy_shifts_p():
    p = np.array([0.1, 0.1, 0.2])
    f = np.array([1, 3, 5])
    got = bf_risk(f, p, "sdcmicro_legacy")
    ps = p - 1e-4
    expected = [ps[0] / (1 - ps[0]) * math.log(1 / ps[0]),
                ps[1] / (3 - (1 - ps[1])), ps[2] / (5 - (1 - ps[2]))]
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    # no shift where p >= 1
    assert bf_risk(np.array([2]), np.array([1.0]), "sdcmicro_legacy")[0] == 0.5


@pytest.mark.parametrize("mode", ["exact", "sdcmicro", "sdcmicro_legacy", "muargus"])
def test_bf_p_at_least_one_gives_one_over_f(mode):
    got = bf_risk(np.array([1, 2, 3, 7]), np.array([1.0, 1.0, 1.5, 4.0]), mode)
    np.testing.assert_array_equal(got, [1.0, 0.5, 1 / 3, 1 / 7])


def test_bf_unknown_mode():
    with pytest.raises(ParameterError):
        bf_risk(np.array([1]), np.array([0.5]), "fast")
    with pytest.raises(ParameterError):
        NegativeBinomialRisk(mode="fast")


def test_fw_public_exchangeable_value():
    # FW: BF exchangeable risk of a sample unique with p = n/N = 4761/154295 is 0.1107
    assert round(float(bf_risk(np.array([1]), np.array([4761 / 154_295]))[0]), 4) == 0.1107


# --- NegativeBinomialRisk ---------------------------------------------------------------------

def _fw_margin_table():
    # FW South West sample: n = 4761, N = 154295, n1 = 1543, n2 = 368; the rest of the
    # records (4761 - 1543 - 736 = 2482) in one big cell
    counts = [1] * 1543 + [2] * 368 + [4761 - 1543 - 2 * 368]
    tab = table_from_counts(counts, population_size=154_295)
    assert tab.n == 4761 and tab.sample_uniques == 1543
    return tab


def test_nb_on_fw_margins():
    tab = _fw_margin_table()
    res = NegativeBinomialRisk().fit(tab)
    p = 4761 / 154_295
    su = tab.counts == 1
    risk = res.cell_risk()
    assert round(float(risk[su][0]), 4) == 0.1107
    assert np.all(risk[su] == risk[su][0])
    # tau1 = n1 p, P(PU|SU) = p
    assert res.estimate("tau1") == pytest.approx(1543 * p, rel=1e-12)
    assert res.estimate("p_pu_given_su") == pytest.approx(p, rel=1e-12)
    assert res.estimate("tau2") == pytest.approx(1543 * hyp_ref(1, 1, p), rel=1e-10)
    # doubletons: the f = 2 closed form
    q = 1 - p
    assert risk[tab.counts == 2][0] == pytest.approx(p / q - (p / q) ** 2 * math.log(1 / p),
                                                     rel=1e-12)
    assert res.fitted["p_min"] == pytest.approx(p) and res.fitted["p_max"] == pytest.approx(p)


def test_nb_weighted_uses_weight_sums():
    # cells f = 1, 1, 2, 3 with weights giving F_hat = 10, 2, 8, 3 -> p = 0.1, 0.5, 0.25, 1
    counts = [1, 1, 2, 3]
    w = [10.0, 2.0, 4.0, 4.0, 1.0, 1.0, 1.0]
    tab = table_from_counts(counts, weights=w)
    for mode in ("exact", "sdcmicro"):
        res = NegativeBinomialRisk(mode=mode).fit(tab)
        risk = res.cell_risk()
        assert risk[0] == pytest.approx(0.2558427881, abs=5e-11)
        assert risk[1] == pytest.approx(0.6931471806, abs=5e-11)
        assert risk[2] == pytest.approx(hyp_ref(2, 2, 0.25), rel=1e-10)
        assert risk[3] == pytest.approx(1 / 3, rel=1e-15)  # F_hat = f -> 1/f
        np.testing.assert_allclose(res.cell_risk("population_unique"), [0.1, 0.5, 0, 0],
                                   rtol=1e-15)
        assert res.estimate("tau1") == pytest.approx(0.6)
        assert res.estimate("expected_reidentifications") == pytest.approx(
            risk[0] + risk[1] + 2 * risk[2] + 3 * risk[3], rel=1e-14)
        assert res.population_size == pytest.approx(sum(w))


def test_nb_unweighted_without_population_is_the_population():
    tab = table_from_counts([1, 2, 5])
    for mode in ("exact", "sdcmicro", "muargus"):
        res = NegativeBinomialRisk(mode=mode).fit(tab)
        np.testing.assert_allclose(res.cell_risk(), [1.0, 0.5, 0.2], rtol=1e-15)
        assert res.estimate("expected_reidentifications") == pytest.approx(3.0)
        assert res.estimate("tau1") == 1.0 and res.estimate("tau2") == 1.0
        assert any("whole population" in a for a in res.assumptions)


def test_nb_sdcmicro_mode_keeps_exact_values_apart():
    tab = table_from_counts([1, 1, 3, 10], population_size=150)  # p = n/N = 0.1
    res = NegativeBinomialRisk(mode="sdcmicro").fit(tab)
    np.testing.assert_allclose(res.cell_risk(),
                               [0.2558427881, 0.2558427881, 0.0476190476, 0.1 / 9.1],
                               atol=5e-11, rtol=0)
    np.testing.assert_allclose(res.cell_risk("expected_inverse")[2:],
                               [0.0463684295, hyp_ref(10, 10, 0.1)], atol=5e-11, rtol=0)
    assert res.estimate("tau2") == pytest.approx(2 * 0.2558427881, abs=1e-10)
    # f = 1 is exact in sdcMicro mode, so the interval for tau2 is kept
    assert res.measures["tau2"].lower is not None


def test_nb_population_size_override():
    tab = table_from_counts([1, 1, 2])
    res = NegativeBinomialRisk().fit(tab, population_size=40)
    assert res.population_size == 40
    assert res.table.population_size_source == "given"
    assert res.cell_risk()[0] == pytest.approx(0.2558427881, abs=5e-11)  # p = 4/40
    with pytest.raises(InputError):
        NegativeBinomialRisk().fit(tab, population_size=3)
    with pytest.raises(ParameterError):
        NegativeBinomialRisk().fit(tab.cell_codes)


def test_household_measures_only_with_household_column():
    counts = [1, 1, 2, 3]
    w = [10.0, 2.0, 4.0, 4.0, 1.0, 1.0, 1.0]
    res = NegativeBinomialRisk().fit(table_from_counts(counts, weights=w))
    assert "household_expected_reidentifications" not in res.measures
    assert "household_global_risk" not in res.measures
    with pytest.raises(ValueError):
        res.household_record_risk()
    hh = [0, 0, 1, 1, 2, 2, 2]
    res_h = NegativeBinomialRisk().fit(table_from_counts(counts, weights=w, household=hh))
    rec = res_h.record_risk()
    expected = household_risk(rec, np.array(hh))
    # household 0 holds the two sample uniques: 1 - (1 - r1)(1 - r2)
    assert expected[0] == pytest.approx(1 - (1 - 0.2558427881) * (1 - 0.6931471806), abs=1e-10)
    np.testing.assert_allclose(res_h.household_record_risk(), expected, rtol=1e-15)
    assert res_h.estimate("household_expected_reidentifications") == pytest.approx(
        expected.sum(), rel=1e-14)
    assert res_h.estimate("household_global_risk") == pytest.approx(expected.sum() / 7)
    # the record-level measures do not depend on the household column
    assert res_h.estimate("expected_reidentifications") == res.estimate(
        "expected_reidentifications")


@pytest.mark.parametrize("mode", ["exact", "sdcmicro", "muargus"])
def test_record_risks_sum_to_file_totals(mode):
    rng = np.random.default_rng(5)
    counts = rng.geometric(0.4, 300)
    weights = rng.uniform(2, 40, int(counts.sum()))
    res = NegativeBinomialRisk(mode=mode).fit(table_from_counts(counts, weights=weights))
    rec = res.record_risk()
    assert rec.shape == (counts.sum(),)
    assert rec.sum() == pytest.approx(res.estimate("expected_reidentifications"), rel=1e-12)
    assert res.estimate("global_risk") == pytest.approx(rec.mean(), rel=1e-12)
    pu = res.cell_risk("population_unique")
    assert pu.sum() == pytest.approx(res.estimate("tau1"), rel=1e-12)
    assert np.all(pu[counts != 1] == 0)
    su = res.table.counts == 1
    assert res.cell_risk()[su].sum() == pytest.approx(res.estimate("tau2"), rel=1e-12)
    assert res.estimate("p_pu_given_su") == pytest.approx(res.estimate("tau1") / su.sum())


# --- PoissonGammaRisk -------------------------------------------------------------------------

def _g2_pg_table():
    # spec G.2: n = 1000, N = 100000, K = 10000 (cell_space), alpha = 0.5, beta = 0.0002
    counts = [1] * 400 + [2] * 100 + [4] * 100
    tab = table_from_counts(counts, population_size=100_000)
    assert tab.n == 1000 and tab.n_cells == 600
    return tab


def test_poisson_gamma_fixed_alpha_golden_values():
    tab = _g2_pg_table()
    res = PoissonGammaRisk(alpha=0.5, cell_space=10_000).fit(tab)
    p = 1.2 / 21  # (1 + n beta) / (1 + N beta)
    alpha = 0.5
    assert res.fitted["p"] == pytest.approx(p, rel=1e-14)
    assert res.fitted["beta"] == pytest.approx(0.0002, rel=1e-14)
    assert res.fitted["alpha"] == 0.5
    su = tab.counts == 1
    r1 = res.cell_risk("population_unique")
    r2 = res.cell_risk("reidentification")
    # P(F=1 | f=1) = p^(alpha+1) = 0.0136597555 (G.2)
    np.testing.assert_allclose(r1[su], p ** (alpha + 1), rtol=1e-14)
    assert r1[su][0] == pytest.approx(0.0136597555, abs=5e-11)
    # E[1/F | f=1] = (p - p^(alpha+1)) / (alpha (1-p)) = 0.0922368822 (spec B.1, G.2)
    closed = (p - p ** (alpha + 1)) / (alpha * (1 - p))
    np.testing.assert_allclose(r2[su], closed, rtol=1e-12)
    assert r2[su][0] == pytest.approx(0.0922368822, abs=5e-11)
    # general f: NB(alpha + f, p)
    assert r2[tab.counts == 2][0] == pytest.approx(hyp_ref(2, 2.5, p), rel=1e-10)
    assert r2[tab.counts == 4][0] == pytest.approx(hyp_ref(4, 4.5, p), rel=1e-10)
    # file totals and the unobserved cells' contribution to P(PU):
    # (K - observed) * P(U = 1) with U ~ NB(alpha, p): alpha p^alpha q
    tau1 = 400 * p ** (alpha + 1)
    unobserved = (10_000 - 600) * alpha * p**alpha * (1 - p)
    assert res.estimate("tau1") == pytest.approx(tau1, rel=1e-12)
    assert res.estimate("tau2") == pytest.approx(400 * closed, rel=1e-12)
    assert res.estimate("p_pu") == pytest.approx((tau1 + unobserved) / 100_000, rel=1e-12)
    assert res.estimate("p_pu_given_su") == pytest.approx(p ** (alpha + 1), rel=1e-12)
    assert res.diagnostics["alpha_source"] == "given"


def test_poisson_gamma_likelihood_is_the_nb_marginal():
    # the fitted log-likelihood equals the NB marginal of spec B.1 summed over all K cells,
    # up to the dropped log f! terms
    tab = _g2_pg_table()
    k = 10_000
    res = PoissonGammaRisk(alpha=0.5, cell_space=k).fit(tab)
    beta = 0.0002
    f_all = np.concatenate([tab.counts, np.zeros(k - tab.n_cells, int)])
    ll = stats.nbinom.logpmf(f_all, 0.5, 1 / (1 + 1000 * beta)).sum()
    ll_without_factorials = ll + special.gammaln(f_all + 1.0).sum()
    assert res.fitted["log_likelihood"] == pytest.approx(ll_without_factorials, rel=1e-12)


def _simulate_pg(seed, k=20_000, alpha=0.3, big_n=200_000, fraction=0.5):
    rng = np.random.default_rng(seed)
    lam = rng.gamma(alpha, 1 / (k * alpha), k)
    big_f = rng.poisson(big_n * lam)
    f = rng.binomial(big_f, fraction)
    md = Microdata.from_source({"c": np.repeat(np.arange(k), f)}, ["c"],
                               population_size=int(big_f.sum()), max_levels=None)
    return tabulate(md), k


def test_poisson_gamma_ml_recovers_alpha():
    tab, k = _simulate_pg(seed=1)
    res = PoissonGammaRisk(cell_space=k).fit(tab)
    alpha = res.fitted["alpha"]
    assert alpha == pytest.approx(0.3, abs=0.03)
    assert res.diagnostics["alpha_source"] == "maximum likelihood"
    assert res.diagnostics["alpha_at_search_bound"] is False
    # it is a maximum of the NB marginal likelihood (computed independently)
    n = tab.n
    f_all = np.concatenate([tab.counts, np.zeros(k - tab.n_cells, int)])

    def loglik(a):
        return stats.nbinom.logpmf(f_all, a, 1 / (1 + n / (k * a))).sum()

    assert loglik(alpha) >= loglik(alpha * 1.01)
    assert loglik(alpha) >= loglik(alpha / 1.01)
    # the moment estimator lands near the truth too
    alpha_mom = PoissonGammaRisk(cell_space=k, fit_method="moments").fit(tab).fitted["alpha"]
    assert alpha_mom == pytest.approx(0.3, abs=0.05)



def test_poisson_gamma_ml_is_the_score_root():
    """The ML alpha is where mpmath's derivative of the NB marginal log-likelihood (50
    digits, every cell term by term) vanishes, to 1e-11 of alpha: a root of the closed-form
    score, not a bounded search's stop (which left alpha 5e-8 apart between library
    versions)."""
    mpmath.mp.dps = 50
    tab, k = _simulate_pg(seed=1)
    alpha = PoissonGammaRisk(cell_space=k).fit(tab).fitted["alpha"]
    n = tab.n
    values, cells = np.unique(tab.counts, return_counts=True)

    def loglik(a):  # log NB(f; a, 1 / (1 + n / (k a))) summed over the K cells, up to a constant
        q = mpmath.mpf(n) / (k * a)
        body = mpmath.fsum(int(c) * (mpmath.loggamma(a + int(f)) - mpmath.loggamma(a)
                                     + int(f) * mpmath.log(q / (1 + q)))
                           for f, c in zip(values, cells, strict=True))
        return body - k * a * mpmath.log1p(q)

    slope = mpmath.diff(loglik, mpmath.mpf(alpha))
    curvature = mpmath.diff(loglik, mpmath.mpf(alpha), 2)
    assert abs(float(slope / curvature)) < 1e-11 * alpha  # the Newton step left to the root


def test_poisson_gamma_moments_formula():
    # K = 6 cells: f = 4, 0, 0, 1, 0, 5 (n = 10); s^2 = sum f^2 / K - (n/K)^2
    tab = table_from_counts([4, 1, 5])
    k, n = 6, 10
    s2 = (16 + 1 + 25) / k - (n / k) ** 2
    beta = (k * s2 - n) / n**2
    res = PoissonGammaRisk(cell_space=k, fit_method="moments").fit(tab, population_size=100)
    assert res.fitted["alpha"] == pytest.approx(1 / (k * beta), rel=1e-12)


def test_poisson_gamma_errors():
    with pytest.raises(ParameterError):
        PoissonGammaRisk(alpha=0.0)
    with pytest.raises(ParameterError):
        PoissonGammaRisk(alpha=float("inf"))
    with pytest.raises(ParameterError):
        PoissonGammaRisk(fit_method="bayes")
    with pytest.raises(ParameterError):
        PoissonGammaRisk(cell_space=0)
    tab = table_from_counts([1, 2, 3])
    with pytest.raises(ParameterError, match="cell_space"):
        PoissonGammaRisk(cell_space=2).fit(tab)
    # equal counts are not overdispersed (a sample: a census is answered without a fit)
    with pytest.raises(ParameterError, match="overdispersed"):
        PoissonGammaRisk(fit_method="moments").fit(table_from_counts([2, 2, 2],
                                                                     population_size=600))


def test_poisson_gamma_boundary_warns():
    # counts with no overdispersion at all (every cell f = 3): the exact likelihood increases
    # monotonically in alpha (the Poisson limit), so ML alpha runs to the upper search bound
    tab = table_from_counts([3] * 50, population_size=1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = PoissonGammaRisk().fit(tab)
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert res.diagnostics["alpha_at_search_bound"] is True


# --- SkinnerElliotTheta -----------------------------------------------------------------------

def test_skinner_elliot_fw_margins():
    res = SkinnerElliotTheta().fit(_fw_margin_table())
    pi = 4761 / 154_295
    expected = pi * 1543 / (pi * 1543 + 2 * (1 - pi) * 368)
    assert res.estimate("theta") == pytest.approx(expected, rel=1e-14)
    assert round(res.estimate("theta"), 4) == 0.0626
    assert res.fitted["n1"] == 1543 and res.fitted["n2"] == 368
    assert res.measures["theta"].lower is None
    assert res.cell_risk_values == {}


def test_skinner_elliot_without_small_cells():
    res = SkinnerElliotTheta().fit(table_from_counts([3, 4], population_size=70))
    assert res.estimate("theta") is None
