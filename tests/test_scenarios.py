"""Key-set scenarios (issue 8 item 3) and the estimators' memory guard (item 2)."""

from __future__ import annotations

import argparse
import json
import tracemalloc
import warnings

import numpy as np
import pytest

import sdcrisk
from sdcrisk import ESTIMATORS, Microdata, get_estimator, tabulate
from sdcrisk.analyses.scenarios import (
    KeySet,
    all_subsets,
    assess_scenarios,
    marginal_contributions,
    read_key_sets,
)
from sdcrisk.exceptions import InputError, MemoryLimitError, ParameterError

# 8 records; hand-counted sample uniques (cells with f = 1) of every key set:
#   a: 1,1,1,2,2,2,3,3        -> a=1:3, a=2:3, a=3:2                 SU 0
#   b: x,x,y,x,y,y,x,y        -> x:4, y:4                            SU 0
#   c: p,q,p,p,p,q,p,p        -> p:6, q:2                            SU 0
#   a+b: 1x:2 1y:1 2x:1 2y:2 3x:1 3y:1                               SU 4
#   a+c: 1p:2 1q:1 2p:2 2q:1 3p:2                                    SU 2
#   b+c: xp:3 xq:1 yp:3 yq:1                                         SU 2
#   a+b+c: 1xp 1xq 1yp 2xp 2yp 2yq 3xp 3yp: all distinct              SU 8
SMALL = {
    "a": [1, 1, 1, 2, 2, 2, 3, 3],
    "b": ["x", "x", "y", "x", "y", "y", "x", "y"],
    "c": ["p", "q", "p", "p", "p", "q", "p", "p"],
}
SU = {"a": 0, "b": 0, "c": 0, "a+b": 4, "a+c": 2, "b+c": 2, "a+b+c": 8}


def _data(n=3000, seed=5):
    rng = np.random.default_rng(seed)
    return {
        "region": rng.integers(0, 9, n),
        "sex": rng.integers(1, 3, n),
        "age": rng.zipf(1.7, n) % 15,
        "job": rng.choice(np.array(["a", "b", "c", "d", "e", "f"]), n, p=[.4, .3, .1, .1, .07,
                                                                            .03]),
        "w": rng.uniform(20, 80, n),
    }


def test_all_subsets_counts_and_errors():
    sets = all_subsets(["a", "b", "c", "d"], 3)
    assert len(sets) == 4 + 6 + 4  # C(4,1) + C(4,2) + C(4,3)
    assert [s.name for s in sets[:5]] == ["a", "b", "c", "d", "a+b"]
    with pytest.raises(ParameterError, match="exceeds the number of key variables"):
        all_subsets(["a", "b"], 3)
    with pytest.raises(ParameterError, match="min_dimension"):
        all_subsets(["a", "b"], 0)


def test_hand_counted_sample_uniques_rank_and_contributions():
    rep = assess_scenarios(SMALL, all_subsets(["a", "b", "c"], 3), rank_by="sample_uniques",
                           executor="serial", population_size=100)
    got = {r["name"]: r["sample_uniques"] for r in rep.rows}
    assert got == SU
    assert [r["name"] for r in rep.rows][:4] == ["a+b+c", "a+b", "a+c", "b+c"]
    c = rep.contributions
    # a: (a+b - b) = 4, (a+c - c) = 2, (a+b+c - b+c) = 6, (a - {}) not run -> mean 4 over 3 pairs
    assert c["a"]["pairs"] == 3 and c["a"]["mean_increase"] == pytest.approx(4.0)
    assert c["b"]["mean_increase"] == pytest.approx((4 + 2 + 6) / 3)
    # c: (a+c - a) = 2, (b+c - b) = 2, (a+b+c - a+b) = 4
    assert c["c"]["mean_increase"] == pytest.approx(8 / 3)
    assert c["c"]["max_increase"] == 4
    assert c["a"]["share"] == pytest.approx(4 / (4 + 4 + 8 / 3))
    # with/without contrast: sets with a: a, a+b, a+c, a+b+c -> (0+4+2+8)/4
    assert c["a"]["mean_with"] == pytest.approx(3.5)
    assert c["a"]["mean_without"] == pytest.approx((0 + 0 + 2) / 3)


