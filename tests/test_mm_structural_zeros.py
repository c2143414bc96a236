"""Structural-zero augmentation of the mixed-membership samplers (spec E.4.3-E.4.4, H.1.4, H.1.7).

Oracles: exact enumeration of the conditional expectations of the augmented statistics given
x in a condition (Dirichlet moments, two variables), the negative-binomial law of N_0, hand
evaluation of the importance weights, and the New York sample with structural zeros of spec
G.5 (the augmentation must not run away).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

from sdcrisk import ConvergenceWarning, Microdata, ParameterError, tabulate
from sdcrisk.data.structural_zeros import StructuralZeros
from sdcrisk.estimators import _mm_kernels as kern
from sdcrisk.estimators import _mm_model as mm
from sdcrisk.estimators import _mm_sz as szk
from sdcrisk.estimators._mm_model import HdpParams, MMData, hdp_init
from sdcrisk.estimators.mixed_membership import HdpRisk, MixedMembershipRisk

# two variables (d = 2, 3); components 0, 1 and the "new" remainder (uniform profile)
SIZES = np.array([2, 3])
OFFS = np.array([0, 2, 5])
THETA = np.array([[0.9, 0.1, 0.7, 0.2, 0.1], [0.2, 0.8, 0.1, 0.1, 0.8],
                  [0.5, 0.5, 1 / 3, 1 / 3, 1 / 3]])
WEIGHTS = np.array([0.6, 0.3, 0.1])
ALPHA = 2.0
# structural zeros: cell (0, 2) and every cell with a = 1
CONDS = [[0, 2], [1, -1]]


def _sz():
    sz = StructuralZeros.from_codes(CONDS, keys=["a", "b"], sizes=tuple(SIZES))
    return sz, szk.SzData.build(sz, OFFS)


def _moment(conc, counts):
    """E[prod_k pi_k^counts_k] for pi ~ Dir(conc)."""
    return np.exp(special.gammaln(conc.sum()) - special.gammaln(conc.sum() + counts.sum())
                  + np.sum(special.gammaln(conc + counts) - special.gammaln(conc)))


def _exact_given_condition():
    """Per condition c: p_c and E[profile counts of one record | x in c] (L, D), exact.

    A record has pi ~ Dir(ALPHA WEIGHTS), z_j ~ pi, x_j ~ THETA[z_j]; enumerate (z_1, z_2)
    with the Dirichlet moments E[pi_k1 pi_k2] and the cells x of c.
    """
    L, D = THETA.shape
    out = []
    for cond in CONDS:
        stats = np.zeros((L, D))
        p_c = 0.0
        for k1, k2 in itertools.product(range(L), repeat=2):
            mom = _moment(ALPHA * WEIGHTS, np.bincount([k1, k2], minlength=L) * 1.0)
            for x1, x2 in itertools.product(range(2), range(3)):
                if any(v >= 0 and v != x for v, x in zip(cond, (x1, x2), strict=True)):
                    continue
                pr = mom * THETA[k1, x1] * THETA[k2, OFFS[1] + x2]
                p_c += pr
                stats[k1, x1] += pr
                stats[k2, OFFS[1] + x2] += pr
        out.append((p_c, stats / p_c))
    return out


def test_exact_oracle_is_a_distribution():
    # the two conditions' probabilities against the cell probabilities summed directly
    cells = np.array(list(itertools.product(range(2), range(3))))
    p = np.zeros(len(cells))
    L = len(WEIGHTS)
    for k1, k2 in itertools.product(range(L), repeat=2):
        mom = _moment(ALPHA * WEIGHTS, np.bincount([k1, k2], minlength=L) * 1.0)
        p += mom * THETA[k1, cells[:, 0]] * THETA[k2, OFFS[1] + cells[:, 1]]
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    (p0, s0), (p1, s1) = _exact_given_condition()
    assert p0 == pytest.approx(p[2], rel=1e-12)            # cell (0, 2)
    assert p1 == pytest.approx(p[3:].sum(), rel=1e-12)     # a = 1
    # each record has one allocation per variable
    np.testing.assert_allclose([s0[:, :2].sum(), s0[:, 2:].sum()], [1.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(s1[:, 1].sum(), 1.0, rtol=1e-12)


def test_tilt_weights_by_hand():
    _, sz = _sz()
    W = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.0, 1.0, 0.0]])
    marg = W @ THETA
    wt = szk.tilt_weights(marg, sz)
    # condition 0 fixes columns 0 (a = 0) and 4 (b = 2); condition 1 column 1 (a = 1)
    like0 = marg[:, 0] * marg[:, 4]
    like1 = marg[:, 1]
    np.testing.assert_allclose(wt[0], like0 / like0.sum(), rtol=1e-14)
    np.testing.assert_allclose(wt[1], like1 / like1.sum(), rtol=1e-14)
    # no fixed column: every draw equally likely; all-zero likelihoods: 1/M
    np.testing.assert_allclose(szk.tilt_weights(np.zeros((3, 5)), sz), 1 / 3)


@pytest.mark.parametrize("tilt", [False, True])
@pytest.mark.parametrize("free", ["uniform", "indicator", "joint"])
def test_approximation_by_hand(free, tilt):
    """BR App. C items 1-2 on a toy (condition 0 fixes a = 0 and b = 2, condition 1 fixes
    a = 1): the M = 2 draws weighted equally (BR) or by P(x in c | pi_m) (tilted)."""
    _, sz = _sz()
    W = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    marg = W @ THETA
    n_c = np.array([4, 6])
    conc = np.array([[1.2, 0.6, 0.2], [0.9, 0.9, 0.3]])
    aug_c, aug_m = szk.approximate(W, THETA, marg, n_c, sz, OFFS, SIZES.astype(float), conc,
                                   free, tilt=tilt)
    if tilt:
        wt = np.array([marg[:, 0] * marg[:, 4], marg[:, 1]])
        wt /= wt.sum(axis=1, keepdims=True)
    else:
        wt = np.full((2, 2), 0.5)
    r = W[:, :, None] * THETA[None] / marg[:, None, :]       # (M, L, D)
    expect = np.zeros_like(aug_c)
    for m in range(2):
        expect[:, 0] += 4 * wt[0, m] * r[m, :, 0]
        expect[:, 4] += 4 * wt[0, m] * r[m, :, 4]
        expect[:, 1] += 6 * wt[1, m] * r[m, :, 1]
        if free == "uniform":
            expect[:, 2:5] += 6 * wt[1, m] * r[m, :, 2:5] / 3
        elif free == "indicator":
            expect[:, 2:5] += 6 * wt[1, m] * r[m, :, 2:5]
        else:
            expect[:, 2:5] += 6 * wt[1, m] * W[m, :, None] * THETA[:, 2:5]
    np.testing.assert_array_equal(aug_c, np.rint(expect))
    tables = np.zeros(3)
    for m in range(2):
        for k in range(3):
            for c, (fixed_cols, nfree) in enumerate([([0, 4], 0), ([1], 1)]):
                t = int(np.rint(r[m, k, fixed_cols].sum() + nfree * W[m, k]))
                a = conc[m, k]
                tables[k] += (n_c[c] * wt[c, m] * a
                              * (special.digamma(a + t) - special.digamma(a)))
    np.testing.assert_array_equal(aug_m, np.rint(tables))


def test_tilted_joint_approximation_is_the_conditional_expectation():
    # with many membership draws, App. C with tilted weights and joint free counts gives
    # n_c E[counts | x in c]; the untilted version (memberships from the prior, BR) does
    # not: it over-weights the component that explains each fixed value on its own
    _, sz = _sz()
    rng = np.random.default_rng(41)
    W, _ = kern.membership_draws(rng, WEIGHTS, 400_000, 1.0, 1.0, ALPHA)
    marg = W @ THETA
    n_c = np.array([30_000, 50_000])
    exact = sum(nc * s for nc, (_, s) in zip(n_c, _exact_given_condition(), strict=True))
    tilted, _ = szk.approximate(W, THETA, marg, n_c, sz, OFFS, SIZES.astype(float), None,
                                "joint", tilt=True)
    np.testing.assert_allclose(tilted, exact, rtol=0.01, atol=2.0)
    prior, _ = szk.approximate(W, THETA, marg, n_c, sz, OFFS, SIZES.astype(float), None,
                               "joint", tilt=False)
    assert np.abs(prior - exact).max() > 0.05 * exact.max()
    # BR's uniform weights of a free variable's categories miss even the free margin
    uniform, _ = szk.approximate(W, THETA, marg, n_c, sz, OFFS, SIZES.astype(float), None,
                                 "uniform", tilt=True)
    assert np.abs(uniform[:, 2:] - exact[:, 2:]).max() > 0.1 * exact[:, 2:].max()


def test_truncated_simulation_follows_the_model():
    # records drawn until n are admissible: N_0 ~ NegBin(n, 1 - omega) and the augmented
    # records' counts are N_0 times the exact mixture of E[counts | x in c] over c
    _, sz = _sz()
    ex = _exact_given_condition()
    omega = ex[0][0] + ex[1][0]
    per_record = (ex[0][0] * ex[0][1] + ex[1][0] * ex[1][1]) / omega
    rng = np.random.default_rng(42)
    n = 20_000
    n0s, counts = [], np.zeros_like(THETA)
    for _ in range(10):
        aug_c, aug_m, n0, capped = szk.simulate_truncated(
            rng, n, np.inf, OFFS, SIZES, WEIGHTS, THETA, 1.0, 1.0, ALPHA, 0.0, False, True,
            sz.pat_fixed, sz.pat_offs, sz.pat_table)
        assert not capped
        assert aug_c.sum() == 2 * n0
        # at least one table per record, at most one per allocation
        assert n0 <= aug_m.sum() <= 2 * n0
        n0s.append(n0)
        counts += aug_c
    n0s = np.array(n0s)
    mean, sd = n * omega / (1 - omega), np.sqrt(n * omega) / (1 - omega)
    assert abs(n0s.mean() - mean) < 4 * sd / np.sqrt(len(n0s))
    expect = per_record * n0s.sum()
    assert np.all(np.abs(counts - expect) <= 4 * np.sqrt(expect) + 1)
    # BR's cap: stop after cap augmented records
    _, _, n0, capped = szk.simulate_truncated(
        rng, n, 50, OFFS, SIZES, WEIGHTS, THETA, 1.0, 1.0, ALPHA, 0.0, False, False,
        sz.pat_fixed, sz.pat_offs, sz.pat_table)
    assert capped and n0 == 50


def _hdp_arrays(cap, alpha0):
    """The toy model as HDP state arrays: components 0, 1 instantiated, remainder 0.1."""
    beta = np.zeros(cap)
    beta[:2] = WEIGHTS[:2]
    theta = np.zeros((cap, OFFS[-1]))
    theta[:2] = THETA[:2]
    return (beta, np.array([WEIGHTS[2], alpha0]), theta, np.array([2], np.int64),
            np.zeros((cap, OFFS[-1])), np.zeros(cap))


def test_exact_hdp_augmentation_follows_the_model():
    # sz_method="exact" on the HDP's state: allocations to the remainder instantiate
    # components (profile from the Dir(1) prior). With alpha_0 = 1e6 a new component takes
    # a share nu ~ Beta(1, 1e6) of beta_0, so no two records share one and the augmented
    # records are i.i.d. with a uniform "new" profile: N_0 ~ NegBin(n, 1 - omega) and the
    # counts of the new components add up to the exact expectation of the remainder row
    _, sz = _sz()
    ex = _exact_given_condition()
    omega = ex[0][0] + ex[1][0]
    per_record = (ex[0][0] * ex[0][1] + ex[1][0] * ex[1][1]) / omega
    rng = np.random.default_rng(47)
    n, reps, cap = 5_000, 8, 20_000
    n0s, counts = [], np.zeros_like(THETA)
    for _ in range(reps):
        beta, scal, theta, kk, aug_c, aug_m = _hdp_arrays(cap, 1e6)
        # alpha fixed at ALPHA (the oracle's): shape and rate unused
        n0, capped, m0 = szk.simulate_truncated_hdp(
            rng, n, np.inf, OFFS, SIZES, beta, scal, theta, kk, np.zeros((0, cap)),
            np.zeros(0), np.zeros(0), 1.0, 1.0, ALPHA, False, aug_c, aug_m, sz.pat_fixed,
            sz.pat_offs, sz.pat_table)
        K = int(kk[0])
        assert not capped and m0 == 0.0
        assert K > 2 and K - 2 <= aug_c[2:K].sum()       # every new component has data
        assert np.all(aug_m[2:K] >= 1) and aug_c[K:].sum() == 0
        # beta_0's splits and the discarded candidates' returns keep the total mass
        assert beta[:K].sum() + scal[0] == pytest.approx(1.0, abs=1e-12)
        assert aug_c.sum() == 2 * n0
        n0s.append(n0)
        counts += np.vstack([aug_c[:2], aug_c[2:K].sum(axis=0)])
    n0s = np.array(n0s)
    mean, sd = n * omega / (1 - omega), np.sqrt(n * omega) / (1 - omega)
    assert abs(n0s.mean() - mean) < 4 * sd / np.sqrt(reps)
    expect = per_record * n0s.sum()
    assert np.all(np.abs(counts - expect) <= 4 * np.sqrt(expect) + 1)


def test_exact_hdp_augmentation_reuses_its_new_components():
    # with alpha_0 = 0.5 a new component takes most of beta_0 (nu ~ Beta(1, 0.5)) and later
    # augmented records join it: fewer components than remainder allocations, and their
    # table counts use each record's alpha beta_k (at most one table per allocation)
    _, sz = _sz()
    rng = np.random.default_rng(48)
    beta, scal, theta, kk, aug_c, aug_m = _hdp_arrays(4_000, 0.5)
    n0, _, _ = szk.simulate_truncated_hdp(
        rng, 2_000, np.inf, OFFS, SIZES, beta, scal, theta, kk, np.zeros((0, 4_000)),
        np.zeros(0), np.zeros(0), 2.0, 1.0, 0.0, False, aug_c, aug_m, sz.pat_fixed,
        sz.pat_offs, sz.pat_table)
    K = int(kk[0])
    new_items = aug_c[2:K].sum()
    assert 0 < K - 2 < new_items / 5
    assert n0 <= aug_m[:K].sum() <= 2 * n0


def test_exact_hdp_augmentation_splits_observed_memberships():
    # samplers that keep pi_i (sequential): a new component splits every observed pi_i0 as
    # the allocation sweep does, and a discarded candidate's components give it back
    _, sz = _sz()
    rng = np.random.default_rng(49)
    cap, n_obs = 400, 7
    beta, scal, theta, kk, aug_c, aug_m = _hdp_arrays(cap, 0.5)
    pi = np.zeros((n_obs, cap))
    pi[:, :2] = [0.5, 0.3]
    pi0 = np.full(n_obs, 0.2)
    szk.simulate_truncated_hdp(rng, 300, np.inf, OFFS, SIZES, beta, scal, theta, kk, pi, pi0,
                               np.full(n_obs, 3.0), 2.0, 1.0, 0.0, False, aug_c, aug_m,
                               sz.pat_fixed, sz.pat_offs, sz.pat_table)
    K = int(kk[0])
    assert K > 2
    np.testing.assert_allclose(pi[:, :K].sum(axis=1) + pi0, 1.0, atol=1e-12)
    assert np.all(pi[:, 2:K] > 0) and np.all(pi[:, K:] == 0)


def test_in_structural_zero_against_contains():
    sz, data = _sz()
    cells = np.array(list(itertools.product(range(2), range(3))))
    got = [szk.in_structural_zero(c, SIZES, data.pat_fixed, data.pat_offs, data.pat_table)
           for c in cells]
    np.testing.assert_array_equal(got, sz.contains(cells))


# --- the cap on N_0 and the estimator options ------------------------------------------------
def _high_omega_case(n=60):
    # records with a = 0 and b in {0, 1}; a = 1 and the cell (0, 2) are structural zeros
    rng = np.random.default_rng(43)
    md = Microdata.from_source({"a": np.zeros(n, int), "b": rng.integers(0, 2, n)},
                               ["a", "b"], population_size=6_000,
                               levels={"a": [0, 1], "b": [0, 1, 2]})
    sz = StructuralZeros.from_codes(CONDS, keys=["a", "b"], sizes=(2, 3))
    return tabulate(md), sz


@pytest.mark.parametrize("method", ["approximate", "augment", "exact"])
def test_cap_bounds_the_augmented_records(method):
    # profiles with theta_a(1) = 0.999: omega > 0.999 and N_0 ~ NegBin(n, 1 - omega) has
    # mean above 999 n; the cap keeps it at 100 n (BR's code), without it N_0 exceeds that
    tab, sz = _high_omega_case()
    data = MMData.from_table(tab, sz)
    seen = {}
    for cap in (100.0, np.inf):
        params = HdpParams(sz_method=method, sz_cap=cap, mc_draws=50)
        rng = np.random.default_rng(44)
        state = hdp_init(rng, data, params)
        state.theta[:state.K, 0] = 0.001
        state.theta[:state.K, 1] = 0.999
        state.scal[0] = 1e-9          # (almost) no mass on the uniform "new" profile
        mm._augment(rng, state, data, params)
        seen[cap] = state.n_aug
        assert state.omega > 0.99
    assert seen[100.0] <= 100 * data.n
    assert seen[np.inf] > 100 * data.n


@pytest.mark.parametrize("cls", [HdpRisk, MixedMembershipRisk])
def test_capped_chains_are_reported(cls):
    tab, sz = _high_omega_case()
    opts = {"chains": 2, "iterations": 40, "burn_in": 10, "thin": 2, "mc_draws": 50}
    if cls is MixedMembershipRisk:
        opts["profiles"] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = cls(**opts, structural_zeros=sz, sz_cap=0.5).fit(tab)
    d = res.diagnostics["mcmc"]
    assert d["capped_chains"] == [0, 1]
    assert d["runaway_chains"] == []
    assert res.fitted["posterior"]["n_augmented"]["upper"] <= 0.5 * tab.n
    assert any("at most 0.5 n augmented records" in a for a in res.assumptions)


@pytest.mark.parametrize("cls", [HdpRisk, MixedMembershipRisk])
@pytest.mark.parametrize("extra", [{"sz_method": "exact"},
                                   {"sz_memberships": "conditional", "sz_free_counts": "joint"}])
def test_structural_zero_options_run_and_are_deterministic(cls, extra):
    tab, sz = _high_omega_case()
    opts = {"chains": 2, "iterations": 30, "burn_in": 10, "thin": 2, "mc_draws": 50,
            "structural_zeros": sz, **extra}
    if cls is MixedMembershipRisk:
        opts["profiles"] = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = cls(**opts).fit(tab)
        two = cls(**opts).fit(tab)
    assert one.to_dict()["measures"] == two.to_dict()["measures"]
    assert 0 <= one.estimate("tau1") <= max(tab.sample_uniques, 1e-9)
    assert one.parameters[next(iter(extra))] == extra[next(iter(extra))]


@pytest.mark.parametrize("bad", [{"sz_memberships": "posterior"}, {"sz_cap": 0},
                                 {"sz_cap": -1.0}, {"sz_cap": "100"}, {"sz_cap": True},
                                 {"sz_method": "simulate"}, {"sz_tables": "alpha"}])
def test_bad_structural_zero_options(bad):
    with pytest.raises(ParameterError, match=next(iter(bad))):
        HdpRisk(**bad)


@pytest.mark.parametrize("tables", ["top", "individual"])
def test_augmented_tables_use_the_chosen_concentration(tables):
    # _augment (App. C) against its steps replayed on the same random stream: the table
    # counts of eq 12 with alpha_0 beta_k ("top", BR's code) or alpha_m beta_k
    tab, sz = _high_omega_case()
    data = MMData.from_table(tab, sz)
    params = HdpParams(sz_tables=tables, mc_draws=40, sz_cap=100.0)
    state = hdp_init(np.random.default_rng(45), data, params)
    weights, theta_ext = mm._extended(state, data)
    law = mm.alpha_law(state.alpha, params.new_alpha, (params.a, params.b))
    rng = np.random.default_rng(46)
    mm._augment(rng, state, data, params)
    rng = np.random.default_rng(46)
    W, alphas = kern.membership_draws(rng, weights, 40, *law)
    marg = W @ theta_ext
    n0, n_c = szk.draw_counts(rng, data.n, szk.condition_probs(marg, data.sz), 100 * data.n)
    assert n0 == state.n_aug > 0
    base = np.full(40, state.scal[1]) if tables == "top" else alphas
    _, aug_m = szk.approximate(W, theta_ext, marg, n_c, data.sz, data.offs, data.dsize,
                               np.outer(base, weights), "uniform")
    K = state.K
    np.testing.assert_array_equal(state.aug_m[:K], aug_m[:K])
    assert state.aug_m0 == aug_m[K]


def test_exact_augmentation_chain_targets_the_truncated_posterior():
    # The whole chain, not one step: with one profile the grade-of-membership model is the
    # independence model, here two binary keys with lambda_1 = (a, 1 - a), lambda_2 =
    # (b, 1 - b), Dir(1) priors and the structural zero (0, 0). Its posterior given the
    # truncated sample is proportional to a^30 (1 - a)^70 b^20 (1 - b)^80 / (1 - a b)^100
    # (30 records with a = 0, 20 with b = 0, 100 in all), so E[omega] = E[a b] follows by
    # quadrature: 0.112108, sd 0.02978. sz_method="exact" simulates records until n are
    # admissible; a chain that targeted anything else (an augmentation drawn from a wrong
    # law, a wrong N_0) would miss it: without the structural zero (a Beta(31, 71) x
    # Beta(21, 81) posterior) E[a b] is 0.0626.
    counts = {("0", "1"): 30, ("1", "0"): 20, ("1", "1"): 50}
    rows = [cell for cell, c in counts.items() for _ in range(c)]
    md = Microdata.from_source(pd.DataFrame(rows, columns=["a", "b"]), keys=["a", "b"],
                               population_size=1000)
    tab = tabulate(md)
    sz = StructuralZeros.from_tuples([{"a": "0", "b": "0"}], keys=["a", "b"],
                                     levels=tab.levels)
    nodes, w = np.polynomial.legendre.leggauss(400)
    u, w = (nodes + 1) / 2, w / 2
    a, b = np.meshgrid(u, u, indexing="ij")
    dens = (np.exp(30 * np.log(a) + 70 * np.log1p(-a) + 20 * np.log(b) + 80 * np.log1p(-b)
                   - 100 * np.log1p(-a * b)) * np.outer(w, w))
    mean = float((a * b * dens).sum() / dens.sum())
    sd = float(np.sqrt((a * a * b * b * dens).sum() / dens.sum() - mean ** 2))
    assert mean == pytest.approx(0.112108, abs=1e-6) and sd == pytest.approx(0.02978, abs=1e-5)
    res = MixedMembershipRisk(profiles=1, structural_zeros=sz, sz_method="exact",
                              sz_cap=float("inf"), chains=4, iterations=4000, burn_in=500,
                              thin=2, random_state=1, progress=False).fit(tab)
    post = res.fitted["posterior"]["omega"]
    assert abs(post["mean"] - mean) < 4 * post["mcse_mean"] < 0.003
    assert post["sd"] == pytest.approx(sd, rel=0.05)
