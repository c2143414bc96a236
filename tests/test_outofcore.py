"""Out-of-core tabulation (issue 8 item 1): the same CellTable as the in-memory path."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sdcrisk import Microdata, tabulate
from sdcrisk._outofcore import tabulate_file
from sdcrisk.exceptions import InputError, ParameterError


def _frame(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(0, 17, n),
        "region": rng.choice(np.array(["north", "south", "east", "west", "x y"]), n),
        "code": rng.integers(100, 104, n).astype(float),
        "w": rng.uniform(1, 60, n),
        "other": rng.random(n),
    })
    df.loc[rng.random(n) < 0.03, "code"] = np.nan
    df.loc[rng.random(n) < 0.02, "region"] = None
    return df


def _assert_same(t, ref, *, weights=True):
    assert t.keys == ref.keys and t.levels == ref.levels
    assert t.n == ref.n and t.n_cells == ref.n_cells
    np.testing.assert_array_equal(t.counts, ref.counts)
    np.testing.assert_array_equal(t.cell_codes, ref.cell_codes)
    assert t.cell_codes.dtype == ref.cell_codes.dtype
    np.testing.assert_array_equal(np.asarray(t.record_cell), ref.record_cell)
    assert t.population_size == pytest.approx(ref.population_size, rel=1e-12)
    assert t.population_size_source == ref.population_size_source
    if weights:  # equal up to the order of floating-point summation
        np.testing.assert_allclose(t.weight_sums, ref.weight_sums, rtol=1e-12)
        np.testing.assert_allclose(t.inclusion_sums, ref.inclusion_sums, rtol=1e-12)
    else:
        assert t.weight_sums is None and ref.weight_sums is None


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".csv.gz"])
def test_equals_in_memory_tabulation(tmp_path, suffix):
    df = _frame()
    path = tmp_path / f"s{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path, row_group_size=700)
    else:
        df.to_csv(path, index=False)
    keys = ["age", "region", "code"]
    ref = tabulate(Microdata.from_source(path, keys, weights="w"))
    # batches of 257 records: many partial aggregates, merged several times
    t = tabulate_file(path, keys, weights="w", batch_rows=257)
    _assert_same(t, ref)
    assert isinstance(t.record_cell, np.memmap)
    assert None in t.levels[1] and None in t.levels[2]  # missing kept as a level


def test_population_size_declared_levels_and_memory_map(tmp_path):
    df = _frame(2000, seed=3)
    path = tmp_path / "s.parquet"
    df.to_parquet(path)
    levels = {"age": list(range(20))}  # 3 levels never occur
    ref = tabulate(Microdata.from_source(path, ["region", "age"], levels=levels,
                                         population_size=50_000))
    t = tabulate_file(path, ["region", "age"], levels=levels, population_size=50_000,
                      record_cell="memory", batch_rows=100)
    _assert_same(t, ref, weights=False)
    assert len(t.levels[1]) == 20 and t.cell_space == ref.cell_space
    assert not isinstance(t.record_cell, np.memmap)


def test_partitioned_parquet_directory(tmp_path):
    df = _frame(3000, seed=4)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(4):
        part = df.iloc[i * 750:(i + 1) * 750]
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                       folder / f"part-{i}.parquet")
    ref = tabulate(Microdata.from_source(df, ["age", "region"]))
    t = tabulate_file(folder, ["age", "region"], batch_rows=500)
    _assert_same(t, ref, weights=False)


def test_dictionary_and_integer_columns_with_nulls(tmp_path):
    table = pa.table({
        "cat": pa.array(["b", "a", None, "b", "c", "a"]).dictionary_encode(),
        "num": pa.array([3, None, 1, 3, 2, 1], pa.int32()),
    })
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    ref = tabulate(Microdata.from_source(path, ["cat", "num"]))
    t = tabulate_file(path, ["cat", "num"], batch_rows=2)
    _assert_same(t, ref, weights=False)
    assert t.levels == (("a", "b", "c", None), (1, 2, 3, None))
    # records (b,3) (a,-) (-,1) (b,3) (c,2) (a,1); cells in code order:
    # (a,1):1 (a,-):1 (b,3):2 (c,2):1 (-,1):1
    assert t.counts.tolist() == [1, 1, 2, 1, 1]
    assert t.cell_labels() == [("a", 1), ("a", None), ("b", 3), ("c", 2), (None, 1)]
    assert np.asarray(t.record_cell).tolist() == [2, 1, 4, 2, 3, 0]


def test_memory_stays_bounded(tmp_path):
    """Streaming holds a few batches: the traced NumPy peak stays far below the in-memory path's
    (4 bytes a record for the record map live in the memory-mapped file)."""
    rng = np.random.default_rng(1)
    n = 1_000_000
    table = pa.table({f"k{j}": rng.integers(0, 6, n).astype(np.int8) for j in range(5)})
    path = tmp_path / "big.parquet"
    pq.write_table(table, path, row_group_size=50_000)
    keys = [f"k{j}" for j in range(5)]
    tracemalloc.start()
    try:
        t = tabulate_file(path, keys, batch_rows=20_000)
        _, peak_stream = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        ref = tabulate(Microdata.from_source(path, keys))
        _, peak_memory = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _assert_same(t, ref, weights=False)
    assert peak_stream < 4 * 1024**2  # a few 20k-row batches, not 10^6 records
    assert peak_memory > 4 * peak_stream


def test_errors(tmp_path):
    df = _frame(500)
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    with pytest.raises(InputError, match="missing column 'nope'"):
        tabulate_file(path, ["age", "nope"])
    with pytest.raises(InputError, match="column 'region' has missing values"):
        tabulate_file(path, ["age", "region"], missing="error")
    bad = df.copy()
    bad.loc[321, "w"] = -2.0
    bad.to_csv(path, index=False)
    with pytest.raises(InputError, match="non-positive or non-finite weight -2 at row 322"):
        tabulate_file(path, ["age"], weights="w", batch_rows=100)
    with pytest.raises(ParameterError, match="cannot be both a key and weights"):
        tabulate_file(path, ["age", "w"], weights="w")
    with pytest.raises(InputError, match="not categorical"):
        tabulate_file(path, ["other"])
    with pytest.raises(InputError, match="file not found"):
        tabulate_file(tmp_path / "none.csv", ["age"])
    with pytest.raises(ParameterError, match="batch_rows"):
        tabulate_file(path, ["age"], batch_rows=0)


def test_huge_key_space_refused(tmp_path):
    # 10 keys of 80 levels: K = 80^10 > 2^62, ids are no longer mixed-radix
    data = {f"k{j}": np.arange(80) for j in range(10)}
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table(data), path)
    with pytest.raises(ParameterError, match="too large for the out-of-core record map"):
        tabulate_file(path, list(data))
