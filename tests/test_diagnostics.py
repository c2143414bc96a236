"""R-hat, ESS and MCSE against ArviZ's values on fixed arrays and against AR(1) theory.

The arrays are built from a 32-bit linear congruential generator (Numerical Recipes
constants) and ``scipy.special.ndtri``, so they do not depend on NumPy's random streams.
``ARVIZ`` holds the values ArviZ 0.23.4 gives on them (``az.rhat(a, method="rank")``,
``az.ess(a, method="bulk"|"tail"|"mean")``, ``az.rhat(a, method="split")``,
``az.mcse(a, method="mean")``), computed once with ArviZ installed; when ArviZ is
importable (it is in the ``test`` extra) the comparison is also made live.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from sdcrisk.runtime import diagnostics as dg

# name: (rank rhat, bulk ess, tail ess, mean ess, split rhat (not ranked), mcse of the mean)
ARVIZ = {
    "iid": (1.003492907, 702.9854484, 770.0323906, 696.5638376, 1.003124247, 0.03976378097),
    "ar1_odd": (1.047547071, 112.3083807, 189.0024204, 109.6135969, 1.047174873, 0.2114071804),
    "shifted": (1.230402257, 13.2048438, 59.16934095, 12.82451494, 1.238911252, 0.3386716672),
    "cauchy": (1.003877794, 464.3340818, 394.1676513, 466.2677322, 1.000844229, 0.3419033631),
    "ties": (1.00694064, 452.7037128, 400, 458.8499853, 1.0078624, 0.05156004952),
}


def _lcg_uniform(n: int, seed: int) -> np.ndarray:
    out = np.empty(n)
    s = seed
    for i in range(n):
        s = (1664525 * s + 1013904223) % 2**32
        out[i] = (s + 0.5) / 2**32
    return out


def _normals(shape, seed):
    return special.ndtri(_lcg_uniform(int(np.prod(shape)), seed)).reshape(shape)


def _cases() -> dict[str, np.ndarray]:
    e = _normals((4, 501), 2)
    y = np.zeros_like(e)
    for t in range(1, 501):
        y[:, t] = 0.9 * y[:, t - 1] + e[:, t]
    z = _normals((4, 300), 3)
    z[0] += 1.5
    u = _lcg_uniform(450, 4).reshape(3, 150)
    return {
        "iid": _normals((4, 200), 1),
        "ar1_odd": y,
        "shifted": z,
        "cauchy": np.tan(np.pi * (u - 0.5)),
        "ties": np.floor(4 * _lcg_uniform(400, 5).reshape(4, 100) ** 2),
    }


CASES = _cases()


def _ours(a):
    return (dg.rhat(a), dg.ess_bulk(a), dg.ess_tail(a), dg.ess_basic(a), dg.rhat_basic(a),
            dg.mcse_mean(a))


@pytest.mark.parametrize("name", sorted(ARVIZ))
def test_matches_arviz_reference_values(name):
    np.testing.assert_allclose(_ours(CASES[name]), ARVIZ[name], rtol=1e-8)


@pytest.mark.parametrize("name", sorted(ARVIZ))
def test_matches_arviz_live(name):
    az = pytest.importorskip("arviz")
    a = CASES[name]
    theirs = (float(az.rhat(a, method="rank")), float(az.ess(a, method="bulk")),
              float(az.ess(a, method="tail")), float(az.ess(a, method="mean")),
              float(az.rhat(a, method="split")),
              float(np.asarray(az.mcse(a, method="mean")).ravel()[0]))
    np.testing.assert_allclose(_ours(a), theirs, rtol=1e-10)


def test_split_rhat_by_hand():
    # two chains of 4 draws -> four half-chains of 2: means 1.5, 3.5, 0.5, 4.5; each
    # half-chain variance 0.5 (ddof 1); B/n = var(means) = 10/3; W = 0.5;
    # var_plus = (1/2) 0.5 + 10/3; rhat = sqrt(var_plus / W)
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 4.0, 5.0]])
    assert dg.rhat_basic(x) == pytest.approx(np.sqrt((0.25 + 10 / 3) / 0.5), rel=1e-14)
    np.testing.assert_array_equal(dg.split_chains(x), [[1, 2], [0, 1], [3, 4], [4, 5]])
    # odd length: the middle draw is dropped
    np.testing.assert_array_equal(dg.split_chains([[1, 2, 3, 4, 5]]), [[1, 2], [4, 5]])


def test_rank_normalisation_uses_blom_offsets_and_average_ranks():
    z = dg.rank_normalize([[3.0, 1.0, 2.0, 2.0]])
    ranks = np.array([4.0, 1.0, 2.5, 2.5])
    np.testing.assert_allclose(z[0], special.ndtri((ranks - 0.375) / 4.25))


def test_ess_of_ar1_matches_theory():
    # ESS / S -> (1 - phi) / (1 + phi) for a stationary AR(1)
    phi, chains, n = 0.5, 4, 20_000
    e = _normals((chains, n + 200), 7)
    y = np.zeros_like(e)
    for t in range(1, y.shape[1]):
        y[:, t] = phi * y[:, t - 1] + e[:, t]
    y = y[:, 200:]
    expected = chains * n * (1 - phi) / (1 + phi)
    assert dg.ess_bulk(y) == pytest.approx(expected, rel=0.08)
    assert dg.ess_basic(y) == pytest.approx(expected, rel=0.08)
    assert dg.rhat(y) < 1.01
    # the MCSE of the mean is sd / sqrt(ESS): sd = 1 / sqrt(1 - phi^2)
    assert dg.mcse_mean(y) == pytest.approx(np.sqrt(1 / (1 - phi**2) / expected), rel=0.05)


def test_iid_draws_have_ess_close_to_their_number():
    x = _normals((4, 2500), 8)
    assert dg.ess_bulk(x) == pytest.approx(10_000, rel=0.06)
    assert dg.ess_tail(x) == pytest.approx(10_000, rel=0.12)
    assert dg.rhat(x) < 1.005


def test_disagreeing_chains_are_flagged():
    x = _normals((4, 500), 9)
    x[2] += 1.0
    assert dg.rhat(x) > 1.1
    # a trend inside a single chain is caught by splitting it
    trend = _normals((1, 1000), 10) + np.linspace(0, 3, 1000)
    assert dg.rhat(trend) > 1.2
    # different scale only: invisible in the bulk, caught by the folded (tail) R-hat
    s = _normals((4, 1000), 11)
    s[0] *= 4
    assert dg.rhat(s) > 1.05
    assert dg.rhat_basic(s) < 1.01


def test_degenerate_inputs():
    assert dg.rhat(np.full((4, 50), 3.0)) == 1.0
    assert dg.ess_bulk(np.full((4, 50), 3.0)) == 200
    assert dg.rhat(np.repeat([[1.0], [2.0]], 50, axis=1)) == np.inf
    assert np.isnan(dg.rhat(np.ones((4, 3))))
    assert np.isnan(dg.ess_bulk([[1.0, np.nan, 2.0, 3.0, 4.0]]))
    with pytest.raises(ValueError):
        dg.rhat(np.zeros((2, 2, 2)))


def test_summarize():
    x = CASES["iid"]
    s = dg.summarize(x, level=0.9)
    assert s["mean"] == pytest.approx(x.mean())
    assert s["sd"] == pytest.approx(x.std(ddof=1))
    assert s["lower"] == pytest.approx(np.quantile(x, 0.05))
    assert s["upper"] == pytest.approx(np.quantile(x, 0.95))
    assert s["rhat"] == pytest.approx(ARVIZ["iid"][0], rel=1e-8)
    assert s["ess_bulk"] == pytest.approx(ARVIZ["iid"][1], rel=1e-8)
