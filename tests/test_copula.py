"""The Gaussian-copula estimator (Rocher, Hendrickx & de Montjoye 2019; candidates.md L)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, norm
from scipy.stats import multivariate_normal as mvn

import sdcrisk
from sdcrisk import GaussianCopulaRisk, Microdata, ParameterError, roc_auc, tabulate
from sdcrisk.cli import main
from sdcrisk.estimators import _copula_kernels as kern
from sdcrisk.estimators.copula import (
    BinomialPredictive,
    bvn_cdf,
    marginal_probabilities,
    match_correlation,
    mca_orders,
    model_joint,
    model_mutual_information,
    mutual_information,
    nearest_correlation,
    rectangle_probabilities,
    thresholds,
)


def _corr(d, seed, strength=0.5):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    s = a @ a.T
    dg = np.sqrt(np.diag(s))
    return strength * s / np.outer(dg, dg) + (1 - strength) * np.eye(d)


# --- numerics -----------------------------------------------------------------------------------

@pytest.mark.parametrize("u", [1e-300, 1e-20, 1e-8, 0.001, 0.3, 0.5, 0.7, 0.999, 1 - 1e-12])
def test_normal_quantile(u):
    assert kern.norm_ppf(u) == pytest.approx(norm.ppf(u), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("rho", [-0.95, -0.6, 0.0, 0.1, 0.5, 0.9, 0.93, 0.99, 0.995])
def test_bivariate_normal_cdf_against_scipy(rho):
    h = np.array([-3.0, -1.2, 0.0, 0.4, 2.1])
    k = np.array([-2.0, -0.1, 0.7, 3.0])
    got = bvn_cdf(h, k, rho)
    dist = mvn(cov=[[1, rho], [rho, 1]], abseps=1e-12, releps=1e-12)
    ref = np.array([[dist.cdf([a, b]) for b in k] for a in h])
    np.testing.assert_allclose(got, ref, atol=1e-9)


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_rectangle_probabilities_against_scipy(d):
    """Genz QMC against scipy's multivariate normal CDF (Genz's own Fortran, run to 1e-9)."""
    rng = np.random.default_rng(d)
    corr = _corr(d, d)
    lo = rng.normal(size=(6, d)) - 0.5
    hi = lo + rng.uniform(0.2, 1.5, size=(6, d))
    lo[0, 0], hi[1, -1] = -np.inf, np.inf
    reps = rectangle_probabilities(lo, hi, corr, points=4096, seed=1)
    got = reps.mean(1)
    dist = mvn(cov=corr, abseps=1e-11, releps=1e-7, maxpts=2_000_000)
    ref = np.array([dist.cdf(hi[i], lower_limit=lo[i]) for i in range(6)])
    np.testing.assert_allclose(got, ref, rtol=2e-3)
    # the replicate spread is an honest error bar: within 5 standard errors
    se = reps.std(1, ddof=1) / math.sqrt(reps.shape[1])
    assert np.all(np.abs(got - ref) <= 5 * se + 1e-12)


def test_rectangle_probabilities_independent_are_exact_products():
    rng = np.random.default_rng(3)
    d = 8
    lo = rng.normal(size=(20, d)) - 1
    hi = lo + rng.uniform(0.05, 2, size=(20, d))
    lo[:, 2] = -np.inf
    got = rectangle_probabilities(lo, hi, np.eye(d), points=16).mean(1)
    ref = np.prod(norm.cdf(hi) - norm.cdf(lo), axis=1)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_nearest_correlation_higham_example():
    """Higham (2002) sec. 4: the nearest correlation matrix to [[1,1,0],[1,1,1],[0,1,1]]."""
    a = np.array([[1.0, 1, 0], [1, 1, 1], [0, 1, 1]])
    x, changed = nearest_correlation(a)
    assert changed
    ref = np.array([[1, 0.7607, 0.1573], [0.7607, 1, 0.7607], [0.1573, 0.7607, 1]])
    np.testing.assert_allclose(x, ref, atol=2e-4)
    assert np.linalg.eigvalsh(x).min() > 0 and np.allclose(np.diag(x), 1)
    same, changed = nearest_correlation(np.eye(3))
    assert not changed and np.array_equal(same, np.eye(3))


def test_thresholds_and_model_joint():
    p = np.array([0.2, 0.5, 0.3])
    lo, hi = thresholds(p, np.arange(3))
    np.testing.assert_allclose(hi[:2], norm.ppf([0.2, 0.7]))
    np.testing.assert_allclose(lo[1:], norm.ppf([0.2, 0.7]))
    assert lo[0] == -np.inf and hi[2] == np.inf
    lo2, hi2 = thresholds(p, np.array([1, 2, 0]))  # level 1 first, then 2, then 0
    np.testing.assert_allclose([hi2[1], hi2[2]], norm.ppf([0.5, 0.8]))
    # independence: the product; any rho: the marginals are kept
    q = np.array([0.1, 0.6, 0.3])
    np.testing.assert_allclose(model_joint(p, q, 0.0), np.outer(p, q), atol=1e-12)
    j = model_joint(p, q, 0.7)
    np.testing.assert_allclose(j.sum(1), p, atol=1e-12)
    np.testing.assert_allclose(j.sum(0), q, atol=1e-12)
    assert model_mutual_information(p, q, 0.7) > model_mutual_information(p, q, 0.3) > 0


def test_mca_orders_recover_a_scrambled_latent_order():
    """Three keys cut from one correlated latent normal, their level labels scrambled: the
    correspondence-analysis order puts every key's categories back in latent order (or all
    reversed, the axis has no sign)."""
    rng = np.random.default_rng(2)
    z = rng.multivariate_normal(np.zeros(3), [[1, .7, .6], [.7, 1, .5], [.6, .5, 1]], 50_000)
    perms = [rng.permutation(6), rng.permutation(5), rng.permutation(4)]
    cols = {}
    for j, perm in enumerate(perms):
        cut = norm.ppf(np.linspace(0, 1, len(perm) + 1)[1:-1])
        cols[f"k{j}"] = perm[np.searchsorted(cut, z[:, j])]  # latent rank r -> label perm[r]
    table = tabulate(Microdata.from_source(pd.DataFrame(cols), list(cols),
                                           population_size=10**6))
    orders = mca_orders(table)
    fwd = [np.array_equal(o, p) for o, p in zip(orders, perms, strict=True)]
    rev = [np.array_equal(o, p[::-1]) for o, p in zip(orders, perms, strict=True)]
    assert all(f or r for f, r in zip(fwd, rev, strict=True)), (orders, perms)


def test_mca_orders_sparse_path_agrees_with_dense(monkeypatch):
    """Two keys of about 900 levels: the Lanczos path orders the categories as the dense
    Burt-table path does (up to the axis' sign and near-ties)."""
    import sdcrisk.estimators.copula as cm

    rng = np.random.default_rng(0)
    z = rng.multivariate_normal(np.zeros(3), 0.5 * np.eye(3) + 0.5, 20_000)
    frame = pd.DataFrame({"a": np.digitize(z[:, 0], np.linspace(-3, 3, 900)),
                          "e": np.digitize(z[:, 0] + z[:, 1], np.linspace(-4, 4, 900)),
                          "b": np.digitize(z[:, 2], np.linspace(-2, 2, 10))})
    table = tabulate(Microdata.from_source(frame, list(frame), population_size=10**6))
    assert sum(len(lv) for lv in table.levels) > cm.MCA_DENSE
    sparse = mca_orders(table)
    monkeypatch.setattr(cm, "MCA_DENSE", 10**6)
    dense = mca_orders(table)
    for a, b in zip(dense, sparse, strict=True):
        ra, rb = np.argsort(a), np.argsort(b)
        assert abs(np.corrcoef(ra, rb)[0, 1]) > 0.9999


def test_mutual_information_hand_worked():
    # X = Y uniform on 2 levels: I = log 2
    assert mutual_information(np.array([[5, 0], [0, 5]])) == pytest.approx(math.log(2))
    assert mutual_information(np.array([[2, 2], [3, 3]])) == pytest.approx(0, abs=1e-15)


def test_mutual_information_matching_recovers_rho():
    """A large sample of a bivariate Gaussian copula (rho = 0.6 and -0.35) with 5 x 7 levels:
    matching the sample's mutual information gives rho back."""
    rng = np.random.default_rng(0)
    pj = np.array([0.1, 0.3, 0.25, 0.2, 0.15])
    pk = rng.dirichlet(np.ones(7))
    for rho in (0.6, -0.35):
        z = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=200_000)
        x = np.searchsorted(norm.ppf(np.cumsum(pj)[:-1]), z[:, 0])
        y = np.searchsorted(norm.ppf(np.cumsum(pk)[:-1]), z[:, 1])
        joint = np.bincount(x * 7 + y, minlength=35).reshape(5, 7)
        got, bound = match_correlation(pj, pk, mutual_information(joint), np.sign(rho))
        assert not bound
        assert got == pytest.approx(rho, abs=0.01)


