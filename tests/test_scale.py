"""Census scale (issue 20): the lean in-memory tabulation, the automatic out-of-core choice,
per-cell record-risk threshold, the NB law's distinct triples, and tabulation on a cluster.

Every lean path is checked against the plain one it replaces: the same CellTable (levels,
cell order, codes, counts, record map, weights, households, N) and the same numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import synthetic_frame
from sdcrisk import Microdata, tabulate
from sdcrisk.core import _nb
from sdcrisk.core.measures import global_risk_threshold
from sdcrisk.data import outofcore, route
from sdcrisk.data.table import tabulate_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def assert_same_table(a, b, *, exact_weights=True):
    assert a.keys == b.keys
    assert a.levels == b.levels
    assert a.cell_codes.dtype == b.cell_codes.dtype
    np.testing.assert_array_equal(a.cell_codes, b.cell_codes)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(np.asarray(a.record_cell), np.asarray(b.record_cell))
    assert a.n == b.n
    assert a.population_size == pytest.approx(b.population_size, rel=0 if exact_weights else 1e-12)
    assert a.population_size_source == b.population_size_source
    for x, y in ((a.weight_sums, b.weight_sums), (a.inclusion_sums, b.inclusion_sums),
                 (a.household, b.household)):
        assert (x is None) == (y is None)
        if x is not None:
            if exact_weights:
                np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
            else:
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12)
    if exact_weights:
        assert a.fingerprint() == b.fingerprint()


def _frame(n=3000, seed=0):
    return synthetic_frame(n, seed)


@pytest.fixture
def parquet_file(tmp_path):
    data = _frame()
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table(data), path, row_group_size=700)  # several row groups
    return path, data


@pytest.mark.parametrize("options", [
    {},
    {"population_size": 1e6},
    {"weights": "w"},
    {"household": "hh", "sampling_fraction": 0.01},
    {"levels": {"sex": [1, 2, 3]}, "population_size": 5e5},
])
def test_tabulate_source_equals_from_source_then_tabulate(parquet_file, options, tmp_path):
    path, data = parquet_file
    keys = ["sex", "age", "region", "tenure"]
    want = tabulate(Microdata.from_source(path, keys, **options))
    assert_same_table(want, tabulate_source(path, keys, **options))
    # a CSV file and an in-memory mapping go the same way
    csv = tmp_path / "s.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(pa.table(data), csv)
    assert_same_table(tabulate(Microdata.from_source(csv, keys, **options)),
                      tabulate_source(csv, keys, **options))
    assert_same_table(tabulate(Microdata.from_source(data, keys, **options)),
                      tabulate_source(data, keys, **options))


def test_tabulate_source_errors_like_from_source(parquet_file):
    from sdcrisk.exceptions import InputError, ParameterError

    path, _ = parquet_file
    with pytest.raises(InputError, match="missing column 'nope'"):
        tabulate_source(path, ["sex", "nope"])
    with pytest.raises(ParameterError, match="repeat"):
        tabulate_source(path, ["sex", "sex"])
    with pytest.raises(InputError, match=r"57 missing value\(s\)"):
        tabulate_source(path, ["sex", "age"], missing="error")
    with pytest.raises(ParameterError, match="unknown option 'weight'"):
        tabulate_source(path, ["sex"], weight="w")


def test_tabulate_source_huge_key_space_falls_back():
    # 7 keys of ~600 levels: K > 2^62, the ids need rank compression: same table anyway
    rng = np.random.default_rng(3)
    data = {f"k{j}": rng.integers(0, 600, 2000) for j in range(7)}
    md = Microdata.from_source(data, list(data))
    assert md.cell_space >= 2**62
    assert_same_table(tabulate(md), tabulate_source(data, list(data)))


def test_int32_record_map_and_narrow_ids():
    from sdcrisk.data import _cells

    rng = np.random.default_rng(1)
    cols = [rng.integers(0, d, 50_000).astype(np.int8) for d in (7, 11, 13)]
    ids, bound = _cells.cell_ids(cols, (7, 11, 13), narrow=True)
    wide, _ = _cells.cell_ids(cols, (7, 11, 13))
    assert ids.dtype == np.int32 and wide.dtype == np.int64
    np.testing.assert_array_equal(ids, wide)
    want = np.unique(wide, return_inverse=True, return_counts=True)
    cells, counts, record = _cells.observed_cells(ids, bound)
    np.testing.assert_array_equal(cells, want[0])
    np.testing.assert_array_equal(counts, want[2])
    np.testing.assert_array_equal(record, want[1].ravel())


def test_threshold_per_cell_equals_per_record():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(300):
        m = int(rng.integers(1, 60))
        risk = rng.choice([0.013, 0.05, 0.2, 0.5, 1.0, 1 / 3, 0.07], m)
        counts = rng.integers(1, 6, m)
        for target in (0.011, 0.1, 0.3):
            per_record = global_risk_threshold(np.repeat(risk, counts), target)
            per_cell = global_risk_threshold(risk, target, counts=counts)
            assert per_cell == per_record
            hits += per_cell not in (None, 0.0)
    assert hits > 50  # the comparison covered real thresholds, not only "already met"


def test_nb_distinct_triples_match_unique_rows():
    rng = np.random.default_rng(2)
    for trial in range(200):
        m = int(rng.integers(0, 80))
        f = rng.integers(1, 6, m).astype(float)
        kind = trial % 4
        r = f if kind == 0 else (f + 0.5 if kind == 1 else rng.integers(1, 3, m) * 1.0)
        p = 0.3 if kind in (0, 3) else rng.choice([0.1, 0.2, 0.25], m)
        _, fu, ru, pu, inv = _nb._unique_triples(f, r, p)
        rows = np.stack(np.broadcast_arrays(f, r, p), axis=1)
        want = np.unique(rows, axis=0)
        assert len(fu) == len(want)
        np.testing.assert_array_equal(np.stack([fu[inv], ru[inv], pu[inv]], axis=1), rows)


def test_out_of_core_chosen_from_memory_limit(parquet_file, monkeypatch):
    path, _ = parquet_file
    keys = ["sex", "age", "region", "tenure"]
    need = route.in_memory_bytes(path, keys)
    assert need == 3000 * (2 * 16 + 8)  # widest column: text, 16 bytes a value, read twice
    calls = []
    real = outofcore.tabulate_file

    def spy(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(outofcore, "tabulate_file", spy)
    want = tabulate(Microdata.from_source(path, keys, weights="w"))
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", str(need + 1))
    assert not route.needs_out_of_core(path, keys)
    assert_same_table(want, route.tabulate_path(path, keys, weights="w"))
    assert calls == []
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "50K")
    assert route.needs_out_of_core(path, keys)
    got = route.tabulate_path(path, keys, weights="w")
    assert len(calls) == 1 and isinstance(got.record_cell, np.memmap)
    assert_same_table(want, got, exact_weights=False)
    # a folder of Parquet parts is always streamed
    assert route.needs_out_of_core(path.parent, keys)


def test_cli_assess_streams_when_the_file_does_not_fit(parquet_file, monkeypatch, capsys):
    import json

    from sdcrisk.cli import main

    path, _ = parquet_file
    argv = ["assess", str(path), "--keys", "sex,region,tenure", "--population-size",
            "300000", "--method", "nb", "--format", "json"]
    assert main(argv) == 0
    in_memory = json.loads(capsys.readouterr().out)
    calls = []
    real = outofcore.tabulate_file
    monkeypatch.setattr(outofcore, "tabulate_file",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    # below the file's in-memory need (120,000 bytes), above the nb fit's estimate
    assert route.in_memory_bytes(path, ["sex", "region", "tenure"]) == 120_000
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "100K")
    assert main([*argv, "--weights", "w"]) == 0  # weights: the cells are streamed
    assert len(calls) == 1
    json.loads(capsys.readouterr().out)
    assert main(argv) == 0  # nb without weights: only the frequencies of the counts
    streamed = json.loads(capsys.readouterr().out)
    assert len(calls) == 1
    for name in ("tau1", "tau2", "expected_reidentifications"):
        assert streamed["measures"][name] == in_memory["measures"][name]
    assert streamed["provenance"]["input_fingerprint"] is None


@pytest.fixture
def parquet_folder(tmp_path):
    """Three Parquet parts (one in a sub-folder) of 8 keys' worth of census-like data."""
    rng = np.random.default_rng(5)
    folder = tmp_path / "parts"
    (folder / "y=2").mkdir(parents=True)
    for i, where in enumerate(["a.parquet", "b.parquet", "y=2/c.parquet"]):
        n = 4000 + 1000 * i
        data = {"sex": rng.integers(1, 3, n), "age": rng.integers(0, 40 + 10 * i, n),
                "region": rng.choice(np.array(["n", "s", "e", "w"]), n),
                "w": rng.uniform(1, 20, n)}
        pq.write_table(pa.table(data), folder / where, row_group_size=1500)
    return folder


