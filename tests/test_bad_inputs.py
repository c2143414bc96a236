"""Every bad input gets a clear answer (issue 19).

Each case runs the CLI in-process (``sdcrisk.cli.main``) or calls the Python API with one bad
file, frame, option or degenerate data set, and asserts the exit code (or the exception
class), that no traceback and no "internal error" reaches the user, and the words that name
the problem. The degenerate-data tests assert values: finite, correct, and the same from a
closed form and its Monte Carlo.
"""

from __future__ import annotations

import bz2
import gzip
import json
import math
import sqlite3
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import (
    AutoRisk,
    GaussianCopulaRisk,
    GraphicalRisk,
    HdpRisk,
    InputError,
    LatentClassRisk,
    LogLinearRisk,
    Microdata,
    MixedMembershipRisk,
    NegativeBinomialRisk,
    ParameterError,
    PoissonGammaRisk,
    SdcRiskError,
    get_estimator,
    tabulate,
)
from sdcrisk.cli import main

N_RECORDS = 200
KEYS = "a,b,c"


# --- files -----------------------------------------------------------------------------------

def _frame(n=N_RECORDS, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n), "c": rng.integers(0, 5, n),
        "d": rng.integers(0, 2, n), "e": rng.integers(0, 3, n),
        "w": np.full(n, 40.0), "hid": np.arange(n) // 2,
        "name": [f"p{i}" for i in range(n)],
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_inputs")
    df = _frame()
    df.to_csv(d / "good.csv", index=False)
    text = (d / "good.csv").read_bytes()
    (d / "gzip_named.csv").write_bytes(gzip.compress(text))
    (d / "bz2_named.csv").write_bytes(bz2.compress(text))
    (d / "plain_named.csv.gz").write_bytes(text)
    (d / "empty.csv").write_bytes(b"")
    (d / "header_only.csv").write_text("a,b,c,w\n")
    (d / "dup.csv").write_text("a,b,a,c\n1,2,3,0\n2,3,4,1\n1,2,5,2\n")
    (d / "binary.csv").write_bytes(bytes(range(256)) * 8)
    (d / "ragged.csv").write_text("a,b,c\n1,2,3\n1,2\n1,2,3,4\n")
    (d / "latin1.csv").write_bytes("a,b,c\ncaf\xe9,1,2\nx,1,2\n".encode("latin-1"))
    df.assign(w=0.5).to_csv(d / "small_weights.csv", index=False)
    df.assign(w=0.0).to_csv(d / "zero_weights.csv", index=False)
    df.assign(w=-3.0).to_csv(d / "negative_weights.csv", index=False)
    df.assign(w="heavy").to_csv(d / "text_weights.csv", index=False)
    df.assign(w=np.where(np.arange(N_RECORDS) == 5, np.nan, 40.0)).to_csv(
        d / "missing_weights.csv", index=False)
    df.assign(a=np.arange(N_RECORDS) * 1.5).to_csv(d / "continuous.csv", index=False)
    df.iloc[:1].to_csv(d / "one.csv", index=False)
    pd.DataFrame({"a": [1] * 40, "b": [2] * 40, "c": [0] * 40}).to_csv(
        d / "identical.csv", index=False)
    other = df.iloc[:50].copy()
    other.loc[0, "a"] = 9
    other.to_csv(d / "other_population.csv", index=False)
    df.to_csv(d / "csv_named.dta", index=False)
    df.to_csv(d / "csv_named.parquet", index=False)
    with zipfile.ZipFile(d / "archive.csv", "w") as z:
        z.writestr("x.csv", text)
    con = sqlite3.connect(d / "sqlite.csv")
    con.execute("create table t (a int)")
    con.commit()
    con.close()
    (d / "folder").mkdir()
    (d / "lev_scalar.json").write_text('{"a": 3}')
    (d / "lev_string.json").write_text('{"a": "0123"}')
    (d / "lev_list.json").write_text("[1, 2, 3]")
    (d / "lev_bad.json").write_text("{a: [1, 2")
    (d / "lev_empty.json").write_text('{"a": []}')
    (d / "lev_unknown_key.json").write_text('{"zz": [1, 2]}')
    (d / "lev_missing_value.json").write_text('{"a": [0, 1]}')
    (d / "lev_many.json").write_text(json.dumps({"a": list(range(1500))}))
    (d / "lev_dup.json").write_text('{"a": [0, 1, 1, 2, 3]}')
    (d / "domain_types.csv").write_text("n,N,share\n5,100,0.5\n10,200,0.5\n")
    pd.concat([df, df]).assign(a=lambda f: f.a.clip(upper=2)).to_csv(
        d / "population_without_a3.csv", index=False)
    (d / "lev_text_for_int.json").write_text('{"a": [0, 1, 2, 3, "x"]}')
    (d / "sz_binary.csv").write_bytes(bytes(range(256)) * 4)
    (d / "sz_gzip.csv").write_bytes(gzip.compress(b"a,b\n1,2\n"))
    (d / "sz_not_key.csv").write_text("a,zz\n1,2\n")
    (d / "sz_label.csv").write_text("a,b\n1,99\n")
    (d / "sz_quote.csv").write_text('a,b\n1,"x\n')
    (d / "sz_latin1.csv").write_bytes(b"a,b\n\xe9,1\n")
    (d / "sz_empty.csv").write_text("")
    (d / "sz_header_only.csv").write_text("a,b\n")
    (d / "sz_fields.csv").write_text("a,b\n1,2,3\n")
    (d / "sz_ok.csv").write_text("a,b\n1,2\n")
    (d / "domain_types_bad.csv").write_bytes(bytes(range(256)))
    (d / "key_sets_bad.json").write_text("{not json")
    (d / "sizes_partial.csv").write_text("a,N\n0,100\n1,100\n")
    df.to_json(d / "records.json", orient="records")
    (d / "quoted_header.csv").write_text('"a;b;c"\n"1;2;3"\n')
    (d / "header_no_newline.csv").write_text("a,b,c")
    whole = gzip.compress(text)
    (d / "gzip_truncated.csv").write_bytes(whole[: len(whole) // 2])
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": df.a, "b": df.b, "c": [[1, 2]] * N_RECORDS, "w": df.w}),
                   d / "nested.parquet")
    pq.write_table(pa.table({"a": df.a, "b": df.b, "c": [{"x": 1}] * N_RECORDS}),
                   d / "struct.parquet")
    return d


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr); argparse's exits count as codes."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse: usage errors exit 2
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def assert_clear(code: int, err: str, expected_code: int, words: tuple[str, ...]) -> None:
    assert code == expected_code, err
    assert "Traceback" not in err
    assert "internal error" not in err
    low = err.lower()
    for w in words:
        assert w.lower() in low, f"{w!r} not in {err!r}"
    if expected_code == 2:
        # one line of error (argparse adds its usage line above its message)
        assert "error:" in low


# --- CLI: files --------------------------------------------------------------------------------

FILE_CASES = [
    ("missing.csv", (), ("file not found", "missing.csv")),
    ("folder", (), ("is a directory",)),
    ("empty.csv", (), ("empty",)),
    ("header_only.csv", (), ("no records",)),
    ("dup.csv", ("--keys", "a,b"), ("'a' appears 2 times", "rename")),
    ("binary.csv", (), ("binary data", "not text")),
    ("archive.csv", (), ("zip archive",)),
    ("sqlite.csv", (), ("sqlite database",)),
    ("ragged.csv", (), ("could not be read",)),
    ("small_weights.csv", ("--weights", "w"), ("weights sum to", "fewer than the n=200")),
    ("zero_weights.csv", ("--weights", "w"), ("weights column 'w'", "must be > 0")),
    ("negative_weights.csv", ("--weights", "w"), ("non-positive", "row 1")),
    ("text_weights.csv", ("--weights", "w"), ("not numeric", "'heavy'")),
    ("missing_weights.csv", ("--weights", "w"), ("missing at row 6",)),
    ("good.csv", ("--weights", "nope"), ("missing column 'nope'",)),
    ("good.csv", ("--keys", "a,zz"), ("missing column 'zz'", "available columns")),
    ("good.csv", ("--keys", "a,name", "--max-levels", "50"),
     ("'name' has 200 distinct values", "--max-levels 50",
      "raise max_levels (--max-levels on the command line)")),
    ("continuous.csv", (), ("not categorical", "band it")),
    ("good.csv", ("--household", "nope"), ("missing column 'nope'",)),
    ("good.csv", ("--weights", "a"), ("both a key and weights",)),
    ("csv_named.dta", (), ("could not be read as a .dta file",)),
    ("good.csv", ("--keys", "a,a"), ("repeat",)),
    ("good.csv", ("--keys", "a,b,a"), ("names 'a' twice", "give each key once")),
    ("records.json", (), ("records.json: no line break", "not a csv file", "json")),
    ("quoted_header.csv", (), ("missing column 'a'", "looks semicolon-separated",
                               "save it comma-separated")),
    ("quoted_header.csv", ("--out-of-core",), ("looks semicolon-separated",)),
    ("header_no_newline.csv", (), ("no line break", "header line and records")),
    ("nested.parquet", (), ("column 'c' holds nested values", "list<", "flatten")),
    ("struct.parquet", (), ("column 'c' holds nested values", "struct<")),
    ("nested.parquet", ("--keys", "a,b", "--weights", "c"), ("column 'c' holds nested",)),
    ("nested.parquet", ("--out-of-core",), ("column 'c' holds nested values",)),
]


