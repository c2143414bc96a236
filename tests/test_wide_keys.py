"""Wide key sets: SUDA's bounded MSU search and the report's leave-one-key-out method.

The full MSU search grows steeply with the number of keys (30 keys, 8,927 records: size 4
alone took 43 s, size 5 238 s; benchmarks/RESULTS.md), so ``suda2(max_size="auto")`` -- the
report's default -- stops at the largest size whose search fits a work budget and says so.
These tests check that the bound is applied and stated, that it never changes a figure on
ordinary key sets (<= 10 keys), and the direction a bound moves the scores (hand-worked).
No timings here: they are in benchmarks/bench_wide_keys.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import suda2
from sdcrisk.analyses import _suda
from sdcrisk.report.collect import _suda_section, build_report
from sdcrisk.report.contributions import CONTRIBUTION_REFIT_KEYS, variable_contributions
from test_suda import brute_force_msus


def _frame(n: int, m: int, seed: int, levels: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"k{j:02d}": rng.integers(0, levels, size=n) for j in range(m)})


def _table(df: pd.DataFrame, population_size: float | None = None):
    md = sdcrisk.Microdata.from_source(df, keys=list(df.columns),
                                       population_size=population_size)
    return sdcrisk.tabulate(md)


def _same_suda(a, b) -> None:
    """Every figure of two SUDA results is identical (not close: identical)."""
    np.testing.assert_array_equal(a.msu_cell, b.msu_cell)
    np.testing.assert_array_equal(a.msu_mask, b.msu_mask)
    np.testing.assert_array_equal(a.cell_score, b.cell_score)
    np.testing.assert_array_equal(a.cell_dis_score, b.cell_dis_score)
    np.testing.assert_array_equal(a.cell_contributions, b.cell_contributions)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.max_size == b.max_size and a.complete and b.complete
    assert a.dis == b.dis
    assert a.attribute_contributions == b.attribute_contributions


def _full_work(table) -> int:
    counts = np.asarray(table.counts, np.int64)
    found = _suda.msus_up_to(table.cell_codes, counts, [len(v) for v in table.levels],
                             [-1] * len(table.keys), len(table.keys))
    assert found.complete
    return found.work


# --- the bound on a wide key set ----------------------------------------------------------

@pytest.fixture(scope="module")
def wide_table():
    # 14 keys of 3 levels, 300 records: every record unique, MSUs of sizes 2 to 6 or so
    return _table(_frame(300, 14, seed=3))


def test_wide_search_is_bounded_to_the_msus_of_the_size_it_reached(wide_table, monkeypatch):
    budget = _full_work(wide_table) // 3
    monkeypatch.setattr(_suda, "WORK_BUDGET", budget)
    res = suda2(wide_table, max_size="auto")
    m = res.max_size
    assert not res.complete and 2 <= m < 14
    assert res.diagnostics["max_size_rule"] == "auto"
    assert res.diagnostics["work_budget"] == budget
    # the full attempt and the deepening each stop once past the budget (plus one node)
    assert res.diagnostics["search_work"] <= 2 * budget + 2 * 14 * wide_table.n_cells
    # the figures are exactly those of an explicit size bound ...
    explicit = suda2(wide_table, max_size=m)
    np.testing.assert_array_equal(res.cell_score, explicit.cell_score)
    np.testing.assert_array_equal(res.cell_dis_score, explicit.cell_dis_score)
    np.testing.assert_array_equal(res.msu_mask, explicit.msu_mask)
    # ... whose MSUs are the definition's (brute force over every subset up to size m)
    rows = [tuple(r) for r in wide_table.cell_codes.tolist()]  # f = 1 everywhere
    assert np.all(wide_table.counts == 1)
    expect = brute_force_msus(rows, max_size=m)
    got: dict[int, set] = {i: set() for i in range(len(rows))}
    for cell, mask in zip(res.msu_cell.tolist(), res.msu_mask.tolist(), strict=True):
        got[cell].add(frozenset(j for j in range(14) if mask >> j & 1))
    assert got == expect
    # larger MSUs exist: the next size finds some
    assert suda2(wide_table, max_size=m + 1).n_msus > res.n_msus
    # the same budget gives the same bound (work, not the clock)
    assert suda2(wide_table, max_size="auto").max_size == m
    note = res.bound_note()
    assert note.startswith(f"MSUs searched up to size {m} of 14 keys (the search over every "
                           f"size passes SUDA's work budget ({budget:,} units)")
    assert f"suda2(data, max_size={m})" in note
    payload = res.to_dict()
    assert payload["complete"] is False and payload["bound_note"] == note
    assert payload["parameters"]["max_size"] == m


def test_a_bounded_search_prepares_the_table_once(wide_table, monkeypatch):
    # the full attempt and each size bound share the transposed codes and the pruning pass
    # (at 10^8 records x 10 keys the three runs' preparations were 20 of SUDA2's 40 s)
    calls = []
    original = _suda._deepest_unique

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(_suda, "WORK_BUDGET", _full_work(wide_table) // 3)
    monkeypatch.setattr(_suda, "_deepest_unique", counting)
    res = suda2(wide_table, max_size="auto")
    assert not res.complete and res.max_size >= 2  # the full attempt and two sizes at least
    assert len(calls) == 1


def test_wide_search_within_the_budget_is_the_full_search(wide_table):
    # the default budget covers this small file: every size, figures of max_size=None
    res = suda2(wide_table, max_size="auto")
    assert res.complete and res.max_size == 14 and res.bound_note() is None
    _same_suda(res, suda2(wide_table))


def test_report_states_the_bound(wide_table, monkeypatch):
    monkeypatch.setattr(_suda, "WORK_BUDGET", _full_work(wide_table) // 3)
    notes: list[str] = []
    bounded = _suda_section(wide_table, notes, kind="external", min_count=3, top=5)
    m = bounded["max_size"]
    assert m < 14 and bounded["bound_note"].startswith(f"MSUs searched up to size {m} of 14")
    full = _suda_section(wide_table, notes, kind="external", min_count=3, top=5,
                         max_size="all")
    assert full["max_size"] == 14 and full["bound_note"] is None
    assert bounded["n_msus"] < full["n_msus"]
    res = sdcrisk.get_estimator("nb").fit(wide_table)
    page = build_report(res, contributions=False, uniqueness=False)
    assert f"Bounded search: MSUs searched up to size {m} of 14 keys" in page
    page = build_report(res, contributions=False, uniqueness=False, suda_max_size="all")
    assert "Bounded search" not in page
    for bad in (15, 0, "every", True):
        with pytest.raises(sdcrisk.ParameterError, match=r"suda_max_size=.*1\.\.14 \(keys\)"):
            build_report(res, suda_max_size=bad)


def test_cli_suda_max_size_is_checked_before_the_fits(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    _frame(60, 12, seed=1).to_csv(path, index=False)
    keys = ",".join(f"k{j:02d}" for j in range(12))
    from sdcrisk.cli import main

    code = main(["report", str(path), "--keys", keys, "--whole-population",
                 "--suda-max-size", "13", "--out", str(tmp_path / "r.html")])
    assert code == 2
    assert "--suda-max-size '13': give auto, all or a size from 1 to 12" in \
        capsys.readouterr().err


# --- ordinary key sets: nothing changes ----------------------------------------------------

@pytest.mark.parametrize("m,n,seed", [(4, 500, 0), (7, 400, 1), (10, 300, 2), (10, 2000, 5)])
def test_ten_keys_or_fewer_are_never_bounded(m, n, seed, monkeypatch):
    table = _table(_frame(n, m, seed=seed, levels=4))
    unbounded = suda2(table)
    monkeypatch.setattr(_suda, "WORK_BUDGET", 1)  # no budget could bound them
    auto = suda2(table, max_size="auto")
    assert auto.n_msus > 0
    _same_suda(auto, unbounded)
    notes: list[str] = []
    sec = _suda_section(table, notes, kind="external", min_count=3, top=5)
    assert sec["bound_note"] is None and sec["max_size"] == m
    assert sec["total_score"] == unbounded.total_score
    assert sec["n_msus"] == unbounded.n_msus
    assert sec["dis_table"] == unbounded.dis_table()


def test_ten_keys_on_a_census_size_table_are_searched_within_the_budget(monkeypatch):
    """Up to 10 keys every size is searched while its worst case, (2^M - 1) subsets x cells,
    is at most FULL_SEARCH_WORK (3x10^7 records x 8 keys: 1.5x10^9, 12 s). Past it (10^8
    records x 10 keys: 2.6x10^10, still running after 15 minutes) the budget bounds the
    search as for a wide key set, and the page says so."""
    table = _table(_frame(300, 10, seed=2, levels=4))
    worst = ((1 << 10) - 1) * table.n_cells
    full = suda2(table)
    monkeypatch.setattr(_suda, "WORK_BUDGET", _full_work(table) // 3)
    monkeypatch.setattr(_suda, "FULL_SEARCH_WORK", worst)  # at the limit: every size
    _same_suda(suda2(table, max_size="auto"), full)
    monkeypatch.setattr(_suda, "FULL_SEARCH_WORK", worst - 1)
    res = suda2(table, max_size="auto")
    m = res.max_size
    assert not res.complete and 1 <= m < 10
    explicit = suda2(table, max_size=m)
    np.testing.assert_array_equal(res.msu_mask, explicit.msu_mask)
    np.testing.assert_array_equal(res.cell_score, explicit.cell_score)
    np.testing.assert_array_equal(res.cell_dis_score, explicit.cell_dis_score)
    assert res.n_msus < full.n_msus
    assert res.bound_note().startswith(f"MSUs searched up to size {m} of 10 keys")


def test_sdcmicro_testdata_seven_keys_unchanged(monkeypatch, shared_data):
    # sdcMicro's per-record suda2 scores on testdata, 7 keys (../shared/data/sdcmicro/reference)
    data = pd.read_csv(shared_data("sdcmicro", "testdata.csv"))
    ref = pd.read_csv(shared_data("sdcmicro", "reference", "testdata_keys7_risk.csv"))
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    monkeypatch.setattr(_suda, "WORK_BUDGET", 1)
    res = suda2(sdcrisk.Microdata.from_source(data, keys=keys), max_size="auto")
    assert res.complete and res.max_size == 7
    np.testing.assert_array_equal(res.score, ref["suda_score"].to_numpy())
    np.testing.assert_allclose(res.dis_score, ref["dis_suda_score"].to_numpy(), rtol=1e-14,
                               atol=0)


# --- what a size bound does to the scores, by hand -------------------------------------------

def test_size_bound_lowers_scores_by_hand():
    # keys a, b, c and two constant keys d, e (M = 5); records
    #   r0 (0,0,0)  r1 (0,0,1)  r2 (0,1,0)  r3 (1,0,0)  r4 = r5 (1,1,1)
    # Every value of a, b, c is shared by three records: no MSU of size 1. Pairs:
    #   {a,b}: r2 (0,1), r3 (1,0) unique;  {a,c}: r1 (0,1), r3 (1,0);  {b,c}: r1 (0,1),
    #   r2 (1,0). r0 is unique only on {a,b,c} (each of its pairs is shared with r1, r2
    #   or r3). MSUs: r1 {a,c},{b,c}; r2 {a,b},{b,c}; r3 {a,b},{a,c}; r0 {a,b,c}.
    # Every size (sdcMicro): w(k) = (5 - k)! = 24, 6, 2, 1, 1 -> r1..r3 score 2*6 = 12,
    #   r0 scores 2.
    # max_size = 2 (Elliot et al. 2002): w(k) = prod_{i=k}^{2} (5 - i) -> w(2) = 3, i.e.
    #   (5 - 2)! / (5 - 2 - 1)! = 6 / 2; r1..r3 score 2*3 = 6 and r0, whose only MSU has
    #   size 3, scores 0: each score is at most its full-search score.
    df = pd.DataFrame({"a": [0, 0, 0, 1, 1, 1], "b": [0, 0, 1, 0, 1, 1],
                       "c": [0, 1, 0, 0, 1, 1], "d": [0] * 6, "e": [7] * 6})
    md = sdcrisk.Microdata.from_source(df, keys=list(df.columns))
    p = 0.1
    full = suda2(md, dis_fraction=p, dis_rounding="double")
    bounded = suda2(md, max_size=2, dis_fraction=p, dis_rounding="double")
    assert full.score.tolist() == [2, 12, 12, 12, 0, 0]
    assert bounded.score.tolist() == [0, 6, 6, 6, 0, 0]
    assert full.weights.tolist() == [24, 6, 2, 1, 1]
    assert bounded.weights[:2].tolist() == [12, 3]
    assert np.all(bounded.score <= full.score)
    assert full.complete and not bounded.complete
    assert "max_size=2 was given" in bounded.bound_note()
    assert "(1 sample uniques score 0 here)" in bounded.bound_note()
    # DIS (U = 4 sample uniques, P = 2 records in pairs) depends on the counts only
    assert bounded.dis == full.dis == pytest.approx(4 * p / (4 * p + 2 * (1 - p)))
    # DIS-SUDA: 1 / (1 + C / (s^q A)), C = P(1 - p)/p, q = 1 + (8 - 5)/20, A = sum s^-q.
    # Full: s^q A = 3 + (12/2)^q for r1..r3, 1 + 3 (2/12)^q for r0. Bounded: 3 for r1..r3
    # (the scale 1/2 cancels); r0 loses its score and its DIS-SUDA score. Here r1..r3's
    # DIS-SUDA scores fall too: with r0 gone, A has one term less.
    c, q = 2 * (1 - p) / p, 1 + 3 / 20
    expect_full = [1 / (1 + c / (1 + 3 * (2 / 12) ** q))] + \
        [1 / (1 + c / (3 + 6 ** q))] * 3 + [0, 0]
    expect_bounded = [0] + [1 / (1 + c / 3)] * 3 + [0, 0]
    np.testing.assert_allclose(full.dis_score, expect_full, rtol=1e-14)
    np.testing.assert_allclose(bounded.dis_score, expect_bounded, rtol=1e-14)
    assert math.isclose(bounded.attribute_contributions["a"], 100 * 12 / 18)


# --- leave-one-key-out on wide key sets ------------------------------------------------------

def test_wide_leave_one_key_out_refits_nb():
    m = CONTRIBUTION_REFIT_KEYS + 1
    table = _table(_frame(400, m, seed=4, levels=2), population_size=40_000)
    res = sdcrisk.get_estimator("poisson-gamma").fit(table)
    df = variable_contributions(res)
    assert set(df["method"]) == {"nb"} and len(df) == m + 1
    nb = variable_contributions(sdcrisk.get_estimator("nb").fit(table))
    pd.testing.assert_frame_equal(df, nb)
    # asked for by name, the method itself is re-fitted
    assert set(variable_contributions(res, estimator="poisson-gamma")["method"]) == \
        {"poisson-gamma"}
    page = build_report(res, suda=False, uniqueness=False)
    assert f"with {m} keys (more than {CONTRIBUTION_REFIT_KEYS}) nb is fitted once per key " \
           "instead of poisson-gamma" in page
    # at 10 keys the headline method is re-fitted, as before
    narrow = _table(_frame(400, CONTRIBUTION_REFIT_KEYS, seed=4, levels=2),
                    population_size=40_000)
    res10 = sdcrisk.get_estimator("poisson-gamma").fit(narrow)
    assert set(variable_contributions(res10)["method"]) == {"poisson-gamma"}
