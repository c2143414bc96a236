"""The execution backend (issue 8 items 4-5): local, process pool and Dask give the same numbers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sdcrisk import Microdata
from sdcrisk.analyses.grid import evaluate_grid
from sdcrisk.analyses.scenarios import all_subsets, assess_scenarios
from sdcrisk.exceptions import ParameterError
from sdcrisk.runtime.executors import (
    SerialExecutor,
    chunked,
    executor_scope,
    map_units,
    unit_seed,
    unit_seeds,
)


def _square_minus(x):
    if x == 99:
        raise ValueError("unit 99 fails")
    return x * x - 1


def _draw(seed_tag):
    seed, tag = seed_tag
    return float(np.random.default_rng(unit_seed(seed, tag)).random())


def _population(n=3000, seed=8):
    rng = np.random.default_rng(seed)
    return Microdata.from_source({
        "region": rng.integers(0, 8, n), "sex": rng.integers(0, 2, n),
        "age": rng.zipf(1.8, n) % 12, "job": rng.integers(0, 5, n)},
        ["region", "sex", "age", "job"])


def test_map_units_keeps_input_order_and_raises():
    with ThreadPoolExecutor(3) as ex:
        assert map_units(_square_minus, range(10), executor=ex) == [x * x - 1 for x in range(10)]
    with pytest.raises(ValueError, match="unit 99 fails"):
        map_units(_square_minus, [1, 99, 2], executor="serial")
    assert map_units(_square_minus, [], executor="serial") == []


def test_unit_seeds_depend_on_identity_only():
    a = unit_seed(7, "region+sex").generate_state(2)
    assert np.array_equal(a, unit_seed(7, "region+sex").generate_state(2))
    assert not np.array_equal(a, unit_seed(7, "region+age").generate_state(2))
    assert not np.array_equal(a, unit_seed(8, "region+sex").generate_state(2))
    # chains: child i of SeedSequence(seed).spawn(n), whatever n and order
    s4, s2 = unit_seeds(3, 4), unit_seeds(3, 2)
    assert np.array_equal(s4[1].generate_state(1), s2[1].generate_state(1))
    with ThreadPoolExecutor(4) as ex:  # scheduling order does not change a unit's draw
        tags = [(5, f"u{i}") for i in range(12)]
        assert map_units(_draw, tags, executor=ex) == [_draw(t) for t in tags]


def test_executor_scope_choices():
    with executor_scope("serial") as ex:
        assert isinstance(ex, SerialExecutor)
    with executor_scope(None, workers=1) as ex:
        assert isinstance(ex, SerialExecutor)
    given = ThreadPoolExecutor(1)
    with executor_scope(given) as ex:
        assert ex is given
    given.shutdown()
    with pytest.raises(ParameterError, match="workers=0"):
        with executor_scope(None, workers=0):
            pass
    with pytest.raises(ParameterError, match="not a concurrent.futures.Executor"):
        with executor_scope(object()):
            pass
    with pytest.raises(ParameterError, match="not both"):
        with executor_scope("serial", scheduler="tcp://x:1"):
            pass
    assert chunked(list(range(7)), 3) == [[0, 1], [2, 3, 4], [5, 6]]


@pytest.mark.filterwarnings("ignore::sdcrisk.exceptions.ConvergenceWarning")
def test_local_processes_equal_serial():
    """The default backend (spawned local processes) gives the serial numbers."""
    pop = _population()
    sets = all_subsets(list(pop.keys), 2)[:6]
    serial = assess_scenarios(pop, sets, method="poisson-gamma", executor="serial", seed=1,
                              population_size=60_000)
    procs = assess_scenarios(pop, sets, method="poisson-gamma", executor=None, workers=2,
                             seed=1, population_size=60_000)
    assert procs.backend == "local processes"
    assert [r["name"] for r in procs.rows] == [r["name"] for r in serial.rows]
    assert [r["measures"] for r in procs.rows] == [r["measures"] for r in serial.rows]


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not "
                                      "installed (pip install 'sdcrisk[cluster]')")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_scenarios_equal_local(dask_client):
    pop = _population()
    sets = all_subsets(list(pop.keys), 3)
    opts = {"monte_carlo": 30}
    local = assess_scenarios(pop, sets, method="graphical", options=opts, seed=11,
                             executor="serial")
    dask = assess_scenarios(pop, sets, method="graphical", options=opts, seed=11,
                            executor=dask_client)
    assert dask.backend == "dask client"
    assert len(dask.rows) == 14
    assert [r["name"] for r in dask.rows] == [r["name"] for r in local.rows]
    assert [r["measures"] for r in dask.rows] == [r["measures"] for r in local.rows]
    assert dask.contributions == local.contributions
    # started from a scheduler address
    addr = dask_client.scheduler.address
    by_addr = assess_scenarios(pop, sets[:4], method="nb", rank_by="tau1", scheduler=addr,
                               population_size=60_000)
    ref = assess_scenarios(pop, sets[:4], method="nb", rank_by="tau1", executor="serial",
                           population_size=60_000)
    assert by_addr.backend == "dask scheduler"
    assert [r["measures"] for r in by_addr.rows] == [r["measures"] for r in ref.rows]


def test_dask_evaluation_grid_equals_local(dask_client, tmp_path):
    import pandas as pd

    rng = np.random.default_rng(2)
    n = 20_000
    path = tmp_path / "pop.csv"
    pd.DataFrame({"a": rng.integers(0, 10, n), "b": rng.integers(0, 4, n),
                  "c": rng.zipf(1.9, n) % 20}).to_csv(path, index=False)
    # declared levels (a dict of lists) travel with the path; "a" gets an empty level 10
    levels = {"a": list(range(11))}
    pops = {"file": (path, ["a", "b", "c"]), "memory": _population(),
            "levels": (path, ["a", "b", "c"], {"levels": levels})}
    methods = {"nb": ("nb", {}), "pg": ("poisson-gamma", {})}
    local = evaluate_grid(pops, [0.05, 0.1], methods, seeds=(0, 1), executor="serial")
    dask = evaluate_grid(pops, [0.05, 0.1], methods, seeds=(0, 1), executor=dask_client)
    assert len(local) == 3 * 2 * 2 * 2
    with_levels = [r for r in local if r["population"] == "levels"]
    plain = [r for r in local if r["population"] == "file"]
    for a, b in zip(with_levels, plain, strict=True):
        assert a["K"] == b["K"] * 11 // 10 and a["truth"] == b["truth"]
    for a, b in zip(local, dask, strict=True):
        assert (a["population"], a["fraction"], a["seed"], a["method"]) == \
            (b["population"], b["fraction"], b["seed"], b["method"])
        assert a["truth"] == b["truth"] and a["estimates"] == b["estimates"]
    # the grid row is the evaluate() of that unit; truth tau1 is an exact population count
    from sdcrisk import Bernoulli, evaluate, get_estimator

    pop = Microdata.from_source(path, ["a", "b", "c"])
    ev = evaluate(pop, [get_estimator("nb")], design=Bernoulli(0.1), seed=1)
    row = next(r for r in local if r["population"] == "file" and r["fraction"] == 0.1
               and r["seed"] == 1 and r["method"] == "nb")
    assert row["truth"] == ev.truth
    assert row["estimates"]["tau2"] == ev.methods["nb"].estimates["tau2"]


def test_grid_rows_carry_the_mcmc_verdict_of_mcmc_methods():
    # the accuracy scoreboard shows R-hat / ESS of tau1 for MCMC rows (issue 5, item 7)
    pops = {"memory": _population()}
    hdp = {"chains": 2, "iterations": 40, "burn_in": 20, "thin": 2, "mc_draws": 50}
    rows = evaluate_grid(pops, [0.05], {"nb": ("nb", {}), "hdp": ("hdp", hdp)},
                         executor="serial")
    by = {r["method"]: r for r in rows}
    assert by["nb"]["mcmc"] is None
    m = by["hdp"]["mcmc"]
    assert set(m) == {"rhat_tau1", "ess_tau1", "converged"}
    assert m["rhat_tau1"] > 0.9 and m["ess_tau1"] > 0 and m["converged"] is False
