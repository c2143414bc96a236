"""Zaslavsky & Horton (1998) decision rule: Tables 1-2, Fig. 1, model, losses, microdata, CLI.

Reference numbers and their sources: ``tests/reference/zaslavsky_horton.md``.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

from sdcrisk import (
    BetaBinomialPrior,
    CallableLoss,
    ConvergenceWarning,
    DomainTable,
    ExponentialLoss,
    GammaLoss,
    InputError,
    Microdata,
    MixtureLoss,
    ParameterError,
    SuppressionLoss,
    decide,
    decision_table,
    fit_beta_binomial,
    parse_loss,
    plot_tradeoff,
    posterior_table,
    sensitivity,
)
from sdcrisk.cli import main

ZH1 = BetaBinomialPrior(alpha=1, beta=10)
TYPES1 = [(3, 8, 1), (5, 20, 3)]  # proportion 1:3

# --- paper Table 1 (n = 3, N = 8), rows y = 0..3, columns Y = 0..8 -------------------------------
T1_P = [[0.722, 0.212, 0.053, 0.011, 0.002, 0.000, 0, 0, 0],
        [0, 0.510, 0.319, 0.127, 0.036, 0.007, 0.001, 0, 0],
        [0, 0, 0.350, 0.350, 0.200, 0.077, 0.019, 0.002, 0],
        [0, 0, 0, 0.234, 0.334, 0.257, 0.128, 0.041, 0.007]]
# L1(1, 8) is printed 0.407 in the paper; e^-0.8 = 0.449 (spec H.2): corrected here
T1_L = [[0] * 9,
        [1, 0.905, 0.819, 0.741, 0.670, 0.607, 0.549, 0.497, 0.449],
        [2, 1.810, 1.637, 1.482, 1.341, 1.213, 1.098, 0.993, 0.899],
        [3, 2.715, 2.456, 2.222, 2.011, 1.820, 1.646, 1.490, 1.348]]
T1_PL = [[0] * 9,
         [0, 0.461, 0.261, 0.094, 0.024, 0.004, 0, 0, 0],
         [0, 0, 0.574, 0.519, 0.269, 0.093, 0.021, 0.002, 0],
         [0, 0, 0, 0.519, 0.671, 0.467, 0.211, 0.061, 0.009]]
T1_R1 = [0, 0.846, 1.479, 1.939]
T1_R1_PRECISE = [0.0, 0.845619, 1.478732, 1.938817]

# --- paper Table 2, in the printed order --------------------------------------------------------
# n, N, y, P(n,N), P(y|n,N), R1, L0, R1/L0 (None = dash), P.R1, P.L0, cum P.R1, remaining P.L0
T2 = [
    (3, 8, 0, ".25", ".769", ".000", "0", None, ".000", ".000", ".000", ".409"),
    (5, 20, 0, ".75", ".667", ".000", "0", None, ".000", ".000", ".000", ".409"),
    (5, 20, 5, ".75", ".0003", "1.783", "5", ".357", ".0004", ".001", ".0004", ".408"),
    (5, 20, 4, ".75", ".003", "1.726", "4", ".432", ".004", ".010", ".005", ".398"),
    (5, 20, 3, ".75", ".018", "1.565", "3", ".522", ".022", ".041", ".026", ".357"),
    (5, 20, 2, ".75", ".073", "1.261", "2", ".630", ".069", ".110", ".096", ".247"),
    (3, 8, 3, ".25", ".003", "1.939", "3", ".646", ".002", ".003", ".097", ".244"),
    (3, 8, 2, ".25", ".035", "1.479", "2", ".739", ".013", ".017", ".110", ".227"),
    (5, 20, 1, ".75", ".238", ".761", "1", ".761", ".136", ".179", ".246", ".048"),
    (3, 8, 1, ".25", ".192", ".846", "1", ".846", ".041", ".048", ".287", ".000"),
]
T2_COLUMNS = ("share", "p_y", "R1", "L0", "ratio", "w_R1", "w_L0", "cum_risk",
              "remaining_loss")


def half_unit(printed: str) -> float:
    """Half a unit of the last printed digit: '.0003' -> 5e-5, '5' -> 0.5."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10.0**-decimals + 1e-12