def test_scenarios_equal_direct_fits():
    data = _data()
    sets = all_subsets(["region", "sex", "age", "job"], 2)
    rep = assess_scenarios(data, sets, method="nb", weights="w", rank_by="tau2",
                           executor="serial")
    assert len(rep.rows) == 10
    values = [r["measures"]["tau2"]["estimate"] for r in rep.rows]
    assert values == sorted(values, reverse=True)
    for r in rep.rows:
        md = Microdata.from_source(data, r["keys"], weights="w")
        res = get_estimator("nb").fit(tabulate(md))
        for name in ("tau1", "tau2", "global_risk"):
            assert r["measures"][name]["estimate"] == pytest.approx(res.measures[name].estimate,
                                                                    rel=1e-12)
        assert r["sample_uniques"] == tabulate(md).sample_uniques


def test_seed_depends_on_key_set_not_position():
    data = _data(800)
    sets = all_subsets(["region", "sex", "age"], 2)
    opts = {"monte_carlo": 50}
    a = assess_scenarios(data, sets, method="graphical", options=opts, seed=3,
                         executor="serial", population_size=40_000)
    b = assess_scenarios(data, list(reversed(sets))[:3], method="graphical", options=opts,
                         seed=3, executor="serial", population_size=40_000)
    by_name = {r["name"]: r for r in a.rows}
    for r in b.rows:  # the same key set alone or among others, first or last: same numbers
        assert r["seed"] == by_name[r["name"]]["seed"]
        assert r["measures"]["tau2"] == by_name[r["name"]]["measures"]["tau2"]
    c = assess_scenarios(data, sets[:2], method="graphical", options=opts, seed=4,
                         executor="serial", population_size=40_000)
    assert c.rows[0]["seed"] != by_name[c.rows[0]["name"]]["seed"]


def test_read_key_sets_formats(tmp_path):
    txt = tmp_path / "sets.txt"
    txt.write_text("# scenarios\nbasic: region, sex\n\nregion,age,job  # wide\n")
    sets = read_key_sets(txt)
    assert sets == [KeySet(("region", "sex"), "basic"), KeySet(("region", "age", "job"))]
    js = tmp_path / "sets.json"
    js.write_text(json.dumps({"s1": ["sex", "age"], "s2": "region,job"}))
    assert [s.keys for s in read_key_sets(js)] == [("sex", "age"), ("region", "job")]
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(InputError, match="no key set"):
        read_key_sets(tmp_path / "empty.txt")
    (tmp_path / "dup.txt").write_text("a,b\na,b\n")
    with pytest.raises(InputError, match="appears twice"):
        read_key_sets(tmp_path / "dup.txt")


def test_rank_by_unknown_measure():
    with pytest.raises(ParameterError, match="rank_by='nope'"):
        assess_scenarios(SMALL, [("a", "b")], rank_by="nope", executor="serial")


def _parser():
    from sdcrisk.cli import _common as cli
    from sdcrisk.cli.scenarios import add_scenario_arguments

    p = argparse.ArgumentParser()
    cli.add_sample_arguments(p, method_help="")
    cli.add_input_arguments(p, formats=("table", "json", "html"))
    add_scenario_arguments(p)
    return p, cli


def test_cli_scenarios(tmp_path):
    from sdcrisk.cli.scenarios import run_scenarios

    path = tmp_path / "s.csv"
    import pandas as pd

    pd.DataFrame(SMALL).to_csv(path, index=False)
    p, cli = _parser()
    args = p.parse_args([str(path), "--keys", "a,b,c", "--all-subsets-up-to", "2",
                         "--rank-by", "sample_uniques", "--workers", "1", "--format", "json",
                         "--population-size", "100"])
    out = json.loads(run_scenarios(args, cli.options_for(args)))
    assert [s["name"] for s in out["scenarios"]][:3] == ["a+b", "a+c", "b+c"]
    assert out["contributions"]["c"]["mean_increase"] == pytest.approx(2.0)
    sets = tmp_path / "k.txt"
    sets.write_text("ab: a,b\nabc: a,b,c\n")
    args = p.parse_args([str(path), "--key-sets", str(sets), "--rank-by", "sample_uniques",
                         "--workers", "1", "--population-size", "100"])
    text = run_scenarios(args, cli.options_for(args))
    assert text.splitlines()[3].split()[:2] == ["1", "abc"]
    args = p.parse_args([str(path), "--keys", "a,b"])
    assert run_scenarios(args, cli.options_for(args)) is None
    args = p.parse_args([str(path), "--keys", "a,b", "--rank-by", "tau1"])
    with pytest.raises(ParameterError, match="--rank-by applies to scenarios only"):
        run_scenarios(args, cli.options_for(args))


# ---- memory guard (issue 8 item 2) ----------------------------------------------------------