@pytest.mark.parametrize(("name", "extra", "words"), FILE_CASES,
                         ids=[f"{c[0]}-{'-'.join(c[1]) or 'default'}" for c in FILE_CASES])
def test_cli_bad_file(capsys, files, name, extra, words):
    keys = () if "--keys" in extra else ("--keys", KEYS)
    size = () if "--weights" in extra else ("--population-size", "10000")
    code, _, err = run(capsys, "assess", files / name, *keys, *size, "--method", "nb", *extra)
    assert_clear(code, err, 2, words)


@pytest.mark.parametrize("command", ["assess", "report", "recommend", "protect", "evaluate",
                                     "decide"])
@pytest.mark.parametrize(("data", "words"), [
    ("", ("the path is empty", "example:name")),
    ("  ", ("the path is empty",)),
    ("example:", ("unknown example ''", "example:uk_census2011")),
    ("example:nope", ("unknown example 'nope'",)),
], ids=["empty", "blank", "example-no-name", "example-unknown"])
def test_cli_empty_or_unknown_data_argument(capsys, command, data, words):
    """An empty DATA is refused by argparse (it was read as the current folder: 'could not
    be read as Parquet'), and so is an unknown example, for every command."""
    code, _, err = run(capsys, command, data, "--keys", "a,b", "--l1", "exp:1")
    assert_clear(code, err, 2, words)


@pytest.mark.parametrize("name", ["gzip_named.csv", "bz2_named.csv", "plain_named.csv.gz",
                                  "csv_named.parquet"])
def test_cli_compression_and_format_are_detected_by_content(capsys, files, name):
    """gzip/bz2 content named .csv, plain text named .gz, a CSV named .parquet: read by
    their bytes, to the same result as the plain CSV."""
    args = ("--keys", KEYS, "--population-size", "10000", "--method", "nb", "--format", "json")
    code, out, err = run(capsys, "assess", files / name, *args)
    assert_clear(code, err, 0, ())
    code, ref, _ = run(capsys, "assess", files / "good.csv", *args)
    assert json.loads(out)["measures"] == json.loads(ref)["measures"]


def test_cli_latin1_text_is_read_or_named(capsys, files):
    code, _, err = run(capsys, "assess", files / "latin1.csv", "--keys", "a,b",
                       "--population-size", "100", "--method", "nb")
    assert code in (0, 2)
    assert "Traceback" not in err and "internal error" not in err
    assert not any(ord(ch) > 127 and not ch.isprintable() for ch in err)


def test_cli_gzip_error_message_has_no_binary_bytes(capsys, files):
    code, _, err = run(capsys, "assess", files / "binary.csv", "--keys", KEYS,
                       "--population-size", "1000")
    assert code == 2
    assert all(ch.isprintable() or ch == "\n" for ch in err)


# --- CLI: options -------------------------------------------------------------------------

OPTION_CASES = [
    # (argv after DATA --keys a,b,c, expected exit code, words)
    (("--population-size", "nan"), 2, ("--population-size nan", "not finite")),
    (("--population-size", "inf"), 2, ("--population-size inf", "not finite")),
    (("--population-size", "-5"), 2, ("smaller than the sample size",)),
    (("--population-size", "10"), 2, ("N=10", "n=200")),
    (("--population-size", "abc"), 2, ("--population-size", "invalid float")),
    (("--population-size", "1e300"), 2, ("--population-size 1e+300", "more than any population")),
    (("--sampling-fraction", "1e-300"), 2, ("--sampling-fraction 1e-300", "N = 2e+302")),
    (("--population-size", "2e12", "--method", "graphical"), 2, ("more than any population",)),
    (("--sampling-fraction", "0"), 2, ("--sampling-fraction 0", "(0, 1]")),
    (("--sampling-fraction", "1.5"), 2, ("(0, 1]",)),
    (("--sampling-fraction", "nan"), 2, ("(0, 1]",)),
    (("--population-size", "1000", "--sampling-fraction", "0.1"), 2, ("not allowed with",)),
    (("--population-size", "1e4", "--seed", "-1"), 2, ("--seed -1", "non-negative")),
    (("--population-size", "1e4", "--seed", "-1", "--method", "graphical", "--monte-carlo",
      "50"), 2, ("--seed -1",)),
    (("--population-size", "1e4", "--seed", "x"), 2, ("--seed", "invalid int")),
    (("--population-size", "1e4", "--max-levels", "0"), 2, ("--max-levels 0", ">= 1")),
    (("--population-size", "1e4", "--ci-level", "0"), 2, ("--ci-level 0.0", "(0, 1)")),
    (("--population-size", "1e4", "--ci-level", "1"), 2, ("--ci-level 1.0",)),
    (("--population-size", "1e4", "--ci-level", "nan"), 2, ("--ci-level nan",)),
    (("--population-size", "1e4", "--max-global-risk", "0"), 2, ("--max-global-risk 0.0",)),
    (("--population-size", "1e4", "--method", "nope"), 2, ("invalid choice",)),
    (("--population-size", "1e4", "--mode", "fast"), 2, ("invalid choice",)),
    (("--population-size", "1e4", "--method", "nb", "--terms", "all-2-way"), 2,
     ("--terms is not an option of --method nb", "loglinear")),
    (("--population-size", "1e4", "--method", "nb", "--structural-zeros", "sz_ok.csv"), 2,
     ("--structural-zeros is not an option of --method nb", "hdp")),
    (("--population-size", "1e4", "--method", "graphical", "--structural-zeros",
      "sz_ok.csv"), 2, ("--structural-zeros is not an option of --method graphical",
                        "loglinear")),
    (("--population-size", "1e4", "--method", "nb", "--monte-carlo", "10"), 2,
     ("--monte-carlo is not an option",)),
    # log-linear formulas
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "+++"), 2,
     ("--terms '+++'", "empty term")),
    # every --terms error names the flag and the value typed, the term, and the remedy
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "a::b"), 2,
     ("--terms 'a::b': model term 'a::b' has an empty variable name", "e.g. 'a:b'")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "a:"), 2,
     ("--terms 'a:':", "empty variable name")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", ":a"), 2,
     ("--terms ':a':", "empty variable name")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "a:zz"), 2,
     ("--terms 'a:zz': model term 'a:zz': 'zz' is not a key variable", "use the keys a, b, c")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "all-2-way + b:zz"), 2,
     ("--terms 'all-2-way + b:zz': model term 'b:zz': 'zz' is not a key variable",
      "use the keys a, b, c")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "a*zz"), 2,
     ("--terms 'a*zz': cannot read model term 'a*zz'",
      "write an interaction with ':' between key variables, e.g. 'a:zz'", "(keys: a, b, c)")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "a*(b"), 2,
     ("--terms 'a*(b': cannot read model term 'a*(b'", "use search (the default), or "
      "independence, all-2-way")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "foo"), 2,
     ("--terms 'foo': cannot read model term 'foo'; it is neither a key variable nor a model "
      "name", "(keys: a, b, c)")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "all-9-way"), 2,
     ("--terms 'all-9-way':", "only 3 keys", "saturated")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "all-0-way"), 2,
     ("--terms 'all-0-way':", ">= 1", "e.g. all-2-way")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", ""), 2,
     ("--terms ''", "empty")),
    (("--population-size", "1e4", "--method", "loglinear", "--terms", "all-2-way + "), 2,
     ("empty term",)),
    (("--population-size", "1e4", "--method", "loglinear", "--iterations", "0"), 2,
     ("--iterations 0", ">= 1")),
    (("--population-size", "1e4", "--method", "loglinear", "--bootstrap", "-1"), 2,
     ("--bootstrap -1", ">= 0")),
    # run-time bounds: a slip of the exponent is refused at once, not run for days
    (("--population-size", "1e4", "--method", "loglinear", "--bootstrap", "100000000"), 2,
     ("--bootstrap 100000000", "at most 10,000", "e.g. 1,000")),
    (("--population-size", "1e4", "--method", "latent-class", "--bootstrap", "10001"), 2,
     ("--bootstrap 10001", "at most 10,000")),
    (("--population-size", "1e4", "--method", "copula", "--points", "1000000000"), 2,
     ("--points 1000000000", "at most 65,536", "e.g. 512")),
    (("--population-size", "1e4", "--method", "loglinear", "--partition", "zz:2"), 2,
     ("--partition 'zz:2'", "'zz' is not a key",)),
    (("--population-size", "1e4", "--method", "loglinear", "--partition", "a"), 2,
     ("VAR:BANDS",)),
    (("--population-size", "1e4", "--method", "loglinear", "--partition", "a:x"), 2,
     ("--partition 'a:x'", "not an integer")),
    (("--population-size", "1e4", "--method", "loglinear", "--partition", "a:0"), 2,
     ("--partition 'a:0'", "into 0 bands", "between 1 and 4 bands")),
    (("--population-size", "1e4", "--method", "graphical", "--prior-weight", "0"), 2,
     ("--prior-weight 0", "positive")),
    (("--population-size", "1e4", "--method", "graphical", "--prior-weight", "nan"), 2,
     ("--prior-weight nan",)),
    (("--population-size", "1e4", "--method", "graphical", "--window", "0.5"), 2,
     ("--window 0.5", ">= 1")),
    (("--population-size", "1e4", "--method", "graphical", "--monte-carlo", "0"), 2,
     ("--monte-carlo 0",)),
    (("--population-size", "1e4", "--method", "graphical", "--monte-carlo", "1"), 2,
     ("--monte-carlo 1", ">= 2", "leave --monte-carlo out")),
    (("--population-size", "1e4", "--method", "hdp", "--chains", "0"), 2, ("--chains 0",)),
    (("--population-size", "1e4", "--method", "hdp", "--burn-in", "-1"), 2, ("--burn-in -1",)),
    (("--population-size", "1e4", "--method", "mixed-membership", "--profiles", "0"), 2,
     ("--profiles 0",)),
    # fail-above
    (("--population-size", "1e4", "--fail-above", "tau2"), 2, ("MEASURE=LIMIT",)),
    (("--population-size", "1e4", "--method", "nb", "--fail-above", "tau2=abc"), 2,
     ("'abc' is not a number",)),
    (("--population-size", "1e4", "--fail-above", "tau2.middle=1"), 2, ("not a bound",)),
    (("--population-size", "1e4", "--method", "nb", "--fail-above", "nope=1"), 2,
     ("no result gives 'nope'",)),
    (("--population-size", "1e4", "--method", "nb", "--fail-above", "tau2=0"), 3,
     ("fail-above", "tau2")),
    # keys
    (("--population-size", "1e4", "--keys", ""), 2, ("--keys is empty",)),
    (("--population-size", "1e4", "--keys", ",,"), 2, ("--keys is empty",)),
    # households
    (("--population-size", "1e4", "--household-size", "2"), 2, ("needs --household",)),
    (("--population-size", "1e4", "--household-keys", "d"), 2, ("needs --household-size",)),
    (("--population-size", "1e4", "--method", "nb", "--household", "hid", "--household-size",
      "0"), 2, ("--household-size 0", "integer >= 1")),
    (("--population-size", "1e4", "--method", "nb", "--household", "hid", "--household-size",
      "2", "--member-order", "zz"), 2, ("--member-order 'zz'", "not a member variable")),
    (("--population-size", "1e4", "--method", "nb", "--household", "hid", "--household-size",
      "2", "--household-keys", "a,b,c"), 2, ("--household-keys 'a,b,c' takes every key",)),
    (("--population-size", "1e4", "--method", "nb", "--household", "hid", "--household-size",
      "2", "--household-keys", "a"), 2, ("differs between members", "keep 'a' as a member")),
    (("--population-size", "1e4", "--method", "nb", "--all-subsets-up-to", "0"), 2,
     ("--all-subsets-up-to 0", "integer >= 1")),
    (("--population-size", "1e4", "--method", "nb", "--wildcard-alpha", "nan"), 2,
     ("--wildcard-alpha nan", "[0, 1]")),
    (("--population-size", "1e4", "--method", "nb", "--wildcard-alpha", "2"), 2,
     ("--wildcard-alpha 2", "[0, 1]")),
    (("--population-size", "1e4", "--method", "nb", "--wildcard-alpha", "0.5"), 2,
     ("--wildcard-alpha 0.5 applies only with --missing wildcard",)),
    # a Dask scheduler address without a port
    (("--population-size", "1e4", "--method", "nb", "--all-subsets-up-to", "2", "--scheduler",
      "bogus"), 2, ("'bogus' is not a Dask scheduler address", "--scheduler on the command line",
                "tcp://HOST:PORT")),
]


