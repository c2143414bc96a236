"""Microdata validation and tabulation (sdcrisk.data: table, io, _cells)."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data
from sdcrisk import (
    InputError,
    MemoryLimitError,
    Microdata,
    ParameterError,
    tabulate,
    truth_measures,
)

DATA = {
    "a": [1, 2, 2, 3, 1],
    "b": ["x", "y", "y", "x", "z"],
    "w": [10.0, 20.0, 20.0, 5.0, 1.0],
}
EXPECTED_LEVELS = ((1, 2, 3), ("x", "y", "z"))
EXPECTED_CODES = ([0, 1, 1, 2, 0], [0, 1, 1, 0, 2])


def _check_small(md: Microdata):
    assert md.keys == ("a", "b")
    assert md.levels == EXPECTED_LEVELS
    assert [c.tolist() for c in md.codes] == list(EXPECTED_CODES)
    np.testing.assert_array_equal(md.weights, DATA["w"])
    assert md.population_size == 56.0
    assert md.population_size_source == "weights"
    assert md.n == 5
    assert md.cell_space == 9


# --- sources -------------------------------------------------------------------------------

def test_from_pandas():
    _check_small(Microdata.from_source(pd.DataFrame(DATA), ["a", "b"], weights="w"))


def test_from_polars():
    pl = pytest.importorskip("polars")
    _check_small(Microdata.from_source(pl.DataFrame(DATA), ["a", "b"], weights="w"))


def test_from_pyarrow_table():
    pa = pytest.importorskip("pyarrow")
    _check_small(Microdata.from_source(pa.table(DATA), ["a", "b"], weights="w"))


def test_from_dict_and_comma_separated_keys():
    _check_small(Microdata.from_source(DATA, "a, b", weights="w"))


def test_from_csv(tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame(DATA).to_csv(path, index=False)
    md = Microdata.from_source(path, ["a", "b"], weights="w")
    _check_small(md)
    assert md.source == "d.csv"
    _check_small(Microdata.from_source(str(path), ["a", "b"], weights="w"))


def test_from_csv_gz(tmp_path):
    path = tmp_path / "d.csv.gz"
    with gzip.open(path, "wt") as fh:
        pd.DataFrame(DATA).to_csv(fh, index=False)
    _check_small(Microdata.from_source(path, ["a", "b"], weights="w"))


def test_from_parquet(tmp_path):
    pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "d.parquet"
    pd.DataFrame(DATA).to_parquet(path, index=False)
    _check_small(Microdata.from_source(path, ["a", "b"], weights="w"))


def test_tsv(tmp_path):
    path = tmp_path / "d.tsv"
    pd.DataFrame(DATA).to_csv(path, index=False, sep="\t")
    _check_small(Microdata.from_source(path, ["a", "b"], weights="w"))


# --- levels ---------------------------------------------------------------------------------

def test_declared_levels_with_zero_count_level():
    md = Microdata.from_source(DATA, ["a", "b"], levels={"a": [1, 2, 3, 4],
                                                         "b": ["z", "y", "x", "q"]})
    assert md.levels == ((1, 2, 3, 4), ("z", "y", "x", "q"))
    assert md.cell_space == 16  # the zero-count levels 4 and 'q' count in K
    # declared order fixes the codes
    assert md.codes[1].tolist() == [2, 1, 1, 2, 0]
    tab = tabulate(md)
    assert tab.cell_space == 16
    assert tab.dense_counts().shape == (4, 4)


def test_value_outside_declared_integer_levels():
    with pytest.raises(InputError) as exc:
        Microdata.from_source(DATA, ["a", "b"], levels={"a": [1, 2]})
    assert "'a'" in str(exc.value) and "3" in str(exc.value)


def test_value_outside_declared_string_levels():
    with pytest.raises(InputError) as exc:
        Microdata.from_source(DATA, ["a", "b"], levels={"b": ["x", "y"]})
    assert "'b'" in str(exc.value) and "'z'" in str(exc.value)


def test_error_messages_show_plain_values():
    with pytest.raises(InputError) as exc:
        Microdata.from_source(DATA, ["a", "b"], levels={"b": ["x", "y"]})
    assert "value 'z'" in str(exc.value)
    with pytest.raises(InputError) as exc:
        Microdata.from_source({"a": [1.0, 2.5]}, ["a"])
    assert "value 2.5 " in str(exc.value)


def test_levels_for_a_non_key_is_a_parameter_error():
    with pytest.raises(ParameterError, match="'c'"):
        Microdata.from_source(DATA, ["a", "b"], levels={"c": [1]})


def test_integer_levels_sort_numerically():
    md = Microdata.from_source({"a": [10, 9, 100, 9]}, ["a"])
    assert md.levels == ((9, 10, 100),)
    assert md.codes[0].tolist() == [1, 0, 2, 0]


# --- missing values -------------------------------------------------------------------------

MISSING = {"a": [1.0, np.nan, 2.0, 1.0], "b": ["x", "y", None, "x"]}


def _missing_sources(tmp_path):
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame(MISSING)
    path = tmp_path / "m.csv"
    frame.to_csv(path, index=False)
    yield "pandas", frame
    yield "pyarrow", pa.table({"a": pa.array([1, None, 2, 1]), "b": MISSING["b"]})
    yield "csv", path
    yield "dict", {"a": np.array(MISSING["a"]), "b": np.array(MISSING["b"], dtype=object)}


def test_missing_as_category_keeps_every_record(tmp_path):
    for name, src in _missing_sources(tmp_path):
        md = Microdata.from_source(src, ["a", "b"], missing="category")
        assert md.n == 4, name
        assert md.levels == ((1, 2, None), ("x", "y", None)), name
        assert [c.tolist() for c in md.codes] == [[0, 2, 1, 0], [0, 1, 2, 0]], name
        tab = tabulate(md)
        assert tab.n == 4 and sorted(tab.counts.tolist()) == [1, 1, 2]


def test_missing_error_policy_names_the_column(tmp_path):
    for name, src in _missing_sources(tmp_path):
        with pytest.raises(InputError) as exc:
            Microdata.from_source(src, ["b"], missing="error")
        assert "'b'" in str(exc.value), name
        assert "row 3" in str(exc.value), name


def test_dict_integer_column_with_none_matches_other_sources():
    src = {"a": [10, None, 9, 10]}
    md = Microdata.from_source(src, ["a"])
    assert md.levels == Microdata.from_source(pd.DataFrame(src), ["a"]).levels == ((9, 10, None),)
    md = Microdata.from_source(src, ["a"], levels={"a": [9, 10, 11]})
    assert md.levels == ((9, 10, 11, None),)


# --- input errors ---------------------------------------------------------------------------

def test_missing_column_names_it(tmp_path):
    with pytest.raises(InputError, match="'nope'"):
        Microdata.from_source(DATA, ["a", "nope"])
    with pytest.raises(InputError, match="'nope'"):
        Microdata.from_source(pd.DataFrame(DATA), ["a", "nope"])
    path = tmp_path / "d.csv"
    pd.DataFrame(DATA).to_csv(path, index=False)
    with pytest.raises(InputError, match="'nope'"):
        Microdata.from_source(path, ["a", "nope"])
    with pytest.raises(InputError, match="'nope'"):
        Microdata.from_source(DATA, ["a", "b"], weights="nope")


def test_missing_file():
    with pytest.raises(InputError, match="not found"):
        Microdata.from_source("/nonexistent/file.csv", ["a"])


def test_header_only_csv(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a,b\n")
    with pytest.raises(InputError, match="no records"):
        Microdata.from_source(path, ["a", "b"])


def test_zero_byte_csv(tmp_path):
    path = tmp_path / "e.csv"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        Microdata.from_source(path, ["a", "b"])


def test_empty_frame():
    with pytest.raises(InputError, match="no records"):
        Microdata.from_source(pd.DataFrame({"a": []}), ["a"])


def test_population_smaller_than_sample():
    with pytest.raises(InputError) as exc:
        Microdata.from_source(DATA, ["a", "b"], population_size=4)
    assert "N=4" in str(exc.value) and "n=5" in str(exc.value)


@pytest.mark.parametrize(("weights", "fragment"), [
    ([1.0, 0.0, 1.0, 1.0, 1.0], "row 2"),
    ([1.0, 1.0, -3.0, 1.0, 1.0], "row 3"),
    ([1.0, 1.0, 1.0, np.inf, 1.0], "row 4"),
    ([1.0, np.nan, 1.0, 1.0, 1.0], "row 2"),
    (["1", "2", "lots", "1", "1"], "lots"),
])
def test_bad_weights(weights, fragment):
    src = {**DATA, "w": np.array(weights)}
    with pytest.raises(InputError) as exc:
        Microdata.from_source(src, ["a", "b"], weights="w")
    assert "'w'" in str(exc.value) and fragment in str(exc.value)


def test_nan_weight_from_pandas_and_csv(tmp_path):
    frame = pd.DataFrame({**DATA, "w": [1.0, 2.0, np.nan, 1.0, 1.0]})
    with pytest.raises(InputError, match="'w'.*row 3"):
        Microdata.from_source(frame, ["a", "b"], weights="w")
    path = tmp_path / "w.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match="'w'.*row 3"):
        Microdata.from_source(path, ["a", "b"], weights="w")


def test_string_weights_that_parse_are_accepted():
    md = Microdata.from_source({**DATA, "w": np.array(["1.5", "2", "2", "1", "1"])},
                               ["a", "b"], weights="w")
    assert md.population_size == pytest.approx(7.5)


def test_float_key_with_non_integer_values():
    with pytest.raises(InputError) as exc:
        Microdata.from_source({"age": [31.0, 45.5, 20.0]}, ["age"])
    assert "'age'" in str(exc.value) and "45.5" in str(exc.value)
    # integral floats are fine and become integer levels
    md = Microdata.from_source({"age": [31.0, 45.0, 20.0]}, ["age"])
    assert md.levels == ((20, 31, 45),)


def test_too_many_levels():
    with pytest.raises(InputError) as exc:
        Microdata.from_source({"id": np.arange(20)}, ["id"], max_levels=10)
    assert "'id'" in str(exc.value) and "20" in str(exc.value)
    assert Microdata.from_source({"id": np.arange(20)}, ["id"], max_levels=None).n_levels == (20,)


def test_default_max_levels_is_1000():
    with pytest.raises(InputError, match="'id'"):
        Microdata.from_source({"id": np.arange(1001)}, ["id"])


def test_population_size_and_sampling_fraction_are_exclusive():
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, ["a", "b"], population_size=100, sampling_fraction=0.05)


@pytest.mark.parametrize("fraction", [0.0, 1.5, -0.1])
def test_bad_sampling_fraction(fraction):
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, ["a", "b"], sampling_fraction=fraction)


def test_population_size_resolution():
    md = Microdata.from_source(DATA, ["a", "b"], sampling_fraction=0.05)
    assert (md.population_size, md.population_size_source) == (100.0, "sampling_fraction")
    md = Microdata.from_source(DATA, ["a", "b"], population_size=1000)
    assert (md.population_size, md.population_size_source) == (1000.0, "given")
    md = Microdata.from_source(DATA, ["a", "b"])
    assert (md.population_size, md.population_size_source) == (5.0, "assumed_population")
    # weights given but N given too: N wins
    md = Microdata.from_source(DATA, ["a", "b"], weights="w", population_size=80)
    assert md.population_size == 80.0
    assert md.sampling_fraction == pytest.approx(5 / 80)


def test_bad_option_combinations():
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, [])
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, ["a", "a"])
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, ["a", "w"], weights="w")
    with pytest.raises(ParameterError):
        Microdata.from_source(DATA, ["a"], missing="drop")


def test_unsupported_source_type():
    with pytest.raises(InputError, match="unsupported"):
        Microdata.from_source(42, ["a"])


def test_household_column_missing_value_is_an_error():
    with pytest.raises(InputError, match="household column 'h'"):
        Microdata.from_source({"a": [1, 2], "h": [1.0, np.nan]}, ["a"], household="h")


# --- tabulation -----------------------------------------------------------------------------

def test_tabulate_hand_example():
    # records (a, b): (1,x) (2,y) (2,y) (3,x) (1,z), weights 10 20 20 5 1
    # cells in code order: (1,x): f=1, F_hat=10; (1,z): 1, 1; (2,y): 2, 40; (3,x): 1, 5
    md = Microdata.from_source(DATA, ["a", "b"], weights="w")
    tab = tabulate(md)
    assert tab.n == 5 and tab.n_cells == 4 and tab.sample_uniques == 3
    assert tab.cell_labels() == [(1, "x"), (1, "z"), (2, "y"), (3, "x")]
    assert tab.counts.tolist() == [1, 1, 2, 1]
    np.testing.assert_array_equal(tab.weight_sums, [10.0, 1.0, 40.0, 5.0])
    assert tab.record_cell.tolist() == [0, 2, 2, 3, 1]
    assert tab.cell_codes.tolist() == [[0, 0], [0, 2], [1, 1], [2, 0]]
    assert tab.k_anonymity_violations() == {2: 3, 3: 5, 5: 5}
    assert tab.population_size == 56.0
    assert tab.cell_space == 9
    dense = tab.dense_counts()
    expected = np.zeros((3, 3))
    expected[0, 0] = expected[0, 2] = expected[2, 0] = 1
    expected[1, 1] = 2
    np.testing.assert_array_equal(dense, expected)
    assert tab.dense_counts(dtype=np.int32).dtype == np.int32


def test_tabulate_without_weights_has_no_weight_sums():
    tab = tabulate(Microdata.from_source(DATA, ["a", "b"]))
    assert tab.weight_sums is None
    assert tab.household is None


def test_dense_counts_memory_limit(monkeypatch):
    md = Microdata.from_source({"a": np.arange(100), "b": np.arange(100) % 50}, ["a", "b"])
    tab = tabulate(md)  # K = 100 * 50 = 5000 cells, 40 kB as float64
    with pytest.raises(MemoryLimitError, match="K=5,000"):
        tab.dense_counts(limit=39_999)
    assert tab.dense_counts(limit=40_000).sum() == 100
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1K")
    with pytest.raises(MemoryLimitError):
        tab.dense_counts()
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "lots")
    with pytest.raises(ParameterError):
        tab.dense_counts()


def _twelve_keys(n, seed, levels=50):
    rng = np.random.default_rng(seed)
    data = {f"k{j}": rng.integers(0, levels, n) for j in range(12)}
    # repeat some records so that cells with f > 1 exist
    data = {k: np.concatenate([v, v[: n // 3], v[: n // 10]]) for k, v in data.items()}
    declared = {k: list(range(levels)) for k in data}
    return data, declared


def test_tabulate_huge_key_space_by_observed_cells():
    data, declared = _twelve_keys(1000, seed=1)
    md = Microdata.from_source(data, list(data), levels=declared)
    assert md.cell_space == 50**12 > 2**62  # forces the id compression path
    tab = tabulate(md)
    grouped = pd.DataFrame(data).groupby(list(data)).size()
    assert tab.n_cells == len(grouped)
    assert tab.counts.sum() == md.n
    got = dict(zip(tab.cell_labels(), tab.counts.tolist(), strict=True))
    assert got == {k: int(v) for k, v in grouped.items()}
    # record -> cell map agrees with each record's own key values
    rows = list(zip(*(data[k] for k in data), strict=True))
    labels = tab.cell_labels()
    assert all(labels[c] == tuple(int(x) for x in rows[i])
               for i, c in enumerate(tab.record_cell.tolist()))
    with pytest.raises(MemoryLimitError):
        tab.dense_counts()


def test_tabulate_with_population_matches_brute_force():
    rng = np.random.default_rng(7)
    n_pop = 3000
    pop_data = {"x": rng.integers(0, 6, n_pop), "y": rng.integers(0, 5, n_pop),
                "z": rng.choice(np.array(["p", "q", "r"]), n_pop)}
    pop = Microdata.from_source(pop_data, ["x", "y", "z"])
    sample = pop.subset(rng.random(n_pop) < 0.1, population_size=n_pop)
    tab = tabulate(sample, population=pop)
    counter = Counter(zip(*(pop_data[k].tolist() for k in ("x", "y", "z")), strict=True))
    brute = [counter[c] for c in tab.cell_labels()]
    assert tab.population.counts.tolist() == brute
    assert tab.population.size == n_pop
    assert tab.population.n_cells == len(counter)
    assert tab.population.n_unique == sum(1 for v in counter.values() if v == 1)
    assert tab.population_size == n_pop
    assert tab.population_size_source == "population"
    pop_f = np.array(list(counter.values()))
    assert tab.population.k_anonymity_violations == {
        k: int(pop_f[pop_f < k].sum()) for k in (2, 3, 5)}


def test_sample_cell_absent_from_population():
    pop = Microdata.from_source({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "x"]}, ["a", "b"])
    declared = dict(zip(pop.keys, pop.levels, strict=True))
    sample = Microdata.from_source({"a": [2], "b": ["y"]}, ["a", "b"], levels=declared,
                                   population_size=4)
    with pytest.raises(InputError, match="do not occur in the population"):
        tabulate(sample, population=pop)


def test_sample_levels_differ_from_population():
    pop = Microdata.from_source({"a": [1, 2, 3]}, ["a"])
    sample = Microdata.from_source({"a": [1, 2]}, ["a"], population_size=3)
    with pytest.raises(InputError, match="'a'"):
        tabulate(sample, population=pop)


def test_tabulate_with_population_huge_key_space():
    data, declared = _twelve_keys(3000, seed=3)
    pop = Microdata.from_source(data, list(data), levels=declared)
    sample = pop.subset(np.arange(0, pop.n, 3), population_size=pop.n)
    tab = tabulate(sample, population=pop)
    counter = Counter(zip(*(data[k].tolist() for k in data), strict=True))
    assert tab.population.counts.tolist() == [counter[c] for c in tab.cell_labels()]


# --- ground truth of the shared populations (../shared/data/*/ground_truth.csv) -------------

POPULATIONS = ["census_income_kdd", "uci_adult", "eusilcP", "ghanaS", "uk_census2011_nanodata",
               "sdcmicro_testdata"]


@pytest.mark.parametrize("name", POPULATIONS)
def test_ground_truth_reproduced(name):
    truth = pd.read_csv(shared_data(name, "ground_truth.csv"))
    path = shared_data(name, f"{name}.csv.gz")
    assert len(truth) == 6
    for keyset, rows in truth.groupby("keyset", sort=False):
        keys = rows["keys"].iloc[0].split("+")
        pop = Microdata.from_source(path, keys)
        big_n = pop.n
        u = np.random.default_rng(0).random(big_n)
        for row in rows.itertuples():
            where = f"{name} {keyset} {row.fraction}"
            assert big_n == row.N, where
            assert pop.cell_space == row.K, where
            sample = pop.subset(u < row.fraction, population_size=big_n)
            tab = tabulate(sample, population=pop)
            m = truth_measures(tab.counts, tab.population.counts, population_size=big_n,
                               population_uniques=tab.population.n_unique)
            assert sample.n == row.n, where
            assert tab.sample_uniques == row.SU, where
            assert tab.population.n_unique == row.PU, where
            assert tab.population.n_cells == row.K_nonempty, where
            assert m["tau1"] == row.tau1, where
            assert m["tau2"] == pytest.approx(row.tau2, abs=1e-9), where
            assert m["p_pu"] == pytest.approx(row.PU / big_n, rel=1e-15), where


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64", "uint16", "uint32"])
def test_slices_of_arrow_and_polars_columns_are_read_as_their_values(dtype):
    """A sliced polars frame and a table concatenated from slices hold integer columns whose
    chunks start part-way into their buffers (Arrow's offset, in values). They were read at
    that many *bytes* in: polars' df.slice(11, 20) of the codes 100..., 200... was coded as
    other records' bytes (768, 1024 for 5, 6), without a word; every width but one byte."""
    import polars as pl
    import pyarrow as pa

    values = (np.arange(40) % 7 + 100 * (np.arange(40) // 7)).astype(dtype)
    table = pa.table({"a": pa.array(values), "b": pa.array(np.arange(40) % 3)})
    frame = pl.from_arrow(table)
    sources = {
        "concatenated slices": pa.concat_tables([table.slice(3, 10), table.slice(17, 13)]),
        "polars slice": frame.slice(11, 20),
        "polars slices, not rechunked": pl.concat([frame.slice(2, 9), frame.slice(21, 9)],
                                                  rechunk=False),
    }
    for name, source in sources.items():
        want = (source.column("a").to_pylist() if isinstance(source, pa.Table)
                else source["a"].to_list())
        md = Microdata.from_source(source, keys=["a", "b"], population_size=1000)
        assert [md.levels[0][c] for c in md.codes[0]] == want, name
