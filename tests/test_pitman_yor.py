"""Pitman-Yor estimator (candidates.md K): paper values, closed forms against exact sums."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import sdcrisk
from sdcrisk import ConvergenceWarning, Microdata, PitmanYorRisk, tabulate
from sdcrisk.estimators.pitman_yor import (
    BetaBinomialPredictive,
    eppf_loglik,
    eppf_score,
    expected_inverse_unique,
    fit_pitman_yor,
    prob_zero_unique,
)


@pytest.mark.parametrize("n, su, theta, alpha, tau1, tau2", [
    (121_616, 6_776, 444.2569, 0.486998, 1_459.86, 2_421.05),   # IPUMS-USA 5%
    (243_232, 9_620, 420.5243, 0.489676, 2_973.00, 4_560.51),   # IPUMS-USA 10%
])
def test_paper_reference_values(n, su, theta, alpha, tau1, tau2):
    """candidates.md K.4: tau1/tau2 from (n, N, SU, theta, alpha) for the authors' extract."""
    big_n = 2_432_323
    assert su * prob_zero_unique(theta, alpha, n, big_n - n) == pytest.approx(tau1, abs=0.01)
    assert su * expected_inverse_unique(theta, alpha, n, big_n - n) == pytest.approx(
        tau2, abs=0.01)


def _betabin_sum(g, m, a, b):
    mpmath.mp.dps = 30
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    return float(mpmath.fsum(
        mpmath.binomial(m, x) * mpmath.beta(x + a, m - x + b) / mpmath.beta(a, b) * g(x)
        for x in range(m + 1)))


@pytest.mark.parametrize("theta, alpha, n, m", [
    (5.0, 0.3, 20, 50), (0.7, 0.0, 12, 30), (40.0, 0.8, 100, 200), (2.0, 1e-9, 10, 25)])
def test_unique_closed_forms_against_exact_sums(theta, alpha, n, m):
    a, b = 1 - alpha, theta + n - 1 + alpha
    p0 = _betabin_sum(lambda x: 1 if x == 0 else 0, m, a, b)
    e1 = _betabin_sum(lambda x: mpmath.mpf(1) / (1 + x), m, a, b)
    assert float(prob_zero_unique(theta, alpha, n, m)) == pytest.approx(p0, rel=1e-10)
    assert float(expected_inverse_unique(theta, alpha, n, m)) == pytest.approx(e1, rel=1e-9)


def test_predictive_moments_for_larger_cells():
    """E[1/F] for f >= 2 and E[1/F^2] (sums of the law) against mpmath, small and large m."""
    f = np.array([1, 2, 5])
    for m in (60, 3_000):
        pred = BetaBinomialPredictive(f, theta=8.0, alpha=0.4, n=50, unseen=m)
        e1, e2 = pred.expected_inverse(), pred.expected_inverse_square()
        for i, fk in enumerate(f):
            a, b = fk - 0.4, 8.0 + 50 - fk + 0.4
            if m <= 60:
                ref1 = _betabin_sum(lambda x, fk=fk: mpmath.mpf(1) / (fk + x), m, a, b)
                ref2 = _betabin_sum(lambda x, fk=fk: mpmath.mpf(1) / (fk + x) ** 2, m, a, b)
                assert e1[i] == pytest.approx(ref1, rel=1e-9)
                assert e2[i] == pytest.approx(ref2, rel=1e-9)
            else:  # exact head, integrated tail: 1e-4 relative
                ref1 = _betabin_sum(lambda x, fk=fk: mpmath.mpf(1) / (fk + x), m, a, b)
                assert e1[i] == pytest.approx(ref1, rel=1e-4)
        assert pred.mean()[1] == pytest.approx(m * (2 - 0.4) / (8.0 + 50))