@pytest.mark.parametrize(("argv", "code", "words"), OPTION_CASES,
                         ids=[" ".join(c[0]) or "none" for c in OPTION_CASES])
def test_cli_bad_option(capsys, files, monkeypatch, argv, code, words):
    monkeypatch.chdir(files)
    keys = () if "--keys" in argv else ("--keys", KEYS)
    got, _, err = run(capsys, "assess", "good.csv", *keys, *argv)
    assert_clear(got, err, code, words)


LEVEL_CASES = [
    ("nope.json", ("--levels 'nope.json'", "not a readable json")),
    ("lev_bad.json", ("not a readable json",)),
    ("lev_list.json", ("must be a json object",)),
    ("lev_scalar.json", ("levels of 'a' is 3, not a list",)),
    ("lev_string.json", ("levels of 'a' is '0123', not a list",)),
    ("lev_empty.json", ("levels of 'a' is an empty list",)),
    ("lev_unknown_key.json", ("'zz', which is not a key",)),
    ("lev_missing_value.json", ("not among its declared levels",)),
    ("lev_dup.json", ("levels of 'a' contain 1 more than once", "list each category once")),
    ("lev_text_for_int.json", ("must be integers", "the levels given include 'x'")),
    ("lev_many.json", ("levels declared for column 'a' number 1500", "max_levels=1000",
                       "--max-levels")),
]


@pytest.mark.parametrize(("name", "words"), LEVEL_CASES, ids=[c[0] for c in LEVEL_CASES])
def test_cli_bad_levels(capsys, files, monkeypatch, name, words):
    monkeypatch.chdir(files)
    code, _, err = run(capsys, "assess", "good.csv", "--keys", KEYS, "--population-size",
                       "1e4", "--method", "nb", "--levels", name)
    assert_clear(code, err, 2, words)


SZ_CASES = [
    ("missing_sz.csv", ("not found",)),
    ("folder", ("is a directory",)),
    ("sz_binary.csv", ("sz_binary.csv", "binary content")),
    ("sz_gzip.csv", ("binary content",)),
    ("sz_not_key.csv", ("line 2", "'zz' is not a key variable")),
    ("sz_label.csv", ("line 2", "'99' is not a level of 'b'")),
    ("sz_quote.csv", ("line 2", "malformed csv")),
    ("sz_latin1.csv", ("line 2", "not utf-8")),
    ("sz_empty.csv", ("is empty",)),
    ("sz_header_only.csv", ("no conditions",)),
    ("sz_fields.csv", ("line 2", "3 fields")),
]


@pytest.mark.parametrize(("name", "words"), SZ_CASES, ids=[c[0] for c in SZ_CASES])
@pytest.mark.parametrize("method", ["hdp", "mixed-membership", "loglinear"])
def test_cli_bad_structural_zeros(capsys, files, monkeypatch, name, words, method):
    monkeypatch.chdir(files)
    mcmc = ("--iterations", "20", "--burn-in", "2", "--chains", "1")
    code, _, err = run(capsys, "assess", "good.csv", "--keys", KEYS, "--population-size",
                       "1e4", "--method", method, "--structural-zeros", name,
                       *(() if method == "loglinear" else mcmc))
    assert_clear(code, err, 2, words)


@pytest.fixture
def unreadable(files, monkeypatch, tmp_path) -> Path:
    """A copy of good.csv without read permission. Root reads it anyway, so there reading
    it (open, Path.read_bytes) raises PermissionError as it would for any other user."""
    import builtins
    import os

    path = tmp_path / "noread.csv"
    path.write_bytes((files / "good.csv").read_bytes())
    path.chmod(0)
    if os.access(path, os.R_OK):  # root
        real_open, real_read_bytes = builtins.open, Path.read_bytes

        def denied(target):
            return Path(str(target)).name == path.name

        def fake_open(file, *args, **kwargs):
            if isinstance(file, str | os.PathLike) and denied(file):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        def fake_read_bytes(self):
            if denied(self):
                raise PermissionError(13, "Permission denied", str(self))
            return real_read_bytes(self)

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(Path, "read_bytes", fake_read_bytes)
    yield path
    path.chmod(0o600)


def test_cli_unreadable_data_file(capsys, files, unreadable):
    """No read permission on DATA: exit 2 naming the file (the memory-routing step opened
    it first and let PermissionError through as an internal error)."""
    code, _, err = run(capsys, "assess", unreadable, "--keys", KEYS, "--population-size",
                       "1e4", "--method", "nb")
    assert_clear(code, err, 2, ("noread.csv", "permission denied"))


@pytest.mark.parametrize("method", ["hdp", "mixed-membership"])
def test_cli_unreadable_structural_zeros_file(capsys, files, unreadable, method):
    code, _, err = run(capsys, "assess", files / "good.csv", "--keys", KEYS,
                       "--population-size", "1e4", "--method", method, "--structural-zeros",
                       unreadable, "--iterations", "20", "--burn-in", "2", "--chains", "1")
    assert_clear(code, err, 2, ("noread.csv", "structural-zeros file could not be read",
                                "permission"))


# --- CLI: outputs (checked before any work; written atomically) ------------------------------

OUT_CASES = [
    (("--out", "no/such/folder/r.json"), ("--out", "does not exist")),
    (("--out", "folder"), ("--out 'folder' is a directory",)),
    (("--out", "good.csv"), ("is the input file",)),
    (("--out", ""), ("--out is empty",)),
]


@pytest.mark.parametrize(("argv", "words"), OUT_CASES, ids=[c[0][1] or "empty" for c in OUT_CASES])
def test_cli_bad_out_is_refused_before_any_work(capsys, files, monkeypatch, argv, words):
    monkeypatch.chdir(files)
    calls = []
    monkeypatch.setattr(NegativeBinomialRisk, "fit",
                        lambda *a, **k: calls.append(1) or pytest.fail("fitted"))
    before = (files / "good.csv").read_bytes()
    code, _, err = run(capsys, "assess", "good.csv", "--keys", KEYS, "--population-size",
                       "1e4", "--method", "nb", *argv)
    assert_clear(code, err, 2, words)
    assert calls == []
    assert (files / "good.csv").read_bytes() == before


