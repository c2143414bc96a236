"""A CSV header line repeated among the records (two exports joined: ``cat a.csv b.csv``).

Read as a record it made the text ``age`` a category of the key ``age`` (and a numeric key a
text key), changing every figure without a word. Every reader of delimited text refuses it
now, naming the file, the line (1-based, as an editor numbers it) and the remedy; a record
where only some fields equal their column's name is data and is read as before.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from conftest import run_cli as _run
from sdcrisk import Microdata, tabulate
from sdcrisk.data.frequencies import tabulate_frequencies
from sdcrisk.data.outofcore import tabulate_file
from sdcrisk.exceptions import InputError

HEADER = "age,sex,region"
ROWS = ["30,1,a", "40,2,b", "30,1,a"]  # 3 records: cells (30,1,a) x2, (40,2,b) x1
KEYS = ["age", "sex", "region"]


def _joined(tmp_path, name="both.csv", header=HEADER, rows=ROWS, copies=2, newline="\n",
            bom=""):
    """``copies`` exports of the same header and rows, joined as cat joins them."""
    one = bom + newline.join([header, *rows]) + newline
    path = tmp_path / name
    path.write_bytes((one * copies).encode("utf-8"))
    return path



def _refused(exc_or_err: str, name: str, line: int) -> None:
    text = str(exc_or_err)
    assert f"{name}, line {line}: the header line is repeated as a record" in text, text
    assert "files joined" in text and "keep only the first header line" in text, text
    assert "Traceback" not in text


# --- each reader -------------------------------------------------------------------------

def test_in_memory_reader_refuses_the_line(tmp_path):
    """The second header is line 5 (header, 3 records, header)."""
    path = _joined(tmp_path)
    with pytest.raises(InputError) as err:
        Microdata.from_source(path, KEYS, population_size=1000)
    _refused(err.value, "both.csv", 5)
    assert "awk -v h=" in str(err.value)  # the remedy, runnable as written


def test_in_memory_cli_exits_2(capsys, tmp_path):
    path = _joined(tmp_path)
    code, out, err = _run(capsys, "assess", path, "--keys", ",".join(KEYS),
                          "--population-size", "1000", "--method", "nb")
    assert code == 2 and out == ""
    _refused(err, "both.csv", 5)


def test_streamed_reader_refuses_the_line(capsys, tmp_path):
    path = _joined(tmp_path)
    with pytest.raises(InputError) as err:
        tabulate_file(path, KEYS, population_size=1000)
    _refused(err.value, "both.csv", 5)
    code, _, err_text = _run(capsys, "assess", path, "--keys", ",".join(KEYS),
                             "--population-size", "1000", "--out-of-core", "--method",
                             "skinner-elliot", "--format", "json")
    assert code == 2
    _refused(err_text, "both.csv", 5)


def test_duckdb_engine_refuses_the_line(tmp_path):
    """engine='duckdb' on a CSV: pass 1 is Arrow's (DuckDB groups Parquet and mu-Argus
    streams), and it refuses the line as the default engine does."""
    pytest.importorskip("duckdb", reason="duckdb is not installed (pip install 'sdcrisk[duckdb]')")
    path = _joined(tmp_path)
    with pytest.raises(InputError) as err:
        tabulate_file(path, KEYS, population_size=1000, engine="duckdb")
    _refused(err.value, "both.csv", 5)
    with pytest.raises(InputError) as err:
        tabulate_frequencies(path, KEYS, population_size=1000, engine="duckdb")
    _refused(err.value, "both.csv", 5)


def test_duckdb_query_of_a_csv_is_refused(tmp_path):
    """``duckdb:DB::SELECT * FROM read_csv('both.csv')``: DuckDB reads the repeated header
    as a row too; no line of the file is known there, the row of the query is named."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed "
                                 "(pip install 'sdcrisk[duckdb]')")
    path = _joined(tmp_path)
    db = tmp_path / "x.db"
    duckdb.connect(str(db)).close()
    source = f"duckdb:{db}::SELECT * FROM read_csv('{path.as_posix()}')"
    with pytest.raises(InputError) as err:
        Microdata.from_source(source, KEYS, population_size=1000)
    text = str(err.value)
    assert "row 4 of the query holds every column's own name" in text, text
    assert "not known" in text and "WHERE" in text


def test_frequencies_reader_refuses_the_line(tmp_path):
    """tabulate_frequencies (assess --out-of-core with an exchangeable method) streams the
    file by its own pass; a repeated header is refused there too."""
    path = _joined(tmp_path)
    with pytest.raises(InputError) as err:
        tabulate_frequencies(path, KEYS, population_size=1000)
    _refused(err.value, "both.csv", 5)


