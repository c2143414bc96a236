"""mu-Argus files at census scale: read block by block, streamed with --out-of-core.

The data file is cut into blocks of bytes (``sdcrisk.data.asc.BLOCK_BYTES``); here the blocks
are made tiny (1 to 64 bytes, so that a block ends inside a record, a line end, a ``\\r\\n``)
and the table must be exactly the one read whole, the one streamed, and the one of the same
records as a CSV file: same levels, cell codes, counts, weight sums and record map.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sdcrisk.cli import main
from sdcrisk.data import asc
from sdcrisk.data.muargus import read_metadata, read_records
from sdcrisk.data.outofcore import tabulate_file
from sdcrisk.data.route import needs_out_of_core, tabulate_path
from sdcrisk.data.table import tabulate_source

RNG = np.random.default_rng(20)
N = 400
REG = [f"{r:02d}" for r in RNG.integers(1, 13, N)]                    # leading zeros: text
AGE = [("999" if a == 999 else str(a)) for a in
       RNG.choice([5, 17, 42, 88, 999], N, p=[.3, .3, .2, .15, .05])]  # 999: missing code
SEX = list(RNG.choice(["F", "M", ""], N, p=[.48, .48, .04]))          # blank: missing
OCC = list(RNG.choice(["clerk", "teacher", "engineer x", "nurse"], N))  # 10 columns wide
WGT = [f"{w:.2f}" for w in RNG.uniform(10, 99, N)]
RDA = """// fixed format: NAME START WIDTH MISSING
REG 1 2
  <IDLEVEL> 1
AGE 3 3 999
  <IDLEVEL> 1
SEX 6 1
  <IDLEVEL> 2
OCC 8 10
  <IDLEVEL> 2
WGT 19 6
  <WEIGHT>