def test_tabulate_parts_serial_equals_local(parquet_folder):
    from sdcrisk import tabulate_file, tabulate_parts

    keys = ["sex", "age", "region"]
    local = tabulate_file(parquet_folder, keys, weights="w", population_size=1e6,
                          batch_rows=1000, record_cell="memory")
    parts = tabulate_parts(parquet_folder, keys, weights="w", population_size=1e6,
                           executor="serial", batch_rows=1000)
    assert_same_table(local, parts, exact_weights=False)
    assert parts.n == 15_000 and local.counts.sum() == 15_000
    # the ages 40-59 occur only in the later parts: levels come from all parts
    assert parts.levels[1] == tuple(range(60))


def test_tabulate_parts_on_a_two_worker_local_cluster(parquet_folder):
    distributed = pytest.importorskip("dask.distributed")
    from sdcrisk import tabulate_file, tabulate_parts

    keys = ["sex", "age", "region"]
    local = tabulate_file(parquet_folder, keys, population_size=2e5, record_cell="memory")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = tabulate_parts(parquet_folder, keys, population_size=2e5, executor=client)
    assert_same_table(local, remote)
    from sdcrisk import NegativeBinomialRisk

    a = NegativeBinomialRisk().fit(local).measures
    b = NegativeBinomialRisk().fit(remote).measures
    assert a["tau1"].estimate == b["tau1"].estimate
    assert a["tau2"].estimate == b["tau2"].estimate


