"""Out-of-core tabulation (issue 8 item 1): the same CellTable as the in-memory path."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import without_timings
from sdcrisk import Microdata, tabulate
from sdcrisk.data.outofcore import tabulate_file
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


# ---- household ids and `sdcrisk assess --out-of-core` (issue 8 item 1 remainder) -----------

def _households(n=6000, seed=0):
    """_frame plus household ids: households of 1-5 members, ids unordered in the file."""
    df = _frame(n, seed)
    rng = np.random.default_rng(seed + 10)
    member_of = np.repeat(np.arange(n), rng.integers(1, 6, n))[:n]
    ids = rng.permutation(10 * n)[:n] * 7 + 3  # distinct, not in file order
    df["hid"] = ids[member_of]
    df["hid_text"] = np.array([f"H{i}" for i in ids])[member_of]  # "H10" sorts before "H9"
    df["hid_dec"] = df["hid"].astype(float) - 1e6  # integral decimals, negative
    return df


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".csv.gz"])
@pytest.mark.parametrize("column", ["hid", "hid_text", "hid_dec"])
def test_household_codes_equal_in_memory(tmp_path, suffix, column):
    df = _households()
    path = tmp_path / f"h{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path, row_group_size=700)
    else:
        df.to_csv(path, index=False)
    keys = ["age", "region"]
    ref = tabulate(Microdata.from_source(path, keys, weights="w", household=column))
    t = tabulate_file(path, keys, weights="w", household=column, batch_rows=257)
    _assert_same(t, ref)
    assert isinstance(t.household, np.memmap) and t.household.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(t.household), ref.household)
    # codes are the ranks of the ids among the sorted distinct ids (text sorts as text)
    ids = df[column].to_numpy()
    if column == "hid_text":
        ids = ids.astype(str)
    elif column == "hid_dec" and suffix != ".parquet":
        # a CSV's ids are labels (sdcrisk.data.ids): the decimals as written ("-999997.0"),
        # so text, ordered as text
        ids = pd.read_csv(path, dtype=str)[column].to_numpy().astype(str)
        assert ids[0].endswith(".0")
    uniq = np.unique(ids)
    assert len(uniq) < len(df) and ref.household.max() == len(uniq) - 1
    np.testing.assert_array_equal(ref.household, np.searchsorted(uniq, ids))
    # the memory-mapped codes give the in-memory household risk
    r = np.linspace(0, 1, t.n_cells)[t.record_cell]
    from sdcrisk.core.measures import household_risk

    np.testing.assert_array_equal(household_risk(r, t.household),
                                  household_risk(r, ref.household))


def test_household_errors(tmp_path):
    df = _households(800)
    df.loc[433, "hid"] = np.nan
    path = tmp_path / "h.parquet"
    df.to_parquet(path)
    with pytest.raises(InputError, match="household column 'hid' is missing at row 434"):
        Microdata.from_source(path, ["age"], household="hid")  # the in-memory message ...
    with pytest.raises(InputError, match="household column 'hid' is missing at row 434"):
        tabulate_file(path, ["age"], household="hid", batch_rows=100)  # ... and the same here
    df = _households(800)
    df["hid_bad"] = df["hid"] + 0.5
    df.to_parquet(path)  # a decimal column: its ids must be whole numbers, both ways
    for read in (lambda: Microdata.from_source(path, ["age"], household="hid_bad"),
                 lambda: tabulate_file(path, ["age"], household="hid_bad", batch_rows=100)):
        with pytest.raises(InputError, match=r"household column 'hid_bad': the id \d+\.5 at "
                           "row 1 is not a whole number"):
            read()
    # in a CSV the same ids are labels as written ("10.5"), as in memory
    df.to_csv(path.with_suffix(".csv"), index=False)
    t = tabulate_file(path.with_suffix(".csv"), ["age"], household="hid_bad", batch_rows=100)
    ref = Microdata.from_source(path.with_suffix(".csv"), ["age"], household="hid_bad")
    np.testing.assert_array_equal(np.asarray(t.household), ref.household)
    assert ref.household.max() + 1 == df["hid"].nunique()
    with pytest.raises(ParameterError, match="both a key and household"):
        tabulate_file(path.with_suffix(".csv"), ["age", "hid"], household="hid")
    with pytest.raises(ParameterError, match="both weights and household"):
        tabulate_file(path.with_suffix(".csv"), ["age"], weights="w", household="w")


def _assess_json(tmp_path, *argv):
    import json

    from sdcrisk.cli import main

    out = tmp_path / "out.json"
    code = main(["assess", *map(str, argv), "--format", "json", "--out", str(out)])
    assert code == 0
    return without_timings(json.loads(out.read_text()))




@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("method", ["nb", "loglinear"])
@pytest.mark.parametrize("household", [None, "hid_text"])
def test_cli_out_of_core_equals_in_memory(tmp_path, suffix, method, household):
    df = _households(3000, seed=2)
    path = tmp_path / f"s{suffix}"
    df.to_parquet(path) if suffix == ".parquet" else df.to_csv(path, index=False)
    argv = [path, "--keys", "age,region,code", "--method", method,
            "--population-size", 250_000] + (["--household", household] if household else [])
    ref = _assess_json(tmp_path, *argv)
    ooc = _assess_json(tmp_path, *argv, "--out-of-core")
    if method == "nb" and household is None:  # only the frequencies of the counts streamed
        _drop_fingerprints(ref, ooc)
    assert ooc == ref  # every measure, interval, diagnostic and the input fingerprint
    assert ref["sample_uniques"] > 50  # risk to estimate, not an all-safe table
    assert ("household_global_risk" in ref["measures"]) == (household is not None)


def test_cli_out_of_core_weights_levels_and_example(tmp_path):
    import json

    df = _households(3000, seed=3)
    path = tmp_path / "s.csv.gz"
    df.to_csv(path, index=False)
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"age": list(range(20))}))
    argv = [path, "--keys", "age,region", "--method", "nb", "--weights", "w", "--household",
            "hid", "--levels", levels]
    ref = _assess_json(tmp_path, *argv)
    ooc = _assess_json(tmp_path, *argv, "--out-of-core")
    assert ref["cell_space"] == 20 * 6 and ref["population_size_source"] == "weights"
    # weight sums are added in another order: equal to rounding, so is everything after them
    for name, m in ref["measures"].items():
        for k in ("estimate", "lower", "upper"):
            if m[k] is None:  # no interval for this measure
                assert ooc["measures"][name][k] is None
            else:
                assert ooc["measures"][name][k] == pytest.approx(m[k], rel=1e-9, abs=1e-12)
    assert ooc["population_size"] == pytest.approx(ref["population_size"], rel=1e-12)
    # the bundled example (a .csv.gz inside the package), keys and N from its documentation
    ref = _assess_json(tmp_path, "example:uk_census2011", "--method", "nb")
    ooc = _assess_json(tmp_path, "example:uk_census2011", "--method", "nb", "--out-of-core")
    _drop_fingerprints(ref, ooc)
    assert ooc == ref and ref["sample_uniques"] == 1001


def _drop_fingerprints(ref, ooc):
    """nb without weights or households streams only the frequencies of the cell counts
    (tests/test_frequencies.py): no input fingerprint, and a note saying so."""
    assert ref["provenance"].pop("input_fingerprint")
    assert ooc["provenance"].pop("input_fingerprint") is None
    assert "frequencies" in ooc["provenance"].pop("tabulation")


def test_cli_out_of_core_refuses_what_it_cannot_do(tmp_path, capsys):
    from sdcrisk.cli import main

    df = _households(500)
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    sets = tmp_path / "sets.txt"
    sets.write_text("age,region\n")
    for extra, message in (
            (["--household", "hid", "--household-size", "2"],
             "--out-of-core does not build household-level keys (--household-size)"),
            (["--key-sets", str(sets)], "--out-of-core tabulates one key set")):
        code = main(["assess", str(path), "--keys", "age,region", "--method", "nb",
                     "--population-size", "1e6", "--out-of-core", *extra])
        _, err = capsys.readouterr()
        assert code == 2 and message in err and err.count("\n") == 1
