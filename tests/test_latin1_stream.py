"""Windows-1252 / Latin-1 CSV files through the streaming reader, read as in memory.

The in-memory reader decodes each value of a column that is not UTF-8 as UTF-8, else as
Windows-1252, else as Latin-1 (:func:`sdcrisk.data.text.decode_text`); the streaming reader
(``--out-of-core``, and the automatic route for a file over the memory limit) refused such a
file. Now it reads the keys of such a file as bytes and decodes each distinct value by the
same rule, so both give the same table and the same measures.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import sdcrisk.data.outofcore as outofcore
from sdcrisk import Microdata, tabulate
from sdcrisk.cli import main
from sdcrisk.data.outofcore import tabulate_file
from sdcrisk.data.route import in_memory_bytes
from sdcrisk.exceptions import InputError

#: (city, sex, weight): cells (Zürich,1) x2, (Genève,2) x2, (München,1) x2 and four sample
#: uniques (Genève,1), (Köln,1), (€uro,2), (a–b,2); n = 10. '€' and '–' are the
#: Windows-1252 bytes 0x80 and 0x96 (Latin-1 control characters, read as such until
#: 2026-11-25).
ROWS = [("Zürich", "1", "10"), ("Zürich", "1", "10"), ("Genève", "2", "20"),
        ("Genève", "2", "20"), ("Genève", "1", "30"), ("Köln", "1", "10"),
        ("\u20acuro", "2", "10"), ("a\u2013b", "2", "10"), ("München", "1", "20"),
        ("München", "1", "20")]
N, UNIQUES, CELLS = 10, 4, 7


def _write(path, sep=",", rows=ROWS, header=("city", "sex", "w")):
    lines = [sep.join(header)] + [sep.join(r) for r in rows]
    raw = ("\n".join(lines) + "\n").encode("cp1252")
    assert b"\x80" in raw and b"\x96" in raw and b"\xfc" in raw  # not UTF-8
    if path.name.endswith(".gz"):
        raw = gzip.compress(raw)
    path.write_bytes(raw)
    return path


def _assess(capsys, path, *extra, keys="city,sex"):
    code = main(["assess", str(path), "--keys", keys, "--format", "json", "--quiet",
                 *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    got.pop("seconds", None)  # timings and the run's provenance differ between two runs
    got.get("diagnostics", {}).pop("seconds", None)
    got.pop("provenance", None)
    return got


@pytest.mark.parametrize("name, sep", [("plain.csv", ","), ("packed.csv.gz", ","),
                                       ("semi.csv", ";")])
@pytest.mark.parametrize("extra", [("--population-size", "1000", "--method", "nb"),
                                   ("--weights", "w", "--method", "nb")],
                         ids=["frequencies", "cells"])
def test_assess_streamed_equals_in_memory(capsys, tmp_path, name, sep, extra):
    path = _write(tmp_path / name, sep)
    memory = _assess(capsys, path, *extra)
    streamed = _assess(capsys, path, *extra, "--out-of-core")
    assert memory["n"] == streamed["n"] == N
    assert memory["sample_uniques"] == streamed["sample_uniques"] == UNIQUES
    assert memory["observed_cells"] == streamed["observed_cells"] == CELLS
    if "--weights" in extra:
        assert streamed["population_size"] == 160.0  # the weights' sum
    for m in ("tau1", "tau2"):
        assert streamed["measures"][m]["estimate"] == pytest.approx(
            memory["measures"][m]["estimate"], rel=1e-12)
        assert streamed["measures"][m]["estimate"] > 0
    assert streamed == memory  # the whole JSON output: labels, k-anonymity, every measure


@pytest.mark.parametrize("name, sep", [("plain.csv", ","), ("semi.csv.gz", ";")])
def test_tabulate_file_has_the_in_memory_labels_and_record_map(tmp_path, name, sep):
    path = _write(tmp_path / name, sep)
    ref = tabulate(Microdata.from_source(path, ["city", "sex"], weights="w"))
    got = tabulate_file(path, ["city", "sex"], weights="w", record_cell="memory")
    # 0x80 and 0x96 are read as Windows-1252's '€' and '–', not as Latin-1's control
    # characters (the counts do not depend on it)
    want = ["Genève", "Köln", "München", "Zürich", "a–b", "€uro"]
    assert sorted(map(str, ref.levels[0])) == want
    assert [str(v) for v in got.levels[0]] == [str(v) for v in ref.levels[0]]
    assert [int(v) for v in got.levels[1]] == [int(v) for v in ref.levels[1]] == [1, 2]
    assert got.counts.tolist() == ref.counts.tolist()
    assert sorted(got.counts.tolist()) == [1, 1, 1, 1, 2, 2, 2]
    np.testing.assert_array_equal(np.asarray(got.record_cell), np.asarray(ref.record_cell))
    np.testing.assert_allclose(got.weight_sums, ref.weight_sums)


def test_mixed_utf8_and_latin1_values_are_decoded_value_by_value(tmp_path):
    """The in-memory rule is per value: 'Zürich' written in UTF-8 on one line and in Latin-1
    on another is one category of two records, streamed as in memory."""
    path = tmp_path / "mixed.csv"
    path.write_bytes(b"city,sex\n" + "Zürich,1\n".encode()
                     + "Zürich,1\nGenève,2\n".encode("latin-1") + b"x,1\n")
    ref = tabulate(Microdata.from_source(path, ["city", "sex"]))
    got = tabulate_file(path, ["city", "sex"], record_cell="memory")
    assert [str(v) for v in got.levels[0]] == [str(v) for v in ref.levels[0]] == [
        "Genève", "Zürich", "x"]
    assert got.counts.tolist() == ref.counts.tolist()
    assert sorted(got.counts.tolist()) == [1, 1, 2]
    np.testing.assert_array_equal(np.asarray(got.record_cell), np.asarray(ref.record_cell))


def test_utf8_key_columns_keep_their_type_in_a_latin1_file(tmp_path):
    """Only a column that is not UTF-8 is text: 'sex' (digits) stays integer codes, as the
    in-memory reader types it, and a code column holding a Latin-1 value is text."""
    path = tmp_path / "types.csv"
    path.write_bytes("a,b\n1,Zürich\n2,x\n10,y\n".encode("latin-1")
                     + b"3,\xe9\n")
    ref = tabulate(Microdata.from_source(path, ["a", "b"]))
    got = tabulate_file(path, ["a", "b"], record_cell="memory")
    assert [int(v) for v in got.levels[0]] == [int(v) for v in ref.levels[0]] == [1, 2, 3, 10]
    assert [str(v) for v in got.levels[1]] == [str(v) for v in ref.levels[1]]
    assert "é" in [str(v) for v in got.levels[1]]


def test_latin1_past_the_first_block_is_read_again_as_bytes(capsys, tmp_path):
    """The first 64 KiB (and the 16 MiB block that types the columns) are ASCII: pass 1
    fails on the last line's byte and reads the file again with its keys as bytes."""
    path = tmp_path / "late.csv"
    path.write_bytes(b"region,sex\n" + b"1,2\n" * 2_000_000 + b"\xe9,2\n")
    extra = ("--population-size", "1e8", "--method", "nb")
    streamed = _assess(capsys, path, *extra, "--out-of-core", keys="region,sex")
    memory = _assess(capsys, path, *extra, keys="region,sex")
    assert streamed["n"] == memory["n"] == 2_000_001
    assert streamed["sample_uniques"] == memory["sample_uniques"] == 1
    assert streamed["observed_cells"] == memory["observed_cells"] == 2
    assert streamed["measures"] == memory["measures"]


