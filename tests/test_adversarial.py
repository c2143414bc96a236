"""The adversarial-input pass: inputs that ended in a traceback (exit 1, ``internal error``)
or in a message naming neither the value nor the remedy. Each test pins the exit code and
the words of the message (the value, the option typed, the remedy), or, where the input is
valid after all, the figures it gives."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pandas as pd
import pytest

from sdcrisk import Microdata, tabulate
from sdcrisk.cli import main


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def odd_parquet(tmp_path):
    """Six records whose columns are of the Parquet types that are not plain integers or
    text: boolean (with a null), dictionary-encoded text, timestamp, date, bytes that are not
    UTF-8."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({
        "bo": pa.array([True, False, True, None, True, False]),
        "dic": pa.array(["a", "b", "a", "c", "a", "b"]).dictionary_encode(),
        "ts": pa.array([datetime.datetime(2020, 1, 1 + i % 2) for i in range(6)]),
        "bin": pa.array([b"a", b"b", b"a", b"\xff", b"a", b"b"]),
    }), path)
    return path


# --- a Parquet boolean key with nulls -------------------------------------------------------

def test_parquet_boolean_key_with_nulls_is_read(capsys, odd_parquet):
    """pyarrow refused fill_null(0) on a boolean column (ArrowInvalid, exit 1): True, False
    and the missing value are three categories of 3, 2 and 1 records."""
    code, out, err = _run(capsys, ["assess", odd_parquet, "--keys", "bo",
                                   "--population-size", 100, "--method", "nb",
                                   "--format", "json"])
    assert code == 0, err
    res = json.loads(out)
    assert res["n"] == 6 and res["observed_cells"] == 3 and res["sample_uniques"] == 1
    md = Microdata.from_source(odd_parquet, keys=["bo"], population_size=100)
    assert sorted(tabulate(md).counts.tolist()) == [1, 2, 3]


# --- protect on Parquet keys that are categorical or bytes ----------------------------------

@pytest.mark.parametrize("keys", ["dic,bo", "dic,ts", "dic,bin"])
def test_protect_suppresses_dictionary_and_bytes_keys(capsys, odd_parquet, tmp_path, keys):
    """A dictionary-encoded key (a pandas Categorical) refused the blank of a suppression
    (TypeError 'Cannot setitem on a Categorical with a new category', exit 1), and a binary
    key that is not UTF-8 failed in pandas' astype(str) (UnicodeDecodeError, exit 1). The
    protected file is 2-anonymous on the keys, the bytes read as assess reads them."""
    out_path = tmp_path / "p.parquet"
    code, _, err = _run(capsys, ["protect", odd_parquet, "--keys", keys,
                                 "--population-size", 100, "--k-anonymity", 2,
                                 "--out", out_path, "--method", "nb"])
    assert code == 0, err
    prot = pd.read_parquet(out_path)
    assert len(prot) == 6
    cols = keys.split(",")
    # every record whose keys are all present shares them with another record
    full = prot[cols].dropna()
    full = full[(full.astype(str) != "").all(axis=1)]
    assert full.astype(str).value_counts().min() >= 2
    # the suppressions blank at least the two unique dic values ('c' and the lone 'b' combo)
    assert (prot["dic"].isna() | (prot["dic"].astype(str) == "")).sum() >= 1


