"""Structural zeros: parsing, the disjoint rewriting (spec E.4.2) and membership tests.

Oracles: the 60-condition New York fixture of spec G.2 (557 disjoint conditions covering
2,317,030 cells, equal row for row to Battiston & Rimella's stored file), and brute-force
enumeration of small domains.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import shared_data
from sdcrisk import InputError, ParameterError
from sdcrisk.data.structural_zeros import FREE, StructuralZeros, resolve_structural_zeros

NY_KEYS = ["OWNERSHP", "MORTGAGE", "AGE", "SEX", "MARST", "RACESING", "EDUC", "EMPSTAT",
           "DISABWRK", "VETSTAT"]
NY_SIZES = (3, 4, 9, 2, 6, 5, 11, 4, 3, 3)
# spec G.2: BR's 60 raw conditions in their listing order (1-based values, 0 = free)
NY_RAW = """
[1,2,0,0,0,0,0,0,0,0] [1,3,0,0,0,0,0,0,0,0] [1,4,0,0,0,0,0,0,0,0] [2,1,0,0,0,0,0,0,0,0]
[3,2,0,0,0,0,0,0,0,0] [3,3,0,0,0,0,0,0,0,0] [3,4,0,0,0,0,0,0,0,0] [0,0,1,0,1,0,0,0,0,0]
[0,0,1,0,2,0,0,0,0,0] [0,0,1,0,3,0,0,0,0,0] [0,0,1,0,4,0,0,0,0,0] [0,0,1,0,5,0,0,0,0,0]
[0,0,1,0,0,0,8,0,0,0] [0,0,1,0,0,0,9,0,0,0] [0,0,1,0,0,0,10,0,0,0] [0,0,1,0,0,0,11,0,0,0]
[0,0,2,0,0,0,8,0,0,0] [0,0,2,0,0,0,9,0,0,0] [0,0,2,0,0,0,10,0,0,0] [0,0,2,0,0,0,11,0,0,0]
[0,0,3,0,0,0,10,0,0,0] [0,0,3,0,0,0,11,0,0,0] [0,0,4,0,0,0,10,0,0,0] [0,0,4,0,0,0,11,0,0,0]
[0,0,1,0,0,0,0,2,0,0] [0,0,1,0,0,0,0,3,0,0] [0,0,1,0,0,0,0,4,0,0] [0,0,2,0,0,0,0,2,0,0]
[0,0,2,0,0,0,0,3,0,0] [0,0,2,0,0,0,0,4,0,0] [0,0,3,0,0,0,0,1,0,0] [0,0,4,0,0,0,0,1,0,0]
[0,0,5,0,0,0,0,1,0,0] [0,0,6,0,0,0,0,1,0,0] [0,0,7,0,0,0,0,1,0,0] [0,0,8,0,0,0,0,1,0,0]
[0,0,9,0,0,0,0,1,0,0] [0,0,1,0,0,0,0,0,2,0] [0,0,1,0,0,0,0,0,3,0] [0,0,2,0,0,0,0,0,2,0]
[0,0,2,0,0,0,0,0,3,0] [0,0,3,0,0,0,0,0,1,0] [0,0,4,0,0,0,0,0,1,0] [0,0,5,0,0,0,0,0,1,0]
[0,0,6,0,0,0,0,0,1,0] [0,0,7,0,0,0,0,0,1,0] [0,0,8,0,0,0,0,0,1,0] [0,0,9,0,0,0,0,0,1,0]
[0,0,1,0,0,0,0,0,0,2] [0,0,1,0,0,0,0,0,0,3] [0,0,2,0,0,0,0,0,0,2] [0,0,2,0,0,0,0,0,0,3]
[0,0,3,0,0,0,0,0,0,2] [0,0,3,0,0,0,0,0,0,3] [0,0,4,0,0,0,0,0,0,1] [0,0,5,0,0,0,0,0,0,1]
[0,0,6,0,0,0,0,0,0,1] [0,0,7,0,0,0,0,0,0,1] [0,0,8,0,0,0,0,0,0,1] [0,0,9,0,0,0,0,0,0,1]
"""


def ny_raw() -> StructuralZeros:
    rows = [list(map(int, m.split(","))) for m in re.findall(r"\[([0-9,]+)\]", NY_RAW)]
    assert len(rows) == 60
    return StructuralZeros.from_codes(np.array(rows) - 1, keys=NY_KEYS, sizes=NY_SIZES)


def _grid(sizes):
    return np.indices(sizes, dtype=np.int64).reshape(len(sizes), -1).T


def _brute(cond: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Cells matching any condition, by direct comparison."""
    columns = np.ascontiguousarray(cells.T)
    hit = np.zeros(len(cells), bool)
    for c in cond:
        match = np.ones(len(cells), bool)
        for j in np.flatnonzero(c != FREE):
            match &= columns[j] == c[j]
        hit |= match
    return hit