def test_auto_route_streams_a_latin1_file_over_the_memory_limit(capsys, tmp_path,
                                                                monkeypatch):
    # 20,000 more records in one cell: the file outgrows the model's own memory need
    path = _write(tmp_path / "big.csv", rows=ROWS + [("Bern", "2", "10")] * 20_000)
    extra = ("--weights", "w", "--method", "nb")
    memory = _assess(capsys, path, *extra)
    streamed = []
    count_csv = outofcore._count_csv

    def spy(*args, **kwargs):
        streamed.append(args[0])
        return count_csv(*args, **kwargs)

    monkeypatch.setattr(outofcore, "_count_csv", spy)
    # just under what the file takes in memory (the model itself needs a little more)
    need = in_memory_bytes(path, ["city", "sex"], ["w"])
    assert need is not None and need > 100
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", str(need - 1))
    routed = _assess(capsys, path, *extra)
    assert streamed == [path]  # the route chose the streaming reader
    assert routed["n"] == N + 20_000 and routed["sample_uniques"] == UNIQUES
    for m in ("tau1", "tau2"):
        assert routed["measures"][m]["estimate"] == pytest.approx(
            memory["measures"][m]["estimate"], rel=1e-12)


def test_column_names_not_utf8_are_refused_streamed_as_in_memory(tmp_path):
    path = _write(tmp_path / "names.csv", header=("städt", "sex", "w"))
    with pytest.raises(InputError, match="column name .* is not UTF-8") as memory:
        Microdata.from_source(path, ["sex"])
    with pytest.raises(InputError, match="column name .* is not UTF-8") as streamed:
        tabulate_file(path, ["sex"])
    assert str(streamed.value) == str(memory.value)
    assert "re-save the file as UTF-8" in str(streamed.value)


