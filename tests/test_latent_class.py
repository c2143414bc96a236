"""The latent-class estimator (finite mixture of product-multinomials; issue 17 item 2)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import LatentClassRisk, Microdata, ParameterError, tabulate
from sdcrisk.cli import main
from sdcrisk.estimators.latent_class import (
    cell_probabilities,
    fit_latent_classes,
    indicator_matrix,
)

LEVELS = (6, 5, 8, 4, 7, 9, 10)


def _mixture(seed: int = 3):
    """A 3-class model over 7 keys: class weights and per-class level probabilities."""
    rng = np.random.default_rng(seed)
    weights = np.array([0.5, 0.3, 0.2])
    theta = [rng.dirichlet(np.full(size, 0.4), size=3) for size in LEVELS]  # (3, L_j)
    return weights, theta


def _population(big_n: int, seed: int = 3) -> pd.DataFrame:
    weights, theta = _mixture(seed)
    rng = np.random.default_rng(seed + 100)
    cls = rng.choice(3, size=big_n, p=weights)
    cols = {}
    for j, th in enumerate(theta):
        u = rng.random(big_n)
        cum = np.cumsum(th, axis=1)[cls]
        cols[f"v{j}"] = np.minimum((u[:, None] > cum).sum(axis=1), th.shape[1] - 1)
    return pd.DataFrame(cols)


def _sample_and_truth(pop: pd.DataFrame, fraction: float, seed: int):
    rng = np.random.default_rng(seed)
    take = rng.random(len(pop)) < fraction
    keys = list(pop.columns)
    cell = pop.groupby(keys, sort=False).ngroup().to_numpy()
    big_f = np.bincount(cell)
    f = np.bincount(cell[take], minlength=len(big_f))
    su = f == 1
    return (pop[take], int(np.sum(su & (big_f == 1))), float(np.sum(1.0 / big_f[su])))


def _table(frame, big_n):
    return tabulate(Microdata.from_source(frame, keys=list(frame.columns),
                                          population_size=big_n))


# --- the model ----------------------------------------------------------------------------------

def test_one_class_is_the_independence_model():
    """K = 1: p(x) = prod_j (m_j(x_j) + a) / (n + L_j a), worked by hand on 6 records."""
    frame = pd.DataFrame({"a": [0, 0, 0, 1, 1, 2], "b": [0, 1, 1, 1, 0, 1]})
    table = _table(frame, 600)
    sizes = [len(lv) for lv in table.levels]
    fit = fit_latent_classes(table.cell_codes, table.counts, sizes, 1, smoothing=0.5)
    p = cell_probabilities(fit, table.cell_codes, sizes)
    # margins a: 3, 2, 1 of 6 (3 levels); b: 2, 4 of 6 (2 levels); smoothing 0.5
    pa = {0: 3.5 / 7.5, 1: 2.5 / 7.5, 2: 1.5 / 7.5}
    pb = {0: 2.5 / 7.0, 1: 4.5 / 7.0}
    levels_a, levels_b = table.levels
    want = [pa[levels_a[ca]] * pb[levels_b[cb]] for ca, cb in table.cell_codes]
    np.testing.assert_allclose(p, want, rtol=1e-12)
    # and the estimator with classes=1 scores every sample unique with that p
    res = LatentClassRisk(classes=1, bootstrap=0).fit(table)
    su = table.counts == 1
    m = 600 - 6
    np.testing.assert_allclose(res.measures["tau1"].estimate,
                               np.sum((1 - np.asarray(want)[su]) ** m), rtol=1e-10)
    q = np.asarray(want)[su]
    np.testing.assert_allclose(res.measures["tau2"].estimate,
                               np.sum((1 - (1 - q) ** (m + 1)) / ((m + 1) * q)), rtol=1e-10)


def test_probabilities_sum_to_one_over_the_key_space():
    weights, theta = _mixture()
    rng = np.random.default_rng(0)
    grid = np.array(np.meshgrid(*[np.arange(s) for s in LEVELS], indexing="ij")).reshape(
        len(LEVELS), -1).T
    frame = pd.DataFrame(grid[rng.choice(len(grid), 3000)],
                         columns=[f"v{j}" for j in range(len(LEVELS))])
    table = _table(frame, 10_000)
    sizes = [len(lv) for lv in table.levels]
    fit = fit_latent_classes(table.cell_codes, table.counts, sizes, 3, smoothing=0.5,
                             rng=np.random.default_rng(1))
    full = grid[:, :]  # codes = values here: levels are 0..L-1 (every level appears)
    assert all(len(lv) == s for lv, s in zip(table.levels, LEVELS, strict=True))
    p = cell_probabilities(fit, full, sizes)
    assert p.sum() == pytest.approx(1.0, abs=1e-10)
    assert fit.weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_em_objective_never_decreases():
    pop = _population(40_000)
    sample, *_ = _sample_and_truth(pop, 0.05, 1)
    table = _table(sample, 40_000)
    sizes = [len(lv) for lv in table.levels]
    for k in (2, 3, 5):
        fit = fit_latent_classes(table.cell_codes, table.counts, sizes, k, smoothing=0.5,
                                 starts=1, max_iter=200, tol=0.0,
                                 rng=np.random.default_rng(k))
        trace = np.asarray(fit.trace)
        assert len(trace) > 20
        assert np.all(np.diff(trace) >= -1e-8 * abs(trace[-1])), np.diff(trace).min()
        # the objective is the log-likelihood plus the Dirichlet log-prior
        assert fit.objective == pytest.approx(
            fit.loglik + 0.5 * np.sum(np.log(fit.theta)), rel=1e-12)


def test_recovers_the_generating_mixture():
    """On a large sample of a 3-class population EM finds three classes whose cell
    probabilities match the generating model's."""
    weights, theta = _mixture()
    pop = _population(60_000)
    table = _table(pop.sample(20_000, random_state=0), 60_000)
    sizes = [len(lv) for lv in table.levels]
    fit = fit_latent_classes(table.cell_codes, table.counts, sizes, 3, smoothing=0.5,
                             rng=np.random.default_rng(0))
    p = cell_probabilities(fit, table.cell_codes, sizes)
    values = np.array([[lv[c] for lv, c in zip(table.levels, row, strict=True)]
                       for row in table.cell_codes])
    true_p = sum(weights[k] * np.prod([theta[j][k, values[:, j]] for j in range(len(LEVELS))],
                                   axis=0)
                 for k in range(3))
    rel = np.abs(p / true_p - 1)
    assert np.median(rel) < 0.05
    assert sorted(np.round(fit.weights, 2)) == pytest.approx([0.2, 0.3, 0.5], abs=0.03)