def check_table2(rows: list[dict]) -> None:
    """Every printed entry of Table 2, in order, to the printed rounding."""
    assert [(r["n"], r["N"], r["y"]) for r in rows] == [t[:3] for t in T2]
    for r, printed in zip(rows, T2, strict=True):
        for col, text in zip(T2_COLUMNS, printed[3:], strict=True):
            if text is None:
                assert r[col] is None or math.isnan(r[col]), (r, col)
                continue
            assert abs(r[col] - float(text)) <= half_unit(text), (r["n"], r["y"], col, r[col])


# --- Table 1 -----------------------------------------------------------------------------------
def test_table1_to_printed_rounding():
    t = posterior_table(3, 8, ZH1, "exp:10")
    for name, printed in (("p", T1_P), ("L1", T1_L), ("p_L1", T1_PL)):
        ours = t.pivot(index="y", columns="Y", values=name).to_numpy()
        for y in range(4):
            for big_y in range(9):
                want = printed[y][big_y]
                if name == "p" and not y <= big_y <= y + 5:
                    assert ours[y, big_y] == 0.0  # impossible Y: exactly zero
                assert abs(ours[y, big_y] - want) <= 0.0005 + 1e-12, (name, y, big_y)
    r1 = t.groupby("y")["R1"].first().to_numpy()
    assert np.all(np.abs(r1 - T1_R1) <= 0.0005)
    np.testing.assert_allclose(r1, T1_R1_PRECISE, atol=1e-6)


def test_table1_typo_corrected():
    # the paper prints 0.407 for L1(1, 8); exp(-0.8) = 0.449 (spec H.2)
    value = float(ExponentialLoss(10)(1, 8, 3, 8))
    assert abs(value - 0.449) < 5e-4 and abs(value - 0.407) > 0.04


def test_table1_rows_are_probabilities_and_posterior_mean():
    for y in range(4):
        p = ZH1.posterior(y, 3, 8)
        assert p.sum() == pytest.approx(1.0, abs=1e-14)
        assert np.dot(p, np.arange(9)) == pytest.approx(ZH1.posterior_mean(y, 3, 8), rel=1e-13)


# --- Table 2 -----------------------------------------------------------------------------------
def test_table2_exactly_as_printed():
    t = decision_table(TYPES1, ZH1, l1="exp:10", l0="y")
    check_table2(t.summary().to_dict(orient="records"))


def test_table2_higher_precision_values():
    t = decision_table(TYPES1, ZH1, l1="exp:10", l0="y").summary()
    by = {(r.n, r.y): r for r in t.itertuples()}
    np.testing.assert_allclose([by[(5, y)].p_y for y in range(6)],
                               [0.666667, 0.238095, 0.073260, 0.018315, 0.003330, 0.000333],
                               atol=1e-6)
    np.testing.assert_allclose([by[(3, y)].p_y for y in range(4)],
                               [0.769231, 0.192308, 0.034965, 0.003497], atol=1e-6)
    np.testing.assert_allclose([by[(5, y)].R1 for y in range(1, 6)],
                               [0.760750, 1.260687, 1.565449, 1.726281, 1.782940], atol=1e-6)
    np.testing.assert_allclose([by[(3, y)].R1 for y in range(1, 4)],
                               [0.845619, 1.478732, 1.938817], atol=1e-6)


def test_table2_totals_and_cumulative_reading():
    t = decision_table(TYPES1, ZH1, l1="exp:10", l0="y")
    assert t.total_loss == pytest.approx(9 / 22, abs=1e-12)
    assert t.total_risk == pytest.approx(0.286652, abs=1e-6)
    s = t.summary()
    # "0.026 ... if we publish the first five lines, and 0.357 ... for suppressing the rest"
    assert round(s.cum_risk[4], 3) == 0.026 and round(s.remaining_loss[4], 3) == 0.357
    assert s.remaining_loss.iloc[-1] == 0 and s.cum_risk.iloc[-1] == pytest.approx(t.total_risk)
    # P.R1 = 0.75 x P(y=3) x 1.565 (the paper's worked fifth line)
    assert s.w_R1[4] == pytest.approx(0.75 * s.p_y[4] * s.R1[4], rel=1e-14)


