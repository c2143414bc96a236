"""Property-based checks (hypothesis) of measures, estimators, tabulation and NB numerics."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sdcrisk import (
    ConvergenceWarning,
    Microdata,
    NegativeBinomialRisk,
    PoissonGammaRisk,
    bf_risk,
    tabulate,
    truth_measures,
)
from sdcrisk.core import _nb  # noqa: E402

SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --- truth measures -------------------------------------------------------------------------

@st.composite
def sample_population_counts(draw):
    f = np.array(draw(st.lists(st.integers(1, 6), min_size=1, max_size=40)))
    extra = np.array(draw(st.lists(st.integers(0, 20), min_size=len(f), max_size=len(f))))
    return f, f + extra


@SETTINGS
@given(sample_population_counts())
def test_truth_tau1_le_tau2_le_n1(counts):
    f, big_f = counts
    pu = int(np.sum(big_f == 1))
    m = truth_measures(f, big_f, population_size=float(big_f.sum()), population_uniques=pu)
    n1 = int(np.sum(f == 1))
    assert m["tau1"] <= m["tau2"] + 1e-12
    assert m["tau2"] <= n1 + 1e-12
    assert m["sample_uniques"] == n1
    if n1:
        assert 0 <= m["theta"] <= 1
        assert m["p_pu_given_su"] == pytest.approx(m["tau1"] / n1)
        # theta <= tau2 / n1: the harmonic mean is below the arithmetic mean
        assert m["theta"] <= m["tau2"] / n1 + 1e-12


# --- estimators on random microdata ---------------------------------------------------------

@st.composite
def microdata(draw):
    n = draw(st.integers(2, 60))
    n_keys = draw(st.integers(1, 3))
    data = {}
    for j in range(n_keys):
        d = draw(st.integers(1, 5))
        data[f"k{j}"] = np.array(draw(st.lists(st.integers(0, d - 1), min_size=n, max_size=n)))
    weighted = draw(st.booleans())
    if weighted:
        # survey weights: each record stands for at least one person on average (a sum
        # below n is refused, issue 19)
        data["w"] = np.array(draw(st.lists(st.floats(1.0, 200.0), min_size=n, max_size=n)))
    big_n = None if weighted else n * draw(st.sampled_from([1, 1.5, 10, 100, 10_000]))
    md = Microdata.from_source(data, [k for k in data if k != "w"],
                               weights="w" if weighted else None, population_size=big_n)
    return md


def _check_result(res):
    rec = res.record_risk()
    assert np.all(rec >= 0) and np.all(rec <= 1 + 1e-12)
    assert rec.sum() == pytest.approx(res.estimate("expected_reidentifications"), rel=1e-10,
                                      abs=1e-12)
    tau1, tau2 = res.estimate("tau1"), res.estimate("tau2")
    assert tau1 <= tau2 * (1 + 1e-12) + 1e-15
    n1 = res.sample_uniques
    assert tau2 <= n1 + 1e-9
    pu = res.cell_risk("population_unique")
    assert np.all((pu >= 0) & (pu <= 1))
    assert pu.sum() == pytest.approx(tau1, rel=1e-10, abs=1e-15)
    if n1:
        assert res.estimate("p_pu_given_su") == pytest.approx(tau1 / n1, rel=1e-12)
        m = res.measures["tau2"]
        if m.lower is not None:
            assert m.lower <= tau2 <= m.upper
    else:
        assert res.estimate("p_pu_given_su") is None


@SETTINGS
@given(microdata(), st.sampled_from(["exact", "sdcmicro"]))
def test_nb_estimator_properties(md, mode):
    _check_result(NegativeBinomialRisk(mode=mode).fit(tabulate(md)))


@SETTINGS
@given(microdata(), st.one_of(st.none(), st.floats(0.05, 20.0)))
def test_poisson_gamma_estimator_properties(md, alpha):
    tab = tabulate(md)
    if alpha is None:
        # ML may hit the search bound on tiny tables; that is warned about, not an error
        counts = tab.counts
        k = tab.cell_space
        assume(k > 1)
        s2 = np.sum(counts**2) / k - (tab.n / k) ** 2
        assume(k * s2 > tab.n)  # overdispersed counts, so ML has an interior maximum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = PoissonGammaRisk(alpha=alpha).fit(tab)
    _check_result(res)
    # exchangeable: every sample unique gets the same risk
    su = tab.counts == 1
    if su.any():
        assert np.ptp(res.cell_risk()[su]) <= 1e-12 * res.cell_risk()[su].max()


# --- tabulation -----------------------------------------------------------------------------

@SETTINGS
@given(microdata())
def test_tabulate_counts_agree_with_counter(md):
    tab = tabulate(md)
    assert tab.counts.sum() == md.n
    assert np.all(tab.counts >= 1)
    records = list(zip(*(c.tolist() for c in md.codes), strict=True))
    counter = Counter(records)
    got = {tuple(row): int(c) for row, c in zip(tab.cell_codes.tolist(), tab.counts,
                                                strict=True)}
    assert got == dict(counter)
    # record -> cell map
    assert all(tuple(tab.cell_codes[c].tolist()) == records[i]
               for i, c in enumerate(tab.record_cell.tolist()))
    if md.weights is not None:
        sums = Counter()
        for rec, w in zip(records, md.weights, strict=True):
            sums[rec] += w
        np.testing.assert_allclose(tab.weight_sums,
                                   [sums[tuple(r)] for r in tab.cell_codes.tolist()],
                                   rtol=1e-12)


# --- NB numerics ----------------------------------------------------------------------------

probabilities = st.floats(0.002, 0.999)


@SETTINGS
@given(st.integers(1, 60), probabilities)
def test_bf_exact_decreasing_in_f(f, p):
    r = bf_risk(np.array([f, f + 1]), np.array([p, p]), "exact")
    assert r[1] < r[0]


@SETTINGS
@given(st.integers(1, 60), probabilities, probabilities)
def test_bf_exact_increasing_in_p(f, p1, p2):
    assume(abs(p1 - p2) > 1e-6)
    lo, hi = sorted((p1, p2))
    r = bf_risk(np.array([f, f]), np.array([lo, hi]), "exact")
    assert r[0] < r[1]


@SETTINGS
@given(st.integers(1, 50), st.floats(0.05, 60.0), st.floats(1e-4, 1.0))
def test_expected_inverse_bounds(f, r, p):
    e = float(_nb.expected_inverse(f, r, p))
    p0 = float(_nb.prob_zero(r, p))
    q = 1 - p
    # E[1/(f+U)] <= P(U=0)/f + (1-P(U=0))/(f+1) <= 1/f
    assert e <= (p0 / f + (1 - p0) / (f + 1)) * (1 + 1e-10)
    assert e <= 1 / f * (1 + 1e-12)
    # Jensen: E[1/(f+U)] >= 1/(f + E[U])
    assert e >= 1 / (f + r * q / p) * (1 - 1e-10)
    # Euler series with nonnegative terms when r <= f + 1
    if r <= f + 1:
        assert e >= p / f * (1 - 1e-12)
    e2 = float(_nb.expected_inverse_square(f, r, p))
    assert e**2 <= e2 * (1 + 1e-10)
    assert e2 <= e / f * (1 + 1e-10)
