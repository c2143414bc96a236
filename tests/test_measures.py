"""Risk measures of spec A on hand-worked tables (sdcrisk.core.measures)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from sdcrisk import (
    NegativeBinomialPredictive,
    global_risk_threshold,
    household_risk,
    roc_auc,
    truth_measures,
)
from sdcrisk.core.measures import (
    Measure,
    expected_reidentifications,
    k_anonymity_violations,
    predictive_measures,
    theta_expectation,
)

Z975 = 1.959963984540054  # standard normal 97.5% quantile


# --- truth measures (A.1) -------------------------------------------------------------------

def test_truth_measures_hand_example():
    # observed sample cells:  f = 1, 1, 1, 2, 3
    # population counts:      F = 1, 2, 4, 2, 10
    # SU cells are the first three (n1 = 3); of those only the first has F = 1:
    #   tau1 = 1
    #   tau2 = 1/1 + 1/2 + 1/4 = 1.75
    #   theta = n1 / sum_SU F = 3 / (1 + 2 + 4) = 3/7
    #   P(PU|SU) = tau1 / n1 = 1/3
    # population: N = 100 with 5 population-unique cells (some unobserved): P(PU) = 5/100
    f = np.array([1, 1, 1, 2, 3])
    big_f = np.array([1, 2, 4, 2, 10])
    m = truth_measures(f, big_f, population_size=100, population_uniques=5)
    assert m["tau1"] == 1.0
    assert m["tau2"] == pytest.approx(1.75, abs=1e-15)
    assert m["theta"] == pytest.approx(3 / 7, abs=1e-15)
    assert m["p_pu_given_su"] == pytest.approx(1 / 3, abs=1e-15)
    assert m["p_pu"] == pytest.approx(0.05, abs=1e-15)
    assert m["sample_uniques"] == 3.0


def test_truth_measures_all_su_population_unique():
    # f = F = 1 in every cell: tau1 = tau2 = n1 and theta = 1
    f = np.ones(4, int)
    m = truth_measures(f, f, population_size=10, population_uniques=6)
    assert (m["tau1"], m["tau2"], m["theta"], m["p_pu_given_su"]) == (4.0, 4.0, 1.0, 1.0)
    assert m["p_pu"] == pytest.approx(0.6)


def test_truth_measures_without_sample_uniques():
    m = truth_measures(np.array([2, 3]), np.array([5, 3]), population_size=8,
                       population_uniques=0)
    assert m["tau1"] == 0.0 and m["tau2"] == 0.0
    assert math.isnan(m["theta"]) and math.isnan(m["p_pu_given_su"])


# --- k-anonymity (A.4) ---------------------------------------------------------------------

def test_k_anonymity_violations_hand_example():
    # cells f = 1, 1, 2, 3, 4, 6 (n = 17)
    # k=2: records in cells with f < 2  -> 1 + 1             = 2
    # k=3: f < 3                         -> 1 + 1 + 2         = 4
    # k=5: f < 5                         -> 1 + 1 + 2 + 3 + 4 = 11
    f = np.array([1, 1, 2, 3, 4, 6])
    assert k_anonymity_violations(f) == {2: 2, 3: 4, 5: 11}
    assert k_anonymity_violations(f, ks=(7, 1)) == {7: 17, 1: 0}


# --- sdcMicro conventions (A.4) -------------------------------------------------------------

def test_expected_reidentifications_sums_over_records():
    # cells f = 1, 2, 4 with risks 0.5, 0.2, 0.1: ER = 0.5 + 2*0.2 + 4*0.1 = 1.3; n = 7
    out = expected_reidentifications(np.array([1, 2, 4]), np.array([0.5, 0.2, 0.1]), 7)
    assert out["expected_reidentifications"].estimate == pytest.approx(1.3, abs=1e-15)
    assert out["global_risk"].estimate == pytest.approx(1.3 / 7, abs=1e-15)


def test_global_risk_threshold_hand_example():
    # risks sorted: 0.9, 0.5, 0.2, 0.1, 0.1 (n = 5, total 1.8); max_global_risk 0.2 -> 1.0
    # cap at 0.5: 0.5 + 0.5 + 0.2 + 0.1 + 0.1 = 1.4 (not < 1.0)
    # cap at 0.2: 0.2*3 + 0.1 + 0.1 = 0.8 < 1.0  -> threshold 0.2
    r = np.array([0.1, 0.9, 0.2, 0.1, 0.5])
    assert global_risk_threshold(r, 0.2) == pytest.approx(0.2)
    # max_global_risk 0.3 -> target 1.5: cap at 0.5 gives 1.4 < 1.5 -> threshold 0.5
    assert global_risk_threshold(r, 0.3) == pytest.approx(0.5)


def test_global_risk_threshold_none_when_target_already_met():
    r = np.array([0.1, 0.9, 0.2, 0.1, 0.5])  # total 1.8
    assert global_risk_threshold(r, 0.4) is None  # target 2.0 > 1.8


def test_global_risk_threshold_zero_when_no_level_meets_target():
    # all risks equal: no capping helps -> 0
    assert global_risk_threshold(np.full(4, 0.5), 0.1) == 0.0


def _capped(values, weights, v):
    return float(np.dot(weights, np.minimum(values, v)))


@pytest.mark.parametrize("shape", ["uniform", "ties", "skewed", "one-level-top"])
@pytest.mark.parametrize("weighted", [False, True])
def test_global_risk_threshold_large_inputs_meet_the_definition(shape, weighted):
    # above 2^16 values the threshold is found by bisecting histograms, not by a sort: it must
    # still be the largest risk value t with sum w min(r, t) < target, i.e. t passes and the
    # next larger value does not
    rng = np.random.default_rng(11)
    size = 300_000
    values = {"uniform": rng.random(size),
              "ties": rng.choice(rng.random(40), size),
              "skewed": rng.beta(0.2, 6.0, size),
              "one-level-top": np.r_[np.full(size - 10, 0.01), np.full(10, 0.9)]}[shape]
    counts = rng.integers(1, 6, size) if weighted else None
    w = counts.astype(float) if weighted else np.ones(size)
    for g in (0.005, 0.02, 0.1):
        target = g * w.sum()
        t = global_risk_threshold(values, g, counts=counts)
        if _capped(values, w, values.max()) < target:
            assert t is None
            continue
        if t == 0.0:  # no level meets it: not even the smallest
            assert _capped(values, w, values.min()) >= target
            continue
        assert t in values
        assert _capped(values, w, t) < target
        assert _capped(values, w, values[values > t].min()) >= target


def test_global_risk_threshold_per_cell_equals_per_record_when_large():
    rng = np.random.default_rng(5)
    risk = rng.beta(0.5, 4.0, 120_000)
    counts = rng.integers(1, 4, risk.size)
    for g in (0.01, 0.05):
        assert (global_risk_threshold(risk, g, counts=counts)
                == global_risk_threshold(np.repeat(risk, counts), g))


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0])
def test_global_risk_threshold_rejects_bad_target(bad):
    with pytest.raises(ValueError):
        global_risk_threshold(np.array([0.1, 0.2]), bad)


def test_household_risk_hand_example():
    # household 0: members with risks 0.1 and 0.2 -> 1 - 0.9 * 0.8 = 0.28 for both
    # household 1: one member with risk 0.5       -> 0.5
    # household 2: members 0.0 and 1.0            -> 1
    risk = np.array([0.1, 0.5, 0.2, 0.0, 1.0])
    hh = np.array([0, 1, 0, 2, 2])
    np.testing.assert_allclose(household_risk(risk, hh), [0.28, 0.5, 0.28, 1.0, 1.0],
                               rtol=0, atol=1e-15)


def test_roc_auc_hand_example():
    # positives 0.35, 0.8; negatives 0.1, 0.4: pairs won 1+0+1+1 = 3 of 4 -> 0.75
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)


def test_roc_auc_ties_count_half():
    # positives 0.5, 0.9; negatives 0.5, 0.2:
    #   (0.5 vs 0.5) = 1/2, (0.5 vs 0.2) = 1, (0.9 vs 0.5) = 1, (0.9 vs 0.2) = 1 -> 3.5/4
    assert roc_auc([0.5, 0.5, 0.2, 0.9], [1, 0, 0, 1]) == pytest.approx(0.875)
    assert roc_auc([0.3, 0.3, 0.3], [1, 0, 1]) == pytest.approx(0.5)


def test_roc_auc_float_noise_is_a_tie():
    """Risks equal in exact arithmetic come out of a fit 1e-16 to 1e-15 apart (19 such pairs
    among the log-linear risks of the evaluate golden case); they are ties, so the AUC does
    not depend on how a numpy version orders a sum. A real difference (1e-6) still orders."""
    a = 0.1234567
    noisy = [a, a * (1 + 2e-16), a * (1 - 4e-16), 0.05]
    assert roc_auc(noisy, [1, 0, 0, 0]) == pytest.approx((2 * 0.5 + 1) / 3)
    assert roc_auc(noisy, [0, 1, 0, 0]) == pytest.approx((2 * 0.5 + 1) / 3)
    assert roc_auc([a, a * (1 + 1e-6)], [0, 1]) == 1.0
    assert roc_auc([a, a * (1 + 1e-6)], [1, 0]) == 0.0
    assert roc_auc([-np.inf, np.inf, 0.0, 0.0], [0, 1, 1, 0]) == pytest.approx(0.875)


def test_roc_auc_none_with_one_class():
    assert roc_auc([0.1, 0.2], [1, 1]) is None
    assert roc_auc([0.1, 0.2], [0, 0]) is None


# --- theta expectation (D.7 applied to any NB predictive) -----------------------------------

@pytest.mark.parametrize(("n1", "sizes", "p"), [
    (3, [1, 1, 1], 0.1),          # BF, equal weights
    (4, [1.5, 1.5, 1.5, 1.5], 0.3),  # Poisson-gamma: size alpha + 1
    (2, [1, 1], 0.02),
])
def test_theta_expectation_is_exact_when_cells_share_p(n1, sizes, p):
    # X = sum of independent NB(size_k, p) is NB(sum size_k, p); E[n1 / (n1 + X)] by summation
    size = float(np.sum(sizes))
    mean = size * (1 - p) / p
    var = size * (1 - p) / p**2
    j = np.arange(200_001)
    w = stats.nbinom.pmf(j, size, p)
    assert 1 - w.sum() < 1e-13
    exact = float(np.sum(w * n1 / (n1 + j)))
    assert theta_expectation(n1, mean, var) == pytest.approx(exact, rel=1e-10)


def test_theta_expectation_degenerate_cases():
    assert math.isnan(theta_expectation(0, 1.0, 2.0))
    assert theta_expectation(5, 0.0, 0.0) == 1.0
    # no overdispersion: plug-in n1 / (n1 + E[X])
    assert theta_expectation(4, 6.0, 6.0) == pytest.approx(0.4)
    assert theta_expectation(4, 6.0, 5.0) == pytest.approx(0.4)


# --- predictive measures (A.3) --------------------------------------------------------------

def _bf_pred(unobserved=0.0):
    # f = 1, 1, 1, 2, 5; U_k ~ NB(f_k, 0.1) (BF with p = 0.1 everywhere)
    f = np.array([1, 1, 1, 2, 5])
    return NegativeBinomialPredictive(f, size=f, prob=0.1, unobserved_prob_one=unobserved)


def test_predictive_measures_bf_hand_values():
    m = predictive_measures(_bf_pred(), population_size=1000.0, level=0.95)
    n1 = 3
    # tau1 = sum_SU P(U=0) = 3 * 0.1
    assert m["tau1"].estimate == pytest.approx(0.3, abs=1e-15)
    # tau2 = 3 * r(1, 0.1) (G.2)
    assert m["tau2"].estimate == pytest.approx(n1 * 0.2558427881, abs=3 * 5e-11)
    assert m["p_pu"].estimate == pytest.approx(0.3 / 1000)
    assert m["p_pu_given_su"].estimate == pytest.approx(0.1)
    # theta: X ~ NB(3, 0.1) exactly, so E[theta] = 3 E[1/(3 + X)] = 3 r(3, 0.1) (G.2)
    assert m["theta"].estimate == pytest.approx(3 * 0.0463684295, abs=3 * 5e-11)
    # tau1 interval: var = 3 * 0.1 * 0.9 = 0.27, normal, clipped to [0, n1]
    sd1 = math.sqrt(0.27)
    assert m["tau1"].lower == 0.0
    assert m["tau1"].upper == pytest.approx(0.3 + Z975 * sd1, rel=1e-12)
    assert m["tau1"].level == 0.95
    assert m["p_pu_given_su"].upper == pytest.approx((0.3 + Z975 * sd1) / 3, rel=1e-12)
    # tau2 interval: var = 3 (E[1/F^2] - E[1/F]^2), E[1/F^2] = (p/q) Li2(q) for f = 1
    e2 = 0.1 / 0.9 * float(mpmath.polylog(2, 0.9))
    e1 = 0.2558427881
    sd2 = math.sqrt(3 * (e2 - e1**2))
    assert m["tau2"].lower == pytest.approx(max(0.0, 3 * e1 - Z975 * sd2), abs=1e-9)
    assert m["tau2"].upper == pytest.approx(3 * e1 + Z975 * sd2, abs=1e-9)


def test_predictive_measures_intervals_contain_estimates_and_tau1_le_tau2():
    for level in (0.5, 0.9, 0.99):
        m = predictive_measures(_bf_pred(), population_size=1000.0, level=level)
        for name in ("tau1", "tau2", "p_pu_given_su"):
            mm = m[name]
            assert mm.lower <= mm.estimate <= mm.upper, name
            assert mm.level == level
        assert m["tau1"].estimate <= m["tau2"].estimate
    narrow = predictive_measures(_bf_pred(), population_size=1000.0, level=0.5)
    wide = predictive_measures(_bf_pred(), population_size=1000.0, level=0.99)
    assert wide["tau2"].upper - wide["tau2"].lower > narrow["tau2"].upper - narrow["tau2"].lower


def test_predictive_measures_block_by_block_beyond_sum_block(monkeypatch):
    """Past SUM_BLOCK cells the sums are taken block by block (bounded temporaries at census
    scale): the same figures to rounding, with and without multiplicities, and up to one
    block the same bits as the whole-array sums."""
    import sdcrisk.core.measures as measures

    rng = np.random.default_rng(3)
    f = rng.choice([1, 1, 1, 2, 3, 7], size=1_000).astype(float)
    pred = NegativeBinomialPredictive(f, size=rng.uniform(0.2, 5, 1_000),
                                      prob=rng.uniform(0.01, 0.9, 1_000))
    mult = rng.integers(1, 50, 1_000)
    whole = [predictive_measures(pred, population_size=1e6),
             predictive_measures(pred, population_size=1e6, multiplicity=mult)]
    su = f == 1
    p0 = pred.prob_zero()[su]
    assert whole[0]["tau1"].estimate == float(np.sum(p0))  # one block: the same bits
    assert whole[1]["tau1"].estimate == float(np.dot(mult[su].astype(float), p0))
    monkeypatch.setattr(measures, "SUM_BLOCK", 37)
    assert len(list(measures.cell_blocks(np.flatnonzero(su), len(f)))) > 10
    blocked = [predictive_measures(pred, population_size=1e6),
               predictive_measures(pred, population_size=1e6, multiplicity=mult)]
    for a, b in zip(whole, blocked, strict=True):
        for name in ("tau1", "tau2", "p_pu_given_su", "theta"):
            assert b[name].estimate == pytest.approx(a[name].estimate, rel=1e-12), name
        for name in ("tau1", "tau2"):
            assert b[name].lower == pytest.approx(a[name].lower, rel=1e-12)
            assert b[name].upper == pytest.approx(a[name].upper, rel=1e-12)
    every = NegativeBinomialPredictive(np.ones(100), size=2.0, prob=0.3)  # all unique
    assert predictive_measures(every, population_size=1e4)["tau1"].estimate == pytest.approx(
        100 * 0.3**2, rel=1e-14)


def test_predictive_measures_unobserved_cells_enter_p_pu():
    m = predictive_measures(_bf_pred(unobserved=2.5), population_size=1000.0)
    assert m["p_pu"].estimate == pytest.approx((0.3 + 2.5) / 1000)
    m = predictive_measures(_bf_pred(unobserved=None), population_size=1000.0)
    assert m["p_pu"].estimate is None


def test_predictive_measures_unequal_probabilities():
    # two SU cells with p = 0.5 and 0.01, and one f = 3 cell (ignored by tau1/tau2)
    f = np.array([1, 1, 3])
    pred = NegativeBinomialPredictive(f, size=f, prob=np.array([0.5, 0.01, 0.2]))
    m = predictive_measures(pred, population_size=500.0)
    assert m["tau1"].estimate == pytest.approx(0.51)
    assert m["tau2"].estimate == pytest.approx(0.6931471806 + 0.0465168706, abs=1e-10)


def test_predictive_measures_without_sample_uniques():
    f = np.array([2, 3])
    pred = NegativeBinomialPredictive(f, size=f, prob=0.2)
    m = predictive_measures(pred, population_size=100.0)
    assert m["tau1"].estimate == 0.0 and m["tau2"].estimate == 0.0
    assert m["p_pu_given_su"].estimate is None
    assert m["theta"].estimate is None


def test_measure_to_dict_replaces_non_finite_with_none():
    d = Measure("x", float("nan"), float("-inf"), 2.0, 0.9, "kind").to_dict()
    assert d["estimate"] is None and d["lower"] is None
    assert d["upper"] == 2.0 and d["level"] == 0.9 and d["interval"] == "kind"