def test_table2_posterior_means_and_plugin_ordering():
    s = decision_table(TYPES1, ZH1, l1="exp:10", l0="y").summary()
    ey = s.EY[s.y > 0].to_numpy()
    np.testing.assert_allclose(ey, [10.625, 8.688, 6.750, 4.812, 4.429, 3.071, 2.875, 1.714],
                               atol=5e-4)
    # ordering by exp(-E[Y|y]/10) is the same as by R1/L0 (paper section 4)
    assert np.all(np.diff(np.exp(-ey / 10)) > 0)


def test_sensitivity_order_uses_decision_losses_evaluation_true_losses():
    t = decision_table(TYPES1, ZH1, l1="exp:10", l0="y", decision_l0="one")
    s = t.summary()
    # ordered by R1 / 1 (decision), while L0 stays y (true)
    nz = s[s.y > 0]
    assert np.all(np.diff(nz.decision_ratio.to_numpy()) >= 0)
    assert np.array_equal(nz.L0.to_numpy(), nz.y.to_numpy().astype(float))
    assert t.losses == {"l1": "exp:10", "l0": "y", "decision_l1": "exp:10",
                        "decision_l0": "one"}
    assert t.total_loss == pytest.approx(9 / 22, abs=1e-12)


# --- Fig. 1 ------------------------------------------------------------------------------------
FIG1_TYPES = [(10, 50, 1), (10, 200, 1), (20, 30, 1)]
FIG1_PRIOR = BetaBinomialPrior(0.5, 1.5)
# name: (decision L1, decision L0, paper %, spec % linear, spec % last cut-off)
FIG1 = {"optimal": ("exp:10", "y", 38, 38.46, 39.18),
        "L0=1": ("exp:10", "one", 53, 53.02, 54.95),
        "L1=y exp(-Y)": ("exp:1", "y", 44, 43.71, 44.06)}


def test_fig1_percentages():
    s = sensitivity(FIG1_TYPES, FIG1_PRIOR, l1="exp:10", l0="y",
                    alternatives={k: v[:2] for k, v in FIG1.items() if k != "optimal"},
                    risk_fraction=0.2)
    for name, (_, _, paper, linear, cutoff) in FIG1.items():
        assert abs(100 * s.loss_fractions[name] - paper) <= 1.0, name
        assert abs(100 * s.loss_fractions[name] - linear) <= 0.01, name
        assert abs(100 * s.cutoff_loss_fractions[name] - cutoff) <= 0.01, name
    assert set(s.summary().index) == set(FIG1)
    d = json.loads(s.to_json())
    assert d["rules"]["L0=1"]["decision_l0"] == "one"


def test_curve_shape_and_reading():
    c = decision_table(FIG1_TYPES, FIG1_PRIOR, l1="exp:10", l0="y").curve
    assert c.loss_fraction[0] == 1 and c.risk_fraction[0] == 0
    assert c.loss_fraction[-1] == 0 and c.risk_fraction[-1] == pytest.approx(1.0)
    assert np.all(np.diff(c.risk_fraction) >= 0) and np.all(np.diff(c.loss_fraction) <= 0)
    # the optimal curve lies below random suppression (risk = 1 - loss)
    assert np.all(c.risk_fraction <= 1 - c.loss_fraction + 1e-12)
    assert c.loss_fraction_at(0.0, "cutoff") == 1.0
    assert c.loss_fraction_at(1.0) == 0.0
    with pytest.raises(ParameterError):
        c.loss_fraction_at(1.5)


# --- model -------------------------------------------------------------------------------------
@pytest.mark.parametrize("y,n,big_n,alpha,beta", [(0, 3, 8, 1, 10), (2, 5, 20, 1, 10),
                                                  (4, 10, 200, 0.5, 1.5), (7, 20, 30, 2.5, 0.7)])