def test_write_refusal_names_one_other_format(tmp_path):
    """A Parquet file that cannot be written (a map column pandas read as tuples) said
    'write .csv or .csv instead'."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sdcrisk.exceptions import ParameterError

    src = tmp_path / "map.parquet"
    pq.write_table(pa.table({
        "a": pa.array([1, 1, 2, 2]),
        "mp": pa.array([[("k", 1)]] * 4, type=pa.map_(pa.string(), pa.int64()))}), src)
    from sdcrisk.data.frames import read_frame, write_frame

    with pytest.raises(ParameterError) as err:
        write_frame(read_frame(src), tmp_path / "out.parquet")
    msg = str(err.value)
    assert "out.parquet" in msg and "Parquet file" in msg and "write .csv instead" in msg
    assert ".csv or .csv" not in msg


# --- a log-linear term over a huge key space ------------------------------------------------

@pytest.fixture
def wide_keys(tmp_path):
    """1,000 records, 12 keys of 1,000 levels each (every record unique on every key)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"k{i}": rng.permutation(1000) for i in range(12)})
    path = tmp_path / "wide.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("terms, largest", [
    ("saturated", "'k0:k1:k2:k3:k4:k5:k6:k7:k8:k9:k10:k11', over 1e+36 cells"),
    ("all-2-way + k0:k1:k2:k3", "'k0:k1:k2:k3', over 1e+12 cells"),
])
def test_loglinear_term_over_a_huge_key_space_is_refused_by_size(capsys, wide_keys, terms,
                                                                 largest):
    """The saturated model of 12 keys of 1,000 levels asked numpy for a margin of 10^36
    cells (OverflowError, exit 1); a 4-way term asked for 10^12 cells (an allocation that did
    not end). Both are refused before any allocation, naming the term and the remedy."""
    keys = ",".join(f"k{i}" for i in range(12))
    code, _, err = _run(capsys, ["assess", wide_keys, "--keys", keys, "--max-levels", 2000,
                                 "--population-size", 1_000_000, "--method", "loglinear",
                                 "--terms", terms])
    assert code == 2, err
    assert "internal error" not in err and err.count("\n") == 1
    assert largest in err and "memory limit" in err and "SDCRISK_MEMORY_LIMIT" in err
    assert "--terms" in err and "--partition" in err
    assert len(err.split("needs ")[1].split(" GiB")[0]) <= 9  # 8.38e+27 GiB, not 28 digits


def test_loglinear_all_two_way_on_the_huge_key_space_still_fits(capsys, wide_keys):
    """The 66 two-way margins of 10^6 cells each (0.5 GiB) stay within the limit."""
    keys = ",".join(f"k{i}" for i in range(12))
    code, out, err = _run(capsys, ["assess", wide_keys, "--keys", keys, "--max-levels", 2000,
                                   "--population-size", 1_000_000, "--method", "loglinear",
                                   "--terms", "all-2-way", "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["sample_uniques"] == 1000


def test_loglinear_sums_over_a_huge_key_space_name_options_the_user_can_type(capsys,
                                                                            tmp_path):
    """70 binary keys: the independence model's sums over all 2^70 cells need 6,912 GiB. The
    refusal named "the dense engine", which no option of the CLI selects and which would
    need 2^70 cells itself; it now says how many cells, and names methods that run there."""
    rng = np.random.default_rng(1)
    path = tmp_path / "b70.csv"
    pd.DataFrame({f"b{i}": rng.integers(0, 2, 300) for i in range(70)}).to_csv(path,
                                                                               index=False)
    keys = ",".join(f"b{i}" for i in range(70))
    code, _, err = _run(capsys, ["assess", path, "--keys", keys, "--population-size", 100_000,
                                 "--method", "loglinear", "--terms", "independence"])
    assert code == 2 and "internal error" not in err
    assert "1.18e+21 cells" in err and "--method graphical" in err and "SDCRISK_MEMORY_LIMIT" in err
    assert "dense engine" not in err


# --- decide: options that microdata mode dropped, a class naming a variable twice -----------

@pytest.fixture
def domains_csv(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"region": rng.integers(1, 6, 400), "sex": rng.integers(1, 3, 400)})
    path = tmp_path / "domains.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("extra, words", [
    (["--risk-fraction", "2"], ["--risk-fraction 2.0", "--domain-types",
                                "--target-risk-fraction"]),
    (["--risk-fraction", "0.3"], ["--risk-fraction 0.3", "drop it"]),
    (["--decision-l1", "exp:2"], ["--decision-l1 exp:2", "--domain-types", "as --l1"]),
    (["--decision-l0", "one"], ["--decision-l0 one", "as --l0"]),
    (["--max-enumeration", "0"], ["--max-enumeration 0", "positive integer"]),
    (["--class", "sex=1,sex=2"], ["'sex=1,sex=2'", "'sex' twice", "'1' and '2'",
                                  "give each variable once"]),
])
def test_decide_microdata_refuses_what_it_would_ignore(capsys, domains_csv, extra, words):
    """In microdata mode --risk-fraction (even 2 or nan), --decision-l1/-l0 were silently
    ignored, --max-enumeration 0 silently became the default 10^6, and --class sex=1,sex=2
    silently kept sex=2."""
    argv = ["decide", domains_csv, "--domain", "region", "--l1", "exp:1",
            "--population-size", 100_000]
    if "--class" not in extra:
        argv += ["--class", "sex=1"]
    code, out, err = _run(capsys, argv + extra)
    assert code == 2 and out == ""
    assert err.startswith("sdcrisk: error: ") and err.count("\n") == 1
    for w in words:
        assert w in err, (w, err)