@pytest.mark.parametrize("fraction,seed", [(0.01, 11), (0.02, 12), (0.05, 13)])
def test_tau_against_the_population_truth(fraction, seed):
    """A population of 100,000 drawn from a known 3-class model over 7 keys (K = 604,800):
    tau1 and tau2 within 12% of the exact values counted on the population (K chosen by
    held-out likelihood; measured 8%, 5%, 3% for tau1 -- the realised population itself
    departs from the model by a few percent)."""
    pop = _population(100_000)
    sample, true_tau1, true_tau2 = _sample_and_truth(pop, fraction, seed)
    res = LatentClassRisk().fit(_table(sample, 100_000))
    t1, t2 = res.measures["tau1"].estimate, res.measures["tau2"].estimate
    assert true_tau1 > 150
    assert t1 == pytest.approx(true_tau1, rel=0.12)
    assert t2 == pytest.approx(true_tau2, rel=0.12)
    assert res.diagnostics["classes"] >= 2


def test_independence_misses_the_same_truth():
    """The test above can fail: the independence model (K = 1) on the same sample is far
    off (its tau1 is too high: the mixture's cells are more concentrated)."""
    pop = _population(100_000)
    sample, true_tau1, _ = _sample_and_truth(pop, 0.02, 12)
    res = LatentClassRisk(classes=1, bootstrap=0).fit(_table(sample, 100_000))
    assert res.measures["tau1"].estimate > 1.7 * true_tau1