def test_cli_out_is_written_atomically(capsys, files, monkeypatch, tmp_path):
    monkeypatch.chdir(files)
    target = tmp_path / "r.json"
    target.write_text("previous")
    code, out, err = run(capsys, "assess", "good.csv", "--keys", KEYS, "--population-size",
                         "1e4", "--method", "nb", "--format", "json", "--out", target)
    assert code == 0, err
    assert json.loads(target.read_text())["method"] == "nb"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left


def test_cli_failed_run_keeps_the_previous_out_file(capsys, files, monkeypatch, tmp_path):
    monkeypatch.chdir(files)
    target = tmp_path / "r.json"
    target.write_text("previous")
    code, _, err = run(capsys, "assess", "good.csv", "--keys", "a,zz", "--population-size",
                       "1e4", "--method", "nb", "--out", target)
    assert code == 2
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


@pytest.mark.parametrize(("argv", "words"), [
    (("--plot", "curve.pdf"), ("--plot 'curve.pdf'", ".png or .svg")),
    (("--plot", "no/such/curve.png"), ("--plot", "does not exist")),
    (("--csv", "no/such/table.csv"), ("--csv", "does not exist")),
    (("--csv", "x.csv", "--out", "x.csv"), ("both name",)),
])
def test_cli_decide_outputs_checked_first(capsys, files, monkeypatch, argv, words):
    monkeypatch.chdir(files)
    pd.DataFrame({"n": [5, 10], "N": [100, 200], "share": [0.5, 0.5]}).to_csv(
        "types.csv", index=False)
    code, _, err = run(capsys, "decide", "--domain-types", "types.csv", "--alpha", "1",
                       "--beta", "2", "--l1", "exp:1", *argv)
    assert_clear(code, err, 2, words)


def test_cli_decide_csv_written_atomically(capsys, files, monkeypatch, tmp_path):
    monkeypatch.chdir(files)
    pd.DataFrame({"n": [5, 10], "N": [100, 200], "share": [0.5, 0.5]}).to_csv(
        tmp_path / "types.csv", index=False)
    code, _, err = run(capsys, "decide", "--domain-types", tmp_path / "types.csv", "--alpha",
                       "1", "--beta", "2", "--l1", "exp:1", "--csv", tmp_path / "t.csv")
    assert code == 0, err
    assert pd.read_csv(tmp_path / "t.csv").shape[0] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "types.csv"]


# --- CLI: evaluate, report, decide, recommend ------------------------------------------------

EVALUATE_CASES = [
    (("--sample", "other_population.csv"),
     ("--sample 'other_population.csv'", "value 9", "does not occur in the population")),
    (("--sample", "missing.csv"), ("file not found",)),
    (("--fraction", "0"), ("fraction",)),
    (("--fraction", "1.5"), ("fraction",)),
    (("--fraction", "nan"), ("fraction",)),
    (("--n", "0"), ("n=0", ">= 1")),
    (("--n", "100000"), ("n=100000", "exceeds the population size")),
    (("--fraction", "0.1", "--methods", "nb,nope"), ("method 'nope'", "available")),
    (("--fraction", "0.1", "--methods", ""), ("--methods is empty",)),
    (("--fraction", "0.1", "--methods", " , "), ("--methods is empty",)),
    (("--fractions", "0.1,,0.2"), ("--fractions",)),
    (("--fractions", "0.1", "--seeds", "5-1"), ("--seeds",)),
    (("--fractions", "0.1", "--seeds", "0-100000000"), ("--seeds '0-100000000'",
                                                        "100,000,001 seeds", "at most 1,000")),
    (("--fractions", "0.1", "--seeds", "0-999,5000"), ("1,001 seeds", "at most 1,000")),
    ((), ("--fraction",)),
    (("--fraction", "0.1", "--methods", "nb:mode=fast"),
     ("--methods item 'nb:mode=fast'", "mode='fast'", "use one of")),
    (("--fractions", "0.1", "--workers", "1", "--methods", "nb,loglinear:max_iter=0"),
     ("--methods item 'loglinear:max_iter=0'", ">= 1")),
    (("--fraction", "0.1", "--methods", "loglinear:bogus=1"),
     ("--methods item 'loglinear:bogus=1'", "no option 'bogus'")),
    (("--fractions", "0.5", "--methods", "nb", "--scheduler", "bogus"),
     ("'bogus' is not a Dask scheduler address", "--scheduler")),
]


@pytest.mark.parametrize(("argv", "words"), EVALUATE_CASES,
                         ids=[" ".join(c[0]) or "no-sample" for c in EVALUATE_CASES])
def test_cli_evaluate_bad_input(capsys, files, monkeypatch, argv, words):
    monkeypatch.chdir(files)
    code, _, err = run(capsys, "evaluate", "good.csv", "--keys", KEYS, *argv)
    assert_clear(code, err, 2, words)


@pytest.mark.parametrize(("argv", "words"), [
    (("--out", "no/such/r.html"), ("does not exist",)),
    (("--methods", "nope", "--out", "r.html"), ("nope",)),
    (("--methods", "", "--out", "r.html"), ("--methods is empty",)),
    (("--contributions", "nope", "--out", "r.html"), ("--contributions 'nope'", "headline")),
    (("--population-size", "nan", "--out", "r.html"), ("not finite",)),
    (("--min-count", "-1", "--out", "r.html"), ("--min-count -1", ">= 2")),
    (("--top", "-5", "--out", "r.html"), ("--top -5", ">= 1")),
    (("--risk-threshold", "5", "--out", "r.html"), ("--risk-threshold 5.0", "(0, 1]")),
    # --population/--protected with household-level keys: silently person-level before, or
    # "missing column 'a_1'"
    (("--population", "good.csv", "--household", "hid", "--household-size", "2", "--out",
      "r.html"), ("--population does not take household-level keys",)),
    (("--protected", "good.csv", "--household", "hid", "--household-size", "2", "--out",
      "r.html"), ("--protected does not take household-level keys",)),
    (("--population", "population_without_a3.csv", "--out", "r.html"),
     ("the sample 'good.csv': column 'a' has value 3",
      "does not occur in the population 'population_without_a3.csv'")),
])
def test_cli_report_bad_input(capsys, files, monkeypatch, tmp_path, argv, words):
    monkeypatch.chdir(files)
    argv = tuple(str(tmp_path / a) if a == "r.html" else a for a in argv)
    size = () if {"--population-size", "--population"} & set(argv) else ("--population-size", "1e4")
    code, _, err = run(capsys, "report", "good.csv", "--keys", KEYS, *size, *argv)
    assert_clear(code, err, 2, words)


@pytest.mark.parametrize(("argv", "words"), [
    (("--domain-types", "missing.csv", "--alpha", "1", "--beta", "1", "--l1", "exp:1"),
     ("file not found",)),
    (("--domain-types", "domain_types_bad.csv", "--alpha", "1", "--beta", "1", "--l1",
      "exp:1"), ("domain_types_bad.csv",)),
    (("--l1", "exp:1"), ("give either data",)),
    (("--domain-types", "good.csv", "--alpha", "1", "--l1", "exp:1"),
     ("both --alpha and --beta",)),
    (("good.csv", "--domain", "a", "--class", "b=99", "--l1", "exp:1", "--population-size",
      "1e4"), ("b='99' is not a level of 'b'",)),
    (("good.csv", "--domain", "a", "--class", "b", "--l1", "exp:1", "--population-size",
      "1e4"), ("write var=value",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:-1", "--population-size",
      "1e4"), ("s=-1.0 must be a positive number",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1", "--l0", "zz",
      "--population-size", "1e4"), ("l0 kind 'zz'",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1", "--population-size",
      "1e4", "--max-enumeration", "-1"), ("--max-enumeration -1",)),
    (("--domain-types", "good.csv", "--alpha", "0", "--beta", "1", "--l1", "exp:1"),
     ("--alpha 0.0 must be a positive number",)),
    (("--domain-types", "domain_types.csv", "--alpha", "1", "--beta", "1", "--l1", "exp:x"),
     ("loss 'exp:x': 'x' is not a number", "e.g. exp:10")),
    (("--domain-types", "domain_types.csv", "--alpha", "1", "--beta", "1", "--l1",
      "gamma:2:y"),
     ("'y' is not a number",)),
    (("--domain-types", "folder", "--alpha", "1", "--beta", "1", "--l1", "exp:1"),
     ("--domain-types 'folder' is a directory",)),
    (("--domain-types", "empty.csv", "--alpha", "1", "--beta", "1", "--l1", "exp:1"),
     ("--domain-types 'empty.csv': the file is empty",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1", "--domain-sizes",
      "empty.csv"), ("--domain-sizes 'empty.csv': the file is empty",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1", "--domain-sizes",
      "folder"), ("--domain-sizes 'folder' is a directory",)),
    (("good.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1", "--domain-sizes",
      "sizes_partial.csv"), ("no size for domain 2", "missing: 2, 3")),
])
def test_cli_decide_bad_input(capsys, files, monkeypatch, argv, words):
    monkeypatch.chdir(files)
    code, _, err = run(capsys, "decide", *argv)
    assert_clear(code, err, 2, words)