def test_protect_refuses_the_line(capsys, tmp_path):
    path = _joined(tmp_path)
    out = tmp_path / "out.csv"
    code, _, err = _run(capsys, "protect", path, "--keys", ",".join(KEYS),
                        "--population-size", "1000", "--k-anonymity", "2", "--out", out)
    assert code == 2
    _refused(err, "both.csv", 5)
    assert not out.exists()


# --- the header's text in a column typed as numbers --------------------------------------

@pytest.mark.parametrize("streamed", [False, True])
def test_weights_column_holding_its_name(capsys, tmp_path, streamed):
    """The weights column reads 'w' on the repeated line: the message said 'weights column
    'w' is not numeric: value 'w'', which sends the user to the wrong place."""
    path = _joined(tmp_path, header="age,sex,w", rows=["30,1,2.5", "40,2,3"], copies=3)
    extra = ("--out-of-core",) if streamed else ()
    code, _, err = _run(capsys, "assess", path, "--keys", "age,sex", "--weights", "w",
                        "--method", "nb", *extra)
    assert code == 2
    _refused(err, "both.csv", 4)
    assert "and 1 more such line: 7" in err
    assert "not numeric" not in err


@pytest.mark.parametrize("streamed", [False, True])
def test_repeat_past_the_first_block(tmp_path, streamed):
    """Far into a large file (past the first blocks the readers type and stream by): in
    memory pyarrow made the integer key a text key, streamed the header's text was a
    category of the key; both now name the line."""
    rng = np.random.default_rng(3)
    rows = [f"{a},{b}" for a, b in zip(rng.integers(10, 90, 400_000),
                                        rng.integers(1, 3, 400_000), strict=True)]
    path = _joined(tmp_path, header="age,sex", rows=rows)
    with pytest.raises(InputError) as err:
        if streamed:
            tabulate_file(path, ["age", "sex"], population_size=1e7, batch_rows=50_000)
        else:
            Microdata.from_source(path, ["age", "sex"], population_size=1e7)
    _refused(err.value, "both.csv", 400_002)


# --- how the line is written -------------------------------------------------------------

@pytest.mark.parametrize("variant", ["crlf", "bom", "quoted", "semicolon", "blank_lines"])
def test_written_variants(tmp_path, variant):
    """The repeated line is found however the exports wrote it: CRLF line ends, a UTF-8
    byte-order mark before each file's header (Excel's 'CSV UTF-8'), quoted names, ';'
    separators, blank lines (counted in the line number, as an editor counts them)."""
    header, rows, options, line = HEADER, ROWS, {}, 5
    if variant == "crlf":
        options = {"newline": "\r\n"}
    elif variant == "bom":
        options = {"bom": "\ufeff"}
    elif variant == "quoted":
        header = '"age","sex","region"'
    elif variant == "semicolon":
        header, rows = "age;sex;region", [r.replace(",", ";") for r in ROWS]
    elif variant == "blank_lines":
        rows, line = [*ROWS, ""], 6
    path = _joined(tmp_path, header=header, rows=rows, **options)
    for read in (lambda: Microdata.from_source(path, KEYS, population_size=1000),
                 lambda: tabulate_file(path, KEYS, population_size=1000)):
        with pytest.raises(InputError) as err:
            read()
        _refused(err.value, "both.csv", line)


def test_gzip_file(tmp_path):
    """A compressed file: the line of the decompressed text, and no awk line (it would run
    on the compressed bytes)."""
    text = _joined(tmp_path).read_bytes()
    path = tmp_path / "both.csv.gz"
    path.write_bytes(gzip.compress(text))
    for read in (lambda: Microdata.from_source(path, KEYS, population_size=1000),
                 lambda: tabulate_file(path, KEYS, population_size=1000)):
        with pytest.raises(InputError) as err:
            read()
        _refused(err.value, "both.csv.gz", 5)
        assert "gzip-decompressed" in str(err.value) and "awk" not in str(err.value)


def test_several_repeats_are_counted(tmp_path):
    path = _joined(tmp_path, copies=5)
    with pytest.raises(InputError) as err:
        Microdata.from_source(path, KEYS, population_size=1000)
    _refused(err.value, "both.csv", 5)
    assert "(and 3 more such lines: 9, 13, ...)" in str(err.value)