def test_decide_domain_types_keeps_its_default_risk_fraction(capsys, tmp_path):
    """--risk-fraction still defaults to 0.2 for a table of domain types."""
    path = tmp_path / "types.csv"
    path.write_text("n,N,share\n10,1000,0.5\n20,5000,0.5\n")
    code, out, err = _run(capsys, ["decide", "--domain-types", path, "--l1", "exp:1",
                                   "--alpha", 1, "--beta", 2, "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["at_risk_fraction"]["risk_fraction"] == 0.2


# --- messages: N < n names the option and the remedy; an array of weights prints short -----

@pytest.mark.parametrize("size", ["-5", "0", "10"])
def test_population_size_below_n_names_the_flag_and_the_remedy(capsys, domains_csv, size):
    """Was 'population size N=-5 is smaller than the sample size n=400': no flag, no
    remedy."""
    code, _, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                 "--population-size", size, "--method", "nb"])
    assert code == 2
    assert (f"--population-size {size} gives N={size}, smaller than the sample size n=400"
            in err)
    assert "N >= n" in err and "--whole-population" in err


def test_api_population_size_below_n_names_the_argument():
    from sdcrisk.exceptions import InputError

    frame = pd.DataFrame({"a": [1, 2, 2]})
    with pytest.raises(InputError, match=r"population_size=2 gives N=2, smaller than the "
                                         r"sample size n=3; .*N >= n"):
        Microdata.from_source(frame, keys=["a"], population_size=2)


@pytest.mark.parametrize("option", ["weights", "household"])
def test_api_array_instead_of_a_column_name_prints_short(option):
    """weights=np.ones(10_000) printed the whole array (hundreds of lines) in the message."""
    from sdcrisk.exceptions import ParameterError

    frame = pd.DataFrame({"a": np.arange(10_000) % 7})
    with pytest.raises(ParameterError) as err:
        Microdata.from_source(frame, keys=["a"], population_size=1e6,
                              **{option: np.ones(10_000)})
    msg = str(err.value)
    assert len(msg) < 250 and "\n" not in msg
    assert msg.startswith(f"{option}=array([1., 1.,") and "must be a column name" in msg
    assert f"{option}='w'" in msg and "frame.assign(w=values)" in msg


# --- settings files that are not UTF-8 ------------------------------------------------------

@pytest.mark.parametrize("flag, name, content, extra", [
    ("--levels", "levels.json", b'{"reg\xffion": [1, 2]}', []),
    ("--key-sets", "sets.txt", b"region,s\xffex\n", []),
    ("--recode", "recode.json", b'{"region": {"\xff": 1}}', []),
])
def test_settings_file_not_utf8_names_the_byte_and_the_remedy(capsys, domains_csv, tmp_path,
                                                              flag, name, content, extra):
    """A Latin-1 byte in --levels, --key-sets or --recode ended in UnicodeDecodeError
    (exit 1)."""
    path = tmp_path / name
    path.write_bytes(content)
    command = "protect" if flag == "--recode" else "assess"
    argv = [command, domains_csv, "--keys", "region,sex", "--population-size", 100_000,
            "--method", "nb", flag, path]
    if command == "protect":
        argv += ["--out", tmp_path / "p.csv"]
    code, _, err = _run(capsys, argv)
    assert code == 2, err
    assert "internal error" not in err
    assert f"{path}'" in err and "not UTF-8 text (byte 0xff at position" in err
    assert "save the file as UTF-8" in err
    assert flag in err or "key-set file" in err


