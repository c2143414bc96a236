"""Log-linear risk: IPF oracles, risk functions, the minimum-error statistic, search, CLI."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import sdcrisk
from sdcrisk.cli import main
from sdcrisk.estimators import _ipf
from sdcrisk.estimators._minerror import h1, h2, minimum_error_dense

RNG = np.random.default_rng(2026)


def _margins(f, gens):
    j = f.ndim
    return [f.sum(axis=tuple(a for a in range(j) if a not in g)) for g in gens]


def test_parse_terms():
    keys = ["a", "b", "c", "d"]
    assert _ipf.parse_terms("independence", keys) == ((0,), (1,), (2,), (3,))
    assert len(_ipf.parse_terms("all-2-way", keys)) == 6
    assert (0, 1, 2) in _ipf.parse_terms("all-2-way + a:b:c", keys)
    # hierarchical reduction: a:b is inside a:b:c
    assert (0, 1) not in _ipf.parse_terms("all-2-way + a:b:c", keys)
    assert set(_ipf.parse_terms([("b", "a")], keys)) == {(0, 1), (2,), (3,)}
    with pytest.raises(sdcrisk.ParameterError, match="'zz'"):
        _ipf.parse_terms("a:zz", keys)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ipf_independence_closed_form(dtype):
    shape = (4, 6, 3, 5)
    f = RNG.poisson(RNG.gamma(0.7, 2.0, size=shape)).astype(float)
    gens = _ipf.parse_terms("independence", list("abcd"))
    res = _ipf.ipf(shape, gens, _margins(f, gens), max_iter=5, dtype=dtype)
    n = f.sum()
    one_way = _margins(f, gens)
    closed = n * np.einsum("i,j,k,l->ijkl", *[m / n for m in one_way])
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(res.fitted, closed, rtol=tol, atol=tol)
    assert res.converged and res.iterations == 2  # exact after one sweep, confirmed by the next


def test_ipf_decomposable_closed_form_and_margins():
    # model ab + bc (decomposable: cliques ab, bc, separator b): mu = f_ab f_bc / f_b
    shape = (3, 4, 5)
    f = RNG.poisson(3.0, size=shape).astype(float)
    gens = _ipf.parse_terms([("a", "b"), ("b", "c")], list("abc"))
    res = _ipf.ipf(shape, gens, _margins(f, gens), max_iter=10, tol=1e-10)
    f_ab, f_bc, f_b = f.sum(2), f.sum(0), f.sum((0, 2))
    closed = f_ab[:, :, None] * f_bc[None, :, :] / f_b[None, :, None]
    np.testing.assert_allclose(res.fitted, closed, rtol=1e-10)


def test_ipf_all_two_way_matches_numpy_and_keeps_structural_zeros():
    shape = (3, 5, 2, 4, 3)
    f = RNG.poisson(RNG.gamma(0.5, 3.0, size=shape)).astype(float)
    zeros = RNG.random(shape) < 0.1
    f[zeros] = 0
    gens = _ipf.parse_terms("all-2-way", list("abcde"))
    targets = _margins(f, gens)
    a = _ipf.ipf(shape, gens, targets, max_iter=200, tol=1e-9, structural_zeros=zeros)
    b = _ipf.ipf_numpy(shape, gens, targets, max_iter=200, tol=1e-9, structural_zeros=zeros)
    assert a.converged and a.iterations == b.iterations
    np.testing.assert_allclose(a.fitted, b.fitted, rtol=1e-10, atol=1e-12)
    assert np.all(a.fitted[zeros] == 0)
    for g, t in zip(gens, _margins(a.fitted, gens), strict=True):
        np.testing.assert_allclose(t, targets[gens.index(g)], atol=1e-8)
    assert 0 < a.min_factor <= 1 <= a.max_factor


def test_ipf_memory_guard():
    with pytest.raises(sdcrisk.MemoryLimitError, match="partition"):
        _ipf.ipf((1000, 1000, 1000), ((0,), (1,), (2,)), [np.ones(1000)] * 3,
                 memory_limit=10**6)


def test_risk_functions_golden_values():
    # spec G.2 log-linear risk functions
    assert h1(1, 0.01) == pytest.approx(0.3715766910, abs=1e-10)
    assert h2(1, 0.01) == pytest.approx(0.6347710192, abs=1e-10)
    assert h1(5, 0.1) == pytest.approx(0.0111089965, abs=1e-10)
    assert h2(5, 0.1) == pytest.approx(0.2197535563, abs=1e-10)
    assert h1(10, 0.01) == pytest.approx(0.0000501747, abs=1e-10)
    assert h2(10, 0.01) == pytest.approx(0.1010050329, abs=1e-10)
    assert h2(0.5, 0.1) == pytest.approx(0.8052707742, abs=1e-10)
    assert h2(0.0, 0.1) == 1.0


def test_minimum_error_toy_values():
    # spec G.2: f = (1,0,2,1,0,3), mu = (0.5,0.2,1.5,0.8,0.1,2.0), pi = 0.05
    f = np.array([1, 0, 2, 1, 0, 3.0])
    mu = np.array([0.5, 0.2, 1.5, 0.8, 0.1, 2.0])
    t1 = minimum_error_dense(f, mu, 0.05, "tau1")
    t2 = minimum_error_dense(f, mu, 0.05, "tau2")
    assert t1["B"] == pytest.approx(0.00836960, abs=1e-8)
    assert t1["v"] == pytest.approx(0.16190913, abs=1e-8)
    assert t1["Z"] == pytest.approx(0.020800, abs=1e-6)
    assert t2["B"] == pytest.approx(-0.11806786, abs=1e-8)
    assert t2["v"] == pytest.approx(0.11694307, abs=1e-8)
    assert t2["Z"] == pytest.approx(-0.345259, abs=1e-6)
    su = f == 1
    assert h1(mu[su] / 0.05, 0.05).sum() == pytest.approx(0.00007510, abs=1e-8)
    assert h2(mu[su] / 0.05, 0.05).sum() == pytest.approx(0.17104474, abs=1e-8)


def test_poisson_predictive_against_brute_force():
    from scipy import stats

    from sdcrisk.core import _poisson

    for f, m in [(1, 0.3), (2, 5.0), (3, 50.0), (1, 700.0), (5, 1000.0), (40, 10.0),
                 (700, 650.0), (3, 2e5)]:
        j = np.arange(0, int(m + 60 * math.sqrt(m) + 200))
        pmf = stats.poisson.pmf(j, m)
        assert _poisson.expected_inverse(f, m)[0] == pytest.approx(
            np.sum(pmf / (f + j)), rel=1e-11)
        assert _poisson.expected_inverse_square(f, m)[0] == pytest.approx(
            np.sum(pmf / (f + j) ** 2), rel=1e-11)


def test_poisson_inverse_square_f1_against_mpmath():
    """E[1/(1+U)^2] = e^-m (Ei(m) - gamma - ln m)/m in 40-digit arithmetic, on both sides of
    each switch of series (m = 2, 10, 40) and far into the asymptotic range."""
    import mpmath

    from sdcrisk.core import _poisson

    ms = [1e-10, 1e-4, 0.05, 0.7, 1.5, 1.999999, 2.0, 2.5, 9.0, 9.999, 10.0, 25.0, 39.999,
          40.0, 41.0, 60.0, 200.0, 599.0, 600.0, 1e3, 1e5, 1e7, 1e9]
    got = _poisson.expected_inverse_square(np.ones(len(ms)), np.array(ms))
    with mpmath.workdps(40):
        for m, g in zip(ms, got, strict=True):
            m_ = mpmath.mpf(m)
            exact = mpmath.exp(-m_) * (mpmath.ei(m_) - mpmath.euler - mpmath.log(m_)) / m_
            assert g == pytest.approx(float(exact), rel=1e-13), m


def _skewed_microdata(n=3000, seed=4, population_size=100_000):
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 4, n)
    data = {}
    for name, k in (("a", 12), ("b", 6), ("c", 5), ("d", 4)):
        probs = rng.dirichlet(np.full(k, 0.4), size=4)
        data[name] = np.array([rng.choice(k, p=probs[z]) for z in latent])
    return sdcrisk.Microdata.from_source(data, list(data), population_size=population_size)


def test_estimator_measures_are_sums_of_h_over_sample_uniques():
    md = _skewed_microdata()
    table = sdcrisk.tabulate(md)
    res = sdcrisk.LogLinearRisk(terms="all-2-way", tol=1e-8, max_iter=500).fit(table)
    pi = md.n / md.population_size
    gens = _ipf.parse_terms("all-2-way", md.keys)
    shape = tuple(len(lv) for lv in md.levels)
    dense = table.dense_counts()
    ref = _ipf.ipf_numpy(shape, gens, _margins(dense, gens), max_iter=500, tol=1e-8)
    su = table.counts == 1
    lam = ref.fitted[tuple(table.cell_codes[su].T)] / pi
    assert res.estimate("tau1") == pytest.approx(h1(lam, pi).sum(), rel=1e-8)
    assert res.estimate("tau2") == pytest.approx(h2(lam, pi).sum(), rel=1e-8)
    assert res.estimate("p_pu_given_su") == pytest.approx(res.estimate("tau1") / su.sum())
    z = res.fitted["minimum_error"]["tau2"]["Z"]
    assert z == pytest.approx(minimum_error_dense(dense, ref.fitted, pi, "tau2")["Z"], rel=1e-7)
    assert res.record_risk("population_unique").sum() == pytest.approx(res.estimate("tau1"))


def test_search_path_and_rule():
    md = _skewed_microdata()
    res = sdcrisk.LogLinearRisk(terms="search").fit(sdcrisk.tabulate(md))
    path = res.diagnostics["search_path"]
    assert path[0]["model"] == "a + b + c + d" and path[1]["step"] == "all-2-way"
    chosen = [r for r in path if r.get("chosen")]
    assert len(chosen) == 1 and chosen[0]["model"] == res.diagnostics["model"]
    z2 = path[1]["Z"]
    if 0 <= z2 < 1.96:
        assert res.diagnostics["model"] == path[1]["model"]
    else:
        # the search moved off all-2-way; the chosen model's Z is in [0, 1.96) or the search
        # stopped at the candidate closest to 0 from below
        assert chosen[0]["Z"] < 1.96


def test_bootstrap_interval_contains_estimate():
    md = _skewed_microdata(n=1500)
    res = sdcrisk.LogLinearRisk(terms="independence", bootstrap=20, random_state=1).fit(
        sdcrisk.tabulate(md))
    m = res.measures["tau2"]
    assert m.lower <= m.estimate <= m.upper and "bootstrap" in m.interval
    again = sdcrisk.LogLinearRisk(terms="independence", bootstrap=20, random_state=1).fit(
        sdcrisk.tabulate(md))
    assert again.measures["tau2"] == m


def test_cli_loglinear(capsys):
    code = main(["assess", "example:uk_census2011", "--keys", "region,sex,age_band,religion",
                 "--method", "loglinear", "--terms", "all-2-way", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    d = json.loads(out)
    assert d["method"] == "loglinear"
    assert d["fitted"]["model"].startswith("region:sex")
    assert d["measures"]["tau2"]["estimate"] > 0


def test_modrisk_formula_by_hand():
    """gr1/gr2 on three cells worked by hand; a kept cell overflowing gives NaN as in R."""
    from sdcrisk.estimators._modrisk import modrisk_measures

    counts = np.array([1, 2, 1])
    mu = np.array([0.5, 2.0, 1.5])
    p = np.array([0.01, 0.02, 0.5])
    m, kept = modrisk_measures(counts, mu, p)
    assert kept == 3
    v1, v3 = 0.99 * 0.5, 0.5 * 1.5
    assert m["sdcmicro_gr1"].estimate == pytest.approx((np.exp(-v1) + np.exp(-v3)) / 3, rel=1e-15)
    assert m["sdcmicro_gr2"].estimate == pytest.approx(
        ((1 - np.exp(-v1)) / v1 + (1 - np.exp(-v3)) / v3) / 3, rel=1e-15)
    m, kept = modrisk_measures(counts, mu, p, bound=1)
    assert kept == 2
    assert m["sdcmicro_gr1"].estimate == pytest.approx((np.exp(-v1) + np.exp(-v3)) / 2, rel=1e-15)
    with pytest.warns(sdcrisk.ApproximationWarning):
        m, _ = modrisk_measures(counts, np.array([0.5, 800.0, 1.5]), np.array([0.01, 2.0, 0.5]))
    assert np.isnan(m["sdcmicro_gr1"].estimate)
    with pytest.raises(sdcrisk.ParameterError, match="weights"):
        modrisk_measures(counts, mu, None)


def test_unused_levels_are_dropped_exactly():
    """Levels with no sample record are fitted 0 by every model: dropping them changes nothing."""
    rng = np.random.default_rng(5)
    data = {k: rng.integers(0, m, 300) for k, m in (("a", 4), ("b", 5), ("c", 3))}
    plain = sdcrisk.Microdata.from_source(data, ["a", "b", "c"], population_size=30_000)
    padded = sdcrisk.Microdata.from_source(
        data, ["a", "b", "c"], population_size=30_000,
        levels={"a": [0, 1, 2, 3, 9, 10], "b": [7, 0, 1, 2, 3, 4]})
    assert sdcrisk.tabulate(padded).cell_space == 6 * 6 * 3
    for terms in ("independence", "all-2-way", "search"):
        r1 = sdcrisk.LogLinearRisk(terms=terms, tol=1e-9, max_iter=500).fit(
            sdcrisk.tabulate(plain))
        r2 = sdcrisk.LogLinearRisk(terms=terms, tol=1e-9, max_iter=500).fit(
            sdcrisk.tabulate(padded))
        assert r2.diagnostics["fitted_cells"] == r1.diagnostics["fitted_cells"] == 60
        for m in ("tau1", "tau2", "p_pu", "theta"):
            assert r2.measures[m].estimate == pytest.approx(r1.measures[m].estimate, rel=1e-10)
        for target in ("tau1", "tau2"):
            z1, z2 = (r.fitted["minimum_error"][target]["Z"] for r in (r1, r2))
            assert z2 == pytest.approx(z1, rel=1e-8)


def test_warm_start_reaches_the_same_fit():
    """IPF started from a sub-model's fit converges to the same MLE as from a uniform table."""
    rng = np.random.default_rng(6)
    shape = (3, 4, 2, 3)
    f = rng.poisson(2.0, size=shape).astype(float)
    gens3 = [(0, 1, 2), (1, 3), (0, 3), (2, 3)]
    targets = lambda gens: [f.sum(axis=tuple(a for a in range(4) if a not in g)) for g in gens]  # noqa: E731
    two = _ipf.ipf(shape, _ipf.parse_terms("all-2-way", list("abcd")),
                   targets(_ipf.parse_terms("all-2-way", list("abcd"))), tol=1e-12, max_iter=2000)
    start = two.fitted.copy()
    cold = _ipf.ipf(shape, gens3, targets(gens3), tol=1e-12, max_iter=2000)
    warm = _ipf.ipf(shape, gens3, targets(gens3), tol=1e-12, max_iter=2000, initial=two.fitted)
    np.testing.assert_allclose(warm.fitted, cold.fitted, rtol=1e-9, atol=1e-12)
    assert warm.iterations < cold.iterations
    np.testing.assert_array_equal(two.fitted, start)  # the start table is not modified