def test_household_ids_not_utf8_are_decoded_as_in_memory(tmp_path):
    """Household ids are decoded like keys: 'é' (Latin-1) and 'a' are two households,
    coded by the rank of the decoded id, as in memory."""
    path = tmp_path / "hh.csv"
    path.write_bytes("city,hh\nZürich,a\nGenève,\xe9\nx,\xe9\n".encode("latin-1"))
    ref = tabulate(Microdata.from_source(path, ["city"], household="hh"))
    got = tabulate_file(path, ["city"], household="hh", record_cell="memory")
    assert np.asarray(got.household).tolist() == np.asarray(ref.household).tolist() == [0, 1, 1]
    assert [str(v) for v in got.levels[0]] == ["Genève", "Zürich", "x"]


def test_weights_not_utf8_are_named_as_in_memory(tmp_path):
    """A semicolon-separated file reads its weights as text: one that is not UTF-8 is not a
    number either, named in the in-memory reader's words."""
    path = tmp_path / "w.csv"
    path.write_bytes("city;w\nZürich;2,5\nGenève;\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as memory:
        Microdata.from_source(path, ["city"], weights="w")
    with pytest.raises(InputError) as streamed:
        tabulate_file(path, ["city"], weights="w")
    assert str(streamed.value) == str(memory.value) == (
        "weights column 'w' is not numeric: value 'é'")


def test_numeric_household_ids_in_a_latin1_file_stay_numbers(tmp_path):
    """Ids that are all UTF-8 digits are numbers, as in memory: 2 < 3 < 10 (as text '10'
    would sort first); ' 3' is 3 (this crashed the streaming reader with ArrowInvalid,
    in UTF-8 files too)."""
    path = tmp_path / "hh.csv"
    path.write_bytes("city,hh,w\nZürich,10,1.5\nGenève,2,2\nx,2,3\ny, 3,1\n".encode("latin-1"))
    ref = tabulate(Microdata.from_source(path, ["city"], household="hh", weights="w"))
    got = tabulate_file(path, ["city"], household="hh", weights="w", record_cell="memory")
    assert np.asarray(got.household).tolist() == np.asarray(ref.household).tolist() == [
        2, 0, 0, 1]
    assert got.weight_sums.tolist() == ref.weight_sums.tolist() == [2.0, 1.5, 3.0, 1.0]


def test_parts_in_utf8_and_in_latin1_merge_into_one_table(tmp_path):
    """The cluster path (count_part, plan_cells, part_record_cells): one part in UTF-8 and
    one in Latin-1 count 'Zürich' as one category; pass 2 reads each part as pass 1's plan
    needs (as bytes)."""
    from sdcrisk.data.outofcore import count_part, part_record_cells, plan_cells

    one, two = tmp_path / "p1.csv", tmp_path / "p2.csv"
    one.write_bytes("city,sex\nZürich,1\nx,2\n".encode())
    two.write_bytes("city,sex\nZürich,1\nGenève,2\n".encode("latin-1"))
    parts = [count_part(p, ["city", "sex"]) for p in (one, two)]
    plan = plan_cells(parts, ["city", "sex"], weighted=False)
    assert [str(v) for v in plan.levels[0]] == ["Genève", "Zürich", "x"]
    assert plan.counts.tolist() == [1, 2, 1]  # (Genève,2), (Zürich,1) twice, (x,2)
    assert [part_record_cells(p, plan.mapper(), 2).tolist() for p in (one, two)] == [
        [1, 2], [1, 0]]


def _labels_both(path, keys):
    """The tables of ``path`` in memory and streamed, and the cells' labels (a result's
    internal cells, as JSON) of each: equal."""
    from sdcrisk import NegativeBinomialRisk

    ref = tabulate(Microdata.from_source(path, keys))
    got = tabulate_file(path, keys, record_cell="memory")
    assert got.counts.tolist() == ref.counts.tolist()
    np.testing.assert_array_equal(np.asarray(got.record_cell), np.asarray(ref.record_cell))
    cells = [json.loads(NegativeBinomialRisk().fit(t, population_size=1000).cells(
        internal=True).to_json(orient="records")) for t in (ref, got)]
    assert cells[0] == cells[1]
    return ref, cells[0]


def test_windows_1252_labels_print_as_written_in_memory_and_streamed(tmp_path):
    """0x80 and 0x96 are '€' and '–' (they were the control characters U+0080 and U+0096):
    the JSON labels of the cells, in memory and streamed, CSV and mu-Argus."""
    path = _write(tmp_path / "w.csv")
    ref, cells = _labels_both(path, ["city", "sex"])
    assert "€uro" in ref.levels[0] and "a–b" in ref.levels[0]
    assert {c["city"] for c in cells} >= {"€uro", "a–b", "Zürich"}
    assert not any("\x80" in c["city"] or "\x96" in c["city"] for c in cells)
    # a mu-Argus file of the same bytes (fixed format) reads them alike
    (tmp_path / "m.rda").write_text("CITY 1 8\n  <IDLEVEL> 1\nSEX 9 1\n  <IDLEVEL> 1\n")
    (tmp_path / "m.asc").write_bytes(b"".join(
        city.encode("cp1252").ljust(8) + sex.encode() + b"\n" for city, sex, _ in ROWS))
    mu, mu_cells = _labels_both(str(tmp_path / "m.rda"), ["CITY", "SEX"])
    assert [str(v) for v in mu.levels[0]] == [str(v) for v in ref.levels[0]]
    assert [c["CITY"] for c in mu_cells] == [c["city"] for c in cells]


def test_bytes_undefined_in_windows_1252_read_as_latin1(tmp_path):
    """A value holding 0x81, 0x8D, 0x8F, 0x90 or 0x9D (undefined in cp1252) is read as
    Latin-1, the whole value: b'\\x80\\x81' is '\\x80\\x81', distinct from b'\\x80' ('€')."""
    path = tmp_path / "u.csv"
    values = [b"\x80", b"\x80\x81", b"x\x8dy", b"\x90", b"\x9d", b"\x8f", b"\x81", b"\x96"]
    path.write_bytes(b"v,s\n" + b"".join(v + b",1\n" for v in values))
    ref, cells = _labels_both(path, ["v", "s"])
    assert sorted(map(str, ref.levels[0])) == sorted(
        ["€", "\x80\x81", "x\x8dy", "\x90", "\x9d", "\x8f", "\x81", "–"])
    assert ref.counts.tolist() == [1] * len(values)


def test_distinct_bytes_stay_distinct_and_spellings_of_one_text_are_one(tmp_path):
    """Counts are those of the distinct byte strings, except two encodings of one text: every
    single byte 0x80-0xFF (128 byte strings, not UTF-8) gives its own label; '–' written as
    UTF-8 (e2 80 93) and as the Windows-1252 byte 0x96 is one label of two records, as
    'é' in UTF-8 and in Latin-1 was before (docs/errors.md), in memory and streamed."""
    path = tmp_path / "d.csv"
    singles = [bytes([b]) for b in range(0x80, 0x100)]
    path.write_bytes(b"v,s\n" + b"".join(b"x" + v + b",1\n" for v in singles)
                     + "x–,1\n".encode() + "xé,1\n".encode())
    ref, _ = _labels_both(path, ["v", "s"])
    assert len(ref.levels[0]) == 128  # 130 byte strings, 2 of them other spellings
    assert sorted(ref.counts.tolist()) == [1] * 126 + [2, 2]
    counts = dict(zip([str(v) for v in ref.levels[0]], ref.counts.tolist(), strict=True))
    assert counts["x–"] == counts["xé"] == 2 and counts["x€"] == 1