def test_scan_across_chunk_boundaries(tmp_path, monkeypatch):
    """The file scan reads fixed-size chunks: lines cut by a chunk's end are found and
    numbered alike."""
    from sdcrisk.data import repeated_header

    path = _joined(tmp_path, copies=4)
    for chunk in (1, 3, 7, 16, 1 << 24):
        monkeypatch.setattr(repeated_header, "_CHUNK", chunk)
        assert repeated_header.header_lines(path, None, ",", KEYS) == ([5, 9, 13], 3)


# --- partial matches are data ------------------------------------------------------------

PARTIAL = ["sex,sex,a", "age,1,region", "sex,sex,a", "40,sex,b", "age,1,region", "40,sex,b",
           "sex,sex,a"]


def _partial(tmp_path):
    """Records holding some of their columns' names: 'sex' in sex, 'age' in age and 'region'
    in region (every column but sex), 'sex' in sex only. Each cell has 2 or 3 records, so
    protect's k = 2 changes nothing."""
    path = tmp_path / "partial.csv"
    path.write_text("\n".join([HEADER, *PARTIAL]) + "\n")
    return path


def _cells(table) -> dict:
    out = {}
    for code, count in zip(table.cell_codes, table.counts, strict=True):
        out[tuple(str(lv[c]) for lv, c in zip(table.levels, code, strict=True))] = int(count)
    return out


EXPECTED = {("sex", "sex", "a"): 3, ("age", "1", "region"): 2, ("40", "sex", "b"): 2}


def test_partial_matches_are_read_as_data(tmp_path):
    path = _partial(tmp_path)
    memory = tabulate(Microdata.from_source(path, KEYS, population_size=1000))
    streamed = tabulate_file(path, KEYS, population_size=1000)
    for table in (memory, streamed):
        assert table.n == 7
        assert _cells(table) == EXPECTED


def test_every_key_matching_but_not_the_line_is_data(tmp_path):
    """Keys age and sex hold their names on line 3, the column not read (n) does not: a
    record, not a header (the file is scanned, the line is not a full match)."""
    path = tmp_path / "keys_only.csv"
    path.write_text("age,sex,n\n30,1,5\nage,sex,7\n30,1,6\n")
    memory = tabulate(Microdata.from_source(path, ["age", "sex"], population_size=100))
    streamed = tabulate_file(path, ["age", "sex"], population_size=100)
    freq = tabulate_frequencies(path, ["age", "sex"], population_size=100)
    for table in (memory, streamed):
        assert _cells(table) == {("30", "1"): 2, ("age", "sex"): 1}
    assert freq.sizes.tolist() == [1, 2] and freq.cells.tolist() == [1, 1]


def test_partial_matches_in_protect(capsys, tmp_path):
    path = _partial(tmp_path)
    out = tmp_path / "out.csv"
    code, _, err = _run(capsys, "protect", path, "--keys", ",".join(KEYS),
                        "--population-size", "1000", "--k-anonymity", "2", "--out", out)
    assert code == 0, err
    assert out.read_text().splitlines() == [HEADER, *PARTIAL]


def test_structural_zeros_file(capsys, tmp_path):
    """A structural-zeros CSV joined from two: the repeated header was refused as ''age'
    is not a level of 'age'', which sent the user to the levels."""
    data = _joined(tmp_path, copies=1)
    zeros = tmp_path / "zeros.csv"
    zeros.write_text("age,sex\n30,2\nage,sex\n40,1\n")
    code, _, err = _run(capsys, "assess", data, "--keys", "age,sex", "--population-size",
                        "1000", "--method", "loglinear", "--structural-zeros", zeros)
    assert code == 2
    assert "zeros.csv line 3: the header line is repeated as a condition" in err, err
    assert "keep only the first header line" in err


def test_windows_1252_file_and_household_ids(tmp_path):
    """A Windows export (not UTF-8: its text columns are read as bytes) with a household id
    column (read as bytes too): the repeated line is found among the bytes, in memory and
    streamed."""
    one = "hh,age,town\r\n1,30,Bogot\xe1\r\n1,40,Bogot\xe1\r\n2,30,C\xfacuta\r\n"
    path = tmp_path / "win.csv"
    path.write_bytes((one * 2).encode("cp1252"))
    for read in (lambda: Microdata.from_source(path, ["age", "town"], household="hh",
                                               population_size=1000),
                 lambda: tabulate_file(path, ["age", "town"], household="hh",
                                       population_size=1000)):
        with pytest.raises(InputError) as err:
            read()
        _refused(err.value, "win.csv", 5)