def test_fused_dense_pass_equals_the_numpy_reference():
    # one parallel pass gives both targets' B/v sums and the all-cell P(F = 1) sum; above
    # _CHUNK cells it is the numba kernel, checked against coefficients() in float64
    from sdcrisk.estimators import _minerror as me

    rng = np.random.default_rng(0)
    size = me._CHUNK + 12_345
    flat = (rng.gamma(0.3, 1.0, size) * rng.integers(0, 2, size)).astype(np.float32)
    pi = 0.02
    got = me.dense_sums(flat, pi)
    m = flat.astype(np.float64)
    for target in ("tau1", "tau2"):
        a, b = me.coefficients(m / pi, pi, target)
        assert got[target][0] == pytest.approx(np.sum(-a * m + b * m * m), rel=1e-11)
        assert got[target][1] == pytest.approx(np.sum(a * a * m + 2 * b * b * m * m), rel=1e-11)
    x = m * (1 - pi) / pi
    assert got["prob_one"] == pytest.approx(np.sum(x * np.exp(-x)), rel=1e-11)
    small = me.dense_sums(flat[:1000], pi)  # the NumPy path
    a, b = me.coefficients(m[:1000] / pi, pi, "tau2")
    assert small["tau2"][1] == pytest.approx(np.sum(a * a * m[:1000] + 2 * b * b * m[:1000] ** 2))