@pytest.fixture(scope="module")
def table():
    return tabulate(Microdata.from_source(_data(), ["region", "sex", "age", "job"],
                                          population_size=60_000))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_refuses_above_the_limit(name, table):
    est = get_estimator(name)
    need = est.memory_estimate(table)
    assert need >= 8 * table.n  # at least the record risks
    with pytest.raises(MemoryLimitError) as err:
        est.fit(table, memory_limit=need - 1)
    msg = str(err.value)
    assert f"method {name!r}" in msg and "needs" in msg and "memory limit is" in msg
    assert "remedies: partition" in msg and "fewer or coarser key variables" in msg


def test_limit_from_environment(monkeypatch, table):
    est = get_estimator("nb")
    need = est.memory_estimate(table)
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", str(need - 1))
    with pytest.raises(MemoryLimitError, match="SDCRISK_MEMORY_LIMIT"):
        est.fit(table)
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", str(need))
    assert est.fit(table).measures["tau1"].estimate > 0


def test_base_estimate_formula(table):
    from sdcrisk.estimators._base import (
        CELL_ARRAYS,
        GROUPED_CELL_ARRAYS,
        RECORD_ARRAYS,
        Estimator,
    )

    est = get_estimator("nb")
    assert Estimator.memory_estimate(est, table) == 8 * (CELL_ARRAYS * table.n_cells
                                                         + RECORD_ARRAYS * table.n)
    # without weights nb works by distinct count (tests/test_frequencies.py)
    assert est.memory_estimate(table) == 8 * GROUPED_CELL_ARRAYS * table.n_cells


def test_guard_fires_before_allocation(table):
    """The refusal comes before the method allocates anything sizeable."""
    est = get_estimator("graphical", monte_carlo=200)
    tracemalloc.start()
    try:
        with pytest.raises(MemoryLimitError):
            est.fit(table, memory_limit=1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@pytest.mark.parametrize("name,options", [("nb", {}), ("poisson-gamma", {}),
                                          ("skinner-elliot", {}), ("graphical", {}),
                                          ("graphical", {"monte_carlo": 40})])
def test_estimate_bounds_the_measured_peak(name, options):
    """The estimate is at least the traced peak of a fit, and not wildly above it."""
    rng = np.random.default_rng(2)
    n = 20_000
    data = {f"k{j}": rng.zipf(1.6, n) % 12 for j in range(5)}
    tab = tabulate(Microdata.from_source(data, list(data), population_size=20 * n))
    est = get_estimator(name, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(tab)  # warm caches (numba, imports)
        tracemalloc.start()
        try:
            est.fit(tab)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    need = est.memory_estimate(tab)
    assert need >= peak, (need, peak)
    assert need <= 40 * max(peak, 1 << 20), (need, peak)


def test_scenario_memory_limit_reports_error_per_scenario():
    rep = assess_scenarios(SMALL, [("a",), ("a", "b")], rank_by="sample_uniques",
                           executor="serial", memory_limit=10)
    assert all("MemoryLimitError" in r["error"] for r in rep.rows)
    assert sdcrisk.__version__  # package importable alongside


def test_marginal_contributions_without_nested_sets():
    rows = [{"keys": ["a", "b"], "sample_uniques": 4}, {"keys": ["c"], "sample_uniques": 1},
            {"keys": ["a", "c"], "sample_uniques": 3}]
    c = marginal_contributions(rows, "sample_uniques")
    # only a+c minus c is a pair run: a adds 2; c has no pair (a alone was not run)
    assert c["a"]["pairs"] == 1 and c["a"]["mean_increase"] == 2.0 and c["a"]["share"] == 1.0
    assert c["c"]["pairs"] == 0 and c["c"]["mean_increase"] is None
    assert c["b"]["mean_with"] == 4.0 and c["b"]["mean_without"] == 2.0


def test_text_says_why_no_contribution_is_measured(tmp_path, capsys):
    """Key sets of which none is another plus one variable: the text says the contributions
    are not measured and how to get them, instead of a table of dashes."""
    from sdcrisk.cli import main

    sets = tmp_path / "sets.txt"
    sets.write_text("region,sex\nage_band,marital_status\n")
    args = ["assess", "example:uk_census2011", "--keys", "region,sex,age_band,marital_status",
            "--population-size", "560759", "--method", "nb", "--quiet"]
    assert main([*args, "--key-sets", str(sets)]) == 0
    out = capsys.readouterr().out
    assert "contribution to tau2: not measured" in out and "--all-subsets-up-to" in out
    assert "mean +" not in out
    assert main([*args, "--all-subsets-up-to", "2"]) == 0
    out = capsys.readouterr().out
    assert "mean +" in out and "not measured" not in out