def test_eppf_hand_worked():
    """Partition of n = 3 into blocks {2, 1}: p = (theta + alpha)(1 - alpha) /
    ((theta + 1)(theta + 2)) (Pitman 1995)."""
    theta, alpha = 1.5, 0.25
    v = eppf_loglik(theta, alpha, np.array([1.0, 2.0]), np.array([1.0, 1.0]), 3)
    assert v == pytest.approx(math.log((theta + alpha) * (1 - alpha)
                                       / ((theta + 1) * (theta + 2))), rel=1e-12)


def test_mle_recovers_simulated_parameters():
    """A Pitman-Yor partition of 20,000 draws (Chinese restaurant) with theta = 50,
    alpha = 0.5: the EPPF maximum is near the truth and is a stationary point."""
    rng = np.random.default_rng(3)
    theta, alpha, n = 50.0, 0.5, 20_000
    sizes = []
    for i in range(n):
        if rng.random() < (theta + alpha * len(sizes)) / (theta + i):
            sizes.append(1)
        else:
            w = np.asarray(sizes, float) - alpha
            sizes[rng.choice(len(sizes), p=w / w.sum())] += 1
    fit = fit_pitman_yor(np.asarray(sizes))
    assert fit["alpha"] == pytest.approx(alpha, abs=0.05)
    assert fit["theta"] == pytest.approx(theta, rel=0.5)
    assert not fit["alpha_at_bound"] and fit["covariance"] is not None
    values, mult = np.unique(sizes, return_counts=True)
    for d in ((1e-3, 0), (0, 1e-5)):
        here = eppf_loglik(fit["theta"], fit["alpha"], values.astype(float), mult, n)
        moved = eppf_loglik(fit["theta"] + d[0], fit["alpha"] + d[1], values.astype(float),
                            mult, n)
        assert moved <= here + 1e-7



def _mp_eppf(theta, alpha, values, mult, n):
    """The log-EPPF in mpmath (50 digits), term by term."""
    k = int(sum(mult))
    t, a = mpmath.mpf(theta), mpmath.mpf(alpha)
    v = mpmath.fsum(mpmath.log(t + i * a) for i in range(1, k))
    v += mpmath.loggamma(t + 1) - mpmath.loggamma(t + n)
    v += mpmath.fsum(int(m) * (mpmath.loggamma(int(f) - a) - mpmath.loggamma(1 - a))
                     for f, m in zip(values, mult, strict=True))
    return v