# --------------------------------------------------------------------------------------------
# factored engine (issue 20 item 5): no dense table, same fit

def test_blocks_of_generating_classes():
    from sdcrisk.estimators._factored import blocks_of

    assert blocks_of(((0,), (1,), (2,))) == [((0,), ((0,),)), ((1,), ((1,),)), ((2,), ((2,),))]
    assert blocks_of(((0, 1), (2, 3), (4,))) == [((0, 1), ((0, 1),)), ((2, 3), ((2, 3),)),
                                                 ((4,), ((4,),))]
    gens = _ipf.parse_terms("all-2-way", list("abcd"))
    assert blocks_of(gens) == [((0, 1, 2, 3), gens)]
    # a chain joins its keys into one block
    assert blocks_of(((0, 1), (1, 2), (3,)))[0] == ((0, 1, 2), ((0, 1), (1, 2)))


def test_factored_sums_equal_the_dense_sums(monkeypatch):
    """All-cell sums of a product of blocks by the series/exact split equal the dense pass."""
    from sdcrisk.estimators import _factored
    from sdcrisk.estimators._minerror import dense_sums

    rng = np.random.default_rng(11)
    n = 4000.0
    values = [rng.gamma(0.4, 1.0, s) * rng.integers(0, 2, s) for s in (30, 200, 12, 70)]
    values = [v / v.sum() * n for v in values]
    full = n * np.einsum("i,j,k,l->ijkl", *[v / n for v in values]).ravel()
    for pi in (0.01, 0.05, 0.3):
        want = dense_sums(full, pi)
        monkeypatch.setattr(_factored, "_DIRECT", 10)  # force the split
        got = _factored.factored_sums(values, n, pi)
        for key in ("tau1", "tau2"):
            for w, g in zip(want[key], got[key], strict=True):
                assert g == pytest.approx(w, rel=1e-10)
        assert got["prob_one"] == pytest.approx(want["prob_one"], rel=1e-11)
    # the series part: each coefficient row summed at lambda = 0.45 equals the cell terms
    pi = 0.05
    lam = 0.45
    coef = _factored.series_coefficients(pi)
    m = np.array([lam * pi])
    terms = []
    from sdcrisk.estimators._minerror import coefficients
    for target in ("tau1", "tau2"):
        a, b = coefficients(m / pi, pi, target)
        terms += [(-a * m + b * m * m)[0], (a * a * m + 2 * b * b * m * m)[0]]
    x = (1 - pi) * lam
    terms.append(x * np.exp(-x))
    np.testing.assert_allclose(coef @ lam ** np.arange(coef.shape[1]), terms, rtol=1e-11)


