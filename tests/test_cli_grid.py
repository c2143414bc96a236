"""``sdcrisk evaluate --fractions/--seeds/--workers`` grids and ``assess --workers`` for one
key set (issue 8 items 5 and the single-key-set executor)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import skewed_population
from sdcrisk import Bernoulli, GraphicalRisk, Microdata, evaluate
from sdcrisk.cli import main

METHODS = "nb,poisson-gamma,graphical"
MEASURES = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta")


@pytest.fixture(scope="module")
def population(tmp_path_factory):
    return skewed_population(tmp_path_factory.mktemp("grid"))


def _json(tmp_path, *argv) -> dict:
    out = tmp_path / "out.json"
    code = main([*map(str, argv), "--format", "json", "--out", str(out)])
    assert code == 0
    return json.loads(out.read_text())


def _grid_argv(path, *extra):
    # graphical with Monte Carlo draws: its estimates depend on the estimators' random_state
    return ["evaluate", path, "--keys", "x,y,z", "--fractions", "0.05,0.1", "--seeds", "0-1",
            "--methods", METHODS, "--monte-carlo", "200", *extra]


@pytest.fixture(scope="module")
def grid(population, tmp_path_factory):
    _, path = population
    return _json(tmp_path_factory.mktemp("serial"), *_grid_argv(path, "--workers", "1"))


def _numbers(row):
    return {k: row[k] for k in ("population", "fraction", "seed", "method", "K", "truth",
                                "estimates", "relative_errors", "auc")}


def test_grid_rows_equal_single_evaluate_runs(grid, population, tmp_path):
    df, path = population
    methods = METHODS.split(",")
    assert grid["fractions"] == [0.05, 0.1] and grid["seeds"] == [0, 1]
    assert grid["executor"] == "serial"
    assert grid["cell_space"] == np.prod([df[k].nunique() for k in "xyz"])
    assert [(r["fraction"], r["seed"], r["method"]) for r in grid["rows"]] == [
        (f, s, m) for f in (0.05, 0.1) for s in (0, 1) for m in methods]
    for f in (0.05, 0.1):
        for s in (0, 1):
            one = _json(tmp_path, "evaluate", path, "--keys", "x,y,z", "--fraction", f,
                        "--seed", s, "--methods", METHODS, "--monte-carlo", "200")
            rows = [r for r in grid["rows"] if (r["fraction"], r["seed"]) == (f, s)]
            for r in rows:
                e = one["estimates"][r["method"]]
                assert r["truth"] == one["truth"]
                assert r["estimates"] == {m: e[m] for m in MEASURES}
                assert r["relative_errors"] == e["relative_error"]
                assert r["auc"] == e["auc"]
    # the truth of one row, brute force: Bernoulli(0.1) with seed 1 over the file's rows
    take = np.random.default_rng(1).random(len(df)) < 0.1
    keys = ["x", "y", "z"]
    s = df[take].groupby(keys).size().rename("f").to_frame().join(
        df.groupby(keys).size().rename("F"))
    su = s[s.f == 1]
    t = next(r for r in grid["rows"] if (r["fraction"], r["seed"]) == (0.1, 1))["truth"]
    assert (t["n"], t["sample_uniques"], t["tau1"]) == (int(take.sum()), len(su),
                                                        int((su.F == 1).sum()))
    assert t["tau2"] == pytest.approx(float((1 / su.F).sum()), rel=1e-12)
    # each unit's estimators take the unit's sampling seed as random_state: with the root
    # seed 0 instead, the Monte Carlo estimate of seed 1's sample differs
    pop = Microdata.from_source(path, keys)
    other = evaluate(pop, [GraphicalRisk(monte_carlo=200, random_state=0)],
                     design=Bernoulli(0.1), seed=1).methods["graphical"].estimates["tau1"]
    row = next(r for r in grid["rows"] if (r["fraction"], r["seed"], r["method"])
               == (0.1, 1, "graphical"))
    assert other != row["estimates"]["tau1"]


def test_grid_on_two_worker_processes_gives_identical_numbers(grid, population, tmp_path):
    _, path = population
    par = _json(tmp_path, *_grid_argv(path, "--workers", "2"))
    assert par["executor"] == "local processes" and par["workers"] == 2
    assert [_numbers(r) for r in par["rows"]] == [_numbers(r) for r in grid["rows"]]
    strip = [{k: v for k, v in s.items() if k != "mean_seconds"} for s in grid["summaries"]]
    assert [{k: v for k, v in s.items() if k != "mean_seconds"}
            for s in par["summaries"]] == strip


def test_summaries_are_numpy_means_medians_and_rmse_of_the_rows(grid):
    assert len(grid["summaries"]) == 2 * 3
    for s in grid["summaries"]:
        rows = [r for r in grid["rows"] if (r["fraction"], r["method"])
                == (s["fraction"], s["method"])]
        assert s["seeds"] == len(rows) == 2
        for m in MEASURES:
            rel = np.array([r["relative_errors"][m] for r in rows])
            diff = np.array([r["estimates"][m] - r["truth"][m] for r in rows])
            assert s[m]["n"] == 2
            assert s[m]["mean_relative_error"] == pytest.approx(np.mean(rel), rel=1e-12)
            assert s[m]["median_relative_error"] == pytest.approx(np.median(rel), rel=1e-12)
            assert s[m]["rmse"] == pytest.approx(np.sqrt(np.mean(diff**2)), rel=1e-12)
            assert s[m]["relative_rmse"] == pytest.approx(np.sqrt(np.mean(rel**2)),
                                                          rel=1e-12)
        aucs = [r["auc"] for r in rows if r["auc"] is not None]
        assert s["mean_auc"] == (pytest.approx(np.mean(aucs)) if aucs else None)


def test_grid_table_shows_summaries_and_rows(population, capsys):
    _, path = population
    code = main(["evaluate", str(path), "--keys", "x,y,z", "--fraction", "0.1", "--seeds",
                 "2,5", "--methods", "nb", "--workers", "1"])
    out, _ = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Bernoulli sampling of records: fractions 0.1 x seeds 2,5")
    assert "units: serial" in lines[0]
    # independent of the grid: mean tau1 relative error of the two single samples
    errs = []
    pop = Microdata.from_source(path, ["x", "y", "z"])
    for seed in (2, 5):
        ev = evaluate(pop, ["nb"], design=Bernoulli(0.1), seed=seed)
        errs.append(ev.methods["nb"].relative_errors["tau1"])
    summary = next(x for x in lines if x.split()[:2] == ["0.1", "nb"])
    assert summary.split()[3] == f"{100 * np.mean(errs):+.1f}%"
    assert sum(1 for x in lines if x.split()[1:3] in (["2", "nb"], ["5", "nb"])) == 2


@pytest.mark.parametrize("extra, message", [
    (["--fractions", "0.05", "--sample", "s.csv"], "--sample gives one fixed sample"),
    (["--fractions", "0.05", "--n", "100"], "--n gives one fixed sample"),
    (["--n", "100", "--seeds", "0-2"], "--seeds draws Bernoulli samples"),
    (["--fraction", "0.1", "--fractions", "0.05"], "--fraction F or --fractions LIST"),
    (["--fraction", "0.1", "--seed", "3", "--seeds", "0,1"], "--seed S (one sample) or"),
    (["--fractions", "0.05", "--household", "hid", "--household-size", "2"],
     "household-level keys"),
    (["--fractions", "0.05", "--household", "hid"], "--household samples whole households"),
    (["--fractions", "0.05,0"], "--fractions: 0 must lie in (0, 1]"),
    (["--fractions", "0.05,0.05"], "0.05 appears twice"),
    (["--fractions", "0.05,a"], "'a' is not a number"),
    (["--fraction", "0.1", "--seeds", "3-1"], "the range '3-1' is empty"),
    (["--fraction", "0.1", "--seeds", "0-2,1"], "seed 1 appears twice"),
    (["--fraction", "0.1", "--seeds", "x"], "'x' is not a seed"),
    (["--seeds", "0,1"], "--seeds needs --fraction F or --fractions LIST"),
    (["--fraction", "0.1", "--workers", "2"], "--workers applies to grids"),
    (["--fraction", "0.1", "--scheduler", "tcp://h:8786"], "--scheduler applies to grids"),
    ([], "give --fraction F, --n N or --sample FILE"),
])
def test_bad_grid_combinations_are_one_line_errors(population, capsys, extra, message):
    _, path = population
    code = main(["evaluate", str(path), "--keys", "x,y", "--methods", "nb", *extra])
    _, err = capsys.readouterr()
    assert code == 2
    assert message in err and err.count("\n") == 1 and err.startswith("sdcrisk: error: ")


def test_assess_single_key_set_on_workers_equals_the_default_run(population, tmp_path):
    _, path = population
    argv = ["assess", path, "--keys", "x,y,z", "--method", "loglinear", "--partition", "x:2",
            "--population-size", "100000"]
    base = _json(tmp_path, *argv)
    par = _json(tmp_path, *argv, "--workers", "2")
    one = _json(tmp_path, *argv, "--workers", "1")
    assert "executor" not in base["provenance"]  # default behaviour unchanged
    assert (par["provenance"]["executor"], par["provenance"]["workers"]) == (
        "local processes", 2)
    assert one["provenance"]["executor"] == "serial"
    assert len(base["diagnostics"]["partitions"]) == 2
    for other in (par, one):
        assert other["measures"] == base["measures"]
        assert other["fitted"] == base["fitted"]
        assert other["sample_uniques"] == base["sample_uniques"]
    # the two bands' fits really are the partition's: their tau1 add up to the whole one
    assert sum(p["tau1"] for p in base["diagnostics"]["partitions"]) == pytest.approx(
        base["measures"]["tau1"]["estimate"], rel=1e-9)
