"""Exchangeable fits from the frequencies of the cell counts (issue 20).

Without weights, nb, poisson-gamma, pitman-yor and skinner-elliot give every cell with the
same count f the same law, so they are fitted once per distinct f (CountGroups) on a
CellTable, and on a FrequencyTable, which holds only how many cells have each count. These
tests check that

* the fit by count equals the per-cell computation it replaced (1e-12);
* a FrequencyTable, built from a CellTable or streamed from a file (DuckDB or Arrow), gives
  exactly the measures of the CellTable;
* ``sdcrisk assess`` streams the frequencies only when they suffice (no weights, no
  households, an exchangeable method, no HTML report) and prints the same answer.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from conftest import synthetic_frame, without_timings
from sdcrisk import (
    FrequencyTable,
    LogLinearRisk,
    Microdata,
    NegativeBinomialRisk,
    PitmanYorRisk,
    PoissonGammaRisk,
    SkinnerElliotTheta,
    bf_risk,
    tabulate,
    tabulate_file,
    tabulate_frequencies,
)
from sdcrisk.core.measures import global_risk_threshold, predictive_measures
from sdcrisk.core.predictive import NegativeBinomialPredictive
from sdcrisk.data import frequencies as freq_module
from sdcrisk.data import outofcore
from sdcrisk.data.frequencies import count_frequencies
from sdcrisk.estimators._base import GROUPED_CELL_ARRAYS
from sdcrisk.exceptions import InputError, MemoryLimitError, ParameterError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

UK_KEYS = "region,sex,age_band,marital_status,ethnic_group"
EXCHANGEABLE = [
    NegativeBinomialRisk(),
    NegativeBinomialRisk(mode="sdcmicro"),
    NegativeBinomialRisk(mode="muargus"),
    PoissonGammaRisk(),
    PoissonGammaRisk(fit_method="moments"),
    PitmanYorRisk(),
    SkinnerElliotTheta(),
]


@pytest.fixture(scope="module")
def uk_table():
    md = Microdata.from_source("example:uk_census2011", keys=UK_KEYS, population_size=560_759)
    return tabulate(md)


def _frame(n=6000, seed=0):
    return synthetic_frame(n, seed)


@pytest.fixture
def parquet_file(tmp_path):
    data = _frame()
    table = pa.table(data).append_column(
        "region_dict", pa.array(data["region"]).dictionary_encode())
    path = tmp_path / "s.parquet"
    pq.write_table(table, path, row_group_size=1000)
    return path


# --- the fit by count equals the per-cell computation ------------------------------------------

def test_count_frequencies_both_branches():
    rng = np.random.default_rng(1)
    counts = rng.geometric(0.3, 5000)
    for c in (counts, np.append(counts, 10**9)):  # bincount, then sorting (one huge count)
        sizes, cells, inverse = count_frequencies(c)
        want, want_inverse, want_cells = np.unique(c, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(sizes, want)
        np.testing.assert_array_equal(cells, want_cells)
        np.testing.assert_array_equal(inverse, want_inverse)


@pytest.mark.parametrize("mode", ["exact", "sdcmicro", "muargus"])
def test_nb_by_count_equals_the_per_cell_law(uk_table, mode):
    """The measures the per-cell path computed (one NB law per cell, sums over cells) and
    the per-cell risks equal those of the fit by count to 1e-12."""
    t = uk_table
    res = NegativeBinomialRisk(mode=mode).fit(t)
    f = t.counts.astype(float)
    p = f / (f * (t.population_size / t.n))
    pred = NegativeBinomialPredictive(f, size=f, prob=np.minimum(p, 1.0))
    want = predictive_measures(pred, population_size=t.population_size)
    risk = bf_risk(f, p, mode)
    np.testing.assert_allclose(res.cell_risk(), risk, rtol=1e-12)
    if mode == "exact":
        for name in ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta"):
            for attr in ("estimate", "lower", "upper"):
                a, b = getattr(res.measures[name], attr), getattr(want[name], attr)
                assert (a is None) == (b is None)
                if a is not None:
                    assert a == pytest.approx(b, rel=1e-12), (name, attr)
    else:
        assert res.measures["tau2"].estimate == pytest.approx(risk[f == 1].sum(), rel=1e-12)
    er = float(np.sum(f * risk))
    assert res.measures["expected_reidentifications"].estimate == pytest.approx(er, rel=1e-12)
    record = np.repeat(risk, t.counts)  # every record's risk, as sdcMicro holds them
    assert res.thresholds["record_risk_threshold"] == global_risk_threshold(record, 0.01)


def test_pg_and_py_per_cell_risks_are_their_count_risks(uk_table):
    for est in (PoissonGammaRisk(), PitmanYorRisk()):
        res = est.fit(uk_table)
        risk = res.cell_risk()
        assert risk.shape == uk_table.counts.shape
        for f in (1, 2, 5):  # cells with the same count share one risk
            assert np.ptp(risk[uk_table.counts == f]) == 0


@pytest.mark.filterwarnings("ignore::sdcrisk.exceptions.ApproximationWarning")
def test_fit_by_count_memory_within_its_estimate():
    rng = np.random.default_rng(0)
    n = 400_000
    codes = {f"k{j}": rng.integers(0, d, n) for j, d in enumerate([40, 30, 20, 10])}
    t = tabulate(Microdata.from_source(codes, list(codes), population_size=4e6))
    for est in (NegativeBinomialRisk(mode="sdcmicro"), PoissonGammaRisk(), PitmanYorRisk()):
        assert est.memory_estimate(t) == 8 * GROUPED_CELL_ARRAYS * t.n_cells
        tracemalloc.start()
        est.fit(t)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak <= est.memory_estimate(t), (est.name, peak / (8 * t.n_cells))


# --- FrequencyTable --------------------------------------------------------------------------

def test_frequency_table_sizes(uk_table):
    t = uk_table
    ft = FrequencyTable.from_cells(t)
    assert (ft.n, ft.n_cells, ft.cell_space, ft.sample_uniques) == \
        (t.n, t.n_cells, t.cell_space, t.sample_uniques)
    assert ft.k_anonymity_violations() == t.k_anonymity_violations()
    assert ft.keys == t.keys and ft.levels == t.levels
    assert len(ft.sizes) == len(np.unique(t.counts)) == 74  # 74 numbers for 1,073 cells
    assert ft.weight_sums is None and ft.household is None and ft.wildcard is None
    assert "distinct counts" in repr(ft)
    with pytest.raises(InputError, match="distinct, ascending"):
        FrequencyTable(keys=("a",), levels=((1, 2),), sizes=[2, 1], cells=[1, 1],
                       population_size=10.0, population_size_source="given")


@pytest.mark.parametrize("est", EXCHANGEABLE, ids=lambda e: f"{e.name}-{e.get_params()}")
def test_frequency_table_fit_equals_cell_table_fit(uk_table, est):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = est.fit(uk_table)
        b = est.fit(FrequencyTable.from_cells(uk_table))
    assert a.measures == b.measures  # exactly: the same computation on the same numbers
    assert a.thresholds == b.thresholds
    da, db = without_timings(a.to_dict()), without_timings(b.to_dict())
    fp = da["provenance"].pop("input_fingerprint")
    assert fp and db["provenance"].pop("input_fingerprint") is None
    assert "no input fingerprint" in db["provenance"].pop("tabulation")
    assert da == db


def test_frequency_table_result_refuses_per_cell_risk(uk_table):
    res = NegativeBinomialRisk().fit(FrequencyTable.from_cells(uk_table))
    for call in (res.cell_risk, res.record_risk, res.cells):
        with pytest.raises(ParameterError, match="frequencies of the cell counts"):
            call()
    from sdcrisk.report.collect import build_report

    with pytest.raises(ParameterError, match="FrequencyTable"):
        build_report(res)


def test_methods_that_need_cells_refuse_a_frequency_table(uk_table):
    ft = FrequencyTable.from_cells(uk_table)
    with pytest.raises(ParameterError, match="needs the observed cells themselves"):
        LogLinearRisk().fit(ft)
    assert not LogLinearRisk().supports_frequencies()
    assert NegativeBinomialRisk().supports_frequencies()


def test_census_scale_frequency_table_fits_in_a_small_budget():
    """10^8 records in 2.5e7 cells (the shapes of benchmarks' 10^8 x 10 file): the per-cell
    guard asked for 6.7 GiB; by count the fit needs kilobytes."""
    sizes = np.array([1, 2, 3, 4, 5, 10, 100, 1000, 30_000], np.int64)
    cells = np.array([18_000_000, 4_000_000, 1_500_000, 800_000, 600_000, 200_000,
                      80_000, 7_000, 1_543], np.int64)
    ft = FrequencyTable(keys=("a", "b"), levels=(tuple(range(200_000)), tuple(range(200))),
                        sizes=sizes, cells=cells, population_size=2e8,
                        population_size_source="given")
    assert 9.9e7 < ft.n < 1.01e8 and 2.5e7 < ft.n_cells < 2.6e7
    res = NegativeBinomialRisk().fit(ft, memory_limit=1 << 20)
    p = ft.n / 2e8
    assert res.measures["tau1"].estimate == pytest.approx(18_000_000 * p, rel=1e-12)
    with pytest.raises(MemoryLimitError):
        NegativeBinomialRisk().fit(ft, memory_limit=1000)


# --- streamed -------------------------------------------------------------------------------

def _same_frequencies(got: FrequencyTable, table):
    want = FrequencyTable.from_cells(table)
    assert got.keys == want.keys and got.levels == want.levels
    np.testing.assert_array_equal(got.sizes, want.sizes)
    np.testing.assert_array_equal(got.cells, want.cells)
    assert got.population_size == want.population_size
    assert got.population_size_source == want.population_size_source
    assert got.source == table.source


@pytest.mark.parametrize("engine", ["duckdb", "pyarrow"])
@pytest.mark.parametrize("options", [
    {"population_size": 1e6},
    {"sampling_fraction": 0.05},
    {},
    {"levels": {"sex": [1, 2, 3], "tenure": list(range(-5, 6))}, "population_size": 5e5},
])
def test_tabulate_frequencies_equals_the_cells(parquet_file, engine, options):
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    keys = ["sex", "age", "region_dict", "tenure"]
    got = tabulate_frequencies(parquet_file, keys, engine=engine, **options)
    table = tabulate_file(parquet_file, keys, record_cell="memory", **options)
    _same_frequencies(got, table)
    assert None in got.levels[1]  # the NaN ages are the missing level
    assert got.n == 6000


def test_tabulate_frequencies_csv_and_folder(tmp_path):
    import pandas as pd

    data = {k: v for k, v in _frame(3000, seed=2).items() if k in ("sex", "region", "tenure")}
    csv = tmp_path / "s.csv"
    pd.DataFrame(data).to_csv(csv, index=False)
    keys = ["sex", "region", "tenure"]
    _same_frequencies(tabulate_frequencies(csv, keys, population_size=1e5),
                      tabulate_file(csv, keys, population_size=1e5, record_cell="memory"))
    folder = tmp_path / "parts"
    folder.mkdir()
    for i in range(3):
        pq.write_table(pa.table({k: v[i * 1000:(i + 1) * 1000] for k, v in data.items()}),
                       folder / f"p{i}.parquet")
    _same_frequencies(tabulate_frequencies(folder, keys, population_size=1e5),
                      tabulate_file(folder, keys, population_size=1e5, record_cell="memory"))


def test_tabulate_frequencies_merges_raw_values_of_one_level(tmp_path):
    """Two byte strings that decode to the same label (UTF-8 and Latin-1 'é') are one level:
    DuckDB groups them apart, so the Arrow pass takes over and merges their cells."""
    pytest.importorskip("duckdb")
    values = [b"caf\xc3\xa9", b"caf\xe9", b"tea"] * 40
    sex = np.arange(120) % 2
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"drink": pa.array(values, pa.binary()), "sex": sex}), path)
    got = tabulate_frequencies(path, ["drink", "sex"], population_size=1000, engine="duckdb")
    _same_frequencies(got, tabulate_file(path, ["drink", "sex"], population_size=1000,
                                         record_cell="memory"))
    assert got.levels[0] == ("café", "tea") and got.sizes.tolist() == [20, 40]
    # NaN and null in one float key: both the missing level
    age = pa.array([1.0, float("nan"), None, 2.0] * 30)
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"age": age, "sex": [0, 1, 1, 0] * 30}), path)
    got = tabulate_frequencies(path, ["age", "sex"], population_size=1000, engine="duckdb")
    _same_frequencies(got, tabulate_file(path, ["age", "sex"], population_size=1000,
                                         record_cell="memory"))
    assert got.levels[0] == (1, 2, None)
    assert got.sizes.tolist() == [30, 60] and got.cells.tolist() == [2, 1]  # one missing cell


def test_tabulate_frequencies_errors_like_tabulate_file(parquet_file):
    row = int(np.flatnonzero(np.isnan(_frame()["age"]))[0]) + 1
    for tab in (tabulate_frequencies, tabulate_file):
        with pytest.raises(InputError, match=rf"column 'age' has missing values \(first at "
                           rf"row {row}\)"):
            tab(parquet_file, ["sex", "age"], missing="error")
    with pytest.raises(InputError, match="more than max_levels=50"):
        tabulate_frequencies(parquet_file, ["sex", "age"], max_levels=50)
    with pytest.raises(InputError, match="not among its declared levels"):
        tabulate_frequencies(parquet_file, ["sex", "tenure"], levels={"sex": [1]})
    with pytest.raises(InputError, match="nope"):
        tabulate_frequencies(parquet_file, ["sex", "nope"])
    with pytest.raises(ParameterError, match="engine"):
        tabulate_frequencies(parquet_file, ["sex"], engine="spark")
    with pytest.raises(InputError, match="smaller than the sample size"):
        tabulate_frequencies(parquet_file, ["sex"], population_size=10)


# --- assess ---------------------------------------------------------------------------------

def _spy(monkeypatch):
    calls = {"frequencies": 0, "cells": 0}
    real_f, real_c = freq_module.tabulate_frequencies, outofcore.tabulate_file

    def frequencies(*a, **k):
        calls["frequencies"] += 1
        return real_f(*a, **k)

    def cells(*a, **k):
        calls["cells"] += 1
        return real_c(*a, **k)

    monkeypatch.setattr(freq_module, "tabulate_frequencies", frequencies)
    monkeypatch.setattr(outofcore, "tabulate_file", cells)
    return calls


def _assess(capsys, argv):
    from sdcrisk.cli import main

    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("method", ["nb", "poisson-gamma", "pitman-yor"])
def test_assess_streams_frequencies_with_the_same_output(parquet_file, monkeypatch, capsys,
                                                         method):
    argv = ["assess", str(parquet_file), "--keys", "sex,age,region,tenure",
            "--population-size", "600000", "--method", method]
    in_memory = json.loads(_assess(capsys, [*argv, "--format", "json"]))
    text = _assess(capsys, argv)
    calls = _spy(monkeypatch)
    streamed = json.loads(_assess(capsys, [*argv, "--format", "json", "--out-of-core"]))
    assert calls == {"frequencies": 1, "cells": 0}
    assert streamed["provenance"].pop("input_fingerprint") is None
    assert in_memory["provenance"].pop("input_fingerprint")
    assert "frequencies of the cell counts" in streamed["provenance"].pop("tabulation")
    assert without_timings(streamed) == without_timings(in_memory)
    assert _assess(capsys, [*argv, "--out-of-core"]) == text  # the table, word for word
    # chosen automatically when the file does not fit the memory limit
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "100K")
    auto = json.loads(_assess(capsys, [*argv, "--format", "json"]))
    assert calls == {"frequencies": 3, "cells": 0}
    assert auto["measures"] == in_memory["measures"]


@pytest.mark.parametrize("extra", [
    ["--weights", "w"],
    ["--household", "hh"],
    ["--format", "html"],
    ["--method", "loglinear", "--terms", "independence"],
])
def test_assess_streams_cells_when_frequencies_do_not_suffice(parquet_file, monkeypatch,
                                                              capsys, extra, tmp_path):
    argv = ["assess", str(parquet_file), "--keys", "sex,region,tenure", "--population-size",
            "600000", "--out-of-core", "--method", "nb", *extra]
    if "html" in extra:
        argv += ["--out", str(tmp_path / "r.html")]
    calls = _spy(monkeypatch)
    _assess(capsys, argv)
    assert calls == {"frequencies": 0, "cells": 1}


def test_assess_in_memory_when_the_file_fits(parquet_file, monkeypatch, capsys):
    calls = _spy(monkeypatch)
    out = json.loads(_assess(capsys, [
        "assess", str(parquet_file), "--keys", "sex,region", "--population-size", "600000",
        "--method", "nb", "--format", "json"]))
    assert calls == {"frequencies": 0, "cells": 0}
    assert out["provenance"]["input_fingerprint"]


def test_assess_fail_above_on_frequencies(parquet_file, capsys):
    """--fail-above reads sample uniques and k-anonymity violations off the FrequencyTable."""
    from sdcrisk.cli import main

    argv = ["assess", str(parquet_file), "--keys", "sex,age,region,tenure", "--population-size",
            "600000", "--method", "nb", "--format", "json", "--fail-above", "k3_violations=1",
            "--fail-above", "sample_uniques=1"]
    assert main(argv) == 3
    in_memory = capsys.readouterr()
    assert main([*argv, "--out-of-core"]) == 3
    streamed = capsys.readouterr()
    assert "k3_violations" in streamed.err and streamed.err == in_memory.err


def test_tabulate_frequencies_column_types(tmp_path):
    """Dates, booleans, large text, unsigned integers, timestamps and decimals come back from
    DuckDB typed as pyarrow reads them, so their levels are tabulate_file's."""
    pytest.importorskip("duckdb")
    import datetime
    import decimal

    rng = np.random.default_rng(0)
    n = 2000
    table = pa.table({
        "d": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(x))
                       for x in rng.integers(0, 5, n)]),
        "b": pa.array(rng.random(n) < 0.3),
        "ls": pa.array(rng.choice(["a", "b", "c"], n).tolist(), pa.large_string()),
        "u": pa.array(rng.integers(0, 4, n).astype(np.uint16)),
        "ts": pa.array((rng.integers(0, 3, n) * 10**9).astype("datetime64[ns]")),
        "dec": pa.array([decimal.Decimal(int(x)) for x in rng.integers(0, 3, n)],
                        pa.decimal128(5, 1)),
    })
    path = tmp_path / "types.parquet"
    pq.write_table(table, path)
    for keys in (["d", "b"], ["ls", "u"], ["ts", "dec"]):
        got = tabulate_frequencies(path, keys, population_size=1e5, engine="duckdb")
        _same_frequencies(got, tabulate_file(path, keys, population_size=1e5,
                                             record_cell="memory"))
    assert got.levels[1] == ("0.0", "1.0", "2.0")