@pytest.mark.parametrize("theta, alpha, cells", [
    (5.0, 0.3, 64),          # term by term
    (450.0, 0.49, 9_000),    # S_1 by digammas (K > 5,000)
    (2e4, 1e-4, 6_000),      # theta / alpha + K > 1e7: term by term again
    (0.5, 0.93, 7_000),      # alpha near its bound
])
def test_score_is_the_eppf_gradient(theta, alpha, cells):
    """eppf_score equals mpmath's derivative of the log-EPPF (50 digits) to 1e-9, in each
    branch of its sums."""
    mpmath.mp.dps = 50
    rng = np.random.default_rng(cells)
    values = np.arange(1, 31, dtype=float)
    mult = np.bincount(np.minimum(rng.zipf(1.8, cells), 30), minlength=31)[1:].astype(float)
    keep = mult > 0
    values, mult = values[keep], mult[keep]
    n = int(values @ mult)
    d_theta, d_alpha = eppf_score(theta, alpha, values, mult, n)
    want_t = mpmath.diff(lambda t: _mp_eppf(t, alpha, values, mult, n), theta)
    want_a = mpmath.diff(lambda a: _mp_eppf(theta, a, values, mult, n), alpha)
    assert d_theta == pytest.approx(float(want_t), rel=1e-9, abs=1e-9)
    assert d_alpha == pytest.approx(float(want_a), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("theta, alpha, cells", [
    (1.6e6, 0.69, 10_000_000),  # a census-scale table: digammas would lose digits
    (5e5, 0.01, 2_000_000),
    (3e4, 1e-5, 20_000),        # alpha near 0: S_2's integral without cancellation
])
def test_rising_sums_beyond_the_digammas_equal_exact_sums(theta, alpha, cells):
    """S_1 and S_2 by Euler-Maclaurin (theta / alpha + K > 1e7) equal the exact sums to
    1e-13: the gradient of a fit on 10^7 cells costs no K-long sum."""
    from sdcrisk.estimators.pitman_yor import _rising_sums

    i = np.arange(1, cells, dtype=float)
    t = theta + i * alpha
    s1, s2 = _rising_sums(theta, alpha, cells)
    assert s1 == pytest.approx(math.fsum(1 / t), rel=1e-13)
    assert s2 == pytest.approx(math.fsum(i / t), rel=1e-13)


def test_fit_stops_at_the_stationary_point_whatever_the_start():
    """The fit ends where the analytic gradient vanishes (to rounding), so its (theta,
    alpha) do not depend on where the optimiser stopped: Newton from points moved by 1e-3
    in either coordinate ends at the same optimum to 1e-11 (L-BFGS-B's own stop with
    finite-difference gradients left them 1e-8 apart between library versions)."""
    from sdcrisk.estimators import pitman_yor as py

    rng = np.random.default_rng(11)
    counts = rng.zipf(1.6, 4_000)
    fit = fit_pitman_yor(counts)
    values, mult = py._frequencies(counts)
    n = int(values @ mult)
    d_theta, d_alpha = eppf_score(fit["theta"], fit["alpha"], values, mult, n)
    assert abs(d_theta) < 1e-9 and abs(d_alpha) < 1e-7

    def nll(x):
        return -eppf_loglik(*py._unpack(x), values, mult, n)

    def grad(x):
        theta, alpha = py._unpack(x)
        dt, da = eppf_score(theta, alpha, values, mult, n)
        return -np.array([alpha * (1 - alpha) * (da - dt), (theta + alpha) * dt])

    x_fit = np.array([math.log(fit["alpha"] / (1 - fit["alpha"])),
                      math.log(fit["theta"] + fit["alpha"])])
    for shift in ((1e-3, 0.0), (0.0, -1e-3), (-1e-3, 1e-3)):
        x0 = x_fit + np.array(shift)
        x = py._stationary_point(nll, grad, x0, nll(x0))
        theta, alpha = py._unpack(x)
        assert theta == pytest.approx(fit["theta"], rel=1e-11)
        assert alpha == pytest.approx(fit["alpha"], rel=1e-11)


def _table(codes, big_n):
    md = Microdata.from_source({"k": codes}, ["k"], population_size=big_n)
    return tabulate(md)


def test_estimator_matches_closed_forms_and_interval():
    rng = np.random.default_rng(0)
    codes = rng.zipf(1.6, 3_000) % 5_000
    tab = _table(codes, 300_000)
    res = PitmanYorRisk().fit(tab)
    th, al = res.fitted["theta"], res.fitted["alpha"]
    su = tab.sample_uniques
    t1 = res.measures["tau1"]
    assert t1.estimate == pytest.approx(su * prob_zero_unique(th, al, tab.n, 297_000))
    assert res.measures["tau2"].estimate == pytest.approx(
        su * expected_inverse_unique(th, al, tab.n, 297_000))
    assert 0 < t1.lower < t1.estimate < t1.upper <= su
    assert res.measures["p_pu_given_su"].estimate == pytest.approx(t1.estimate / su)
    assert res.method == "pitman-yor" and "pitman-yor" in sdcrisk.ESTIMATORS
    again = PitmanYorRisk().fit(tab)
    assert again.measures["tau1"].lower == t1.lower  # seeded parameter draws


def test_alpha_runs_to_one_is_flagged():
    """Nearly every record unique: the EPPF maximum runs to alpha -> 1 (K.5)."""
    codes = np.r_[np.arange(69), [0, 0]]  # one cell of 3, 68 uniques
    with pytest.warns(ConvergenceWarning, match="alpha"):
        res = PitmanYorRisk().fit(_table(codes, 100_000))
    assert res.diagnostics["alpha_at_bound"] is True
    assert res.fitted["alpha"] > 0.97
    with pytest.warns(ConvergenceWarning):  # all unique: theta -> infinity as well
        res = PitmanYorRisk().fit(_table(np.arange(71), 100_000))
    assert res.diagnostics["theta_at_bound"] is True


def test_uci_adult_sample(shared_data):
    """uci_adult KS6 at 5% (the shared ground truth: tau1 356, tau2 505.7): within 10%."""
    import pandas as pd

    df = pd.read_csv(shared_data("uci_adult", "uci_adult.csv.gz"))
    keys = ["age", "sex", "race", "marital_status", "education", "native_country"]
    pop = Microdata.from_source(df, keys)
    ev = sdcrisk.evaluate(pop, ["pitman-yor"], design=sdcrisk.Bernoulli(0.05), seed=0)
    d = ev.to_dict()
    assert d["truth"]["tau1"] == 356
    with warnings.catch_warnings():
        est = d["estimates"]["pitman-yor"]
    assert est["tau1"] == pytest.approx(356, rel=0.1)
    assert est["tau2"] == pytest.approx(505.7, rel=0.1)


@pytest.mark.parametrize("b", [20.0, 999.0, 1_001.0, 9e4, 1e9, 1e13])
@pytest.mark.parametrize("m", [1, 36_571, 3_000_000])
def test_log_gamma_ratio_step_against_mpmath(b, m):
    """The gamma-ratio step behind tau2 stays accurate as theta runs to infinity (log-gamma
    differences alone lose every digit at b = 1e12: tau2 came out 1e5 times SU)."""
    from sdcrisk.estimators.pitman_yor import log_gamma_ratio_step

    mpmath.mp.dps = 50
    a = 0.5

    def lr(x):
        return mpmath.loggamma(mpmath.mpf(x)) - mpmath.loggamma(mpmath.mpf(x) - a)

    ref = float(lr(b + m + 1) - lr(b))
    assert float(log_gamma_ratio_step(b, m, a)) == pytest.approx(ref, rel=1e-8)


def test_all_unique_sample_keeps_tau_within_su():
    """theta -> infinity, alpha -> 1 (corpus case ghanaS R06, 399 records all unique):
    tau1 = tau2 = SU in the limit, never above."""
    t2 = 399 * expected_inverse_unique(8.727911e11, 0.963229, 399, 36_970 - 399)
    t1 = 399 * prob_zero_unique(8.727911e11, 0.963229, 399, 36_970 - 399)
    assert t1 <= t2 <= 399 and t2 == pytest.approx(399, rel=1e-6)


@pytest.mark.parametrize(("theta", "alpha"), [
    (t, a) for t in (333474.0, 50.0, 1.0, -0.05) for a in (3.98e-13, 1e-8, 1e-4, 0.4, 0.99)
    if t > -a])
@pytest.mark.parametrize("k", [5001, 1_504_116, 9_000_000])
def test_log_rising_tail_against_mpmath(theta, alpha, k):
    """sum_{i=1}^{k-1} log(theta + i alpha) by Euler-Maclaurin (the regime, alpha running to
    0 on a large file, where a k-long sum made one fit of a 1.5-million-cell table take a
    minute) against 40-digit log-gammas: within 3e-8 absolute (the sum itself is 1e1-1e8)."""
    from sdcrisk.estimators.pitman_yor import _log_rising_tail

    with mpmath.workdps(40):
        c = mpmath.mpf(theta) / mpmath.mpf(alpha)
        want = float((k - 1) * mpmath.log(mpmath.mpf(alpha)) + mpmath.loggamma(c + k)
                     - mpmath.loggamma(c + 1))
    assert _log_rising_tail(theta, alpha, k) == pytest.approx(want, abs=3e-8, rel=1e-15)