def test_posterior_equals_bayes_rule_with_hypergeometric_sampling(y, n, big_n, alpha, beta):
    # independent route: prior Y ~ BB(N, a, b), y | Y ~ Hypergeom(N, Y, n)
    big_y = np.arange(big_n + 1)
    joint = stats.betabinom.pmf(big_y, big_n, alpha, beta) * stats.hypergeom.pmf(
        y, big_n, big_y, n)
    want = joint / joint.sum()
    got = BetaBinomialPrior(alpha, beta).posterior(y, n, big_n)
    np.testing.assert_allclose(got, want, atol=1e-13)
    # and the marginal of y is beta-binomial(n, a, b)
    np.testing.assert_allclose(BetaBinomialPrior(alpha, beta).marginal(n),
                               stats.betabinom.pmf(np.arange(n + 1), n, alpha, beta), rtol=1e-11)


def test_long_supports_match_scipy():
    # the ratio recurrence used for long supports against scipy's closed form
    big, a, b = 60_000, 3.5, 240.0
    t = np.arange(big + 1, dtype=float)
    from sdcrisk.analyses._decision_model import _posterior_pmf
    np.testing.assert_allclose(_posterior_pmf(t, big, a, b), stats.betabinom.pmf(t, big, a, b),
                               rtol=1e-9, atol=1e-300)
    prior = BetaBinomialPrior(a, b - 20)
    r = decision_table([(20, big + 20, 1)], prior, l1="exp:50", l0="one").summary()
    y = int(r.y[5])
    p = stats.betabinom.pmf(t, big, a + y, b - 20 + 20 - y)
    assert r.R1[5] == pytest.approx(np.dot(p, y * np.exp(-(y + t) / 50)), rel=1e-9)


def test_central_range_cut_off_matches_full_enumeration():
    types = [(30, 20_030, 1)]
    prior = BetaBinomialPrior(2.0, 150.0)
    full = decision_table(types, prior, l1="gamma:2:20", l0="Y")
    cut = decision_table(types, prior, l1="gamma:2:20", l0="Y", max_enumeration=2_000)
    assert full.cut_off["rows_truncated"] == 0
    assert cut.cut_off["rows_truncated"] == 31
    a, b = full.summary(), cut.summary()
    np.testing.assert_allclose(b.R1, a.R1, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(b.L0, a.L0, rtol=1e-9)
    # L0 = Y: R0 is E[Y | y] exactly
    np.testing.assert_allclose(a.L0, a.EY, rtol=1e-9)


def test_risks_are_unbiased_under_the_model():
    # simulate domains from the model; sum of R1 = E[sum L1(y, Y) | y] in expectation
    rng = np.random.default_rng(20240611)
    prior = BetaBinomialPrior(0.8, 6.0)
    n = rng.integers(5, 40, size=3000)
    big_n = n + rng.integers(10, 300, size=3000)
    theta = rng.beta(prior.alpha, prior.beta, size=3000)
    y = rng.binomial(n, theta)
    big_y = y + rng.binomial(big_n - n, theta)
    table = DomainTable(domain="d", class_definition={"c": "1"}, labels=tuple(range(3000)),
                        n=n, N=big_n, y=y, sizes_source="simulated")
    res = decide(table, l1="exp:10", l0="y", prior=prior)
    realised = y * np.exp(-big_y / 10)
    diff = realised - res.columns["R1"]
    assert abs(diff.sum()) < 4 * diff.std() * np.sqrt(len(diff))
    # and the posterior means
    z = (big_y - res.columns["EY"]).sum() / ((big_y - res.columns["EY"]).std() * np.sqrt(3000))
    assert abs(z) < 4


def test_fit_beta_binomial_recovers_and_maximises():
    rng = np.random.default_rng(7)
    n = rng.integers(10, 60, size=4000)
    y = rng.binomial(n, rng.beta(1.5, 12.0, size=4000))
    fit = fit_beta_binomial(y, n)
    assert fit.converged and not fit.at_boundary and fit.n_domains == 4000
    assert fit.alpha == pytest.approx(1.5, rel=0.12)
    assert fit.beta == pytest.approx(12.0, rel=0.15)
    # an independent optimiser on scipy's log-pmf finds the same maximum
    def negll(x):
        return -stats.betabinom.logpmf(y, n, *np.exp(x)).sum()
    ref = optimize.minimize(negll, [0.0, 1.0], method="Nelder-Mead",
                            options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 4000})
    assert fit.alpha == pytest.approx(np.exp(ref.x[0]), rel=1e-4)
    assert fit.beta == pytest.approx(np.exp(ref.x[1]), rel=1e-4)
    assert fit.log_likelihood == pytest.approx(-ref.fun, abs=1e-6)