def test_deterministic_for_a_seed_and_interval_contains_estimate():
    pop = _population(40_000)
    sample, *_ = _sample_and_truth(pop, 0.03, 5)
    table = _table(sample, 40_000)
    a = LatentClassRisk(random_state=7).fit(table)
    b = LatentClassRisk(random_state=7).fit(table)
    for m in ("tau1", "tau2"):
        ma, mb = a.measures[m], b.measures[m]
        assert (ma.estimate, ma.lower, ma.upper) == (mb.estimate, mb.lower, mb.upper)
        assert ma.lower < ma.estimate < ma.upper
    np.testing.assert_array_equal(a.record_risk(), b.record_risk())
    assert a.diagnostics["bootstrap_replicates"] == 16
    # the bootstrap widens the interval beyond the predictive one given the fit
    c = LatentClassRisk(random_state=7, bootstrap=0).fit(table)
    assert c.measures["tau1"].estimate == a.measures["tau1"].estimate
    assert (c.measures["tau1"].upper - c.measures["tau1"].lower
            < a.measures["tau1"].upper - a.measures["tau1"].lower)


def test_class_rules():
    pop = _population(40_000)
    sample, *_ = _sample_and_truth(pop, 0.05, 2)
    table = _table(sample, 40_000)
    bic = LatentClassRisk(classes="bic", bootstrap=0).fit(table)
    d = bic.diagnostics
    assert d["classes"] == d["classes_tried"][int(np.argmin(d["bic"]))]
    avg = LatentClassRisk(classes="average", bootstrap=0).fit(table)
    w = np.asarray(avg.diagnostics["bic_weights"])
    assert w.sum() == pytest.approx(1.0, abs=1e-5)
    bics = np.asarray(avg.diagnostics["bic"])
    np.testing.assert_allclose(w, np.exp(-(bics - bics.min()) / 2)
                               / np.exp(-(bics - bics.min()) / 2).sum(), atol=1e-6)
    fixed = LatentClassRisk(classes=4, bootstrap=0).fit(table)
    assert fixed.diagnostics["classes_tried"] == [4]


def test_indicator_matrix():
    z = indicator_matrix(np.array([[0, 2], [1, 0]]), [2, 3])
    np.testing.assert_array_equal(z.toarray(), [[1, 0, 0, 0, 1], [0, 1, 1, 0, 0]])


# --- options, registry, CLI ---------------------------------------------------------------------

@pytest.mark.parametrize("bad,words", [
    ({"classes": 0}, ["classes=0", ">= 1"]),
    ({"classes": "many"}, ["classes='many'", "heldout"]),
    ({"classes": 2.5}, ["classes=2.5"]),
    ({"max_classes": 0}, ["max_classes=0"]),
    ({"starts": True}, ["starts=True"]),
    ({"bootstrap": -1}, ["bootstrap=-1"]),
    ({"smoothing": -0.5}, ["smoothing=-0.5", "finite number >= 0"]),
    ({"smoothing": math.nan}, ["smoothing=nan"]),
    ({"tol": "x"}, ["tol='x'"]),
    ({"random_state": -3}, ["random_state=-3"]),
])
def test_bad_options(bad, words):
    with pytest.raises(ParameterError) as err:
        LatentClassRisk(**bad)
    for w in words:
        assert w in str(err.value)


def test_registered_and_in_the_cli(tmp_path, capsys):
    assert sdcrisk.ESTIMATORS["latent-class"] is LatentClassRisk
    pop = _population(20_000)
    path = tmp_path / "s.csv"
    pop.sample(600, random_state=1).to_csv(path, index=False)
    keys = ",".join(pop.columns)
    code = main(["assess", str(path), "--keys", keys, "--population-size", "20000",
                 "--method", "latent-class", "--classes", "3", "--bootstrap", "4",
                 "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "latent-class"
    assert (out["parameters"]["classes"], out["parameters"]["bootstrap"]) == (3, 4)
    code = main(["assess", str(path), "--keys", keys, "--population-size", "20000",
                 "--method", "latent-class", "--classes", "bic", "--format", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["parameters"]["classes"] == "bic"
    assert main(["assess", str(path), "--keys", keys, "--population-size", "20000",
                 "--method", "nb", "--classes", "3"]) == 2
    assert "taken by latent-class" in capsys.readouterr().err
