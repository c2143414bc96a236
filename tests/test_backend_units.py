"""MCMC chains and log-linear partitions as backend work units (issue 8 item 4).

``Estimator.fit(table, executor=...)`` hands a partitioned log-linear model's bands and an
MCMC estimator's chains to an executor: in this process (``"serial"``), in local processes
(``workers=2``) or on a Dask cluster. Each must give the numbers of the plain fit bit for bit.
"""

from __future__ import annotations

import math
import pickle
import warnings
from concurrent.futures import Executor, Future

import numpy as np
import pytest

import sdcrisk
from conftest import without_timings
from sdcrisk import Microdata, tabulate
from sdcrisk.data.structural_zeros import resolve_structural_zeros
from sdcrisk.estimators import _mvr
from sdcrisk.estimators._mm_model import HDP, HdpParams, MMData
from sdcrisk.exceptions import ConvergenceWarning
from sdcrisk.runtime.executors import use_executor
from sdcrisk.runtime.mcmc import (
    Kernel,
    Observation,
    Thresholds,
    _Chain,
    _merge_chain,
    _outbound,
    advance_chain,
    sample,
)


# --- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not "
                                      "installed (pip install 'sdcrisk[cluster]')")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def band_table():
    """2,000 records, 4 keys; key ``a`` (8 levels) is cut into bands."""
    rng = np.random.default_rng(4)
    n = 2000
    a = rng.integers(0, 8, n)
    md = Microdata.from_source({"a": a, "b": (a + rng.integers(0, 2, n)) % 3,
                                "c": rng.zipf(1.7, n) % 9, "d": rng.integers(0, 5, n)},
                               ["a", "b", "c", "d"], population_size=6_000)
    return tabulate(md)


@pytest.fixture(scope="module")
def small_table():
    """300 records, 4 keys; (a, b) = (0, 2) and (1, 3) never occur."""
    rng = np.random.default_rng(18)
    n = 300
    a = rng.integers(0, 3, n)
    md = Microdata.from_source({"a": a, "b": (a + rng.integers(0, 2, n)) % 4,
                                "c": rng.integers(0, 12, n), "d": rng.integers(0, 3, n)},
                               ["a", "b", "c", "d"], population_size=3_000)
    return tabulate(md)


class PicklingExecutor(Executor):
    """Runs each unit at once, but sends it and its result through pickle (as processes do)."""

    def __init__(self):
        self.units = 0

    def submit(self, fn, /, *args, **kwargs):
        self.units += 1
        fut: Future = Future()
        args, kwargs = pickle.loads(pickle.dumps((args, kwargs)))
        fut.set_result(pickle.loads(pickle.dumps(fn(*args, **kwargs))))
        return fut