def test_ny_fixture_gives_557_disjoint_conditions_covering_2317030_cells():
    raw = ny_raw()
    assert not raw.is_disjoint()
    dis = raw.make_disjoint()
    assert len(dis) == 557
    assert dis.is_disjoint()
    assert int(dis.cells_per_condition().sum()) == 2_317_030
    assert raw.covered_cells() == 2_317_030
    assert raw.cell_space == 2_566_080
    # ties in listing order give 567 (spec G.2)
    assert len(raw.make_disjoint(ties="listing")) == 567


def test_ny_union_is_preserved_by_brute_force():
    raw = ny_raw()
    dis = raw.make_disjoint()
    cells = _grid(NY_SIZES)  # 2.6 M cells
    in_raw = _brute(raw.conditions, cells)
    assert int(in_raw.sum()) == 2_317_030
    np.testing.assert_array_equal(dis.contains(cells), in_raw)


def test_ny_fixture_equals_the_authors_stored_file():
    path = shared_data("bnp_dr_ny", "ny_structural_zeros_disjoint_conditions.csv")
    levels = [list(range(d)) for d in NY_SIZES]
    stored = StructuralZeros.from_csv(path, keys=NY_KEYS, levels=levels, coding="bnpdr")
    np.testing.assert_array_equal(stored.conditions, ny_raw().make_disjoint().conditions)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("order", ["descending", "ascending"])
def test_random_condition_sets_against_brute_force(seed, order):
    rng = np.random.default_rng(seed)
    sizes = tuple(int(d) for d in rng.integers(2, 5, size=4))
    n = int(rng.integers(1, 9))
    cond = np.full((n, 4), FREE)
    for r in range(n):
        fixed = rng.random(4) < 0.5
        cond[r, fixed] = [rng.integers(0, sizes[j]) for j in np.flatnonzero(fixed)]
    if seed % 3 == 0:
        cond = np.vstack([cond, cond[:2]])  # duplicates must be dropped, not kept
    sz = StructuralZeros.from_codes(cond, keys=list("abcd"), sizes=sizes)
    dis = sz.make_disjoint(order=order)
    cells = _grid(sizes)
    truth = _brute(cond, cells)
    assert dis.is_disjoint()
    np.testing.assert_array_equal(_brute(dis.conditions, cells), truth)
    np.testing.assert_array_equal(sz.contains(cells), truth)
    assert dis.covered_cells() == sz.covered_cells() == int(truth.sum())
    # pairwise disjoint means no cell is covered twice
    counts = sum(_brute(c[None, :], cells).astype(int) for c in dis.conditions)
    assert counts.max(initial=0) <= 1