def test_cli_assess_folder_on_a_scheduler(parquet_folder, capsys):
    import json

    distributed = pytest.importorskip("dask.distributed")
    from sdcrisk.cli import main

    argv = ["assess", str(parquet_folder), "--keys", "sex,age,region", "--population-size",
            "200000", "--method", "nb", "--format", "json"]
    assert main([*argv, "--out-of-core"]) == 0  # streams the frequencies of the counts
    local = json.loads(capsys.readouterr().out)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        assert main([*argv, "--scheduler", cluster.scheduler_address]) == 0
    remote = json.loads(capsys.readouterr().out)
    from sdcrisk import tabulate_file

    cells = tabulate_file(parquet_folder, ["sex", "age", "region"], population_size=200000)
    assert remote["provenance"]["input_fingerprint"] == cells.fingerprint()
    assert remote["measures"] == local["measures"]
    assert remote["provenance"]["executor"].startswith("dask")


@pytest.mark.parametrize("options", [{}, {"weights": "w", "population_size": 1e6}])
def test_duckdb_pass_equals_arrow_pass(parquet_file, tmp_path, options):
    pytest.importorskip("duckdb")
    from sdcrisk import tabulate_file

    path, data = parquet_file
    # a dictionary-encoded text column and a float key with NaN (missing) as well
    table = pa.table(data).append_column("region_dict",
                                         pa.array(data["region"]).dictionary_encode())
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, row_group_size=900)
    keys = ["sex", "age", "region_dict", "tenure"]
    arrow = tabulate_file(path, keys, engine="pyarrow", record_cell="memory", **options)
    duck = tabulate_file(path, keys, engine="duckdb", record_cell="memory", **options)
    assert_same_table(arrow, duck, exact_weights=False)
    assert None in duck.levels[1]  # the NaN ages are the missing level
    want = tabulate(Microdata.from_source(path, keys, **options))
    assert_same_table(want, duck, exact_weights=False)