def test_levels_file_with_a_byte_order_mark_is_read(capsys, domains_csv, tmp_path):
    """A UTF-8 JSON file saved with a byte-order mark (Windows editors) was refused as
    'not a readable JSON file (Unexpected UTF-8 BOM)'."""
    path = tmp_path / "levels.json"
    path.write_bytes(b'\xef\xbb\xbf{"region": [1, 2, 3, 4, 5, 6]}')
    code, out, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                   "--population-size", 100_000, "--method", "nb",
                                   "--levels", path, "--format", "json"])
    assert code == 0, err
    assert json.loads(out)["cell_space"] == 6 * 2  # the declared level 6 has no record


def test_integer_value_outside_the_declared_levels_names_the_flag_and_the_remedy(
        capsys, domains_csv, tmp_path):
    """The integer-coded branch said only "column 'region' has value 5 that is not among its
    declared levels [1, 2]" (the text branch already named --levels)."""
    path = tmp_path / "levels.json"
    path.write_text('{"region": [1, 2, 3, 4]}')
    code, _, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--method", "nb",
                                 "--levels", path])
    assert code == 2
    assert ("column 'region' has value 5 that is not among its declared levels [1, 2, 3, 4]: "
            "add it to the levels of 'region' (--levels on the command line) or correct the "
            "data") in err


# --- the streaming CSV reader: a bad value past its first 16 MiB block ----------------------

@pytest.fixture
def late_bad(tmp_path):
    """A CSV of 2,000,001 records (20 MB: past the streaming reader's first 16 MiB block,
    which types the columns) whose last line is bad in one of three ways."""
    body = b"region,sex,w\n" + b"1,2,100.5\n" * 2_000_000

    def make(last: bytes):
        path = tmp_path / "late.csv"
        path.write_bytes(body + last)
        return path
    return make


@pytest.mark.parametrize("last, extra, words", [
    (b"1,2,abc\n", ["--weights", "w"],
     ["weights column 'w' is not numeric: value 'abc' at line 2000002",
      "must be numbers > 0"]),
    # (a value that is not UTF-8 is read as Windows-1252, else Latin-1, now:
    # tests/test_latin1_stream.py)
    (b"1,2,3,4\n", ["--population-size", "1e8"],
     ["late.csv: could not be read as CSV", "Row #2000002: Expected 3 columns, got 4"]),
])
def test_out_of_core_bad_value_past_the_first_block(capsys, late_bad, last, extra, words):
    """pyarrow raised ArrowInvalid from the batch iterator (exit 1, 'internal error'): only
    an error in the first block, read when the dataset opens, was caught."""
    code, _, err = _run(capsys, ["assess", late_bad(last), "--keys", "region,sex",
                                 "--method", "nb", "--out-of-core", *extra])
    assert code == 2, err
    assert "internal error" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("content, extra, words", [
    (b"region,w\n1,2\n1,abc\n", ["--weights", "w"],
     ["weights column 'w' is not numeric: value 'abc' at line 3"]),
    # a weight that is not UTF-8 (not a number either), as in memory
    (b"region;w\n1;2\n1;\xe9\n", ["--weights", "w"],
     ["weights column 'w' is not numeric: value '\xe9'"]),
])
def test_out_of_core_bad_value_in_the_first_block_speaks_as_in_memory(capsys, tmp_path,
                                                                       content, extra, words):
    """The first block's errors were pyarrow's own text ('In CSV column #1: Row #3: CSV
    conversion error to double: invalid value ...')."""
    path = tmp_path / "small.csv"
    path.write_bytes(content)
    code, _, err = _run(capsys, ["assess", path, "--keys", "region", "--method", "nb",
                                 "--out-of-core", *extra])
    assert code == 2
    assert "In CSV column" not in err
    for w in words:
        assert w in err, (w, err)


# --- property: malformed small CSVs through assess, in memory and streamed ------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEY = st.sampled_from(["1", "2", "x", "", "NA", " 1", "1.0", "-1", "é", "\"q\"", "1e3"])
_WEIGHT = st.sampled_from(["10", "2.5", "0", "-1", "", "nan", "inf", "abc", "1e400", "3,5",
                           "1e-320"])
_HH = st.sampled_from(["h1", "h2", "", "3", "3.5"])