@pytest.mark.parametrize(("argv", "words"), [
    (("--target", "1", "--actions", "teleport"), ("teleport",)),
    (("--target", "1", "--plot", "p.pdf"), (".png or .svg",)),
    (("--target", "1", "--change-keys", "zz"), ("zz",)),
    (("--target", "1", "--change-keys", "A"), ("key 'A'", "--change-keys")),
    (("--target", "-1"), ("must be a non-negative number",)),
    (("--target", "nan"), ("must be a non-negative number",)),
    (("--target", "inf"), ("--target inf", "non-negative number and finite")),
    (("--target", "1", "--refit-candidates", "0"), ("--refit-candidates 0",)),
    (("--target", "1", "--max-pattern-size", "0"), ("--max-pattern-size 0",)),
    (("--target", "1", "--objective", "records-above"),
     ("give that risk with --risk-threshold R",)),
])
def test_cli_recommend_bad_input(capsys, files, monkeypatch, argv, words):
    monkeypatch.chdir(files)
    code, _, err = run(capsys, "recommend", "good.csv", "--keys", KEYS, "--population-size",
                       "1e4", "--method", "nb", *argv)
    assert_clear(code, err, 2, words)


PROTECT_FILE_CASES = [
    ("empty.csv", ("empty.csv: the file is empty",)),
    ("header_only.csv", ("header_only.csv: no records",)),
    ("gzip_truncated.csv", ("gzip_truncated.csv: could not be read", "EOFError")),
    ("archive.csv", ("zip archive",)),
    ("binary.csv", ("binary data",)),
    ("folder", ("'folder' is a directory",)),
    ("quoted_header.csv", ("quoted_header.csv: missing column 'a'",
                           "looks semicolon-separated")),
    ("dup.csv", ("dup.csv: column 'a' appears 2 times", "rename the duplicates")),
]


@pytest.mark.parametrize(("name", "words"), PROTECT_FILE_CASES,
                         ids=[c[0] for c in PROTECT_FILE_CASES])
def test_cli_protect_bad_file(capsys, files, monkeypatch, tmp_path, name, words):
    """protect reads the whole file with its own reader: the same refusals as assess."""
    monkeypatch.chdir(files)
    code, _, err = run(capsys, "protect", name, "--keys", "a,b", "--population-size", "1e4",
                       "--method", "nb", "--k-anonymity", "2", "--out", tmp_path / "p.csv")
    assert_clear(code, err, 2, words)
    assert "could not be read (InputError" not in err  # not wrapped twice
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("new", "shown"), [([1], "[1]"), (None, "null"), (True, "true"),
                                            ({"x": 1}, '{"x": 1}')])
def test_cli_protect_recode_to_a_non_category_is_refused(capsys, files, tmp_path, new, shown):
    """A JSON list/null/boolean as the new category was written into the file as the text
    '[1]', 'None', 'True'."""
    recode = tmp_path / "recode.json"
    recode.write_text(json.dumps({"a": {"0": new}}))
    code, _, err = run(capsys, "protect", files / "good.csv", "--keys", "a,b",
                       "--population-size", "1e4", "--method", "nb", "--recode", recode,
                       "--out", tmp_path / "p.csv")
    assert_clear(code, err, 2, (f"--recode 'a': the new value of '0' is {shown}",
                                "give a category as text or a number"))
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("k", ["1", "0", "-3"])
def test_cli_protect_k_below_two_names_the_flag(capsys, files, tmp_path, k):
    code, _, err = run(capsys, "protect", files / "good.csv", "--keys", "a,b",
                       "--population-size", "1e4", "--method", "nb", "--k-anonymity", k,
                       "--out", tmp_path / "p.csv")
    assert_clear(code, err, 2, (f"--k-anonymity {k} must be an integer >= 2",))


@pytest.mark.parametrize("spec", ["tau2=inf", "tau2=-1"])
def test_cli_protect_target_value_names_the_flag(capsys, files, tmp_path, spec):
    code, _, err = run(capsys, "protect", files / "good.csv", "--keys", "a,b",
                       "--population-size", "1e4", "--method", "nb", "--target", spec,
                       "--out", tmp_path / "p.csv")
    assert_clear(code, err, 2, (f"--target '{spec}'", "non-negative number and finite"))


def test_cli_protect_nested_column_to_stata_names_the_output(capsys, files, tmp_path):
    """A list column (kept as read) cannot go into a .dta: exit 2 naming --out, no file."""
    code, _, err = run(capsys, "protect", files / "nested.parquet", "--keys", "a,b",
                       "--population-size", "1e4", "--method", "nb", "--k-anonymity", "2",
                       "--out", tmp_path / "p.dta")
    assert_clear(code, err, 2, ("--out", "p.dta", "cannot be written to a stata file",
                                ".parquet or .csv"))
    assert list(tmp_path.iterdir()) == []


# --- readers: agency formats and DuckDB ------------------------------------------------------

def _result_of(source, **kw):
    md = Microdata.from_source(source, keys=["a", "b", "c"], population_size=10_000, **kw)
    return md, NegativeBinomialRisk().fit(tabulate(md))


def _same_counts(md1, md2):
    t1, t2 = tabulate(md1), tabulate(md2)
    return sorted(t1.counts.tolist()) == sorted(t2.counts.tolist())


def test_stata_reads_to_the_same_result_as_its_csv(files):
    df = _frame()
    df.drop(columns=["name"]).to_stata(files / "s.dta", write_index=False)
    md_csv, r_csv = _result_of(files / "good.csv")
    md_dta, r_dta = _result_of(files / "s.dta")
    assert _same_counts(md_csv, md_dta)
    assert md_dta.levels == md_csv.levels
    for m in ("tau1", "tau2", "expected_reidentifications"):
        assert r_dta.measures[m].estimate == pytest.approx(r_csv.measures[m].estimate, rel=1e-12)


def test_spss_value_labels_become_category_labels(files):
    pyreadstat = pytest.importorskip("pyreadstat")
    df = _frame().drop(columns=["name"])
    labels = {0: "north", 1: "south", 2: "east", 3: "west"}
    pyreadstat.write_sav(df, str(files / "s.sav"), variable_value_labels={"a": labels})
    md_csv, r_csv = _result_of(files / "good.csv")
    md_sav, r_sav = _result_of(files / "s.sav")
    assert set(md_sav.levels[0]) == set(labels.values())
    assert _same_counts(md_csv, md_sav)
    assert r_sav.measures["tau1"].estimate == pytest.approx(r_csv.measures["tau1"].estimate,
                                                            rel=1e-12)
    # the same file read as .zsav (compressed SPSS)
    pyreadstat.write_sav(df, str(files / "s.zsav"), compress=True,
                         variable_value_labels={"a": labels})
    md_z, r_z = _result_of(files / "s.zsav")
    assert r_z.measures["tau2"].estimate == pytest.approx(r_sav.measures["tau2"].estimate)


def test_sas_transport_reads_to_the_same_result_as_its_csv(files):
    pyreadstat = pytest.importorskip("pyreadstat")
    pyreadstat.write_xport(_frame().drop(columns=["name"]), str(files / "s.xpt"))
    md_csv, r_csv = _result_of(files / "good.csv")
    md_xpt, r_xpt = _result_of(files / "s.xpt")
    assert _same_counts(md_csv, md_xpt)
    assert r_xpt.measures["tau2"].estimate == pytest.approx(r_csv.measures["tau2"].estimate,
                                                            rel=1e-12)


def test_stata_through_the_cli(capsys, files):
    _frame().drop(columns=["name"]).to_stata(files / "cli.dta", write_index=False)
    args = ("--keys", KEYS, "--population-size", "1e4", "--method", "nb", "--format", "json")
    code, out, err = run(capsys, "assess", files / "cli.dta", *args)
    assert code == 0, err
    _, ref, _ = run(capsys, "assess", files / "good.csv", *args)
    assert json.loads(out)["measures"] == json.loads(ref)["measures"]


def test_duckdb_table_and_query(files):
    duckdb = pytest.importorskip("duckdb")
    frame = _frame()
    con = duckdb.connect(str(files / "s.db"))
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.close()
    _, r_csv = _result_of(files / "good.csv")
    md_t, r_t = _result_of(f"duckdb:{files / 's.db'}::people")
    md_q, r_q = _result_of(f"duckdb:{files / 's.db'}::SELECT * FROM people WHERE a >= 0")
    assert r_t.measures["tau1"].estimate == pytest.approx(r_csv.measures["tau1"].estimate)
    assert r_q.measures["tau2"].estimate == pytest.approx(r_csv.measures["tau2"].estimate)
    assert md_t.source == "duckdb:s.db::people"
    assert md_q.source == "duckdb:s.db::query"  # provenance does not carry the query text
    sub = Microdata.from_source(f"duckdb:{files / 's.db'}::SELECT * FROM people WHERE a = 0",
                                keys=["a", "b"], population_size=1000)
    assert sub.n == int((frame.a == 0).sum())


@pytest.mark.parametrize(("spec", "words"), [
    ("duckdb:{d}/s_missing.db::t", ("database not found",)),
    ("duckdb:{d}/good.csv::t", ("not a duckdb database",)),
    ("duckdb:{d}/dbfile.db::nope", ("table 'nope' could not be read",)),
    ("duckdb:{d}/dbfile.db::SELECT nonsense", ("the query could not be read",)),
    ("duckdb:{d}/dbfile.db", ("duckdb:file.db::table",)),
    ("duckdb:{d}/dbfile.db::t2", ("missing column 'c'",)),
])
def test_duckdb_bad_sources(files, spec, words):
    duckdb = pytest.importorskip("duckdb")
    if not (files / "dbfile.db").exists():
        con = duckdb.connect(str(files / "dbfile.db"))
        con.execute("CREATE TABLE t AS SELECT 1 AS a, 2 AS b, 3 AS c")
        con.execute("CREATE TABLE t2 AS SELECT 1 AS a, 2 AS b")
        con.close()
    with pytest.raises(InputError) as info:
        Microdata.from_source(spec.format(d=files), keys=["a", "b", "c"])
    for w in words:
        assert w.lower() in str(info.value).lower()