def test_fit_beta_binomial_boundary_and_errors():
    rng = np.random.default_rng(3)
    n = np.full(300, 50)
    y = rng.binomial(n, 0.2)  # binomial: no over-dispersion
    with pytest.warns(ConvergenceWarning, match="over-dispersion"):
        fit = fit_beta_binomial(y, n)
    assert fit.at_boundary
    assert fit.alpha / (fit.alpha + fit.beta) == pytest.approx(y.sum() / n.sum(), rel=1e-3)
    with pytest.raises(InputError, match="at least 2"):
        fit_beta_binomial([1], [5])
    with pytest.raises(InputError, match="no members"):
        fit_beta_binomial([0, 0, 0], [5, 6, 7])
    with pytest.raises(InputError):
        fit_beta_binomial([3, 1], [2, 5])


def test_prior_validation():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ParameterError):
            BetaBinomialPrior(bad, 1.0)
    with pytest.raises(ParameterError, match="exceeds"):
        ZH1.posterior(4, 3, 8)
    with pytest.raises(ParameterError, match="exceeds"):
        ZH1.posterior(1, 9, 8)


# --- losses ------------------------------------------------------------------------------------
def test_loss_library_values():
    big_y = np.arange(0, 40, dtype=float)
    np.testing.assert_allclose(ExponentialLoss(10)(3, big_y, 5, 40), 3 * np.exp(-big_y / 10))
    # equal subclasses: the mixture (1) is the exponential (2)
    np.testing.assert_allclose(MixtureLoss((0.25,) * 4)(2, big_y, 5, 40),
                               ExponentialLoss(4)(2, big_y, 5, 40), rtol=1e-14)
    # gamma form -> exponential as a -> infinity
    np.testing.assert_allclose(GammaLoss(1e7, 10)(2, big_y, 5, 40),
                               ExponentialLoss(10)(2, big_y, 5, 40), rtol=1e-5)
    assert set(SuppressionLoss("Y")(2, big_y, 5, 40)) == set(big_y)
    for kind, want in (("y", 2), ("one", 1), ("1", 1), ("n", 5), ("N", 40)):
        assert np.all(SuppressionLoss(kind)(2, big_y, 5, 40) == want)


@pytest.mark.parametrize("a,s,big_y", [(0.5, 10, 7.0), (2.0, 10, 25.0), (5.0, 3, 2.0)])
def test_gamma_loss_is_the_gamma_mixture_integral(a, s, big_y):
    # y S E[pi exp(-Y pi)], pi ~ Gamma(a, rate a S) (so S E[pi] = 1), paper section 3
    def integrand(pi):
        return pi * math.exp(-big_y * pi) * stats.gamma.pdf(pi, a, scale=1 / (a * s))
    val = s * integrate.quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-12, limit=200)[0]
    assert float(GammaLoss(a, s)(1, big_y, 5, 40)) == pytest.approx(val, rel=1e-8)


def test_user_callable_loss_equals_builtin():
    def mine(y, big_y, n, big_n):
        return y * np.exp(-big_y / 10)

    a = decision_table(TYPES1, ZH1, l1=mine, l0="y").summary()
    b = decision_table(TYPES1, ZH1, l1=CallableLoss(mine, "mine"), l0=lambda y, Y, n, N: y
                       ).summary()
    check_table2(a.to_dict(orient="records"))
    np.testing.assert_allclose(a.R1, b.R1)


def test_parse_loss_spellings_and_errors():
    assert parse_loss("exp:10") == ExponentialLoss(10)
    assert parse_loss("gamma:2:10") == GammaLoss(2, 10)
    assert parse_loss("mixture:0.5,0.5") == MixtureLoss((0.5, 0.5))
    assert parse_loss("one", kind="l0") == SuppressionLoss("one")
    for bad in ("exp", "exp:x", "gamma:2", "lin:3", "exp:-1", "mixture:0.5,0.2"):
        with pytest.raises(ParameterError):
            parse_loss(bad)
    with pytest.raises(ParameterError):
        parse_loss("z", kind="l0")