@st.composite
def _malformed_csv(draw):
    rows = draw(st.lists(st.tuples(_KEY, _KEY, _WEIGHT, _HH), min_size=0, max_size=12))
    header = draw(st.sampled_from(["a,b,w,h", "a,a,w,h", "a,b,w", "a;b;w;h", "\ufeffa,b,w,h"]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    sep = ";" if ";" in header else ","
    lines = [header] + [sep.join(r[: header.count(sep) + 1]) for r in rows]
    return (eol.join(lines) + draw(st.sampled_from(["", eol]))).encode("utf-8")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(raw=_malformed_csv(),
       options=st.sampled_from([["--population-size", "1000"], ["--weights", "w"],
                                ["--population-size", "1000", "--household", "h"],
                                ["--sampling-fraction", "0.5", "--missing", "error"],
                                ["--population-size", "1000", "--missing", "wildcard"]]))
def test_malformed_csv_through_assess_exits_cleanly(capsys, tmp_path, raw, options):
    """Every malformed small CSV ends in a result (exit 0) or one line naming the problem
    (exit 2; after any one-line warnings met on the way), in memory and streamed; where
    both give a result they agree on n and on the sample uniques."""
    path = tmp_path / "m.csv"
    path.write_bytes(raw)
    outs = []
    for extra in ([], ["--out-of-core"]):
        code, out, err = _run(capsys, ["assess", path, "--keys", "a,b", "--method", "nb",
                                       "--format", "json", *options, *extra])
        assert code in (0, 2), err
        assert "internal error" not in err and "Traceback" not in err
        if code == 2:  # one error line, after any one-line warnings met before it (a key
            # holding no value, then a missing weight: both true, both said once)
            *before, last = err.rstrip("\n").split("\n")
            assert last.startswith("sdcrisk: error: "), err
            assert all(line.startswith("sdcrisk: warning: ") for line in before), err
        outs.append(json.loads(out) if code == 0 else None)
    if all(o is not None for o in outs):
        assert outs[0]["n"] == outs[1]["n"]
        assert outs[0]["sample_uniques"] == outs[1]["sample_uniques"]


# --- found by the property above ------------------------------------------------------------

def test_number_with_spaces_codes_alike_in_memory_and_streamed(capsys, tmp_path):
    """pyarrow's CSV reader types ' 1' as the number 1; the streaming reader cast the text
    ' 1' and failed, keeping it as its own category: 2 sample uniques streamed, 0 in memory.
    """
    path = tmp_path / "spaces.csv"
    path.write_bytes(b"a,b\n1,1\n1, 1\n2,3\n2,3\n")
    got = []
    for extra in ([], ["--out-of-core"]):
        code, out, err = _run(capsys, ["assess", path, "--keys", "a,b", "--method", "nb",
                                       "--population-size", 100, "--format", "json", *extra])
        assert code == 0, err
        res = json.loads(out)
        got.append((res["n"], res["observed_cells"], res["sample_uniques"]))
    assert got == [(4, 2, 0), (4, 2, 0)]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("extra", [[], ["--out-of-core"]])
def test_weight_too_small_to_invert_is_refused(capsys, tmp_path, suffix, extra):
    """A weight of 1e-320 (positive, finite, subnormal) passed the check; 1/w overflowed to
    inf in the inclusion sums (numpy's 'overflow encountered in divide' on stderr, exit 1
    under -W error)."""
    frame = pd.DataFrame({"a": [1, 1, 2], "w": [10.0, 1e-320, 10.0]})
    path = tmp_path / f"tiny{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    code, _, err = _run(capsys, ["assess", path, "--keys", "a", "--weights", "w",
                                 "--method", "nb", *extra])
    assert code == 2
    assert "weights column 'w' has the weight 9.99989e-321 at row 2, too small to invert" in err
    assert "check the column" in err and "warning" not in err


# --- protect --recode on dictionary-encoded and boolean keys --------------------------------