# --- predictive law -----------------------------------------------------------------------------

@pytest.mark.parametrize("f", [1, 2, 5])
@pytest.mark.parametrize(("m", "p"), [(0, 0.01), (10, 0.3), (500, 0.003), (5000, 2e-3),
                                      (10**6, 1e-9)])
def test_binomial_moments_against_direct_summation(f, m, p):
    pred = BinomialPredictive(np.array([f, f]), np.array([p, p]), m)
    u = np.arange(m + 1)
    w = binom.pmf(u, m, p)
    assert pred.prob_zero()[0] == pytest.approx(math.exp(m * math.log1p(-p)), rel=1e-12)
    assert pred.expected_inverse()[0] == pytest.approx(np.sum(w / (f + u)), rel=1e-9)
    assert pred.expected_inverse_square()[0] == pytest.approx(np.sum(w / (f + u) ** 2),
                                                              rel=1e-6)
    assert pred.mean()[0] == pytest.approx(m * p)


def test_binomial_tiny_and_unit_probabilities():
    pred = BinomialPredictive(np.array([1, 1, 3]), np.array([0.0, 1.0, 1e-300]), 1000)
    np.testing.assert_allclose(pred.prob_zero(), [1, 0, 1])
    np.testing.assert_allclose(pred.expected_inverse(), [1, 1 / 1001, 1 / 3], rtol=1e-12)


