"""mu-Argus microdata (.rda + .asc) and Excel workbooks read as they are.

Staff coming from mu-Argus bring a fixed- or free-format ASCII file and its metadata; staff
coming from spreadsheets bring a workbook. Each must give exactly the table (sample uniques,
observed cells, tau1 and tau2 of nb) that the same records give as a CSV file, missing codes
must become missing values, the .rda's identifying variables are the default keys, and every
malformed metadata or data file is one line naming the file, the line and the remedy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data
from sdcrisk.cli import main

RNG = np.random.default_rng(11)
N_RECORDS = 300
FRAME = pd.DataFrame({
    "age": RNG.integers(15, 80, N_RECORDS) // 5,
    "sex": RNG.choice(["F", "M"], N_RECORDS),
    "region": RNG.integers(1, 13, N_RECORDS),
    "wgt": RNG.uniform(50, 150, N_RECORDS).round(2),
})
KEYS = "age,sex,region"


def write_fixed(frame: pd.DataFrame, folder: Path, name: str = "survey", *,
                missing: dict | None = None, idlevel: dict | None = None,
                weight: str | None = None, gap: int = 1) -> Path:
    """``name.asc`` (fixed format, values right-aligned, ``gap`` blanks between fields)
    and ``name.rda``; returns the .rda path."""
    missing, idlevel = missing or {}, idlevel or {}
    text = {c: frame[c].map(lambda v: "" if pd.isna(v) else str(v)) for c in frame.columns}
    widths = {c: max(1, *(len(v) for v in text[c]),
                     *(len(m) for m in missing.get(c, ()))) for c in frame.columns}
    lines, start = [], 1
    for c in frame.columns:
        codes = " ".join(f'"{m}"' for m in missing.get(c, ()))
        lines.append(f"{c} {start} {widths[c]} {codes}".rstrip())
        lines.append("  <RECODEABLE>" if c != weight else "  <NUMERIC>")
        if c in idlevel:
            lines.append(f"  <IDLEVEL> {idlevel[c]}")
        if c == weight:
            lines += ["  <WEIGHT>", "  <DECIMALS> 2"]
        start += widths[c] + gap
    rda = folder / f"{name}.rda"
    rda.write_text("// written by the test\n" + "\n".join(lines) + "\n")
    records = [(" " * gap).join(text[c].iloc[i].rjust(widths[c]) for c in frame.columns)
               for i in range(len(frame))]
    (folder / f"{name}.asc").write_text("\n".join(records) + "\n")
    return rda


def write_free(frame: pd.DataFrame, folder: Path, name: str = "survey", *, sep: str = ";",
               missing: dict | None = None, names_in_front: bool = False) -> Path:
    missing = missing or {}
    head = [f'<SEPARATOR> "{sep}"'] + (["<NAMESINFRONT>"] if names_in_front else [])
    lines = head + [f"{c} 10 " + " ".join(f'"{m}"' for m in missing.get(c, ()))
                    for c in frame.columns]
    rda = folder / f"{name}.rda"
    rda.write_text("\n".join(lines) + "\n")
    text = frame.astype(object).where(frame.notna(), "").astype(str)
    body = [sep.join(frame.columns)] if names_in_front else []
    body += [sep.join(row) for row in text.itertuples(index=False)]
    (folder / f"{name}.asc").write_text("\r\n".join(body) + "\r\n")
    return rda


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assess_json(capsys, source, *extra: str) -> dict:
    size = () if any(a in extra for a in ("--weights", "--population-size")) \
        else ("--population-size", "30000")
    code, out, err = run(capsys, "assess", str(source), "--method", "nb", "--format", "json",
                         *size, *extra)
    assert code == 0, err
    return json.loads(out)


def same_figures(got: dict, want: dict) -> None:
    assert got["n"] == want["n"]
    assert got["sample_uniques"] == want["sample_uniques"] > 0
    assert got["observed_cells"] == want["observed_cells"]
    for m in ("tau1", "tau2"):
        assert got["measures"][m]["estimate"] == want["measures"][m]["estimate"]


@pytest.fixture
def csv_figures(capsys, tmp_path):
    path = tmp_path / "same.csv"
    FRAME.to_csv(path, index=False)
    return lambda *extra: assess_json(capsys, path, "--keys", KEYS, *extra)


@pytest.mark.parametrize("layout", ["fixed", "fixed-no-gap", "free-semicolon", "free-comma",
                                    "free-names-in-front"])
def test_muargus_equals_csv(capsys, tmp_path, csv_figures, layout):
    if layout.startswith("fixed"):
        rda = write_fixed(FRAME, tmp_path, gap=0 if "no-gap" in layout else 1)
    else:
        rda = write_free(FRAME, tmp_path, sep="," if "comma" in layout else ";",
                         names_in_front="names" in layout)
    for extra in ((), ("--weights", "wgt")):
        want = csv_figures(*extra)
        got = assess_json(capsys, rda, "--keys", KEYS, *extra)
        same_figures(got, want)
        assert got["population_size"] == pytest.approx(want["population_size"], rel=1e-12)


def test_rda_asc_and_named_data_file(capsys, tmp_path, csv_figures):
    rda = write_fixed(FRAME, tmp_path)
    want = csv_figures()
    same_figures(assess_json(capsys, tmp_path / "survey.asc", "--keys", KEYS), want)
    # a data file of another name, in another folder: FILE.rda::DATA (relative to the .rda)
    (tmp_path / "data").mkdir()
    (tmp_path / "survey.asc").rename(tmp_path / "data" / "wave1.asc")
    same_figures(assess_json(capsys, f"{rda}::data/wave1.asc", "--keys", KEYS), want)
    code, _, err = run(capsys, "assess", str(rda), "--keys", KEYS, "--whole-population")
    assert code == 2
    assert "survey.asc is not beside it" in err and "survey.rda::DATAFILE" in err


# records (A, B) with A's missing code 9 and a blank A: by hand
HAND = ["1 1", "1 1", "2 1", "9 2", "  2", "2 2"]
HAND_RDA = "A 1 1 9\n  <IDLEVEL> 1\nB 3 1\n  <IDLEVEL> 2\n"


def test_missing_codes_are_missing(capsys, tmp_path):
    (tmp_path / "hand.rda").write_text(HAND_RDA)
    (tmp_path / "hand.asc").write_text("\n".join(HAND) + "\n")
    rda = tmp_path / "hand.rda"
    # missing as a category: cells (1,1) x2, (2,1), (missing,2) x2 (code 9 and the blank
    # together), (2,2): 4 observed cells, 2 sample uniques
    got = assess_json(capsys, rda, "--keys", "A,B")
    assert (got["observed_cells"], got["sample_uniques"]) == (4, 2)
    # had 9 been a category of its own: (9,2) and (missing,2) are uniques, (2,1) and (2,2)
    # still are: 5 cells, 4 uniques
    (tmp_path / "nocode.rda").write_text(HAND_RDA.replace("A 1 1 9", "A 1 1"))
    (tmp_path / "nocode.asc").write_text("\n".join(HAND) + "\n")
    got = assess_json(capsys, tmp_path / "nocode.rda", "--keys", "A,B")
    assert (got["observed_cells"], got["sample_uniques"]) == (5, 4)
    # the same records as a CSV with empty cells: equal figures, also as wildcards
    csv = tmp_path / "hand.csv"
    csv.write_text("A,B\n1,1\n1,1\n2,1\n,2\n,2\n2,2\n")
    for missing in (("category",), ("wildcard", "--mode", "sdcmicro")):
        same = ("--keys", "A,B", "--missing", *missing)
        got, want = assess_json(capsys, rda, *same), assess_json(capsys, csv, *same)
        assert got["sample_uniques"] == want["sample_uniques"]
        assert got["measures"] == want["measures"]
    code, _, err = run(capsys, "assess", str(rda), "--keys", "A,B", "--missing", "error",
                       "--whole-population")
    assert code == 2 and "'A'" in err and "missing" in err


def test_default_keys_from_idlevel(capsys, tmp_path, csv_figures):
    rda = write_fixed(FRAME, tmp_path, idlevel={"region": 2, "age": 1, "sex": 3},
                      weight="wgt")
    code, out, err = run(capsys, "assess", str(rda), "--method", "nb", "--format", "json",
                         "--population-size", "30000")
    assert code == 0, err
    got = json.loads(out)
    assert got["keys"] == ["age", "sex", "region"]  # the .rda's order, not the levels'
    assert "keys from survey.rda: age, sex, region" in err
    assert "weight variable 'wgt'" in err
    same_figures(got, csv_figures())
    # N unknown: the declared weight variable is named in the remedy, not used unasked
    code, _, err = run(capsys, "assess", str(rda), "--method", "nb")
    assert code == 2 and "--weights wgt" in err
    # --keys wins over the .rda
    assert assess_json(capsys, rda, "--keys", "age,sex")["keys"] == ["age", "sex"]
    plain = write_fixed(FRAME, tmp_path, "plain")
    code, _, err = run(capsys, "assess", str(plain), "--whole-population")
    assert code == 2 and "plain.rda marks no variable identifying" in err


BAD_RDA = [
    ("A 1 1\n  <IDLEVL> 1\n", "line 2", "unknown tag <IDLEVL>"),
    ("  <IDLEVEL> 1\nA 1 1\n", "line 1", "comes before any variable"),
    ("A one 1\n", "line 1", "must be whole numbers"),
    ("A 1 0\n", "line 1", "must be whole numbers >= 1"),
    ("A 1\n", "line 1", "NAME START WIDTH"),
    ("A 1 2\nB 2 1\n", "line 2", "overlaps 'A'"),
    ("A 1 1 99\n", "line 1", "missing code '99' is wider"),
    ("A 1 1\nA 3 1\n", "line 2", "declared twice"),
    ("// nothing\n", "no variables", "one variable a line"),
    ('A 1 1 "9\n', "line 1", "quote that is not closed"),
    ('<SEPARATOR> ";;"\nA 1\n', "line 1", "one character"),
    ("<SPSS>\nA 1 1\n", "line 1", "SPSS"),
    ("A 1 1\n  <IDLEVEL> high\n", "line 2", "<IDLEVEL> needs a whole number"),
]


@pytest.mark.parametrize(("rda", "where", "what"), BAD_RDA)
def test_bad_metadata_is_one_line(capsys, tmp_path, rda, where, what):
    (tmp_path / "bad.rda").write_text(rda)
    (tmp_path / "bad.asc").write_text("1 1\n2 2\n")
    code, out, err = run(capsys, "assess", str(tmp_path / "bad.rda"), "--keys", "A",
                         "--whole-population")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "bad.rda" in err and where in err and what in err


BAD_DATA = [
    ("A 1 1\nB 3 2\n", "1 12\n2 3\n", "bad.asc, line 2: the record has 3 characters",
     "runs to column 4"),
    ('<SEPARATOR> ";"\nA 1\nB 1\n', "1;2\n3\n", "bad.asc, line 2: 1 value", "declares 2"),
    ("A 1 1\nB 2 1\n", "\n\n", "bad.asc: no records", "empty"),
    ('<SEPARATOR> ";"\nA 1\nB 1\n', "1;2\n\n3;4\n", "bad.asc, line 2: an empty line",
     "remove the line"),
    ('<SEPARATOR> ","\n<NAMESINFRONT>\nA 1\nB 1\n', "A,B\n1,2\n3,4,5\n",
     "bad.asc, line 3: 3 values", "declares 2 variables"),
    ("A 1 1\nB 3 1\n", "1 2\n3 4\n\n5 6\n", "bad.asc, line 3: the record has 0",
     "runs to column 1"),
]


@pytest.mark.parametrize(("rda", "asc", "where", "what"), BAD_DATA)
def test_bad_data_file_is_one_line(capsys, tmp_path, rda, asc, where, what):
    (tmp_path / "bad.rda").write_text(rda)
    (tmp_path / "bad.asc").write_text(asc)
    code, _, err = run(capsys, "assess", str(tmp_path / "bad.rda"), "--keys", "A,B",
                       "--whole-population")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert where in err and what in err


def test_missing_companion_files(capsys, tmp_path):
    (tmp_path / "alone.asc").write_text("1\n")
    code, _, err = run(capsys, "assess", str(tmp_path / "alone.asc"), "--keys", "A",
                       "--whole-population")
    assert code == 2 and "alone.rda is not beside it" in err
    (tmp_path / "m.rda").write_text("A 1 1\n")
    code, _, err = run(capsys, "assess", f"{tmp_path / 'm.rda'}::nowhere.asc", "--keys", "A",
                       "--whole-population")
    assert code == 2 and "data file not found: 'nowhere.asc'" in err


def test_evaluate_reads_an_rda_sample(capsys, tmp_path):
    population = tmp_path / "population.csv"
    FRAME.to_csv(population, index=False)
    sample = FRAME.sample(120, random_state=2)
    sample.to_csv(tmp_path / "sample.csv", index=False)
    rda = write_fixed(sample, tmp_path, "sample")
    out = {}
    for name, path in (("csv", tmp_path / "sample.csv"), ("rda", rda)):
        code, text, err = run(capsys, "evaluate", str(population), "--sample", str(path),
                              "--keys", KEYS, "--methods", "nb", "--format", "json")
        assert code == 0, err
        out[name] = json.loads(text)
        del out[name]["estimates"]["nb"]["seconds"]
    assert out["rda"]["truth"]["sample_uniques"] > 0
    assert out["rda"] == out["csv"]


def test_protect_writes_asc_in_the_same_layout(capsys, tmp_path):
    (tmp_path / "hand.rda").write_text(HAND_RDA)
    (tmp_path / "hand.asc").write_text("\n".join(HAND + ["3 1"]) + "\n")
    out = tmp_path / "safe.asc"
    code, _, err = run(capsys, "protect", str(tmp_path / "hand.rda"), "--k-anonymity", "2",
                       "--whole-population", "--out", str(out))
    assert code == 0, err
    assert (tmp_path / "safe.rda").read_text() == HAND_RDA
    lines = out.read_text().splitlines()
    # unchanged records are written back as read (the code 9 and the blank included); the
    # suppressed values carry A's missing code 9 (as mu-Argus writes a suppression)
    assert lines[:2] == HAND[:2] and lines[3:5] == HAND[3:5]
    changed = [i for i, (a, b) in enumerate(zip(lines, HAND + ["3 1"], strict=True)) if a != b]
    assert changed and all(lines[i].startswith("9 ") for i in changed)
    # the written file reads back: every record shares its keys with another (wildcards)
    code, text, err = run(capsys, "assess", str(out), "--missing", "wildcard", "--method",
                          "nb", "--mode", "sdcmicro", "--whole-population", "--format", "json")
    assert code == 0, err
    assert json.loads(text)["sample_uniques"] == 0
    # never over the input's data or metadata
    code, _, err = run(capsys, "protect", str(tmp_path / "hand.rda"), "--k-anonymity", "2",
                       "--whole-population", "--out", str(tmp_path / "hand.asc"))
    assert code == 2 and "is the input file; protect never overwrites its input" in err
    (tmp_path / "other.asc").write_text("\n".join(HAND) + "\n")
    code, _, err = run(capsys, "protect", f"{tmp_path / 'hand.rda'}::other.asc",
                       "--k-anonymity", "2", "--whole-population", "--out",
                       str(tmp_path / "hand.asc"))  # would write hand.rda, the metadata
    assert code == 2 and "which is the input's metadata" in err
    # CSV out of mu-Argus in: missing codes become empty cells
    code, _, err = run(capsys, "protect", str(tmp_path / "hand.rda"), "--k-anonymity", "2",
                       "--whole-population", "--out", str(tmp_path / "safe.csv"))
    assert code == 0, err
    assert pd.read_csv(tmp_path / "safe.csv")["A"].isna().sum() >= 2


def test_excel_equals_csv(capsys, tmp_path, csv_figures):
    pytest.importorskip("openpyxl")
    book = tmp_path / "survey.xlsx"
    with pd.ExcelWriter(book) as writer:
        FRAME.head(10).to_excel(writer, index=False, sheet_name="notes")
        FRAME.to_excel(writer, index=False, sheet_name="Wave 1")
    first = tmp_path / "first.xlsx"
    FRAME.to_excel(first, index=False)
    for extra in ((), ("--weights", "wgt")):
        want = csv_figures(*extra)
        same_figures(assess_json(capsys, first, "--keys", KEYS, *extra), want)
        same_figures(assess_json(capsys, f"{book}::Wave 1", "--keys", KEYS, *extra), want)
    code, _, err = run(capsys, "assess", f"{book}::Wave1", "--keys", KEYS,
                       "--whole-population")
    assert code == 2 and "no sheet 'Wave1' (did you mean 'Wave 1'?)" in err


def test_excel_missing_cells_and_labels(capsys, tmp_path):
    pytest.importorskip("openpyxl")
    from sdcrisk.data.io import read_columns

    frame = pd.DataFrame({"a": [1, 2, None, 2], "b": ["x", "y", "y", None]})
    frame.to_excel(tmp_path / "m.xlsx", index=False)
    cols, n = read_columns(str(tmp_path / "m.xlsx"), ["a", "b"])
    assert n == 4
    # whole numbers with an empty cell come back as integers, as from a CSV
    assert cols["a"].values.dtype.kind == "i" and cols["a"].values.tolist()[:2] == [1, 2]
    assert cols["a"].missing.tolist() == [False, False, True, False]
    assert cols["b"].missing.tolist() == [False, False, False, True]


def test_excel_codes_past_two_to_the_53_are_refused_as_from_a_csv(tmp_path):
    """Excel stores numbers as doubles: a code past 2^53 has lost digits (two codes can read
    alike), and a CSV's such column is refused. The Excel reader turned a column of them with
    an empty cell into integers first, so 2^53 + 2 and 2^53 + 4 were kept as categories
    without a word; it is refused in the same words as from a CSV."""
    pytest.importorskip("openpyxl")
    from sdcrisk import Microdata
    from sdcrisk.exceptions import InputError

    big = float(2**53 + 2)
    frame = pd.DataFrame({"a": [big, big + 2, None, 7.0], "b": [1, 1, 2, 2]})
    frame.to_excel(tmp_path / "big.xlsx", index=False)
    with pytest.raises(InputError, match="too large to be an exact integer code"):
        Microdata.from_source(str(tmp_path / "big.xlsx"), keys=["a", "b"],
                              population_size=100)
    # below 2^53 the same column reads as integer codes
    frame["a"] = [3.0, 5.0, None, 7.0]
    frame.to_excel(tmp_path / "small.xlsx", index=False)
    md = Microdata.from_source(str(tmp_path / "small.xlsx"), keys=["a", "b"],
                               population_size=100)
    assert md.levels[0] == (3, 5, 7, None)


def test_excel_without_openpyxl(capsys, tmp_path, monkeypatch):
    (tmp_path / "x.xlsx").write_bytes(b"PK\x03\x04 not really a workbook")
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    code, _, err = run(capsys, "assess", str(tmp_path / "x.xlsx"), "--keys", "a",
                       "--whole-population")
    assert code == 2 and "pip install 'sdcrisk[excel]'" in err


def test_uci_adult_fixed_width_equals_csv(capsys, tmp_path):
    """A 3% sample of UCI Adult as a fixed-width .asc + .rda gives the CSV's JSON measures."""
    path = shared_data("uci_adult", "uci_adult.csv.gz")
    keys = ["age", "sex", "race", "marital_status", "education", "native_country"]
    pop = pd.read_csv(path, usecols=keys)[keys]
    sample = pop.sample(frac=0.03, random_state=7).reset_index(drop=True)
    sample.to_csv(tmp_path / "adult.csv", index=False)
    rda = write_fixed(sample, tmp_path, "adult", idlevel=dict.fromkeys(keys, 1), gap=0)
    size = ("--population-size", str(len(pop)))
    want = assess_json(capsys, tmp_path / "adult.csv", "--keys", ",".join(keys), *size)
    got = assess_json(capsys, rda, *size)  # keys from the .rda
    assert got["keys"] == keys
    assert got["measures"] == want["measures"]
    assert (got["sample_uniques"], got["observed_cells"]) == \
        (want["sample_uniques"], want["observed_cells"])