@pytest.mark.parametrize("key, recode, expected", [
    ("dic", {"b": "zzz"}, ["a", "zzz", "a", "c", "a", "zzz"]),
    ("bo", {"True": "False"}, [False, False, False, None, False, False]),
    ("bo", {"True": "yes"}, ["yes", "False", "yes", None, "yes", "False"]),
])
def test_protect_recode_of_dictionary_and_boolean_keys(capsys, odd_parquet, tmp_path, key,
                                                       recode, expected):
    """A new label in a dictionary-encoded key was no category of pandas' Categorical
    (TypeError, exit 1); a boolean key with nulls took the text 'False' among its booleans
    and could not be written to Parquet (and without nulls: TypeError, exit 1)."""
    rec = tmp_path / "recode.json"
    rec.write_text(json.dumps({key: recode}))
    out_path = tmp_path / "p.parquet"
    code, _, err = _run(capsys, ["protect", odd_parquet, "--keys", key,
                                 "--population-size", 100, "--recode", rec,
                                 "--out", out_path, "--method", "nb"])
    assert code == 0, err
    got = pd.read_parquet(out_path)[key].tolist()
    assert [None if v is None or v != v else v for v in got] == expected


def test_protect_recode_of_a_boolean_key_without_nulls(capsys, tmp_path):
    path = tmp_path / "flags.parquet"
    pd.DataFrame({"bo": [True, False, True, False, True, True]}).to_parquet(path)
    rec = tmp_path / "recode.json"
    rec.write_text('{"bo": {"True": "False"}}')
    code, _, err = _run(capsys, ["protect", path, "--keys", "bo", "--population-size", 100,
                                 "--recode", rec, "--out", tmp_path / "p.parquet",
                                 "--method", "nb"])
    assert code == 0, err
    got = pd.read_parquet(tmp_path / "p.parquet")["bo"]
    assert got.dtype == bool and not got.any()


def test_protect_recode_of_an_absent_value_lists_the_values(capsys, domains_csv, tmp_path):
    """'value 9 does not occur in the column' said nothing of the values that do (a
    labelled SPSS column is recoded by its codes, not by its labels)."""
    rec = tmp_path / "recode.json"
    rec.write_text('{"region": {"9": "1"}}')
    code, _, err = _run(capsys, ["protect", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--recode", rec,
                                 "--out", tmp_path / "p.csv", "--method", "nb"])
    assert code == 2
    assert ("--recode 'region': value '9' does not occur in the column; its values: "
            "['1', '2', '3', '4', '5']") in err


# --- graphical --monte-carlo: a slip of the exponent ----------------------------------------

def test_graphical_monte_carlo_has_an_upper_bound(capsys, domains_csv):
    """--monte-carlo 100000000 passed the memory check (the draws are chunked) and ran for
    hours on 400 records; 10^6 draws, the most now, take about a minute and a half."""
    code, _, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--method", "graphical",
                                 "--monte-carlo", 100_000_000])
    assert code == 2
    assert "--monte-carlo 100000000 draws is too many: at most 1,000,000" in err
    assert "give e.g. 4,000" in err
    from sdcrisk import GraphicalRisk

    GraphicalRisk(monte_carlo=1_000_000)  # the bound is inclusive


# --- protect reads compressed CSV by its content, as assess does ----------------------------

@pytest.mark.parametrize("compression, name", [("zstd", "d.csv.zst"), ("bz2", "d.csv")])
def test_protect_reads_compressed_csv_as_assess_does(capsys, domains_csv, tmp_path,
                                                     compression, name):
    """A .csv.zst needed the optional zstandard package in pandas (ImportError, exit 1); a
    bz2 file named .csv was parsed as text (pandas' ParserError) although assess reads it."""
    import pyarrow as pa

    path = tmp_path / name
    with pa.CompressedOutputStream(str(path), compression) as out:
        out.write(domains_csv.read_bytes())
    out_path = tmp_path / "p.csv"
    code, _, err = _run(capsys, ["protect", path, "--keys", "region,sex",
                                 "--population-size", 100_000, "--k-anonymity", 2,
                                 "--out", out_path, "--method", "nb"])
    assert code == 0, err
    prot = pd.read_csv(out_path, dtype=str, keep_default_na=False)
    orig = pd.read_csv(domains_csv, dtype=str)
    assert len(prot) == len(orig) == 400
    kept = (prot != "").all(axis=1)
    assert (prot[kept] == orig[kept]).all().all()  # unsuppressed records unchanged


# --- API entry points given a value of the wrong type ---------------------------------------