def test_from_tuples_labels_free_values_and_multiple_values():
    keys = ["age", "married", "job"]
    levels = [["child", "adult", "old"], ["no", "yes"], ["none", "clerk", "retired"]]
    sz = StructuralZeros.from_tuples(
        [{"age": "child", "married": "yes"},
         ("child", None, ["clerk", "retired"]),
         ("*", "no", "")],
        keys=keys, levels=levels)
    np.testing.assert_array_equal(sz.conditions, [[0, 1, -1], [0, -1, 1], [0, -1, 2],
                                                  [-1, 0, -1]])
    assert sz.cells_per_condition().tolist() == [3, 2, 2, 9]
    with pytest.raises(InputError, match="'teen' is not a level of 'age'"):
        StructuralZeros.from_tuples([{"age": "teen"}], keys=keys, levels=levels)
    with pytest.raises(InputError, match="'sex' is not a key"):
        StructuralZeros.from_tuples([{"sex": "m"}], keys=keys, levels=levels)
    with pytest.raises(InputError, match="2 values for 3 keys"):
        StructuralZeros.from_tuples([("child", "yes")], keys=keys, levels=levels)


def test_from_csv_label_coding(tmp_path):
    keys = ["age", "married", "job"]
    levels = [[0, 1, 2], ["no", "yes"], ["none", "clerk", "retired"]]
    p = tmp_path / "sz.csv"
    p.write_text("married,age,other\nyes,0,*\n,0|1,\n*,2,\n")
    sz = StructuralZeros.from_csv(p, keys=keys, levels=levels)
    np.testing.assert_array_equal(sz.conditions, [[0, 1, -1], [0, -1, -1], [1, -1, -1],
                                                  [2, -1, -1]])
    bad = tmp_path / "bad.csv"
    bad.write_text("married,other\nyes,x\n")
    with pytest.raises(InputError, match="'other' is not a key"):
        StructuralZeros.from_csv(bad, keys=keys, levels=levels)
    short = tmp_path / "short.csv"
    short.write_text("married,age\nyes\n")
    with pytest.raises(InputError, match="line 2: 1 fields"):
        StructuralZeros.from_csv(short, keys=keys, levels=levels)
    with pytest.raises(InputError, match="not found"):
        StructuralZeros.from_csv(tmp_path / "none.csv", keys=keys, levels=levels)
    with pytest.raises(ParameterError):
        StructuralZeros.from_csv(p, keys=keys, levels=levels, coding="codes")


def test_codes_are_validated():
    with pytest.raises(InputError, match="outside 0..1"):
        StructuralZeros.from_codes([[2, -1]], keys=["a", "b"], sizes=(2, 2))
    with pytest.raises(ParameterError):
        StructuralZeros.from_codes([[0]], keys=["a", "b"], sizes=(2,))
    with pytest.raises(ParameterError):
        ny_raw().make_disjoint(order="random")


def test_resolve_reorders_keys_and_checks_sizes():
    sz = StructuralZeros.from_codes([[1, 0]], keys=["b", "a"], sizes=(3, 2))
    out = resolve_structural_zeros(sz, ["a", "b", "c"], [[0, 1], [0, 1, 2], [0, 1]])
    np.testing.assert_array_equal(out.conditions, [[0, 1, -1]])
    with pytest.raises(InputError, match="levels"):
        resolve_structural_zeros(sz, ["a", "b"], [[0, 1, 2], [0, 1, 2]])
    with pytest.raises(InputError, match="'b'"):
        resolve_structural_zeros(sz, ["a"], [[0, 1]])
    assert resolve_structural_zeros(None, ["a"], [[0]]) is None


def test_condition_probabilities_multiply_fixed_marginals():
    sz = StructuralZeros.from_codes([[0, -1, 1], [-1, -1, -1], [1, 2, 0]], keys=list("abc"),
                                    sizes=(2, 3, 2))
    offs = np.array([0, 2, 5, 7])
    rng = np.random.default_rng(4)
    marg = rng.random((5, 7))
    p = sz.condition_probabilities(marg, offs)
    np.testing.assert_allclose(p[:, 0], marg[:, 0] * marg[:, 6])
    np.testing.assert_allclose(p[:, 1], 1.0)
    np.testing.assert_allclose(p[:, 2], marg[:, 1] * marg[:, 4] * marg[:, 5])