# --- API: Microdata, tabulate, frames ------------------------------------------------------

def _df():
    return _frame(60)


API_MICRODATA_CASES = [
    (dict(keys=5), ParameterError, "keys=5"),
    (dict(keys=[1, 2]), ParameterError, "not a column name"),
    (dict(keys=[]), ParameterError, "at least one key"),
    (dict(keys="a,a"), ParameterError, "repeat"),
    (dict(keys=["a"], weights=3), ParameterError, "weights=3"),
    (dict(keys=["a"], household=["hid"]), ParameterError, "household="),
    (dict(keys=["a"], levels=3), ParameterError, "levels=3"),
    (dict(keys=["a"], levels={"a": 3}), ParameterError, "levels of 'a' is 3"),
    (dict(keys=["a"], levels={"a": "0123"}), ParameterError, "not a list"),
    (dict(keys=["a"], levels={"a": {0: 1}}), ParameterError, "not a list"),
    (dict(keys=["a"], levels={"a": []}), ParameterError, "empty list"),
    (dict(keys=["a"], levels={"b": [0, 1]}), ParameterError, "not a key"),
    (dict(keys=["a"], levels={"a": [0, 1]}), InputError, "not among its declared levels"),
    (dict(keys=["a"], population_size="abc"), ParameterError, "must be a number"),
    (dict(keys=["a"], population_size=True), ParameterError, "must be a number"),
    (dict(keys=["a"], population_size=float("nan")), ParameterError, "not finite"),
    (dict(keys=["a"], population_size=float("inf")), ParameterError, "not finite"),
    (dict(keys=["a"], population_size=-1), InputError, "smaller than the sample size"),
    (dict(keys=["a"], population_size=59), InputError, "n=60"),
    (dict(keys=["a"], population_size=1e13), ParameterError, "more than any population"),
    (dict(keys=["a"], sampling_fraction=1e-15), ParameterError, "more than any population"),
    (dict(keys=["a"], sampling_fraction=float("nan")), ParameterError, "(0, 1]"),
    (dict(keys=["a"], sampling_fraction=0), ParameterError, "(0, 1]"),
    (dict(keys=["a"], sampling_fraction="0.1"), ParameterError, "must be a number"),
    (dict(keys=["a"], population_size=100, sampling_fraction=0.1), ParameterError, "not both"),
    (dict(keys=["a"], max_levels=0), ParameterError, "max_levels=0"),
    (dict(keys=["a"], max_levels=2.5), ParameterError, "integer"),
    (dict(keys=["a"], max_levels=True), ParameterError, "integer"),
    (dict(keys=["a"], missing="drop"), ParameterError, "missing='drop'"),
    (dict(keys=["a", "name"], max_levels=20), InputError, "60 distinct values"),
    (dict(keys=["zz"]), InputError, "missing column 'zz'"),
    (dict(keys=["a"], weights="zz"), InputError, "missing column 'zz'"),
    (dict(keys=["a"], weights="a"), ParameterError, "both a key and weights"),
]


@pytest.mark.parametrize(("kwargs", "error", "words"), API_MICRODATA_CASES,
                         ids=[repr(c[0])[:60] for c in API_MICRODATA_CASES])
def test_api_microdata_bad_arguments(kwargs, error, words):
    df = _df()
    before = df.copy()
    with pytest.raises(error) as info:
        Microdata.from_source(df, **kwargs)
    assert words.lower() in str(info.value).lower()
    pd.testing.assert_frame_equal(df, before)  # never mutated


def test_api_weights_summing_below_n_refused():
    df = _df().assign(w=0.5)
    with pytest.raises(InputError, match="weights sum to N=30, fewer than the n=60"):
        Microdata.from_source(df, keys=["a"], weights="w")


def test_api_weights_summing_to_more_than_any_population_refused():
    with pytest.raises(ParameterError, match="the sum of the weights makes N = 6e"):
        Microdata.from_source(_df().assign(w=1e13), keys=["a"], weights="w")


def test_api_weights_summing_to_n_accepted():
    md = Microdata.from_source(_df().assign(w=1.0), keys=["a"], weights="w")
    assert md.population_size == 60


BAD_SOURCES = [
    (123, "unsupported data source of type int"),
    (None, "unsupported data source of type NoneType"),
    ([1, 2, 3], "unsupported data source of type list"),
    (pd.Series([1, 2, 3], name="a"), "unsupported data source of type Series"),
    ({"a": 5}, "not a column"),
    ({"a": [1, 2, 3], "b": [1, 2]}, "different lengths"),
    ("", "empty"),
]


@pytest.mark.parametrize(("source", "words"), BAD_SOURCES, ids=[repr(s)[:30] for s, _ in
                                                                BAD_SOURCES])
def test_api_bad_sources(source, words):
    keys = ["a", "b"] if isinstance(source, dict) and "b" in source else ["a"]
    with pytest.raises(SdcRiskError) as info:
        Microdata.from_source(source, keys=keys)
    assert words.lower() in str(info.value).lower()


def test_api_dataframe_with_duplicated_columns_is_refused():
    df = _df()
    df.columns = ["a", "a", "c", "d", "e", "w", "hid", "name"]
    with pytest.raises(InputError, match=r"column 'a' appears 2 times \(positions 1, 2\)"):
        Microdata.from_source(df, keys=["a", "c"])
    # a duplicated column that is not needed does not matter
    assert Microdata.from_source(df, keys=["c", "d"]).n == 60


def test_api_arrow_table_with_duplicated_columns_is_refused():
    pa = pytest.importorskip("pyarrow")
    t = pa.table([[1, 2], [3, 4]], names=["a", "a"])
    with pytest.raises(InputError, match="'a' appears 2 times"):
        Microdata.from_source(t, keys=["a"])


def test_csv_with_duplicated_columns_is_refused_by_name(files):
    with pytest.raises(InputError, match="dup.csv: column 'a' appears 2 times"):
        Microdata.from_source(files / "dup.csv", keys=["a", "b"])
    # the CSV reader used to take the first 'a' silently; 'c' alone is fine
    assert Microdata.from_source(files / "dup.csv", keys=["b", "c"]).n == 3


def test_empty_dataframe_is_refused():
    with pytest.raises(InputError, match="no records"):
        Microdata.from_source(_df().iloc[:0], keys=["a"])


@pytest.mark.parametrize("thing", [_frame(5), "good.csv", None, 3, np.zeros(3)],
                         ids=["DataFrame", "str", "None", "int", "ndarray"])
def test_api_tabulate_takes_microdata(thing):
    with pytest.raises(ParameterError, match="tabulate\\(\\) takes a Microdata"):
        tabulate(thing)


def test_api_tabulate_population_must_be_microdata():
    md = Microdata.from_source(_df(), keys=["a"])
    with pytest.raises(ParameterError, match="population"):
        tabulate(md, population=_df())


# --- API: estimators and fit ---------------------------------------------------------------

ESTIMATOR_CASES = [
    (lambda: NegativeBinomialRisk(mode="fast"), "mode='fast'"),
    (lambda: NegativeBinomialRisk(ci_level=2), "ci_level=2"),
    (lambda: NegativeBinomialRisk(ci_level="0.9"), "ci_level='0.9'"),
    (lambda: NegativeBinomialRisk(ci_level=float("nan")), "ci_level=nan"),
    (lambda: NegativeBinomialRisk(max_global_risk=0), "max_global_risk=0"),
    (lambda: GraphicalRisk(random_state=-1), "random_state=-1"),
    (lambda: GraphicalRisk(random_state=1.5), "random_state=1.5"),
    (lambda: GraphicalRisk(random_state="0"), "random_state='0'"),
    (lambda: GraphicalRisk(prior_weight=0), "prior_weight=0"),
    (lambda: GraphicalRisk(window=0.5), "window=0.5"),
    (lambda: GraphicalRisk(monte_carlo=-1), "monte_carlo=-1"),
    (lambda: LogLinearRisk(terms="+++"), "empty term"),
    (lambda: LogLinearRisk(terms="a::b"), "'a::b'"),
    (lambda: LogLinearRisk(terms=""), "empty"),
    (lambda: LogLinearRisk(terms=5), "terms=5"),
    (lambda: LogLinearRisk(terms=[]), "empty"),
    (lambda: LogLinearRisk(terms=[{"a"}]), "not a variable name"),
    (lambda: LogLinearRisk(max_iter=0), "max_iter=0"),
    (lambda: LogLinearRisk(random_state=-3), "random_state=-3"),
    (lambda: HdpRisk(chains=0), "chains=0"),
    (lambda: HdpRisk(random_state=-1), "random_state=-1"),
    (lambda: MixedMembershipRisk(profiles=0), "profiles=0"),
    (lambda: AutoRisk(replicates=0), "replicates=0"),
    (lambda: AutoRisk(candidates="nb"), "non-empty list"),
    (lambda: AutoRisk(fraction=2), "fraction=2"),
    (lambda: AutoRisk(random_state=-1), "random_state=-1"),
    (lambda: get_estimator("nope"), "unknown method 'nope'"),
    (lambda: get_estimator("nb", terms="all-2-way"), "does not take the option 'terms'"),
]