def test_duckdb_pass_leaves_row_errors_to_the_arrow_pass(parquet_file):
    pytest.importorskip("duckdb")
    from sdcrisk import tabulate_file
    from sdcrisk.exceptions import InputError

    path, _ = parquet_file
    with pytest.raises(InputError, match=r"column 'age' has missing values \(first at row 3\)"):
        tabulate_file(path, ["sex", "age"], missing="error", engine="duckdb")


def test_duckdb_pass_warns_nothing(parquet_file):
    """duckdb 2.x warns when a DB-API result is fetched as Arrow; that UserWarning reached
    the user as 'sdcrisk: warning: Arrow output on a DB-API result ...'."""
    pytest.importorskip("duckdb")
    import warnings

    from sdcrisk import tabulate_file

    path, _ = parquet_file
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = tabulate_file(path, ["sex", "region"], engine="duckdb", record_cell="memory")
    assert table.n == len(table.record_cell)


def test_in_memory_estimate_counts_sorted_ids_for_huge_key_spaces(tmp_path):
    # integer keys whose statistics bound K above 2^31: int64 ids, sorted (+28 bytes)
    rng = np.random.default_rng(0)
    data = {f"k{j}": rng.integers(0, 100_000, 1000) for j in range(3)}
    data["small"] = rng.integers(0, 5, 1000).astype(np.int8)
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table(data), path)
    assert route.in_memory_bytes(path, ["k0", "k1", "k2"]) == 1000 * (2 * 8 + 8 + 28)
    assert route.in_memory_bytes(path, ["small"]) == 1000 * (2 * 1 + 8)
    # weights or household columns do not count as keys in the bound
    assert route.in_memory_bytes(path, ["small"], ["k0"]) == 1000 * (2 * 8 + 8)


def test_in_memory_estimate_counts_ranks_for_huge_key_spaces_of_many_records(monkeypatch,
                                                                              tmp_path):
    """From _RANKED_FROM records (Fold.RANKS_FROM_RECORDS) a key space past 2^31 is
    folded into ranks and counted in an int32 table of up to two slots a record: 8 bytes a
    record where sorting the int64 ids took 28."""
    from sdcrisk.data._fold import Fold

    assert route._RANKED_FROM == Fold.RANKS_FROM_RECORDS
    monkeypatch.setattr(route, "_RANKED_FROM", 1000)
    rng = np.random.default_rng(0)
    data = {f"k{j}": rng.integers(0, 100_000, 1000) for j in range(3)}
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table(data), path)
    assert route.in_memory_bytes(path, ["k0", "k1", "k2"]) == 1000 * (2 * 8 + 8 + 8)


def test_compiled_margin_ids_equal_the_numpy_pass(monkeypatch):
    """Margins of >= COMPILED_FROM observed cells get their ids and dense counts from the
    numba kernels: the same ids, counts, count spectra and margin cells as the NumPy pass."""
    import sdcrisk.estimators._decomposable as dec

    rng = np.random.default_rng(3)
    codes = rng.integers(0, [2, 9, 5, 7], (dec.COMPILED_FROM + 17, 4)).astype(np.int16)
    counts = rng.integers(1, 4, len(codes))
    compiled = dec.Margins(codes, counts, [2, 9, 5, 7])
    ids = compiled._ids((1, 3), (9, 7))
    spectrum = [compiled.margin_counts(mask) for mask in (0b0001, 0b0110, 0b1111)]
    m1 = compiled(0b1010)
    monkeypatch.setattr(dec, "COMPILED_FROM", 10**12)
    plain = dec.Margins(codes, counts, [2, 9, 5, 7])
    np.testing.assert_array_equal(ids, codes[:, 1].astype(np.int64) * 7 + codes[:, 3])
    m2 = plain(0b1010)
    for got, mask in zip(spectrum, (0b0001, 0b0110, 0b1111), strict=True):
        want = plain.margin_counts(mask)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(m1.counts, m2.counts)
    np.testing.assert_array_equal(m1.codes, m2.codes)
    np.testing.assert_array_equal(compiled.cell_index(0b1010), plain.cell_index(0b1010))