def _api_table():
    frame = pd.DataFrame({"a": [1, 2, 2, 3, 3, 3], "b": [1, 1, 2, 2, 2, 2]})
    return tabulate(Microdata.from_source(frame, keys=["a", "b"], population_size=1000))


@pytest.mark.parametrize("call, words", [
    (lambda t: __import__("sdcrisk").get_estimator(["nb"]), "unknown method ['nb']"),
    (lambda t: __import__("sdcrisk").NegativeBinomialRisk().fit(t).record_risk(["x"]),
     "gives no ['x'] risk"),
    (lambda t: __import__("sdcrisk").check_memory("1GB", what="x"),
     "required_bytes='1GB' must be a number"),
    (lambda t: __import__("sdcrisk").population_uniqueness(t, population_size="1e6"),
     "population_size='1e6' must be a number"),
    (lambda t: __import__("sdcrisk").population_uniqueness(t, sampling_fraction="0.1"),
     "sampling_fraction='0.1' must be a number"),
    (lambda t: __import__("sdcrisk").KeySet(3), "keys=3: give the key variables"),
    (lambda t: __import__("sdcrisk").assess_scenarios(t, 3), "key_sets=3: give a list"),
    (lambda t: __import__("sdcrisk").validate(t, 3), "candidates=3: give a list"),
    (lambda t: __import__("sdcrisk").DomainTable.from_microdata(
        Microdata.from_source(pd.DataFrame({"d": [1, 2], "c": [1, 1]}), keys=["d", "c"],
                              population_size=10), domain="d", class_definition=3),
     "class_definition=3: give 'VAR=VALUE"),
])
def test_api_wrong_types_raise_the_projects_error(call, words):
    """Each raised TypeError or ValueError from inside numpy/Python (unhashable type, 'int'
    object is not iterable, could not convert string to float) instead of the project's
    error naming the argument."""
    from sdcrisk.exceptions import SdcRiskError

    with pytest.raises(SdcRiskError) as err:
        call(_api_table())
    assert words in str(err.value), str(err.value)


@pytest.mark.parametrize("value", ["0", "-5", "1e400"])
def test_memory_limit_variable_out_of_range(capsys, domains_csv, monkeypatch, value):
    """SDCRISK_MEMORY_LIMIT=1e400 ended in OverflowError (exit 1); 0 and -5 were taken as
    limits and refused every method ('needs 0.0 MiB but the memory limit is -0.0 MiB')."""
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", value)
    code, _, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--method", "nb"])
    assert code == 2
    assert f"SDCRISK_MEMORY_LIMIT='{value}' must be a positive, finite size like 8G" in err
    assert "unset it for the default 8G" in err