# --- microdata -----------------------------------------------------------------------------------
def small_sample():
    # domain d: A has 6 records (2 in class c=1), B has 4 (0 in class), C has 5 (4 in class)
    d = ["A"] * 6 + ["B"] * 4 + ["C"] * 5
    c = [1, 1, 0, 0, 0, 0] + [0] * 4 + [1, 1, 1, 1, 0]
    s = ["m", "f"] * 7 + ["m"]
    return Microdata.from_source({"d": d, "c": c, "s": s}, keys=["d", "c", "s"],
                                 population_size=150)


def test_domain_table_and_hand_decision():
    md = small_sample()
    t = DomainTable.from_microdata(md, domain="d", class_definition="c=1")
    assert t.labels == ("A", "B", "C")
    assert t.n.tolist() == [6, 4, 5] and t.y.tolist() == [2, 0, 4]
    assert t.N.tolist() == [60, 40, 50]  # n_i N / n with N / n = 10
    t2 = DomainTable.from_microdata(md, domain="d", class_definition={"c": 1, "s": "m"})
    assert t2.y.tolist() == [1, 0, 2]
    prior = BetaBinomialPrior(1, 10)
    res = decide(t, l1="exp:10", l0="y", prior=prior, ratio_threshold=1.0)
    # R1 by direct enumeration with scipy
    for i in range(3):
        n, big_n, y = int(t.n[i]), int(t.N[i]), int(t.y[i])
        u = np.arange(big_n - n + 1)
        p = stats.betabinom.pmf(u, big_n - n, 1 + y, 10 + n - y)
        assert res.columns["R1"][i] == pytest.approx(np.dot(p, y * np.exp(-(y + u) / 10)),
                                                     rel=1e-12, abs=1e-300)
        assert res.columns["R0"][i] == y
    # rule: publish iff R1 < R0; B (y = 0) costs nothing either way and is published
    r1, r0 = res.columns["R1"], res.columns["R0"]
    assert res.publish.tolist() == [bool(r1[0] < r0[0]), True, bool(r1[2] < r0[2])]
    none = decide(t, l1="exp:10", prior=prior, ratio_threshold=0.0)
    assert none.publish.tolist() == [False, True, False]
    allp = decide(t, l1="exp:10", prior=prior, ratio_threshold=1e9)
    assert allp.publish.all() and allp.totals["risk_fraction"] == pytest.approx(1.0)


def test_domain_sizes_given_and_weights():
    md = small_sample()
    t = DomainTable.from_microdata(md, domain="d", class_definition="c=1",
                                   domain_sizes={"A": 100, "B": 7, "C": 5})
    assert t.N.tolist() == [100, 7, 5] and t.sizes_source == "given"
    with pytest.raises(InputError, match="no size for domain"):
        DomainTable.from_microdata(md, domain="d", class_definition="c=1",
                                   domain_sizes={"A": 100})
    with pytest.raises(InputError, match="smaller than its sample size"):
        DomainTable.from_microdata(md, domain="d", class_definition="c=1",
                                   domain_sizes={"A": 1, "B": 7, "C": 5})
    w = Microdata.from_source({"d": ["A", "A", "B"], "c": [1, 0, 1], "wt": [2.5, 3.0, 9.6]},
                              keys=["d", "c"], weights="wt")
    tw = DomainTable.from_microdata(w, domain="d", class_definition="c=1")
    assert tw.N.tolist() == [6, 10]


def test_domain_table_errors():
    md = small_sample()
    with pytest.raises(InputError, match="not among the keys"):
        DomainTable.from_microdata(md, domain="zz", class_definition="c=1")
    with pytest.raises(InputError, match="not a level"):
        DomainTable.from_microdata(md, domain="d", class_definition="c=7")
    with pytest.raises(ParameterError, match="VAR=VALUE"):
        DomainTable.from_microdata(md, domain="d", class_definition="c")
    t = DomainTable.from_microdata(md, domain="d", class_definition="c=1")
    with pytest.raises(ParameterError, match="not both"):
        decide(t, l1="exp:10", ratio_threshold=1, target_risk_fraction=0.5)
    with pytest.raises(ParameterError):
        decide(t, l1="exp:10", target_risk_fraction=1.5)