def _quiet_fit(est, table, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(table, **kw)




# --- log-linear partitions --------------------------------------------------------------------
def _independence_tau1(table, var: int, groups, pi: float) -> float:
    """tau1 of independence models fitted in each band, in closed form.

    Within band b, mu_k = n_b prod_j (f_j(x_j | b) / n_b) (the MLE of the independence
    model); tau1 = sum over sample uniques of exp(-(1 - pi) mu_k / pi) (spec C.2).
    """
    codes, f = table.cell_codes, table.counts
    total = 0.0
    for group in groups:
        band = np.isin(codes[:, var], group)
        nb = f[band].sum()
        mu = np.full(band.sum(), float(nb))
        for j in range(codes.shape[1]):
            margin = np.bincount(codes[band, j], weights=f[band],
                                 minlength=len(table.levels[j]))
            mu *= margin[codes[band, j]] / nb
        su = f[band] == 1
        total += float(np.exp(-(1 - pi) * mu[su] / pi).sum())
    return total


def test_partitioned_loglinear_units_equal_the_plain_fit(band_table, dask_client):
    est = sdcrisk.LogLinearRisk(partition="a:3")
    plain = est.fit(band_table)
    rows = plain.diagnostics["partitions"]
    assert [r["partition"] for r in rows] == ["a in [0 .. 2]", "a in [3 .. 5]",
                                              "a in [6 .. 7]"]
    # spec C.6: the measures of the partitioned model are the sums over the bands
    assert plain.estimate("tau1") == pytest.approx(sum(r["tau1"] for r in rows), rel=1e-12)
    assert plain.estimate("tau2") == pytest.approx(sum(r["tau2"] for r in rows), rel=1e-12)
    for kw in ({"executor": "serial"}, {"workers": 2}, {"executor": dask_client}):
        res = est.fit(band_table, **kw)
        assert res.to_dict()["measures"] == plain.to_dict()["measures"], kw
        for name, values in plain.cell_risk_values.items():
            np.testing.assert_array_equal(res.cell_risk_values[name], values)
        assert without_timings(res.diagnostics["partitions"]) == without_timings(rows)
        assert without_timings(dict(res.fitted)) == without_timings(dict(plain.fitted))


def test_partitioned_independence_units_match_the_closed_form(band_table, dask_client):
    pi = band_table.n / band_table.population_size
    groups = [[0, 1, 2], [3, 4, 5], [6, 7]]
    expected = _independence_tau1(band_table, 0, groups, pi)
    assert 50 < expected < 60 < band_table.sample_uniques  # 53.98: not a degenerate case
    est = sdcrisk.LogLinearRisk(terms="independence", partition="a:3")
    res = est.fit(band_table, executor=dask_client)
    assert res.estimate("tau1") == pytest.approx(expected, rel=1e-9)
    assert res.estimate("tau1") == est.fit(band_table).estimate("tau1")


def test_band_warnings_come_back_from_the_units(band_table, dask_client):
    # one IPF sweep cannot fit the all-2-way model: each band warns, in the caller's process
    est = sdcrisk.LogLinearRisk(partition="a:2", max_iter=1, tol=1e-9)
    for executor in (None, dask_client):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            est.fit(band_table, executor=executor)
        ours = [w for w in rec if issubclass(w.category, ConvergenceWarning)]
        assert [str(w.message).split(":")[0] for w in ours] == ["a in [0 .. 3]",
                                                                "a in [4 .. 7]"]
        assert all("IPF stopped after 1 iterations" in str(w.message) for w in ours)
        assert {w.filename for w in ours} == {__file__}  # they point at the caller


# --- MCMC chains -----------------------------------------------------------------------------
HDP_RUN = {"chains": 2, "burn_in": 20, "iterations": 40, "thin": 2, "mc_draws": 50,
           "k_init": 5}


def test_hdp_chain_units_equal_the_threaded_fit(small_table, dask_client):
    est = sdcrisk.ESTIMATORS["hdp"](**HDP_RUN)
    plain = _quiet_fit(est, small_table)
    traces = plain.fitted["traces"]
    assert len(traces["tau1"]) == 2 and len(traces["tau1"][0]) == 20
    assert traces["tau1"][0] != traces["tau1"][1]  # two chains, two streams
    for kw in ({"executor": "serial"}, {"workers": 2}, {"executor": dask_client}):
        res = _quiet_fit(est, small_table, **kw)
        assert res.fitted["traces"] == traces, kw
        assert res.estimate("tau1") == plain.estimate("tau1")
        assert res.to_dict()["measures"] == plain.to_dict()["measures"]
        for name, values in plain.cell_risk_values.items():
            np.testing.assert_array_equal(res.cell_risk_values[name], values)
        assert (res.diagnostics["mcmc"]["step_info"]
                == plain.diagnostics["mcmc"]["step_info"])


def test_adaptive_hdp_blocks_on_dask_equal_the_threaded_fit(small_table, dask_client):
    # iterations=None: burn-in + first block, then two more blocks, each a unit per chain
    est = sdcrisk.ESTIMATORS["hdp"](**{**HDP_RUN, "iterations": None, "block": 20,
                                       "max_iterations": 60})
    plain = _quiet_fit(est, small_table)
    res = _quiet_fit(est, small_table, executor=dask_client)
    assert plain.diagnostics["mcmc"]["iterations"] == 60
    assert res.diagnostics["mcmc"]["iterations"] == 60
    assert res.fitted["traces"] == plain.fitted["traces"]
    np.testing.assert_array_equal(res.cell_risk_values["reidentification"],
                                  plain.cell_risk_values["reidentification"])


def _iid_init(rng, data, params):
    return {"x": 0.0, "t": 0}


def _iid_step(rng, state, data, params):
    state["x"] = rng.normal() + data[0]
    state["t"] += 1
    return state, {"one": 1.0}


def _iid_observe(rng, state, data, params):
    return Observation(scalars={"x": state["x"], "u": rng.random()},
                       sums={"vec": np.array([state["x"], 1.0])},
                       bank={"b": np.array([state["t"]], float)})


IID = Kernel(_iid_init, _iid_step, _iid_observe, name="iid")


def test_bank_merged_across_units_equals_the_threaded_bank(capsys):
    # 6 blocks of 50 iterations and a bank of 4 draws per chain: the stride doubles inside
    # units and between them, and the merged bank must keep exactly the same draws
    opts = dict(chains=2, burn_in=5, iterations=None, block=50, max_iterations=300, seed=4,
                monitor=("x",), bank_size=8, warn=False,
                thresholds=Thresholds(ess_per_chain=10_000))
    data = np.array([2.0])
    plain = sample(IID, data, {}, **opts)
    ex = PicklingExecutor()
    with use_executor(ex):
        units = sample(IID, data, {}, progress=True, **opts)
    assert ex.units == 12  # 2 chains x 6 blocks
    assert "iid" in capsys.readouterr().err  # the bar advanced per finished unit
    assert plain.settings == units.settings and plain.settings["iterations"] == 300
    for name in plain.draws:
        np.testing.assert_array_equal(units.draws[name], plain.draws[name])
    np.testing.assert_array_equal(units.means["vec"], plain.means["vec"])
    np.testing.assert_array_equal(units.info["one"], plain.info["one"])
    # the bank keeps the multiples of the stride, which doubles whenever more than 4 are
    # kept: at draw 256 the stride goes from 64 to 128, leaving draws 0, 128, 256 of each
    # chain; draw s is taken after 5 burn-in steps and s + 1 later ones: t = 6 + s
    np.testing.assert_array_equal(units.bank["b"], plain.bank["b"])
    np.testing.assert_array_equal(plain.bank["b"][:, 0], np.tile([6, 134, 262], 2))
    assert units.diagnostics["executor"] == "PicklingExecutor"


def _state_items(state):
    return state.items() if isinstance(state, dict) else vars(state).items()


def _assert_same_chain(a: _Chain, b: _Chain):
    for (name, x), (_, y) in zip(_state_items(a.state), _state_items(b.state), strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert x == y, name
    assert a.step_rng.bit_generator.state == b.step_rng.bit_generator.state
    assert a.obs_rng.bit_generator.state == b.obs_rng.bit_generator.state
    assert a.scalars == b.scalars and a.info_sum == b.info_sum and a.kept == b.kept
    assert a.sums.keys() == b.sums.keys()
    for name in a.sums:
        np.testing.assert_array_equal(a.sums[name], b.sums[name])
    assert a.bank_index == b.bank_index and a.bank_stride == b.bank_stride
    for name in a.bank:
        assert list(a.bank[name]) == list(b.bank[name])
        for i in a.bank[name]:
            np.testing.assert_array_equal(a.bank[name][i], b.bank[name][i])


def _kernel_case(case, table):
    sz = None
    if case != "hdp":
        sz = resolve_structural_zeros([{"a": 0, "b": 2}, {"a": 1, "b": 3}], table.keys,
                                      table.levels)
        sz = sz if sz.is_disjoint() else sz.make_disjoint()
    data = MMData.from_table(table, sz)
    if case == "mvr-sz":
        params = _mvr.MvrParams(profiles=3, step=_mvr.default_step(3), mc_draws=40,
                                sz_method="augment")
        return _mvr.MVR, data, params
    return HDP, data, HdpParams(k_init=5, mc_draws=40, sz_method="approximate")


@pytest.mark.parametrize("case", ["hdp", "hdp-sz", "mvr-sz"])
def test_chain_advanced_in_two_pickled_blocks_equals_one_advanced_in_place(case,
                                                                          small_table):
    kernel, data, params = _kernel_case(case, small_table)
    streams = np.random.SeedSequence(11).spawn(2)
    in_place = _Chain(kernel, data, params, streams, thin=2, bank_cap=4)
    in_place.run(10, True)
    in_place.run(24, False)
    in_place.run(16, False)

    chain = _Chain(kernel, data, params, streams, thin=2, bank_cap=4)
    for segments in (((10, True), (24, False)), ((16, False),)):
        unit = pickle.loads(pickle.dumps((_outbound(chain), segments)))
        back = pickle.loads(pickle.dumps(advance_chain(unit)))
        assert back.data is None  # the data does not travel back
        chain = _merge_chain(chain, back, data)
    assert chain.data is data
    assert chain.n_draws == 20 and len(chain.bank_index) == 3  # 20 draws, cap 4: stride 8
    _assert_same_chain(chain, in_place)
    assert math.isfinite(chain.scalars["tau1"][-1])