@pytest.mark.parametrize(("make", "words"), ESTIMATOR_CASES,
                         ids=[c[1][:40] for c in ESTIMATOR_CASES])
def test_api_bad_estimator_settings(make, words):
    with pytest.raises(ParameterError) as info:
        make()
    assert words.lower() in str(info.value).lower()


@pytest.fixture(scope="module")
def table():
    return tabulate(Microdata.from_source(_frame(), keys=["a", "b", "c"],
                                          population_size=10_000))


FIT_CASES = [
    (dict(population_size=float("nan")), ParameterError, "not finite"),
    (dict(population_size=float("inf")), ParameterError, "not finite"),
    (dict(population_size="1e4"), ParameterError, "must be a number"),
    (dict(population_size=True), ParameterError, "must be a number"),
    (dict(population_size=-5), InputError, "smaller than the sample size"),
    (dict(population_size=199), InputError, "n=200"),
    (dict(population_size=1e300), ParameterError, "more than any population"),
    (dict(memory_limit=-1), ParameterError, "memory_limit=-1"),
    (dict(memory_limit=1), SdcRiskError, "memory limit"),
    (dict(workers=0), ParameterError, "workers=0"),
]


@pytest.mark.parametrize(("kwargs", "error", "words"), FIT_CASES,
                         ids=[repr(c[0]) for c in FIT_CASES])
@pytest.mark.parametrize("estimator", [NegativeBinomialRisk(), PoissonGammaRisk(),
                                       LogLinearRisk()], ids=["nb", "pg", "loglinear"])
def test_api_bad_fit_arguments(table, estimator, kwargs, error, words):
    with pytest.raises(error) as info:
        estimator.fit(table, **kwargs)
    assert words.lower() in str(info.value).lower()


@pytest.mark.parametrize("thing", [_frame(5), "good.csv", None],
                         ids=["DataFrame", "str", "None"])
def test_api_fit_takes_a_table(thing):
    with pytest.raises(ParameterError, match="fit\\(\\) takes a CellTable"):
        NegativeBinomialRisk().fit(thing)


def test_api_fit_of_microdata_says_tabulate():
    md = Microdata.from_source(_df(), keys=["a"])
    with pytest.raises(ParameterError, match="sdcrisk.tabulate"):
        NegativeBinomialRisk().fit(md)


def test_loglinear_unknown_variable_names_the_term(table):
    with pytest.raises(ParameterError, match=r"^terms='all-2-way \+ a:zz': model term "
                       "'a:zz': 'zz' is not a key variable; use the keys "):
        LogLinearRisk(terms="all-2-way + a:zz").fit(table)
    with pytest.raises(ParameterError, match=r"^terms=\[\('a', 'zz'\)\]: model term "):
        LogLinearRisk(terms=[("a", "zz")]).fit(table)


def test_loglinear_saturated_is_noted(table):
    res = LogLinearRisk(terms="saturated").fit(table)
    assert any("saturated model reproduces the sample counts" in a for a in res.assumptions)
    plain = LogLinearRisk(terms="all-2-way").fit(table)
    assert not any("saturated" in a for a in plain.assumptions)


def test_api_warnings_point_at_the_callers_line(table):
    # Poisson-gamma on near-Poisson counts warns that alpha hit its bound
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        PoissonGammaRisk().fit(table)
    ours = [w for w in got if issubclass(w.category, sdcrisk.SdcRiskWarning)]
    assert ours, "expected a ConvergenceWarning from this table"
    assert all(Path(w.filename).resolve() == Path(__file__).resolve() for w in ours)


def test_short_mcmc_run_explains_missing_rhat(table):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        HdpRisk(chains=2, iterations=10, burn_in=2).fit(table)
    text = " ".join(str(w.message) for w in got)
    assert "cannot be computed from 1 kept draw(s)" in text
    assert "= nan" not in text
    assert not [w for w in got if issubclass(w.category, RuntimeWarning)]
    assert all(Path(w.filename).resolve() == Path(__file__).resolve() for w in got
               if issubclass(w.category, sdcrisk.SdcRiskWarning))


# --- degenerate data ----------------------------------------------------------------------------

FAST_ESTIMATORS = {
    "nb": NegativeBinomialRisk(),
    "poisson-gamma": PoissonGammaRisk(),
    "loglinear": LogLinearRisk(),
    "graphical": GraphicalRisk(),
    "graphical-mc": GraphicalRisk(monte_carlo=4000, random_state=1),
    "copula": GaussianCopulaRisk(),
    "latent-class": LatentClassRisk(),
}