def test_target_risk_fraction_is_the_largest_prefix():
    rng = np.random.default_rng(11)
    n = rng.integers(5, 30, 60)
    big_n = n + rng.integers(5, 100, 60)
    y = rng.binomial(n, rng.beta(1, 8, 60))
    t = DomainTable(domain="d", class_definition={"c": "1"}, labels=tuple(range(60)), n=n,
                    N=big_n, y=y, sizes_source="simulated")
    res = decide(t, l1="gamma:2:10", l0="y", target_risk_fraction=0.3)
    assert res.fit is not None and res.prior_source.startswith("beta-binomial")
    order = np.argsort(res.columns["rank"])
    pub = res.publish[order]
    k = int(pub.sum())
    assert pub[:k].all() and not pub[k:].any()  # a prefix of the R1/R0 order
    cum = np.cumsum(res.columns["R1"][order])
    assert cum[k - 1] <= 0.3 * cum[-1] + 1e-12 < cum[k]
    assert res.totals["risk_fraction"] <= 0.3
    assert res.totals["loss_fraction"] == pytest.approx(res.curve.loss_fraction[k])


def test_decision_outputs(tmp_path):
    md = small_sample()
    t = DomainTable.from_microdata(md, domain="d", class_definition="c=1")
    res = decide(t, l1="exp:10", prior=ZH1)
    d = json.loads(res.to_json())
    assert d["rule"]["ratio_threshold"] == 1.0 and d["losses"] == {"l1": "exp:10", "l0": "y"}
    assert [r["d"] for r in d["decisions"]] == [t.labels[i] for i in np.argsort(
        res.columns["rank"])]
    assert "y" not in d["decisions"][0]  # class counts only with internal=True
    full = res.to_dict(internal=True)["decisions"][0]
    assert {"y", "R1", "R0", "ratio", "publish"} <= set(full)
    res.to_csv(tmp_path / "d.csv", internal=True)
    back = pd.read_csv(tmp_path / "d.csv")
    assert back["publish"].tolist() == res.summary(internal=True)["publish"].tolist()
    with pytest.raises(ValueError):
        res.columns["R1"][0] = 1.0  # immutable
    with pytest.raises(TypeError):
        res.columns["R1"] = None


def test_plot_files(tmp_path):
    pytest.importorskip("matplotlib")
    s = sensitivity(FIG1_TYPES, FIG1_PRIOR, l1="exp:10", l0="y",
                    alternatives={"L0=1": ("exp:10", "one")})
    png = plot_tradeoff(s.curves, tmp_path / "fig1.png", risk_fraction=0.2)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_tradeoff(s.curves["optimal"], tmp_path / "fig1.svg")
    assert "<svg" in svg.read_text()[:500]
    with pytest.raises(ParameterError, match="png"):
        plot_tradeoff(s.curves["optimal"], tmp_path / "fig1.pdf")


def test_population_domains_and_true_counts(shared_data):
    path = shared_data("uci_adult", "uci_adult.csv.gz")
    keys = ["native_country", "race", "sex"]
    pop = Microdata.from_source(str(path), keys=keys)
    rows = np.flatnonzero(np.random.default_rng(0).random(pop.n) < 0.05)
    sample = pop.subset(rows, population_size=pop.n)
    t = DomainTable.from_microdata(sample, domain="native_country",
                                   class_definition="race=2,sex=0", population=pop)
    # independent counts with pandas
    df = pd.read_csv(path, usecols=keys)
    cls = (df.race == 2) & (df.sex == 0)
    labels = list(t.labels)
    assert t.N.tolist() == df.groupby("native_country").size().reindex(labels).tolist()
    assert t.true_Y.tolist() == df[cls].groupby("native_country").size().reindex(
        labels, fill_value=0).tolist()
    sdf = df.iloc[rows]
    assert t.n.tolist() == sdf.groupby("native_country").size().reindex(
        labels, fill_value=0).tolist()
    assert t.y.tolist() == sdf[cls.iloc[rows].to_numpy()].groupby("native_country").size(
        ).reindex(labels, fill_value=0).tolist()
    res = decide(t, l1="exp:5", l0="y", target_risk_fraction=0.2)
    assert res.totals["risk_fraction"] <= 0.2
    # the true disclosure loss y exp(-Y/5) of what was published, against publishing all
    true_l1 = t.y * np.exp(-t.true_Y / 5)
    assert true_l1[res.publish].sum() < 0.5 * true_l1.sum()