def test_tiny_memory_limit_prints_kib(capsys, domains_csv, monkeypatch):
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1K")
    code, _, err = _run(capsys, ["assess", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--method", "nb"])
    assert code == 2 and "but the memory limit is 1.0 KiB" in err and "0.0 MiB" not in err


def test_pitman_yor_on_one_cell_names_the_remedy(capsys, tmp_path):
    """'needs at least two sample cells and two records (got 1 cells, 500 records)' gave no
    way forward."""
    path = tmp_path / "one_level.csv"
    path.write_text("sex\n" + "1\n" * 50)
    code, _, err = _run(capsys, ["assess", path, "--keys", "sex", "--population-size", 1000,
                                 "--method", "pitman-yor"])
    assert code == 2
    assert "(got 1 cells, 50 records)" in err and "use another method (e.g. nb)" in err


def test_report_methods_with_options_says_to_use_the_flags(capsys, domains_csv, tmp_path):
    """report --methods loglinear:terms=bogus said "unknown method 'loglinear:terms=bogus'"
    (evaluate takes that spelling, report does not)."""
    code, _, err = _run(capsys, ["report", domains_csv, "--keys", "region,sex",
                                 "--population-size", 100_000, "--methods",
                                 "nb,loglinear:terms=all-2-way", "--out", tmp_path / "r.html"])
    assert code == 2
    assert "--methods item 'loglinear:terms=all-2-way': this command takes method names" in err
    assert "--terms for loglinear" in err


# --- Parquet: repeated column names, folders of parts that disagree -------------------------

def test_parquet_with_a_repeated_column_name(capsys, tmp_path):
    """The in-memory route's size estimate asked the schema for the repeated name (KeyError,
    exit 1); the streaming reader already named it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1, 2, 1]), pa.array([3, 4, 3])],
                                        names=["a", "a"]), path)
    for extra in ([], ["--out-of-core"]):
        code, _, err = _run(capsys, ["assess", path, "--keys", "a", "--population-size", 100,
                                     "--method", "nb", *extra])
        assert code == 2
        assert ("dup.parquet: column 'a' appears 2 times (positions 1, 2); rename the "
                "duplicates") in err


@pytest.mark.parametrize("second, words", [
    ({"a": ["x", "y", "z"], "b": [1, 1, 2]},
     ["parts: could not be read as Parquet (Failed to parse string: 'z'",
      "must share one schema"]),
    (None, ["parts: could not be read as Parquet (Could not open Parquet input source"]),
])
@pytest.mark.parametrize("extra", [[], ["--out-of-core"]])
def test_folder_of_parquet_parts_that_disagree(capsys, tmp_path, second, words, extra):
    """A part typed apart from the first (text where the first has integers) or a damaged
    part raised ArrowInvalid from the batch iterator (exit 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3], "b": [1, 1, 2]}), folder / "p1.parquet")
    if second is None:
        (folder / "p2.parquet").write_bytes(b"garbage")
    else:
        pq.write_table(pa.table(second), folder / "p2.parquet")
    code, _, err = _run(capsys, ["assess", folder, "--keys", "a,b", "--population-size", 100,
                                 "--method", "nb", *extra])
    assert code == 2, err
    assert "could not be read as CSV" not in err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("extra", [[], ["--out-of-core"]])
def test_folder_part_without_a_key_column_is_refused(capsys, tmp_path, extra):
    """A part without the key 'b' was read as 3 records with b missing (exit 0, a 'missing'
    category counted as data); a key all parts hold still reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2, 3], "b": [1, 1, 2]}), folder / "p1.parquet")
    pq.write_table(pa.table({"a": [1, 2, 3]}), folder / "p2.parquet")
    code, _, err = _run(capsys, ["assess", folder, "--keys", "a,b", "--population-size", 100,
                                 "--method", "nb", *extra])
    assert code == 2
    assert "parts: the part p2.parquet has no column 'b'; the parts of a folder must share" in err
    code, out, err = _run(capsys, ["assess", folder, "--keys", "a", "--population-size", 100,
                                   "--method", "nb", "--format", "json", *extra])
    assert code == 0, err
    assert json.loads(out)["n"] == 6 and json.loads(out)["sample_uniques"] == 0


def test_decide_domain_type_with_n_above_n_says_which_and_why(capsys, tmp_path):
    """Was 'domain type (10, 5, 0.5): n exceeds N'."""
    path = tmp_path / "types.csv"
    path.write_text("n,N,share\n10,5,0.5\n20,5000,0.5\n")
    code, _, err = _run(capsys, ["decide", "--domain-types", path, "--l1", "exp:1",
                                 "--alpha", 1, "--beta", 2])
    assert code == 2
    assert "its sample size n=10 exceeds its population size N=5" in err
    assert "check the n and N columns" in err


@pytest.mark.parametrize("call", ["household_risk", "global_risk_threshold"])
def test_risk_functions_name_a_text_argument(call):
    """household_risk and global_risk_threshold given text where record risks belong raise
    the project's error naming the function, the value and the remedy (numpy's ValueError
    'could not convert string to float' before)."""
    import sdcrisk
    from sdcrisk.exceptions import ParameterError

    args = (["0.1", "abc"], np.array([0, 0])) if call == "household_risk" else (
        ["0.1", "abc"], 0.01)
    with pytest.raises(ParameterError) as err:
        getattr(sdcrisk, call)(*args)
    msg = str(err.value)
    assert f"{call}: record_risk=['0.1', 'abc'] is not an array of numbers" in msg
    assert "result.record_risk('reidentification')" in msg
    # numbers given as numeric text still work, as numpy converts them
    assert sdcrisk.household_risk(["0.5", "0.5"], np.array([0, 0])) == pytest.approx(
        [0.75, 0.75])