def _quiet_fit(est, table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        return est.fit(table)


def _table(frame, keys, population_size):
    return tabulate(Microdata.from_source(frame, keys=keys, population_size=population_size))


def _check_finite_and_ordered(res, n1):
    for name, m in res.measures.items():
        for v in (m.estimate, m.lower, m.upper):
            assert v is None or math.isfinite(v), (name, v)
    t1, t2 = res.measures["tau1"].estimate, res.measures["tau2"].estimate
    assert -1e-12 <= t1 <= t2 + 1e-9 <= n1 + 2e-9
    risk = res.record_risk()
    assert np.all(np.isfinite(risk)) and np.all((risk >= 0) & (risk <= 1 + 1e-12))


ONE_RECORD = pd.DataFrame({"a": [1], "b": [2], "c": [0]})


@pytest.mark.parametrize("name", list(FAST_ESTIMATORS))
def test_one_record(name):
    """One record, one cell (K = 1): the whole population shares its key, so it is not
    population unique: tau1 = 0 where the model knows K = 1 (graphical), small otherwise;
    every value finite."""
    table = _table(ONE_RECORD, ["a", "b", "c"], 10_000)
    res = _quiet_fit(FAST_ESTIMATORS[name], table)
    _check_finite_and_ordered(res, 1)
    if name.startswith("graphical"):
        # pi = 1 for the only cell: F = N, tau1 = P(F = 1) = 0, tau2 = E[1/F] = 1/N
        assert res.measures["tau1"].estimate == pytest.approx(0, abs=1e-12)
        assert res.measures["tau2"].estimate == pytest.approx(1e-4, rel=1e-3)
    if name == "nb":
        # NB(f = 1, p = n/N): P(U = 0) = p
        assert res.measures["tau1"].estimate == pytest.approx(1e-4)


def test_one_record_graphical_closed_form_agrees_with_its_monte_carlo():
    table = _table(ONE_RECORD, ["a", "b", "c"], 10_000)
    closed = _quiet_fit(GraphicalRisk(), table)
    mc = _quiet_fit(GraphicalRisk(monte_carlo=4000, random_state=3), table)
    for m in ("tau1", "tau2", "theta", "expected_reidentifications"):
        assert closed.measures[m].estimate == pytest.approx(mc.measures[m].estimate,
                                                            rel=1e-3, abs=1e-9), m


@pytest.mark.parametrize("name", list(FAST_ESTIMATORS))
def test_no_sample_uniques(name):
    frame = pd.DataFrame({"a": [0, 0, 1, 1, 2, 2] * 5, "b": [1, 1, 0, 0, 1, 1] * 5})
    res = _quiet_fit(FAST_ESTIMATORS[name], _table(frame, ["a", "b"], 3000))
    assert res.measures["tau1"].estimate == 0
    assert res.measures["tau2"].estimate == 0
    _check_finite_and_ordered(res, 0)


@pytest.mark.parametrize("name", list(FAST_ESTIMATORS))
def test_all_records_unique(name):
    frame = pd.DataFrame({"a": np.arange(12) % 4, "b": np.arange(12) // 4})
    table = _table(frame, ["a", "b"], 12_000)
    assert table.sample_uniques == 12
    res = _quiet_fit(FAST_ESTIMATORS[name], table)
    _check_finite_and_ordered(res, 12)


@pytest.mark.parametrize("name", list(FAST_ESTIMATORS))
def test_population_equals_sample(name):
    """N = n: nothing is unseen, so every sample unique is population unique."""
    frame = _frame(80)
    table = _table(frame, ["a", "b", "c"], 80)
    res = _quiet_fit(FAST_ESTIMATORS[name], table)
    n1 = table.sample_uniques
    assert res.measures["tau1"].estimate == pytest.approx(n1, rel=1e-9)
    assert res.measures["tau2"].estimate == pytest.approx(n1, rel=1e-9)
    _check_finite_and_ordered(res, n1)


@pytest.mark.parametrize("name", list(FAST_ESTIMATORS))
def test_population_one_more_than_sample(name):
    """N = n + 1: one unseen person can spoil at most one sample unique."""
    frame = _frame(80)
    table = _table(frame, ["a", "b", "c"], 81)
    res = _quiet_fit(FAST_ESTIMATORS[name], table)
    n1 = table.sample_uniques
    _check_finite_and_ordered(res, n1)
    assert res.measures["tau1"].estimate >= n1 - 1 - 1e-9


def test_graphical_closed_form_and_monte_carlo_agree_on_degenerate_tables():
    cases = [
        (pd.DataFrame({"a": [0, 0, 1, 1, 2, 2] * 5, "b": [1, 1, 0, 0, 1, 1] * 5}), 3000),
        (pd.DataFrame({"a": np.arange(12) % 4, "b": np.arange(12) // 4}), 12_000),
        (_frame(80), 80),
    ]
    for frame, big_n in cases:
        keys = [k for k in ("a", "b", "c") if k in frame]
        table = _table(frame, keys, big_n)
        closed = _quiet_fit(GraphicalRisk(), table)
        mc = _quiet_fit(GraphicalRisk(monte_carlo=4000, random_state=5), table)
        for m in ("tau1", "tau2"):
            a, b = closed.measures[m].estimate, mc.measures[m].estimate
            assert a == pytest.approx(b, rel=0.05, abs=0.05 + 0.02 * table.sample_uniques), m


def test_auto_on_identical_records_answers_zero_with_a_note(capsys, files):
    code, out, err = run(capsys, "assess", files / "identical.csv", "--keys", KEYS,
                         "--population-size", "1e4", "--format", "json")
    assert_clear(code, err, 0, ())
    d = json.loads(out)
    assert d["measures"]["tau1"]["estimate"] == 0
    assert d["measures"]["tau2"]["estimate"] == 0
    assert any("no sample uniques" in a for a in d["assumptions"])


def test_auto_does_not_validate_on_one_record_subsamples(files):
    table = tabulate(Microdata.from_source(files / "one.csv", keys=["a", "b", "c"],
                                           population_size=10_000))
    res = AutoRisk().fit(table)
    assert res.diagnostics["validation"] == []
    # the calibrated default (no sub-samples) and the validated rule both refuse to work on
    # one record and say so
    assert any("too few for auto's calibrated combination" in a for a in res.assumptions)
    assert res.fitted["choice"]["rule"] == "not validated"
    _check_finite_and_ordered(res, 1)
    res = AutoRisk(rule="validated").fit(table)
    assert any("cannot validate the candidates" in a for a in res.assumptions)
    assert res.diagnostics["validation"] == []


def test_auto_small_file_uses_the_first_given_candidate(files):
    table = tabulate(Microdata.from_source(files / "one.csv", keys=["a", "b", "c"],
                                           population_size=10_000))
    res = AutoRisk(candidates=["graphical", "nb"]).fit(table)
    assert res.fitted["choice"]["candidates"] == ["graphical"]
    assert res.measures["tau1"].estimate == pytest.approx(0, abs=1e-12)


def test_cli_one_record_file(capsys, files):
    code, out, err = run(capsys, "assess", files / "one.csv", "--keys", KEYS,
                         "--population-size", "1e4", "--format", "json")
    assert_clear(code, err, 0, ())
    d = json.loads(out)
    assert any("n = 1 record" in a for a in d["assumptions"])


# --- out-of-core, key-set files ------------------------------------------------------------

@pytest.mark.parametrize(("name", "words"), [
    ("gzip_named.csv", ("gzip-compressed data", "rename it to gzip_named.csv.gz")),
    ("dup.csv", ("dup.csv: column 'a' appears 2 times", "rename the duplicates")),
    ("binary.csv", ("binary data",)),
    ("csv_named.dta", ("streams csv, parquet and mu-argus",)),
])
def test_cli_out_of_core_bad_files(capsys, files, name, words):
    keys = "a,b" if name == "dup.csv" else KEYS
    code, _, err = run(capsys, "assess", files / name, "--keys", keys, "--population-size",
                       "1e4", "--method", "nb", "--out-of-core")
    assert_clear(code, err, 2, words)
    assert all(ch.isprintable() or ch == "\n" for ch in err)


def test_cli_out_of_core_refuses_agency_formats(capsys, files):
    _frame().drop(columns=["name"]).to_stata(files / "ooc.dta", write_index=False)
    code, _, err = run(capsys, "assess", files / "ooc.dta", "--keys", KEYS,
                       "--population-size", "1e4", "--method", "nb", "--out-of-core")
    assert_clear(code, err, 2, ("streams csv, parquet and mu-argus", "without --out-of-core"))


@pytest.mark.parametrize(("content", "words"), [
    ("{not json", ("not valid json",)),
    ("5", ("must be a list of key sets",)),
    ("[5]", ("key set 5 is not a list",)),
    ('[["a", "zz"]]', ("missing column 'zz'",)),
    ("[]", ("no key set found",)),
])
def test_cli_bad_key_set_files(capsys, tmp_path, files, content, words):
    path = tmp_path / "sets.json"
    path.write_text(content)
    code, _, err = run(capsys, "assess", files / "good.csv", "--keys", KEYS,
                       "--population-size", "1e4", "--method", "nb", "--key-sets", path)
    assert_clear(code, err, 2, words)


def test_cli_workers_zero_names_the_flag(capsys, files):
    code, _, err = run(capsys, "assess", files / "good.csv", "--keys", KEYS,
                       "--population-size", "1e4", "--method", "nb", "--workers", "0")
    assert_clear(code, err, 2, ("--workers 0",))


# --- other public entry points -------------------------------------------------------------

def _md():
    return Microdata.from_source(_frame(), keys=["a", "b", "c"], population_size=10_000)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: sdcrisk.evaluate(_frame(), [NegativeBinomialRisk()],
                              design=sdcrisk.Bernoulli(0.1)),
     ParameterError, "evaluate() takes the population as a Microdata"),
    (lambda: sdcrisk.evaluate(_md(), [NegativeBinomialRisk()], sample=_frame()),
     ParameterError, "evaluate(sample=...) takes a Microdata"),
    (lambda: sdcrisk.evaluate(_md(), [NegativeBinomialRisk()]), ParameterError,
     "exactly one of design= or sample="),
    (lambda: sdcrisk.validate(_frame(), ["nb"]), ParameterError,
     "validate() takes a CellTable"),
    (lambda: sdcrisk.validate(tabulate(_md()), ["nb"], replicates=0), ParameterError,
     "replicates=0"),
    (lambda: sdcrisk.draw_sample(_md(), sdcrisk.Bernoulli(0.1), seed=-1), ParameterError,
     "seed=-1"),
    (lambda: sdcrisk.draw_sample(_frame(), sdcrisk.Bernoulli(0.1)), ParameterError,
     "takes a Microdata"),
    (lambda: sdcrisk.draw_sample(_md(), sdcrisk.Bernoulli(2)), ParameterError, "fraction=2"),
    (lambda: sdcrisk.draw_sample(_md(), sdcrisk.SimpleRandomSample(10**6)), InputError,
     "exceeds the population size"),
    (lambda: sdcrisk.suda2(_frame()), SdcRiskError, "needs a CellTable or Microdata"),
    (lambda: sdcrisk.population_uniqueness(_frame()), SdcRiskError,
     "needs a CellTable, Microdata or FrequencyProfile"),
    (lambda: NegativeBinomialRisk().fit(tabulate(_md())).record_risk("x"), ParameterError,
     "gives no 'x' risk"),
    (lambda: sdcrisk.tabulate_file("nope.csv", keys=["a"]), InputError, "file not found"),
    (lambda: sdcrisk.BetaBinomialPrior(-1, 2), ParameterError, "alpha=-1"),
])
def test_api_entry_points_check_their_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_tabulate_file_refuses_gzip_under_a_csv_name(files):
    with pytest.raises(InputError, match="gzip-compressed data"):
        sdcrisk.tabulate_file(files / "gzip_named.csv", keys=["a"], population_size=1e4)


def test_tabulate_file_population_size_nan(files):
    with pytest.raises(ParameterError, match="not finite"):
        sdcrisk.tabulate_file(files / "good.csv", keys=["a"], population_size=float("nan"))


def test_loglinear_bootstrap_on_one_record():
    """A bootstrap replicate of a one-record table is often empty: no error (it was a
    ZeroDivisionError), tau1 = 0 (K = 1: the population shares the record's key)."""
    table = _table(ONE_RECORD, ["a", "b", "c"], 10_000)
    res = _quiet_fit(LogLinearRisk(bootstrap=30), table)
    _check_finite_and_ordered(res, 1)
    assert res.measures["tau1"].estimate == pytest.approx(0, abs=1e-12)
    assert res.measures["tau2"].estimate == pytest.approx(1e-4, rel=1e-3)


def test_keys_and_levels_accept_any_iterable():
    """The checks refuse scalars and strings, not the iterables people pass."""
    df = _df()
    md = Microdata.from_source(df, keys={"a": 1, "b": 2}.keys(),
                               levels={"a": pd.Index([0, 1, 2, 3]), "b": range(3)})
    assert md.keys == ("a", "b")
    assert md.levels[0] == (0, 1, 2, 3)
    assert Microdata.from_source(df, keys=(k for k in ("a", "c"))).keys == ("a", "c")


def test_run_time_bounds_accept_their_maximum():
    """The upper bounds of --bootstrap, --points and --seeds are inclusive."""
    from sdcrisk import GaussianCopulaRisk, LatentClassRisk, LogLinearRisk
    from sdcrisk.cli.evaluate import parse_seeds

    LogLinearRisk(bootstrap=10_000)
    LatentClassRisk(bootstrap=10_000)
    GaussianCopulaRisk(points=65_536)
    assert parse_seeds("0-999") == list(range(1000))
    for make in (lambda: LogLinearRisk(bootstrap=10_001),
                 lambda: LatentClassRisk(bootstrap=10_001),
                 lambda: GaussianCopulaRisk(points=65_537)):
        with pytest.raises(ParameterError, match="at most"):
            make()