def test_protect_free_format_round_trip(capsys, tmp_path):
    """Free format with names in front: the protected .asc keeps the separator and the names
    line, unchanged records are written back as read, and it reads back k-anonymous."""
    frame = pd.DataFrame({"A": ["1", "1", "2", "2", "3", "9"], "B": ["x", "x", "y", "y", "y", "x"],
                          "note": ["a;b", "c", "d", "e", "f", "g"]})
    rda = write_free(frame, tmp_path, "free", missing={"A": ["9"]}, names_in_front=True)
    (tmp_path / "free.asc").write_text(  # quotes around a value holding the separator
        "A;B;note\n1;x;\"a;b\"\n1;x;c\n2;y;d\n2;y;e\n3;y;f\n9;x;g\n")
    out = tmp_path / "safe.asc"
    code, _, err = run(capsys, "protect", str(rda), "--keys", "A,B", "--k-anonymity", "2",
                       "--whole-population", "--out", str(out))
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert lines[0] == "A;B;note"
    assert lines[1:5] == ['1;x;"a;b"', "1;x;c", "2;y;d", "2;y;e"]
    assert lines[5] == "9;y;f"  # the unique (3, y) loses A: the first missing code
    assert lines[6] == "9;x;g"  # a missing value of the input, as it was
    code, text, err = run(capsys, "assess", str(out), "--keys", "A,B", "--missing",
                          "wildcard", "--method", "nb", "--mode", "sdcmicro",
                          "--whole-population", "--format", "json")
    assert code == 0, err
    assert json.loads(text)["sample_uniques"] == 0


def test_empty_sheet_says_it_has_no_header(capsys, tmp_path):
    """An empty sheet: the missing key is named and the column list says there is none."""
    pytest.importorskip("openpyxl")
    path = tmp_path / "empty.xlsx"
    pd.DataFrame().to_excel(path, index=False)
    code = main(["assess", str(path), "--keys", "age", "--population-size", "100",
                 "--method", "nb"])
    err = capsys.readouterr().err
    assert code == 2
    assert "missing column 'age'; available columns: none (no header)" in err