"""
KEYS = ["REG", "AGE", "SEX", "OCC"]


def records() -> list[str]:
    return [f"{r:>2}{a:>3}{s:>1} {o:<10} {w:>6}"
            for r, a, s, o, w in zip(REG, AGE, SEX, OCC, WGT, strict=True)]


def write(folder: Path, ends: str = "\n", last_newline: bool = True, tail: str = "") -> Path:
    """``s.rda`` and ``s.asc``: line ends ``\\n``, ``\\r\\n`` or ``mixed`` (alternating, so
    the lines differ in length), a last line without a line end, ``tail`` after it."""
    lines = records()
    seps = ["\r\n" if ends == "\r\n" or (ends == "mixed" and i % 3 == 0) else "\n"
            for i in range(len(lines))]
    body = "".join(line + sep for line, sep in zip(lines, seps, strict=True))
    if not last_newline:
        body = body[:-len(seps[-1])]
    (folder / "s.asc").write_bytes((body + tail).encode())
    (folder / "s.rda").write_text(RDA)
    return folder / "s.rda"


def write_csv(folder: Path) -> Path:
    """The same records as a CSV file (missing as empty cells), without REG: a CSV reader
    reads its leading zeros as numbers."""
    rows = ["AGE,SEX,OCC,WGT"] + [f"{'' if a == '999' else a},{s},{o},{w}"
                                  for a, s, o, w in zip(AGE, SEX, OCC, WGT, strict=True)]
    path = folder / "s.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def same_table(a, b) -> None:
    assert a.keys == b.keys
    assert a.levels == b.levels
    np.testing.assert_array_equal(a.cell_codes, b.cell_codes)
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(np.asarray(a.record_cell), np.asarray(b.record_cell))
    if a.weight_sums is None:
        assert b.weight_sums is None
    else:
        np.testing.assert_allclose(a.weight_sums, b.weight_sums, rtol=1e-12)


@pytest.mark.parametrize("ends", ["\n", "\r\n", "mixed"])
@pytest.mark.parametrize("last_newline", [True, False])
def test_streamed_blocks_equal_the_table_read_whole(tmp_path, monkeypatch, ends,
                                                     last_newline):
    rda = str(write(tmp_path, ends, last_newline, tail="\n  \n" if last_newline else ""))
    whole = tabulate_source(rda, KEYS, weights="WGT")
    # the values as written: leading zeros kept as text, 999 and blank missing, the wide
    # text column stripped, the integer column typed as integers
    assert whole.levels[0] == tuple(f"{r:02d}" for r in range(1, 13))
    assert whole.levels[1][:4] == (5, 17, 42, 88)
    assert whole.levels[3] == ("clerk", "engineer x", "nurse", "teacher")
    assert whole.n == N
    got, n = read_records(read_metadata(rda), KEYS)
    assert n == N
    np.testing.assert_array_equal(got["AGE"][1], np.array(AGE) == "999")
    np.testing.assert_array_equal(got["SEX"][1], np.array(SEX) == "")
    for size in (1, 2, 7, 64, 1 << 20):
        monkeypatch.setattr(asc, "BLOCK_BYTES", size)
        same_table(whole, tabulate_file(rda, KEYS, weights="WGT"))
        same_table(whole, tabulate_source(rda, KEYS, weights="WGT"))
        unweighted = tabulate_source(rda, KEYS)
        for engine in ("pyarrow", "duckdb"):  # Arrow's batches, DuckDB over the batches
            same_table(unweighted, tabulate_file(rda, KEYS, engine=engine))


def test_streamed_equals_the_csv(tmp_path, monkeypatch):
    rda = str(write(tmp_path, "\r\n"))
    csv = write_csv(tmp_path)
    keys = KEYS[1:]
    monkeypatch.setattr(asc, "BLOCK_BYTES", 5)
    streamed = tabulate_file(rda, keys, weights="WGT")
    same_table(tabulate_source(csv, keys, weights="WGT"), streamed)
    assert streamed.counts.sum() == N
    # one cell per observed (age, sex, occupation): the counts a Python count gives
    combos = {(a, s, o) for a, s, o in zip(AGE, SEX, OCC, strict=True)}
    assert len(streamed.counts) == len(combos)


def test_free_format_streamed_equals_whole(tmp_path, monkeypatch):
    lines = [f'{r};{a};{s};"{o}";{w}' for r, a, s, o, w in zip(REG, AGE, SEX, OCC, WGT,
                                                               strict=True)]
    (tmp_path / "f.asc").write_bytes(("\r\n".join(lines) + "\r\n\r\n").encode())
    (tmp_path / "f.rda").write_text('<SEPARATOR> ";"\nREG 2\n <IDLEVEL> 1\nAGE 3 999\n'
                                    " <IDLEVEL> 1\nSEX 1\nOCC 10\nWGT 6\n <WEIGHT>\n")
    rda = str(tmp_path / "f.rda")
    whole = tabulate_source(rda, KEYS, weights="WGT")
    assert whole.levels[0][0] == "01" and whole.levels[3][1] == "engineer x"
    for size in (3, 50, 1 << 20):
        monkeypatch.setattr(asc, "BLOCK_BYTES", size)
        same_table(whole, tabulate_file(rda, KEYS, weights="WGT"))
        same_table(whole, tabulate_source(rda, KEYS, weights="WGT"))


def measures(capsys, *args: str) -> dict:
    assert main(["assess", *args, "--population-size", "20000", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return {k: out["measures"][k]["estimate"] for k in ("tau1", "tau2")} | {
        "sample_uniques": out["sample_uniques"], "cells": out["observed_cells"]}


@pytest.mark.parametrize("method", [["--method", "nb"], ["--method", "pitman-yor"], []])
def test_out_of_core_cli_equals_in_memory(capsys, tmp_path, monkeypatch, method):
    rda = str(write(tmp_path, "mixed"))
    monkeypatch.setattr(asc, "BLOCK_BYTES", 33)
    keys = ["--keys", ",".join(KEYS)]
    whole = measures(capsys, rda, *keys, *method)
    assert whole == measures(capsys, rda, *keys, *method, "--out-of-core")
    assert whole["cells"] == len(set(zip(REG, AGE, SEX, OCC, strict=True)))


def test_automatic_choice_streams_an_rda(tmp_path, monkeypatch):
    rda = str(write(tmp_path))
    assert not needs_out_of_core(rda, KEYS)
    assert needs_out_of_core(rda, KEYS, limit=1000)
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1000")
    streamed = tabulate_path(rda, KEYS)
    assert isinstance(streamed.record_cell, np.memmap)  # the out-of-core record map
    same_table(tabulate_source(rda, KEYS), streamed)


@pytest.mark.parametrize("out_of_core", [False, True])
def test_ragged_line_deep_in_the_file(capsys, tmp_path, monkeypatch, out_of_core):
    lines = records()
    lines[336] = lines[336][:9]  # cut inside OCC (columns 8-17)
    (tmp_path / "s.asc").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.rda").write_text(RDA)
    monkeypatch.setattr(asc, "BLOCK_BYTES", 100)
    extra = ["--out-of-core"] if out_of_core else []
    assert main(["assess", str(tmp_path / "s.rda"), "--keys", ",".join(KEYS),
                 "--method", "nb", "--population-size", "9000", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0] == ("sdcrisk: error: s.asc, line 337: the record has 9 characters; "
                      "variable 'OCC' of s.rda (line 8) runs to column 17; check that the "
                      "data file goes with this metadata (or correct START WIDTH there)")


@pytest.mark.parametrize("out_of_core", [False, True])
def test_free_format_bad_line_deep_in_the_file(capsys, tmp_path, monkeypatch, out_of_core):
    lines = [f"{r};{a};{s}" for r, a, s in zip(REG, AGE, SEX, strict=True)]
    lines[250] += ";x"
    (tmp_path / "f.asc").write_text("\n".join(lines) + "\n")
    (tmp_path / "f.rda").write_text('<SEPARATOR> ";"\nREG 2\nAGE 3\nSEX 1\n')
    monkeypatch.setattr(asc, "BLOCK_BYTES", 64)
    extra = ["--out-of-core"] if out_of_core else []
    assert main(["assess", str(tmp_path / "f.rda"), "--keys", "REG,AGE,SEX",
                 "--method", "nb", "--population-size", "9000", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sdcrisk: error: f.asc, line 251: 4 values "
                                               "separated by ';', but f.rda declares 3")


def test_household_and_weights_streamed_equal_whole(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    n = 300
    hh = np.sort(rng.integers(1, 120, n))
    lines = [f"{h:>4}{a:>2}{s}{w:>6.2f}" for h, a, s, w in
             zip(hh, rng.integers(1, 9, n), rng.choice(list("FM"), n), rng.uniform(1, 9, n),
                 strict=True)]
    (tmp_path / "h.asc").write_text("\n".join(lines) + "\n")
    (tmp_path / "h.rda").write_text("HH 1 4\n <HOUSE_ID>\nAGE 5 2\nSEX 7 1\nW 8 6\n <WEIGHT>\n")
    rda = str(tmp_path / "h.rda")
    whole = tabulate_source(rda, ["AGE", "SEX"], weights="W", household="HH")
    monkeypatch.setattr(asc, "BLOCK_BYTES", 50)
    streamed = tabulate_file(rda, ["AGE", "SEX"], weights="W", household="HH")
    same_table(whole, streamed)
    np.testing.assert_array_equal(np.asarray(whole.household), np.asarray(streamed.household))
    assert len(np.unique(np.asarray(streamed.household))) == len(np.unique(hh))


def test_missing_error_counts_the_records(tmp_path):
    rda = str(write(tmp_path))
    with pytest.raises(Exception, match=r"column 'AGE' has 21 missing value") as streamed:
        tabulate_file(rda, KEYS, missing="error")
    assert AGE.count("999") == 21
    with pytest.raises(type(streamed.value), match="column 'AGE' has 21 missing value"):
        tabulate_source(rda, KEYS, missing="error")