@pytest.mark.parametrize("power", [1, 2])
def test_compiled_nb_series_equals_the_numpy_loop(monkeypatch, power):
    """The direct NB series of >= _COMPILED_FROM triples runs compiled (and in parallel): it
    agrees with the NumPy loop to 1e-12."""
    rng = np.random.default_rng(5)
    m = _nb._COMPILED_FROM
    f = rng.integers(1, 6, m).astype(float)
    r = rng.uniform(0.5, 40, m)
    p = rng.uniform(1e-3, 1, m)
    compiled = _nb._direct_series(f, r, p, power)
    monkeypatch.setattr(_nb, "_COMPILED_FROM", 10**12)
    plain = _nb._direct_series(f, r, p, power)
    np.testing.assert_allclose(compiled, plain, rtol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_margin_over_every_key_is_the_cells_themselves(monkeypatch, compiled):
    """The margin over every key of distinct cells in id order (as a CellTable keeps them) is
    taken from the cells without counting them again: the same counts, codes, ids, lookups
    and cell index as the counted margin of the same cells in another order; cells out of
    order, repeated or with a zero count are counted as before."""
    import sdcrisk.estimators._decomposable as dec

    draws = 2 * dec.COMPILED_FROM
    if not compiled:
        monkeypatch.setattr(dec, "COMPILED_FROM", 10**12)
    rng = np.random.default_rng(8)
    levels = [3, 400, 70, 5]
    flat = np.unique(rng.integers(0, math.prod(levels), draws))
    codes = np.stack(np.unravel_index(flat, levels), axis=1).astype(np.int16)
    counts = rng.integers(1, 9, len(flat))
    full = 0b1111
    fast = dec.Margins(codes, counts, levels)
    assert fast._compiled is compiled
    perm = rng.permutation(len(flat))
    slow = dec.Margins(codes[perm], counts[perm], levels)
    m1, m2 = fast(full), slow(full)
    assert m1.codes is fast.cell_codes  # taken, not recounted
    assert m2.codes is not slow.cell_codes
    np.testing.assert_array_equal(m1.counts, m2.counts)
    np.testing.assert_array_equal(m1.codes, m2.codes)
    np.testing.assert_array_equal(m1.ids, m2.ids)
    query = np.concatenate([codes[:50], rng.integers(0, levels, (200, 4))]).astype(np.int64)
    np.testing.assert_array_equal(m1.lookup(query), m2.lookup(query))
    assert (m1.lookup(query)[:50] == np.arange(50)).all()
    np.testing.assert_array_equal(fast.cell_index(full), np.arange(len(flat)))
    np.testing.assert_array_equal(m2.counts[slow.cell_index(full)], counts[perm])
    twice = np.concatenate([codes[:3], codes[2:3], codes[3:]])
    again = dec.Margins(twice, np.ones(len(twice), np.int64), levels)(full)
    assert again.codes is not twice and again.counts[2] == 2
    zero = dec.Margins(codes, np.where(np.arange(len(flat)) == 4, 0, counts), levels)(full)
    assert zero.codes is not codes and len(zero.counts) == len(flat) - 1


@pytest.mark.parametrize(("bound", "dense_max"), [(50_000, None), ((1 << 24) + 10, None),
                                                  (50_000, 10_000)])
def test_compiled_observed_cells_equal_the_numpy_pass(monkeypatch, bound, dense_max):
    """From COMPILED_FROM records, observed_cells counts int32 ids and maps them to cells in
    compiled passes (per-thread tables up to 2^24 cells, one table past it): the same cells,
    counts and record -> cell map (in place) as the blocked bincount, whose blocks this test
    makes small enough to be exercised, or as the sort past DENSE_MAX_CELLS (``dense_max``:
    the compiled table goes on to twice the records)."""
    from sdcrisk.data import _cells

    if dense_max is not None:
        monkeypatch.setattr(_cells, "DENSE_MAX_CELLS", dense_max)

    rng = np.random.default_rng(4)
    ids = rng.integers(0, bound, _cells.COMPILED_FROM + 1_234).astype(np.int32)
    ids[:7] = bound - 1  # the last cell, several times
    work = ids.copy()
    cells, counts, record_cell = _cells.observed_cells(work, bound)
    assert record_cell is work  # in place
    monkeypatch.setattr(_cells, "COMPILED_FROM", 10**12)
    monkeypatch.setattr(_cells, "_COUNT_BLOCK", 100_000)
    want = _cells.observed_cells(ids.copy(), bound)
    np.testing.assert_array_equal(cells, want[0])
    np.testing.assert_array_equal(counts, want[1])
    np.testing.assert_array_equal(record_cell, want[2])
    np.testing.assert_array_equal(cells[record_cell], ids)
    np.testing.assert_array_equal(counts, np.bincount(ids)[cells])


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32"])
def test_compiled_integer_coding_equals_the_blocked_pass(monkeypatch, dtype):
    """From COMPILED_FROM records a small-range integer key is coded by compiled passes: the
    same levels, codes and code type as the blocked NumPy pass, with and without missing
    entries (which take code 0 there, overwritten by the caller)."""
    from sdcrisk.data import _cells

    rng = np.random.default_rng(6)
    low = 0 if dtype.startswith("u") else -7
    values = rng.integers(low, 90, _cells.COMPILED_FROM + 333).astype(dtype)
    values[-1] = 120  # a gap: level 120 after 89
    present = rng.random(len(values)) > 0.2
    got = {}
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(_cells, "COMPILED_FROM", 10**12)
        got[compiled] = [_cells._encode_integers(values, values, None),
                         _cells._encode_integers(values, values[present], present)]
    for (c1, l1), (c2, l2) in zip(got[True], got[False], strict=True):
        assert l1 == l2 and l1[-1] == 120 and l1[0] == low
        assert c1.dtype == c2.dtype
        np.testing.assert_array_equal(c1, c2)
    codes, levels = got[True][0]
    np.testing.assert_array_equal(np.asarray(levels)[codes], values.astype(np.int64))


@pytest.mark.parametrize("ranks_from", [1, 40, 1000])
def test_folded_ids_replaced_by_ranks_give_the_same_table(monkeypatch, tmp_path, ranks_from):
    """Past Fold.RANKS_FROM the ids folded so far become the ranks of the observed
    combinations (so 10^8 records of a 1.3x10^10-cell key space are counted densely, not
    sorted as int64): the same cells in the same order, counts, codes, record map, weights
    and levels as the plain mixed-radix fold. ``ranks_from`` 1 ranks before every key."""
    from sdcrisk.data import _cells
    from sdcrisk.data._fold import Fold

    rng = np.random.default_rng(21)
    n = 5_000
    frame = pa.table({
        "a": rng.integers(0, 3, n), "b": rng.integers(0, 60, n).astype(np.int16),
        "c": rng.choice(["x", "y", "z", "w"], n), "d": rng.integers(0, 9, n),
        "e": rng.integers(-3, 4, n), "w": rng.uniform(1, 5, n)})
    path = tmp_path / "s.parquet"
    pq.write_table(frame, path)
    keys = ["a", "b", "c", "d", "e"]
    plain = tabulate_source(path, keys, weights="w")
    monkeypatch.setattr(Fold, "RANKS_FROM", ranks_from)
    monkeypatch.setattr(Fold, "RANKS_FROM_RECORDS", 0)
    monkeypatch.setattr(_cells, "CODE_BLOCK", 999)  # decoded in several blocks
    seen = []
    real = Fold._to_ranks
    monkeypatch.setattr(Fold, "_to_ranks",
                        lambda self: (seen.append(self.bound), real(self))[1])
    ranked = tabulate_source(path, keys, weights="w")
    assert seen  # the ranks were taken
    assert ranked.levels == plain.levels
    np.testing.assert_array_equal(ranked.cell_codes, plain.cell_codes)
    assert ranked.cell_codes.dtype == plain.cell_codes.dtype
    np.testing.assert_array_equal(ranked.counts, plain.counts)
    np.testing.assert_array_equal(ranked.record_cell, plain.record_cell)
    np.testing.assert_array_equal(ranked.weight_sums, plain.weight_sums)