# --- the estimator ------------------------------------------------------------------------------

def _two_key_table(big_n):
    # x: 3 levels, y: 2 levels; cells and counts chosen by hand
    rows = [(0, 0)] * 4 + [(0, 1)] * 1 + [(1, 0)] * 2 + [(1, 1)] * 1 + [(2, 1)] * 2
    frame = pd.DataFrame(rows, columns=["x", "y"])
    return tabulate(Microdata.from_source(frame, ["x", "y"], population_size=big_n))


def test_two_keys_independent_closed_form():
    """rho = 0, smoothing 0: p = product of the sample marginals and the measures in closed
    form. x: 5/10, 3/10, 2/10; y: 6/10, 4/10; sample uniques (0,1) and (1,1)."""
    big_n = 1000
    table = _two_key_table(big_n)
    res = GaussianCopulaRisk(dependence="independence", smoothing=0.0).fit(table)
    m = big_n - 10
    p_su = np.array([0.5 * 0.4, 0.3 * 0.4])
    tau1 = np.sum((1 - p_su) ** m)
    tau2 = np.sum((1 - (1 - p_su) ** (m + 1)) / ((m + 1) * p_su))
    assert res.measures["tau1"].estimate == pytest.approx(tau1, rel=1e-12)
    assert res.measures["tau2"].estimate == pytest.approx(tau2, rel=1e-12)
    # a cell seen twice: E[1/F] = E[1/(2 + U)], U ~ Bin(m, 0.3 * 0.6)
    u = np.arange(m + 1)
    cell = table.record_cell[5]
    assert table.counts[cell] == 2
    expect = np.sum(binom.pmf(u, m, 0.18) / (2 + u))
    assert res.cell_risk()[cell] == pytest.approx(expect, rel=1e-9)
    # record risk differs between the two sample uniques (an exchangeable model's would not)
    su = np.flatnonzero(table.counts == 1)
    risk = res.cell_risk("population_unique")[su]
    assert risk[0] != risk[1]