# --- CLI ---------------------------------------------------------------------------------------
def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_domain_types_reproduces_table2(capsys, tmp_path):
    path = tmp_path / "types.csv"
    pd.DataFrame({"n": [3, 5], "N": [8, 20], "share": [1, 3]}).to_csv(path, index=False)
    code, out, err = run(capsys, "decide", "--domain-types", path, "--alpha", 1, "--beta", 10,
                         "--l1", "exp:10", "--l0", "y", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    for row in d["rows"]:
        assert {"n", "N", "y", "p_y", "R1", "L0", "cum_risk", "remaining_loss"} <= set(row)
    check_table2(d["rows"])
    assert d["total_loss"] == pytest.approx(9 / 22)


def test_cli_domain_types_text_and_plot(capsys, tmp_path):
    path = tmp_path / "types.csv"
    pd.DataFrame({"n": [10, 10, 20], "N": [50, 200, 30], "share": [1, 1, 1]}).to_csv(
        path, index=False)
    args = ["decide", "--domain-types", path, "--alpha", 0.5, "--beta", 1.5, "--l1", "exp:10"]
    code, out, _ = run(capsys, *args, "--l0", "y")
    assert code == 0 and "0.3846 (linear between cut-offs)" in out
    code, out, _ = run(capsys, *args, "--decision-l0", "one", "--format", "json")
    assert round(100 * json.loads(out)["at_risk_fraction"]["loss_fraction"]) == 53
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    code, _, err = run(capsys, *args, "--plot", tmp_path / "c.svg")
    assert code == 0, err
    assert "<svg" in (tmp_path / "c.svg").read_text()[:500]


def test_cli_decide_microdata(capsys, tmp_path):
    path = tmp_path / "s.csv"
    md_df = pd.DataFrame({"d": ["A"] * 6 + ["B"] * 4 + ["C"] * 5,
                          "c": [1, 1, 0, 0, 0, 0] + [0] * 4 + [1, 1, 1, 1, 0]})
    md_df.to_csv(path, index=False)
    sizes = tmp_path / "sizes.csv"
    pd.DataFrame({"domain": ["A", "B", "C"], "N": [60, 40, 50]}).to_csv(sizes, index=False)
    base = ["decide", path, "--domain", "d", "--class", "c=1", "--l1", "exp:10",
            "--alpha", 1, "--beta", 10]
    code, out, err = run(capsys, *base, "--domain-sizes", sizes, "--format", "json",
                         "--internal", "--csv", tmp_path / "dec.csv")
    assert code == 0, err
    d = json.loads(out)
    md = small_sample()
    want = decide(DomainTable.from_microdata(md, domain="d", class_definition="c=1"),
                  l1="exp:10", prior=ZH1).to_dict(internal=True)
    assert d["decisions"] == want["decisions"]
    assert pd.read_csv(tmp_path / "dec.csv").shape[0] == 3
    code, out, _ = run(capsys, *base, "--sampling-fraction", 0.1)
    assert code == 0 and "published" in out
    code, _, err = run(capsys, *base)
    assert code == 2 and "population" in err
    code, _, err = run(capsys, "decide", "--l1", "exp:10")
    assert code == 2 and "--domain-types" in err
    code, _, err = run(capsys, *base, "--population-size", 150, "--l0", "bogus")
    assert code == 2 and "L0 kind" in err


def test_no_warnings_on_the_paper_example():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decision_table(TYPES1, ZH1, l1="exp:10", l0="y")