def _six_keys(n, seed=3, population_size=400_000):
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 5, n)
    data = {}
    for name, k in (("a", 20), ("b", 10), ("c", 8), ("d", 6), ("e", 5), ("f", 4)):
        probs = rng.dirichlet(np.full(k, 0.3), size=5)
        cum = np.cumsum(probs, axis=1)[latent]
        data[name] = np.minimum((rng.random(n)[:, None] > cum).sum(axis=1), k - 1)
    return sdcrisk.tabulate(sdcrisk.Microdata.from_source(data, list(data),
                                                          population_size=population_size))


@pytest.mark.parametrize("terms", ["independence", "all-2-way", "all-2-way + a:b:c"])
def test_factored_engine_equals_dense_fit(terms):
    """Same MLE, tau1, tau2, both Z and P(PU) as IPF on the dense table (192,000 cells)."""
    table = _six_keys(4000)
    kw = dict(terms=terms, tol=1e-10, max_iter=3000)
    dense = sdcrisk.LogLinearRisk(engine="dense", **kw).fit(table)
    fact = sdcrisk.LogLinearRisk(engine="factored", **kw).fit(table)
    assert fact.diagnostics["engine"] == "factored"
    assert fact.diagnostics["support_cells"] < table.cell_space
    for m in ("tau1", "tau2", "p_pu", "theta"):
        assert fact.estimate(m) == pytest.approx(dense.estimate(m), rel=1e-8), m
    for target in ("tau1", "tau2"):
        zd, zf = (r.fitted["minimum_error"][target] for r in (dense, fact))
        assert zf["Z"] == pytest.approx(zd["Z"], rel=1e-7, abs=1e-9)
        assert zf["v"] == pytest.approx(zd["v"], rel=1e-8)
    np.testing.assert_allclose(fact.cell_risk("population_unique"),
                               dense.cell_risk("population_unique"), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("n", [3000, 20000])
def test_factored_search_takes_the_dense_search_path(n):
    """The forward search picks the same terms with both engines, on both branches: n = 3,000
    accepts all-2-way, n = 20,000 adds a 3-way term to it (warm-started block refits)."""
    table = sdcrisk.tabulate(_skewed_microdata(n=n, population_size=200_000 if n > 3000
                                               else 100_000))
    dense = sdcrisk.LogLinearRisk(terms="search", engine="dense").fit(table)
    fact = sdcrisk.LogLinearRisk(terms="search", engine="factored").fit(table)
    pd, pf = dense.diagnostics["search_path"], fact.diagnostics["search_path"]
    assert [r["model"] for r in pf] == [r["model"] for r in pd]
    assert fact.diagnostics["model"] == dense.diagnostics["model"]
    if n == 20000:
        assert "added 3-way term" in [r["step"] for r in pf]
    for a, b in zip(pd, pf, strict=True):
        assert b["Z"] == pytest.approx(a["Z"], rel=1e-6, abs=1e-6)
    assert fact.estimate("tau2") == pytest.approx(dense.estimate("tau2"), rel=1e-8)


def test_factored_search_from_independence_equals_dense():
    """A search that adds 2-way terms to independence (Z(all-2-way) < 0) reuses unchanged
    blocks; path and result equal the dense search's."""
    table = _six_keys(800, seed=8, population_size=300_000)
    dense = sdcrisk.LogLinearRisk(terms="search", engine="dense").fit(table)
    fact = sdcrisk.LogLinearRisk(terms="search", engine="factored").fit(table)
    pd, pf = dense.diagnostics["search_path"], fact.diagnostics["search_path"]
    assert pd[1]["Z"] < 0 and "added 2-way term" in [r["step"] for r in pd]
    assert [r["model"] for r in pf] == [r["model"] for r in pd]
    assert fact.estimate("tau1") == pytest.approx(dense.estimate("tau1"), rel=1e-8)
    assert fact.estimate("tau2") == pytest.approx(dense.estimate("tau2"), rel=1e-8)


def test_auto_engine_fits_a_400_million_cell_key_without_the_dense_table():
    """K = 4 x 10^8: the dense float32 table alone (1.6 GB) is refused under a 1 GiB limit;
    engine auto picks the factored fit, which runs within it."""
    rng = np.random.default_rng(9)
    sizes = (20, 10, 10, 10, 10, 10, 10, 20)
    n = 3000
    latent = rng.integers(0, 60, n)  # keys are noisy functions of a latent class
    data = {}
    for j, k in enumerate(sizes):
        col = (latent * (j + 3) + (rng.random(n) < 0.15)) % k
        col[:k] = np.arange(k)
        data[f"k{j}"] = col
    table = sdcrisk.tabulate(sdcrisk.Microdata.from_source(data, list(data),
                                                           population_size=100_000))
    assert table.cell_space == 4 * 10**8
    with pytest.raises(sdcrisk.MemoryLimitError):
        sdcrisk.LogLinearRisk(terms="all-2-way", engine="dense").fit(table, memory_limit=2**30)
    indep = sdcrisk.LogLinearRisk(terms="independence").fit(table, memory_limit=2**30)
    assert indep.diagnostics["engine"] == "factored" and indep.diagnostics["blocks"] == 8
    # independence has a closed form: mu = n prod_j f_j / n
    pi = table.n / table.population_size
    margins = [np.bincount(table.cell_codes[:, j], weights=table.counts, minlength=d) / n
               for j, d in enumerate(sizes)]
    mu = n * np.prod([margins[j][table.cell_codes[:, j]] for j in range(8)], axis=0)
    su = table.counts == 1
    assert indep.estimate("tau1") == pytest.approx(h1(mu[su] / pi, pi).sum(), rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.ConvergenceWarning)
        two = sdcrisk.LogLinearRisk(terms="all-2-way", max_iter=8).fit(table,
                                                                       memory_limit=2**30)
    assert two.diagnostics["engine"] == "factored" and two.diagnostics["blocks"] == 1
    assert two.diagnostics["support_cells"] < table.cell_space // 1000
    assert 0 < two.estimate("tau1") < indep.estimate("tau1") <= su.sum()


def test_join_support_memory_check_counts_what_the_join_allocates(monkeypatch):
    """The join's memory check charged every candidate cell the cost of a kept one (about
    50 bytes): a step that keeps 10% of its candidates was counted several times its size,
    refusing joins that fit. Now candidates and kept cells are counted apart; the largest
    figure checked is within 15% of the peak the join allocates (tracemalloc)."""
    import itertools
    import tracemalloc

    from sdcrisk.estimators import _factored

    rng = np.random.default_rng(3)
    shape = (12,) * 6
    gens = list(itertools.combinations(range(6), 2))
    positive = {(j,): np.ones(d, bool) for j, d in enumerate(shape)}
    for g in gens:
        positive[g] = rng.random((shape[g[0]], shape[g[1]])) < 0.85
    checked = []
    monkeypatch.setattr(_factored, "check_memory",
                        lambda need, **kw: checked.append(need))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    _, part = _factored.join_support(positive, tuple(range(6)), gens, shape)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert part.shape[0] > 100_000  # a join worth measuring
    assert 0.85 <= max(checked) / peak <= 1.15, (max(checked), peak)