def test_marginals_smoothing_and_weights():
    table = _two_key_table(1000)
    px, py = marginal_probabilities(table, 0.5)
    np.testing.assert_allclose(px, [5.5 / 11.5, 3.5 / 11.5, 2.5 / 11.5])
    np.testing.assert_allclose(py, [6.5 / 11, 4.5 / 11])
    frame = pd.DataFrame({"x": [0, 0, 1, 1], "y": [0, 1, 0, 1], "w": [1.0, 1, 3, 3]})
    wt = tabulate(Microdata.from_source(frame, ["x", "y"], weights="w"))
    px, _ = marginal_probabilities(wt, 0.0)
    np.testing.assert_allclose(px, [0.25, 0.75])


def _copula_population(n_pop, seed):
    rng = np.random.default_rng(seed)
    levels = [30, 8, 5, 12, 40, 3]
    corr = _corr(len(levels), seed)
    z = rng.multivariate_normal(np.zeros(len(levels)), corr, size=n_pop)
    cols = {}
    for j, lv in enumerate(levels):
        p = rng.dirichlet(np.full(lv, 0.7))
        cols[f"v{j}"] = np.searchsorted(norm.ppf(np.cumsum(p)[:-1]), z[:, j])
    return pd.DataFrame(cols), corr


def test_recovers_tau_on_a_gaussian_copula_population():
    """When the population is a Gaussian copula (in the table's level order) the model is
    right: on 2% of 200,000 records the corrected-MI fit recovers the correlations within 0.1
    and tau1, tau2 within 8%; the paper's plug-in MI reads extra dependence into many-level
    pairs."""
    pop, corr = _copula_population(200_000, 0)
    ids = np.unique(pop.to_numpy(), axis=0, return_inverse=True)[1].ravel()
    big_f = np.bincount(ids)
    take = np.random.default_rng(1).random(len(pop)) < 0.02
    f = np.bincount(ids[take], minlength=len(big_f))
    su = f == 1
    truth1, truth2 = np.sum(su & (big_f == 1)), np.sum(1 / big_f[su])
    table = tabulate(Microdata.from_source(pop[take], list(pop.columns),
                                           population_size=len(pop)))
    res = GaussianCopulaRisk(order="levels").fit(table)
    assert np.abs(np.array(res.fitted["correlation"]) - corr).max() < 0.1
    assert res.measures["tau1"].estimate == pytest.approx(truth1, rel=0.08)
    assert res.measures["tau2"].estimate == pytest.approx(truth2, rel=0.08)
    plug = GaussianCopulaRisk(dependence="mutual_information", order="levels").fit(table)
    assert np.abs(np.array(plug.fitted["correlation"]) - corr).max() > 0.15


def test_measures_equal_direct_sums_of_cell_probabilities():
    pop, _ = _copula_population(20_000, 4)
    table = tabulate(Microdata.from_source(pop.iloc[:2000], list(pop.columns),
                                           population_size=20_000))
    res = GaussianCopulaRisk(points=64).fit(table)
    su = table.counts == 1
    p0 = res.cell_risk("population_unique")[su]
    e1 = res.cell_risk()[su]
    assert res.measures["tau1"].estimate == pytest.approx(p0.sum(), rel=1e-12)
    assert res.measures["tau2"].estimate == pytest.approx(e1.sum(), rel=1e-12)
    # E[1/F] >= P(F = 1) per sample unique, both in [0, 1]
    assert np.all(e1 >= p0 - 1e-12) and np.all((p0 >= 0) & (e1 <= 1))
    t1 = res.measures["tau1"]
    assert t1.lower < t1.estimate < t1.upper
    assert res.diagnostics["qmc_standard_error"]["tau1"] < 0.01 * t1.estimate
    # the seed moves the estimate by no more than the QMC error says
    other = GaussianCopulaRisk(points=64, random_state=7).fit(table)
    se = res.diagnostics["qmc_standard_error"]["tau1"]
    assert abs(other.measures["tau1"].estimate - t1.estimate) < 6 * se + 1e-9