def test_assess_streams_frequencies_from_a_share_of_the_budget(parquet_file, monkeypatch,
                                                                capsys):
    """A file whose in-memory read needs more than 1/COUNTS_ONLY_SHARE of the memory limit
    (but less than the limit) is streamed as frequencies for nb (bounded memory), and read in
    memory for a method that needs its cells."""
    import sdcrisk.cli.assess as assess_mod
    from sdcrisk.data.route import in_memory_bytes

    keys = "sex,age,region,tenure"
    need = in_memory_bytes(parquet_file, keys.split(","), [])
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "64M")
    monkeypatch.setattr(assess_mod, "COUNTS_ONLY_SHARE", 2 * (64 << 20) // need)
    calls = _spy(monkeypatch)
    base = ["assess", str(parquet_file), "--keys", keys, "--population-size", "600000",
            "--format", "json"]
    out = json.loads(_assess(capsys, [*base, "--method", "nb"]))
    assert calls == {"frequencies": 1, "cells": 0}
    assert out["provenance"]["input_fingerprint"] is None
    out = json.loads(_assess(capsys, [*base, "--method", "graphical"]))
    assert calls == {"frequencies": 1, "cells": 0}  # read in memory: it fits the limit
    assert out["provenance"]["input_fingerprint"]
    monkeypatch.setattr(assess_mod, "COUNTS_ONLY_SHARE", (64 << 20) // need // 2)
    _assess(capsys, [*base, "--method", "nb"])
    assert calls == {"frequencies": 1, "cells": 0}  # under the share: in memory
