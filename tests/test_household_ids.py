"""Household ids are labels, read by one rule in memory and streamed (sdcrisk.data.ids).

``07`` and ``7`` name two households, ``001`` and ``1`` two more; `` 7`` and ``7`` (blanks
around the text) one. Before, the streaming reader typed a mu-Argus file's ids as numbers
(``07`` = ``7``: one household streamed, two in memory), and both readers typed a CSV's ids
as pyarrow types numbers (one household each way). The household counts below are counted
by hand; the household risk figures are compared with those of the same file whose ids are
replaced by plain labels ``H1``... (a file no typing rule can misread).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import without_timings
from sdcrisk import Microdata, household_risk
from sdcrisk.cli import main
from sdcrisk.data.outofcore import tabulate_file
from sdcrisk.exceptions import InputError

#: the ids as written, and the household each names (counted by hand: 5 households)
IDS = ["07", "7", "001", "1", " 7", "1 ", "07", "001", "12", "7", "12", "1"]
HAND = ["H1", "H2", "H3", "H4", "H2", "H4", "H1", "H3", "H5", "H2", "H5", "H4"]
A = [1, 1, 2, 2, 1, 2, 1, 1, 2, 2, 1, 2]
B = ["x", "y", "x", "x", "x", "y", "y", "x", "x", "y", "x", "x"]
HOUSEHOLDS = 5


def _csv(path, ids) -> None:
    lines = ["hh,a,b"] + [f"{h},{a},{b}" for h, a, b in zip(ids, A, B, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def _muargus(folder, ids):
    (folder / "m.rda").write_text("HH 1 3\n  <HOUSE_ID>\nA 4 1\n  <IDLEVEL> 1\n"
                                  "B 5 1\n  <IDLEVEL> 1\n")
    (folder / "m.asc").write_text("".join(f"{h.strip():>3}{a}{b}\n"
                                          for h, a, b in zip(ids, A, B, strict=True)))
    return folder / "m.rda"


def _grouping(codes) -> list[int]:
    """Codes renumbered by first appearance: the grouping of records, whatever the order."""
    first: dict[int, int] = {}
    return [first.setdefault(int(c), len(first)) for c in codes]


def _both(path, keys, household):
    """The households read in memory and streamed (in batches of 5 records)."""
    mem = Microdata.from_source(path, keys, household=household)
    ooc = tabulate_file(path, keys, household=household, batch_rows=5, record_cell="memory")
    np.testing.assert_array_equal(np.asarray(ooc.household), mem.household)
    return mem.household


@pytest.mark.parametrize("kind", ["csv", "muargus"])
def test_ids_are_labels_in_memory_and_streamed(tmp_path, kind):
    path = tmp_path / "h.csv"
    if kind == "csv":
        _csv(path, IDS)
        keys, household = ["a", "b"], "hh"
    else:
        path = _muargus(tmp_path, IDS)
        keys, household = ["A", "B"], "HH"
    codes = _both(path, keys, household)
    assert codes.max() + 1 == HOUSEHOLDS
    assert _grouping(codes) == _grouping([int(h[1:]) for h in HAND])
    # the record risks of any table give the same household risk either way
    r = np.linspace(0.05, 0.9, len(IDS))
    hand = household_risk(r, np.array([int(h[1:]) - 1 for h in HAND]))
    np.testing.assert_allclose(household_risk(r, codes), hand, rtol=1e-15)


def _assess(tmp_path, path, *extra):
    out = tmp_path / "out.json"
    assert main(["assess", str(path), "--keys", "a,b", "--household", "hh", "--method", "nb",
                 "--sampling-fraction", "0.1", "--format", "json", "--out", str(out),
                 *extra]) == 0
    return without_timings(json.loads(out.read_text()))


def test_cli_in_memory_equals_out_of_core_and_hand_labels(tmp_path):
    path, hand = tmp_path / "h.csv", tmp_path / "hand.csv"
    _csv(path, IDS)
    _csv(hand, HAND)
    mem = _assess(tmp_path, path)
    assert _assess(tmp_path, path, "--out-of-core") == mem
    figures = {k: v for k, v in mem["measures"].items() if k.startswith("household")}
    assert set(figures) == {"household_expected_reidentifications", "household_global_risk"}
    assert figures == {k: v for k, v in _assess(tmp_path, hand)["measures"].items()
                       if k.startswith("household")}
    # as numbers (07 = 7, 001 = 1) the households would be 3, and the figures others
    merged = tmp_path / "merged.csv"
    _csv(merged, [str(int(h)) for h in IDS])
    other = _assess(tmp_path, merged)["measures"]
    assert other["household_global_risk"] != figures["household_global_risk"]


def test_parquet_integer_and_text_ids(tmp_path):
    path = tmp_path / "h.parquet"
    ints = [int(h) for h in IDS]
    pq.write_table(pa.table({"hh_int": pa.array(ints, pa.int64()), "hh_text": IDS,
                             "a": A, "b": B}), path, row_group_size=5)
    codes = _both(path, ["a", "b"], "hh_int")
    assert codes.max() + 1 == 3  # 7, 1, 12: numbers
    np.testing.assert_array_equal(codes, np.unique(ints, return_inverse=True)[1])
    codes = _both(path, ["a", "b"], "hh_text")  # text: labels, as in a CSV
    assert codes.max() + 1 == HOUSEHOLDS
    assert _grouping(codes) == _grouping([int(h[1:]) for h in HAND])


def test_whole_numbers_are_ordered_by_value_and_text_as_text(tmp_path):
    path = tmp_path / "h.csv"
    ids = ["10", "9", "-3", "9", "0", "10", "9", "-3", "0", "10", "9", "0"]
    _csv(path, ids)
    # written as whole numbers (no leading zero): one number per text, ordered by value
    np.testing.assert_array_equal(_both(path, ["a", "b"], "hh"),
                                  np.unique([int(i) for i in ids], return_inverse=True)[1])
    ids[3] = "+9"  # another spelling of 9: the column is text, "+9" its own household
    _csv(path, ids)
    codes = _both(path, ["a", "b"], "hh")
    np.testing.assert_array_equal(codes, np.unique(ids, return_inverse=True)[1])
    assert codes.max() + 1 == 5
    # text only in the last batch of 5 (pass 1 merges numbers and text as text); 0x10 is
    # not 16, -0 not 0, a 19-digit id past int64 text
    for last in ("012", "0x10", "-0", "9" * 19):
        ids = [str(i) for i in range(1, 12)] + [last]
        _csv(path, ids)
        codes = _both(path, ["a", "b"], "hh")
        np.testing.assert_array_equal(codes, np.unique(ids, return_inverse=True)[1])
        assert codes.max() + 1 == 12


def test_ids_not_utf8_and_blank_ids(tmp_path):
    path = tmp_path / "h.csv"
    rows = [b"caf\xe9", b"cafe", b"caf\xe9 ", b"Caf\xe9"] * 3  # Latin-1: 3 households
    path.write_bytes(b"hh,a,b\n" + b"".join(
        h + f",{a},{b}\n".encode() for h, a, b in zip(rows, A, B, strict=True)))
    codes = _both(path, ["a", "b"], "hh")
    assert _grouping(codes) == [0, 1, 0, 2] * 3
    _csv(path, IDS[:4] + ["   "] + IDS[5:])
    for read in (lambda: Microdata.from_source(path, ["a"], household="hh"),
                 lambda: tabulate_file(path, ["a"], household="hh", batch_rows=5)):
        with pytest.raises(InputError, match="household column 'hh' is blank at row 5"):
            read()


def test_frames_follow_the_same_rule():
    frame = pd.DataFrame({"hh": IDS, "a": A, "b": B})
    md = Microdata.from_source(frame, ["a", "b"], household="hh")
    assert _grouping(md.household) == _grouping([int(h[1:]) for h in HAND])
    frame["hh"] = [int(h) for h in IDS]
    assert Microdata.from_source(frame, ["a", "b"], household="hh").household.max() == 2