def test_degenerate_tables():
    one = tabulate(Microdata.from_source(pd.DataFrame({"a": [1], "b": [2]}), ["a", "b"],
                                         population_size=10_000))
    res = GaussianCopulaRisk().fit(one)  # K = 1: p = 1, nobody else can be unique
    assert res.measures["tau1"].estimate == pytest.approx(0, abs=1e-12)
    assert res.measures["tau2"].estimate == pytest.approx(1e-4, rel=1e-9)
    frame = pd.DataFrame({"a": np.arange(12) % 4, "b": np.arange(12) // 4})
    full = tabulate(Microdata.from_source(frame, ["a", "b"], population_size=12))
    res = GaussianCopulaRisk().fit(full)  # N = n: every sample unique is population unique
    assert res.measures["tau1"].estimate == pytest.approx(12)
    assert res.measures["tau2"].estimate == pytest.approx(12)


def test_auc_on_shared_population(shared_data):
    """uci_adult KS6, 5% Bernoulli sample: the record risk ranks the sample uniques that are
    population unique well above chance (the paper reports AUC 0.84-0.97)."""
    df = pd.read_csv(shared_data("uci_adult", "uci_adult.csv.gz"))
    keys = ["age", "sex", "race", "marital_status", "education", "native_country"]
    ids = np.unique(df[keys].to_numpy().astype(str), axis=0, return_inverse=True)[1].ravel()
    big_f = np.bincount(ids)
    take = np.random.default_rng(0).random(len(df)) < 0.05
    table = tabulate(Microdata.from_source(df[take], keys, population_size=len(df)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        res = GaussianCopulaRisk().fit(table)
    su = table.counts[table.record_cell] == 1
    score = res.record_risk("population_unique")[su]
    label = big_f[ids[take]][su] == 1
    auc = roc_auc(score, label)
    assert auc > 0.8, auc  # 0.889 when written (tau1 445 against the true 356)


# --- options, registry, CLI ---------------------------------------------------------------------

@pytest.mark.parametrize(("bad", "words"), [
    ({"dependence": "pearson"}, ["dependence='pearson'", "mutual_information_corrected"]),
    ({"order": "alphabetical"}, ["order='alphabetical'", "'mca'", "'frequency'"]),
    ({"points": 4}, ["points=4", ">= 8"]),
    ({"points": 1.5}, ["points=1.5"]),
    ({"smoothing": -1.0}, ["smoothing=-1.0", ">= 0"]),
    ({"smoothing": float("nan")}, ["smoothing=nan"]),
    ({"random_state": -3}, ["random_state=-3"]),
])
def test_bad_options(bad, words):
    with pytest.raises(ParameterError) as err:
        GaussianCopulaRisk(**bad)
    for w in words:
        assert w in str(err.value)


def test_registered_and_in_the_cli(tmp_path, capsys):
    assert sdcrisk.ESTIMATORS["copula"] is GaussianCopulaRisk
    frame = pd.DataFrame({"a": np.arange(300) % 7, "b": np.arange(300) % 5,
                          "c": (np.arange(300) // 3) % 11})
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    code = main(["assess", str(path), "--keys", "a,b,c", "--population-size", "30000",
                 "--method", "copula", "--format", "json"])
    assert code == 0
    out = capsys.readouterr().out
    assert '"method": "copula"' in out
    code = main(["assess", str(path), "--keys", "a,b,c", "--population-size", "30000",
                 "--method", "copula", "--order", "levels", "--points", "64",
                 "--dependence", "independence", "--format", "json"])
    assert code == 0
    params = json.loads(capsys.readouterr().out)["parameters"]
    assert (params["order"], params["points"], params["dependence"]) == (
        "levels", 64, "independence")
    # a copula flag with another method is a user error naming the method that takes it
    assert main(["assess", str(path), "--keys", "a,b,c", "--population-size", "30000",
                 "--method", "nb", "--order", "levels"]) == 2
    assert "taken by copula" in capsys.readouterr().err


def test_evaluate_with_per_method_options(tmp_path, capsys):
    """``evaluate --methods copula,copula:order=levels`` scores both variants against the
    truth of a population."""
    pop, _ = _copula_population(20_000, 5)
    path = tmp_path / "pop.csv"
    pop.to_csv(path, index=False)
    code = main(["evaluate", str(path), "--keys", "v0,v1,v2,v3", "--fraction", "0.05",
                 "--methods", "copula,copula:order=levels", "--format", "json"])
    assert code == 0
    out = capsys.readouterr().out
    assert "copula(order=levels)" in out and '"copula"' in out
