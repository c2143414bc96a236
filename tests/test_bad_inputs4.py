"""The fourth bad-input sweep: messy files as a disclosure-control user has them. Each test
pins an input that ended in a traceback (exit 1), in a wrong figure given silently, or in a
message naming neither the value nor the remedy: the exit code and the words of the
message, or the figures the input gives once read right."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import assert_refused_clearly as _clear
from conftest import run_cli as _run
from sdcrisk import Microdata
from sdcrisk.exceptions import InputError


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(1, 4, n), "b": rng.integers(1, 3, n),
                         "w": np.round(rng.uniform(20, 60, n), 2)})


# --- integer codes past 2**53 -------------------------------------------------------------

@pytest.mark.parametrize("extra", [(), ("--out-of-core",)])
def test_codes_too_long_for_a_number_are_refused(capsys, tmp_path, extra):
    """A key of 21-digit codes: pyarrow reads the column as double, whose cast to int64
    wrapped every value to one, so the key had a single category and the risk came out 0
    (and "invalid value encountered in cast" as the only sign)."""
    df = _frame()
    df["a"] = [str(v * 10**20) for v in df["a"]]
    path = tmp_path / "long_codes.csv"
    df.to_csv(path, index=False)
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1e4",
                        "--method", "nb", *extra)
    _clear(code, err, 2, ("column 'a'", f"value {df['a'][0]} is too large",
                          "recode it to shorter codes"))


def test_unsigned_codes_past_int64_are_read(capsys, tmp_path):
    """A uint64 Parquet key past int64 overflowed the coding's int64 blocks (exit 1)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "u64.parquet"
    codes = np.array([2**63 + 1, 2**63 + 2, 2**63 + 3] * 4 + [2**63 + 9], dtype=np.uint64)
    pq.write_table(pa.table({"a": codes, "b": np.zeros(13, np.int64)}), path)
    code, out, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1000",
                          "--method", "nb")
    assert code == 0, err
    assert "cell space K = 4; observed cells 4; sample uniques 1" in out


# --- value labels shared by several codes -------------------------------------------------

def _shared_label_file(tmp_path, kind):
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame({"a": [1.0, 2.0] + [3.0] * 20, "b": [1.0] * 22})
    labels = {"a": {1.0: "other", 2.0: "other", 3.0: "main"}}
    path = tmp_path / f"shared.{kind}"
    if kind == "sav":
        pyreadstat.write_sav(df, str(path), variable_value_labels=labels)
    else:
        pyreadstat.write_dta(df.astype(int), str(path),
                             variable_value_labels={"a": {1: "other", 2: "other", 3: "main"}})
    return path


@pytest.mark.parametrize("kind", ["sav", "dta"])
def test_codes_sharing_a_value_label_stay_apart(tmp_path, kind):
    """Codes 1 and 2 both labelled 'other' were read as one category: their two records
    made a cell of two, no sample unique, where the file (and protect, which reads codes)
    has two sample uniques: the risk was understated."""
    md = Microdata.from_source(_shared_label_file(tmp_path, kind), ["a", "b"],
                               population_size=1000)
    assert md.levels[0] == ("main", "other (1)", "other (2)")
    counts = np.bincount(np.asarray(md.codes[0]))
    assert counts.tolist() == [20, 1, 1]


def test_shared_label_risk_agrees_with_protect(capsys, tmp_path):
    path = _shared_label_file(tmp_path, "sav")
    code, out, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1000",
                          "--method", "nb")
    assert code == 0, err
    assert "observed cells 3; sample uniques 2" in out


@pytest.mark.parametrize("kind", ["sav", "dta"])
def test_unlabelled_codes_of_a_partly_labelled_key_read_as_written(tmp_path, kind):
    """Codes 2 and 4 of a key whose 1 and 3 have labels were categories '2.0' and '4.0'
    (SPSS stores doubles; with labels applied the column mixes text and numbers), and a
    recode plan printed "merge {2.0, three}"."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame({"a": [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 4.0], "b": [1.0] * 7})
    path = tmp_path / f"partly.{kind}"
    if kind == "sav":
        pyreadstat.write_sav(df, str(path), variable_value_labels={"a": {1.0: "one",
                                                                         3.0: "three"}})
    else:
        pyreadstat.write_dta(df.astype(int), str(path),
                             variable_value_labels={"a": {1: "one", 3: "three"}})
    md = Microdata.from_source(path, ["a", "b"], population_size=1000)
    assert sorted(map(str, md.levels[0])) == ["2", "4", "one", "three"]
    counts = dict(zip(map(str, md.levels[0]), np.bincount(np.asarray(md.codes[0])).tolist(),
                      strict=True))
    assert counts == {"one": 1, "2": 2, "three": 1, "4": 3}


# --- names the user cannot type -----------------------------------------------------------

@pytest.mark.parametrize(("header", "keys", "words"), [
    (" a ,b,w", "a,b", ("missing column 'a'", "the file's column is ' a '",
                        "spaces around its name", "remove them from the header")),
    ('"a,x",b,w', "a,b", ("missing column 'a'", "column 'a,x' has a comma in its name",
                          "--keys cannot give", "rename it")),
])
def test_header_names_that_keys_cannot_give(capsys, tmp_path, header, keys, words):
    path = tmp_path / "names.csv"
    path.write_text(header + "\n1,2,30\n2,1,40\n")
    code, _, err = _run(capsys, "assess", path, "--keys", keys, "--population-size", "1e4",
                        "--method", "nb")
    _clear(code, err, 2, words)


@pytest.mark.parametrize("extra", [(), ("--out-of-core",)])
def test_comma_separated_file_named_tsv(capsys, tmp_path, extra):
    path = tmp_path / "export.tsv"
    _frame().to_csv(path, index=False)
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1e4",
                        "--method", "nb", *extra)
    _clear(code, err, 2, ("missing column 'a'", "looks comma-separated", "name it .csv"))


# --- protect reads the weights as assess does -----------------------------------------------

def test_protect_reads_decimal_comma_weights(capsys, tmp_path):
    """A semicolon CSV with decimal commas (a European spreadsheet's export): assess read
    its weights, protect refused them as "missing at row 1". Its figures are those of the
    same records written with decimal points."""
    import json

    df = _frame()
    df.to_csv(tmp_path / "semi.csv", sep=";", decimal=",", index=False)
    df.to_csv(tmp_path / "points.csv", index=False)
    got = {}
    for name in ("semi.csv", "points.csv"):
        code, out, err = _run(capsys, "protect", tmp_path / name, "--keys", "a,b", "--weights",
                              "w", "--k-anonymity", "2", "--out", tmp_path / f"p_{name}",
                              "--method", "nb", "--format", "json")
        assert code == 0, err
        got[name] = json.loads(out)["risk_before"]
    assert got["semi.csv"]["expected_reidentifications"] > 0
    assert got["semi.csv"] == got["points.csv"]


@pytest.mark.parametrize(("value", "words"), [
    ("TRUE", ("weights column 'w' is not numeric", "value 'TRUE'")),
    ("12,5", ("mixes decimal points and decimal commas",)),
])
def test_protect_names_a_weight_that_is_not_a_number(capsys, tmp_path, value, words):
    path = tmp_path / "w.csv"
    df = _frame().astype({"w": object})
    df.loc[4, "w"] = value
    df.to_csv(path, index=False)
    code, _, err = _run(capsys, "protect", path, "--keys", "a,b", "--weights", "w",
                        "--k-anonymity", "2", "--out", tmp_path / "p.csv")
    _clear(code, err, 2, words)
    assert "missing" not in err


# --- a spreadsheet's trailing empty columns, streamed ------------------------------------------

def test_trailing_empty_columns_stream_as_in_memory(capsys, tmp_path):
    """',,' at the end of each line (columns with an empty name, twice): read in memory, but
    refused by --out-of-core ("multiple columns named ") though no key is among them."""
    path = tmp_path / "trailing.csv"
    lines = _frame().to_csv(index=False).splitlines()
    path.write_text("\n".join(line + ",," for line in lines) + "\n")
    outs = []
    for extra in ((), ("--out-of-core",)):
        code, out, err = _run(capsys, "assess", path, "--keys", "a,b", "--weights", "w",
                              "--method", "nb", "--format", "json", *extra)
        assert code == 0, err
        outs.append(out)
    import json

    got = [json.loads(o) for o in outs]
    assert got[0]["n"] == got[1]["n"] == 60
    assert got[0]["measures"] == got[1]["measures"]


# --- a population file that cannot hold the sample ---------------------------------------------

@pytest.fixture
def population_files(tmp_path):
    sample = _frame()
    sample.to_csv(tmp_path / "sample.csv", index=False)
    rng = np.random.default_rng(1)
    pop = pd.DataFrame({"a": rng.integers(1, 4, 3000), "b": rng.integers(1, 3, 3000)})
    pop[pop.a != 3].to_csv(tmp_path / "pop_without_a3.csv", index=False)
    pop.head(20).to_csv(tmp_path / "pop_small.csv", index=False)
    return tmp_path


def _population_argv(command, d, population):
    if command == "decide":
        return ("decide", d / "sample.csv", "--domain", "a", "--class", "b=1", "--l1", "exp:1",
                "--population", d / population)
    if command == "report":
        return ("report", d / "sample.csv", "--keys", "a,b", "--population", d / population,
                "--out", d / "r.html", "--methods", "nb")
    return ("evaluate", d / population, "--keys", "a,b", "--sample", d / "sample.csv",
            "--methods", "nb")


@pytest.mark.parametrize("command", ["decide", "report", "evaluate"])
def test_population_file_smaller_than_the_sample(capsys, population_files, command):
    """Was "population_size=20 gives N=20 ... --whole-population": the API's argument and a
    flag that does not apply, not the file the user gave."""
    code, _, err = _run(capsys, *_population_argv(command, population_files, "pop_small.csv"))
    _clear(code, err, 2, ("sample.csv' has 60 records, more than the 20 of the population",
                          "pop_small.csv", "give the whole population's file"))
    assert "population_size=" not in err and "--whole-population" not in err


def test_decide_population_without_a_sample_value(capsys, population_files):
    """decide said "not among its declared levels ... (--levels on the command line)" for a
    sample value the --population file lacks; report and evaluate named the population."""
    code, _, err = _run(capsys, *_population_argv("decide", population_files,
                                                  "pop_without_a3.csv"))
    _clear(code, err, 2, ("column 'a' has value 3 that does not occur in the population",
                          "pop_without_a3.csv", "must be drawn from this population"))
    assert "--levels" not in err


# --- report reads --protected before fitting ----------------------------------------------------

@pytest.mark.parametrize(("make", "words"), [
    (lambda d: _frame().drop(columns="b").to_csv(d / "prot.csv", index=False),
     ("prot.csv: missing column 'b'",)),
    (lambda d: (d / "prot.csv").mkdir(), ("is a directory",)),
])
def test_report_refuses_a_bad_protected_file_before_fitting(capsys, tmp_path, monkeypatch,
                                                            make, words):
    """A --protected file without a key, or a folder, was refused only after every method
    had been fitted (minutes on a large file)."""
    from sdcrisk import NegativeBinomialRisk

    _frame().to_csv(tmp_path / "data.csv", index=False)
    make(tmp_path)
    monkeypatch.setattr(NegativeBinomialRisk, "fit", lambda *a, **k: pytest.fail("fitted"))
    code, _, err = _run(capsys, "report", tmp_path / "data.csv", "--keys", "a,b",
                        "--population-size", "1e4", "--methods", "nb", "--protected",
                        tmp_path / "prot.csv", "--out", tmp_path / "r.html")
    _clear(code, err, 2, words)


# --- decide: a prior that cannot be estimated names the flags -----------------------------------

@pytest.mark.parametrize(("frame", "cls", "words"), [
    (pd.DataFrame({"d": [1] * 30, "c": [1, 2] * 15}), "c=1", ("1 domain(s) with a sample",)),
    (pd.DataFrame({"d": [1, 2, 3] * 10, "c": [2] * 30}), "c=2", ("every sampled person",)),
])
def test_decide_prior_not_estimable_names_alpha_and_beta(capsys, tmp_path, frame, cls, words):
    frame.to_csv(tmp_path / "d.csv", index=False)
    code, _, err = _run(capsys, "decide", tmp_path / "d.csv", "--domain", "d", "--class", cls,
                        "--l1", "exp:1", "--population-size", "1e4")
    _clear(code, err, 2, (*words, "--alpha and --beta"))


# --- UTF-16 text, and a sheet whose table does not start on the first row ---------------------

@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
@pytest.mark.parametrize("extra", [(), ("--out-of-core",)])
def test_utf16_text_is_named_as_such(capsys, tmp_path, encoding, extra):
    """Excel's "Unicode Text" export was refused as "binary data, not text"."""
    path = tmp_path / "unicode.txt"
    path.write_bytes(_frame().to_csv(index=False, sep="\t").encode(encoding))
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1e4",
                        "--method", "nb", *extra)
    _clear(code, err, 2, ("unicode.txt: the file is utf-16 text", "save it as 'csv utf-8'"))
    assert "binary" not in err


@pytest.mark.parametrize("title", [None, "Survey extract, 2024"])
def test_excel_table_below_the_first_row(capsys, tmp_path, title):
    """Blank or title rows above the header: "available columns: none (no header)"."""
    pytest.importorskip("openpyxl")
    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as xw:
        _frame().to_excel(xw, sheet_name="S", index=False, startrow=2)
        if title:
            xw.sheets["S"]["A1"] = title
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size", "1e4",
                        "--method", "nb")
    _clear(code, err, 2, ("book.xlsx::S: the sheet's first row holds no column names",
                          repr(title) if title else "an empty row",
                          "delete the title or blank rows above the table"))


# --- outputs that are not regular files, or folders where nothing can be created --------------

def _good_csv(d):
    _frame().to_csv(d / "data.csv", index=False)
    return d / "data.csv"


_OUT_COMMANDS = {
    "assess": ("assess", "{data}", "--keys", "a,b", "--population-size", "1e4", "--method", "nb",
               "--out", "{out}"),
    "protect": ("protect", "{data}", "--keys", "a,b", "--population-size", "1e4",
                "--k-anonymity", "2", "--out", "{out}", "--overwrite"),
    "decide-csv": ("decide", "{data}", "--domain", "a", "--class", "b=1", "--l1", "exp:1",
                   "--population-size", "1e4", "--csv", "{out}"),
}


@pytest.mark.parametrize("command", list(_OUT_COMMANDS))
def test_output_that_is_a_named_pipe_is_not_replaced(capsys, tmp_path, command):
    """The atomic write os.replace-d its temporary file over the target: a named pipe (or,
    run as root, /dev/null) became a regular file."""
    import os
    import stat

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    argv = [a.format(data=_good_csv(tmp_path), out=pipe) for a in _OUT_COMMANDS[command]]
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ("pipe.csv' is a named pipe, not a regular file", "give a file name"))
    assert stat.S_ISFIFO(pipe.stat().st_mode)


@pytest.mark.parametrize("command", list(_OUT_COMMANDS))
def test_output_folder_where_no_file_can_be_created(capsys, tmp_path, command, monkeypatch):
    """/proc, a read-only file system: os.access says yes (always, to root), and the write
    failed after the work with FileNotFoundError or OSError (exit 1)."""
    from pathlib import Path

    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    argv = [a.format(data=_good_csv(tmp_path), out="/proc/x.csv")
            for a in _OUT_COMMANDS[command]]
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ("'/proc/x.csv': no file can be created in the folder '/proc'",
                          "choose another path"))


# --- settings files nested too deep for Python's JSON reader ------------------------------------

@pytest.mark.parametrize(("flag", "words"), [
    ("--levels", ("--levels", "not a readable json file", "recursion")),
    ("--key-sets", ("deep.json: not valid json (nested too deep)",)),
    ("--recode", ("--recode", "not a readable json file", "recursion")),
])
def test_json_nested_too_deep(capsys, tmp_path, flag, words):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    data = _good_csv(tmp_path)
    if flag == "--recode":
        argv = ("protect", data, "--keys", "a,b", "--population-size", "1e4", "--recode", deep,
                "--out", tmp_path / "p.csv")
    else:
        argv = ("assess", data, "--keys", "a,b", "--population-size", "1e4", "--method", "nb",
                flag, deep)
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, words)


# --- decide over a huge domain with a broad prior ----------------------------------------------

def test_decide_huge_domain_is_refused_by_memory_not_crashed(capsys, tmp_path):
    """The central range of Y at N = 1e12 under Beta(1, 2) is ~1e12 values: np.arange raised
    MemoryError (exit 1), or on a smaller N took the machine's memory."""
    types = tmp_path / "types.csv"
    types.write_text("n,N,share\n5,1000000000000,0.5\n10,200,0.5\n")
    code, _, err = _run(capsys, "decide", "--domain-types", types, "--alpha", "1", "--beta",
                        "2", "--l1", "exp:1")
    _clear(code, err, 2, ("likely values of y in a domain of n = 1e+12", "memory limit",
                          "--alpha", "--beta"))


# --- an interval level that rounds to 1 --------------------------------------------------------

@pytest.mark.parametrize("command", ["assess-copula", "assess-pitman-yor", "report", "protect",
                                     "recommend"])
def test_ci_level_next_to_one(capsys, tmp_path, command):
    """0.9999999999999999 passed the (0, 1) check, then NormalDist.inv_cdf((1 + level) / 2)
    = inv_cdf(1.0) raised StatisticsError (exit 1)."""
    data = _good_csv(tmp_path)
    base = ("--keys", "a,b", "--population-size", "1e4", "--ci-level", "0.9999999999999999")
    argv = {"assess-copula": ("assess", data, *base, "--method", "copula"),
            "assess-pitman-yor": ("assess", data, *base, "--method", "pitman-yor"),
            "report": ("report", data, *base, "--methods", "nb", "--out", tmp_path / "r.html"),
            "protect": ("protect", data, *base, "--k-anonymity", "2", "--out",
                        tmp_path / "p.csv"),
            "recommend": ("recommend", data, *base, "--method", "nb", "--target", "0.1")}
    code, _, err = _run(capsys, *argv[command])
    _clear(code, err, 2, ("--ci-level 0.9999999999999999 is too close to 1",
                          "use at most 0.999999"))


# --- decide --domain-sizes: a size that is no number, a domain twice ----------------------------

@pytest.mark.parametrize(("rows", "words"), [
    ("1,1000\n2,inf\n3,3000\n", ("line 3: n='inf' for domain '2' is not a finite number",)),
    ("1,1000\n2,2000\n3,3000\n3,9000\n", ("domain '3' is listed on lines 4 and 5",
                                          "give each domain once")),
])
def test_decide_domain_sizes_bad_rows(capsys, tmp_path, rows, words):
    """'inf' was an OverflowError (exit 1); a domain listed twice took its last size."""
    data = _good_csv(tmp_path)
    (tmp_path / "sizes.csv").write_text("domain,N\n" + rows)
    code, _, err = _run(capsys, "decide", data, "--domain", "a", "--class", "b=1", "--l1",
                        "exp:1", "--domain-sizes", tmp_path / "sizes.csv")
    _clear(code, err, 2, ("--domain-sizes", *words))


# --- a slip of the exponent in --chains ---------------------------------------------------------

@pytest.mark.parametrize("method", ["hdp", "mixed-membership"])
def test_chains_have_a_run_time_bound(capsys, tmp_path, monkeypatch, method):
    """--chains 10000 ran for minutes (past the sweep's 60 s) where --iterations and
    --burn-in have a bound that refuses a slip of the exponent at once."""
    from sdcrisk.estimators import mixed_membership

    monkeypatch.setattr(mixed_membership, "sample", lambda *a, **k: pytest.fail("sampled"))
    code, _, err = _run(capsys, "assess", _good_csv(tmp_path), "--keys", "a,b",
                        "--population-size", "1e4", "--method", method, "--iterations", "10",
                        "--burn-in", "0", "--chains", "10000")
    _clear(code, err, 2, ("--chains 10000 is too many", "at most 1,000", "give e.g. 4"))


def test_protect_empty_out_is_named_empty(capsys, tmp_path):
    """--out '' was reported as "--out '.': the format comes from the extension"."""
    code, _, err = _run(capsys, "protect", _good_csv(tmp_path), "--keys", "a,b",
                        "--population-size", "1e4", "--k-anonymity", "2", "--out", "")
    _clear(code, err, 2, ("--out is empty", "give a file name"))
    assert "'.'" not in err


@pytest.mark.parametrize("new", [2.5, "2.5", "inf"])
def test_protect_recode_to_a_fractional_code(capsys, tmp_path, new):
    """A recode of integer codes to 2.5 was refused after it was applied, as "column 'a' is
    not categorical: value 2.5 ... band it", a value the file does not hold."""
    import json

    recode = tmp_path / "recode.json"
    recode.write_text(json.dumps({"a": {"1": new}}))
    code, _, err = _run(capsys, "protect", _good_csv(tmp_path), "--keys", "a,b",
                        "--population-size", "1e4", "--recode", recode, "--k-anonymity", "2",
                        "--out", tmp_path / "p.csv")
    _clear(code, err, 2, (f"--recode 'a': the new value of '1' is {new!r}",
                          "give an integer code or a text label"))
    assert "band it" not in err and not (tmp_path / "p.csv").exists()


# --- a sample that cannot come from the population it is evaluated against ---------------------

@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_sample_cell_larger_than_the_population_cell(capsys, tmp_path, command):
    """Every value of the sample occurs in the population, but one combination 30 times
    against once: "cell 0: big_f=1 < f=30" (names of the measures' internals)."""
    pop = tmp_path / "pop.csv"
    _frame().to_csv(pop, index=False)
    first = _frame().iloc[0]
    sample = tmp_path / "sample.csv"
    pd.DataFrame({"a": [first.a] * 30, "b": [first.b] * 30}).to_csv(sample, index=False)
    population_count = int(((_frame().a == first.a) & (_frame().b == first.b)).sum())
    if command == "evaluate":
        argv = ("evaluate", pop, "--keys", "a,b", "--sample", sample, "--methods", "nb")
    else:
        argv = ("report", sample, "--keys", "a,b", "--population", pop, "--methods", "nb",
                "--out", tmp_path / "r.html")
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ("1 sample cell(s) hold more records than the population has",
                          f"e.g. 30 against {population_count}", "does not come from this "
                          "population"))
    assert "big_f" not in err


def test_evaluate_fraction_that_draws_nobody_says_what_to_do(capsys, tmp_path):
    code, _, err = _run(capsys, "evaluate", _good_csv(tmp_path), "--keys", "a,b", "--fraction",
                        "1e-9", "--methods", "nb")
    _clear(code, err, 2, ("no record was drawn", "--fraction", "--n"))


@pytest.mark.parametrize(("option", "words"), [
    (("--top", "0"), ("--top 0 must be an integer >= 1",)),
    (("--risk-threshold", "nan"), ("--risk-threshold nan must lie in (0, 1]",)),
    (("--min-count", "1"), ("--min-count 1 must be an integer >= 2",)),
])
def test_report_options_checked_before_fitting(capsys, tmp_path, monkeypatch, option, words):
    """--top 0 and --risk-threshold nan were refused by the page builder, after every
    method had been fitted."""
    from sdcrisk import NegativeBinomialRisk

    monkeypatch.setattr(NegativeBinomialRisk, "fit", lambda *a, **k: pytest.fail("fitted"))
    code, _, err = _run(capsys, "report", _good_csv(tmp_path), "--keys", "a,b",
                        "--population-size", "1e4", "--methods", "nb", *option, "--out",
                        tmp_path / "r.html")
    _clear(code, err, 2, words)


# --- a header line longer than 64 KiB ----------------------------------------------------------

def test_wide_csv_with_a_long_header_line(capsys, tmp_path):
    """A survey file of 8,000 variables (a 120 KB header line) was refused in memory as "no
    line break in the first 64 KiB ... (JSON or another format?)"; --out-of-core and protect
    read it."""
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.integers(0, 3, (50, 8000)),
                        columns=[f"variable_{i:05d}" for i in range(8000)])
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    assert len(path.read_text().split("\n", 1)[0]) > 1 << 16
    outs = []
    for extra in ((), ("--out-of-core",)):
        code, out, err = _run(capsys, "assess", path, "--keys", "variable_00001,variable_07999",
                              "--population-size", "1e4", "--method", "nb", "--format", "json",
                              *extra)
        assert code == 0, err
        outs.append(out)
    import json

    got = [json.loads(o) for o in outs]
    cells = (wide["variable_00001"].astype(str) + wide["variable_07999"].astype(str))
    assert got[0]["observed_cells"] == got[1]["observed_cells"] == cells.nunique()
    assert got[0]["sample_uniques"] == int((cells.value_counts() == 1).sum())


# --- sources a command does not read: a DuckDB table, a folder of Parquet parts -------------------

@pytest.fixture
def duckdb_table(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    _good_csv(tmp_path)
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute(f"create table t as select * from read_csv_auto('{tmp_path / 'data.csv'}')")
    con.close()
    return f"duckdb:{tmp_path / 'db.duckdb'}::t"


@pytest.mark.parametrize("command", ["protect", "assess --out-of-core"])
def test_duckdb_source_where_only_files_are_read(capsys, tmp_path, duckdb_table, command):
    """protect and --out-of-core said "file not found: 'duckdb:...'"."""
    if command == "protect":
        argv = ("protect", duckdb_table, "--keys", "a,b", "--population-size", "1e4",
                "--k-anonymity", "2", "--out", tmp_path / "p.csv")
    else:
        argv = ("assess", duckdb_table, "--keys", "a,b", "--population-size", "1e4",
                "--method", "nb", "--out-of-core")
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ("a duckdb table is read by assess", "export it to a file first"))
    assert "file not found" not in err


@pytest.mark.parametrize("command", ["report", "protect"])
def test_folder_of_parquet_parts_where_one_file_is_read(capsys, tmp_path, command):
    parts = tmp_path / "parts"
    parts.mkdir()
    _frame().to_parquet(parts / "p1.parquet")
    out = tmp_path / ("r.html" if command == "report" else "p.csv")
    extra = ("--methods", "nb") if command == "report" else ("--k-anonymity", "2")
    code, _, err = _run(capsys, command, parts, "--keys", "a,b", "--population-size", "1e4",
                        *extra, "--out", out)
    _clear(code, err, 2, ("parts' is a directory",
                          "a folder of parquet parts is streamed by assess only"))


# --- the factored log-linear join is held to the memory limit at every step ---------------------

def test_loglinear_join_over_many_keys_is_refused_by_the_memory_limit(capsys, tmp_path,
                                                                       monkeypatch):
    """all-2-way over 30 keys grew the join support past the machine's memory (the process
    was killed, rc 137): the check before the join ran only past 8e8 candidate cells and
    counted 3 bytes a cell. Here 18 keys (K = 3^18, the factored engine) under a 256 MiB
    limit: refused with the limit named, before the join's arrays are allocated."""
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.integers(0, 3, (300, 18)), columns=[f"k{i}" for i in range(18)])
    wide.to_csv(tmp_path / "k18.csv", index=False)
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "256M")
    code, _, err = _run(capsys, "assess", tmp_path / "k18.csv", "--keys", ",".join(wide),
                        "--population-size", "1e4", "--method", "loglinear", "--terms",
                        "all-2-way")
    _clear(code, err, 2, ("of a log-linear block", "memory limit is 256.0 MiB",
                          "fewer keys"))


# --- after the sweep: output names, recommend's empty lists, an empty recode map ---------

@pytest.mark.parametrize("command", ["assess", "report", "protect"])
def test_an_output_name_ending_in_a_slash_is_refused(capsys, tmp_path, command):
    """Path('x.csv/') is x.csv: the slash (a folder meant) was dropped and a file written."""
    path = tmp_path / "s.csv"
    _frame().to_csv(path, index=False)
    out = tmp_path / "x.csv"
    extra = ["--k-anonymity", "2"] if command == "protect" else []
    code, _, err = _run(capsys, command, path, "--keys", "a,b", "--population-size", "1000",
                        "--method", "nb", *extra, "--out", f"{out}/")
    _clear(code, err, 2, ["ends with a slash, naming a folder", f"{str(out)!r}"])
    assert not out.exists()


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--actions", "", ["--actions '' names no action", "suppression,recoding"]),
    ("--actions", " , ", ["names no action"]),
    ("--change-keys", "", ["--change-keys '' names no key", "leave it out"]),
])
def test_recommend_refuses_an_empty_list(capsys, tmp_path, option, value, words):
    """--actions '' made no plan and printed an empty table; --change-keys '' let every
    key change, as if it had not been given."""
    path = tmp_path / "s.csv"
    _frame().to_csv(path, index=False)
    code, _, err = _run(capsys, "recommend", path, "--keys", "a,b", "--population-size",
                        "1000", "--method", "nb", "--target", "1", option, value)
    _clear(code, err, 2, words)


def test_protect_with_an_empty_recode_map_says_none_merged(capsys, tmp_path):
    path = tmp_path / "s.csv"
    _frame().to_csv(path, index=False)
    rec = tmp_path / "r.json"
    rec.write_text('{"a": {}}')
    code, out, err = _run(capsys, "protect", path, "--keys", "a,b", "--recode", rec,
                          "--population-size", "1000", "--method", "nb", "--out",
                          tmp_path / "o.csv")
    assert code == 0, err
    assert "categories merged: none" in out and "categories merged in a" not in out


def test_join_support_memory_message_names_typeable_remedies():
    from sdcrisk.estimators._factored import _JOIN_REMEDIES

    assert "--terms" in _JOIN_REMEDIES and "--partition" in _JOIN_REMEDIES
    assert "engine='dense'" in _JOIN_REMEDIES


def test_object_integers_past_int64_and_uint64_stay_exact():
    """A frame column of Python ints: int64, else uint64, else (2^64 beside -1) text, each
    code exact; as floats 2^64 and 2^64 + 1 would merge."""
    from sdcrisk.data.column_values import object_values as _object_values

    miss = np.array([False, False, False, True])
    got = _object_values(np.array([2**64, 2**64 + 1, -1, None], dtype=object), miss)
    assert got.tolist() == ["18446744073709551616", "18446744073709551617", "-1", ""]
    got = _object_values(np.array([2**63 + 1, 5, 7, None], dtype=object), miss)
    assert got.dtype == np.uint64 and got[:3].tolist() == [2**63 + 1, 5, 7]
    md = Microdata.from_source({"a": [2**64, 2**64 + 1, -1, 2**64]}, ["a"],
                               population_size=10)
    assert md.n_levels == (3,)


# --- a true/false column named as the weights ----------------------------------------------

@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("extra", [(), ("--out-of-core",)])
def test_boolean_weights_refused_alike_in_memory_and_streamed(capsys, tmp_path, suffix, extra):
    """In memory a true/false column read as 0 and 1 ("non-positive weight 0 at row 1"),
    streamed as "not numeric": one refusal now, naming what the column holds."""
    frame = _frame()
    frame["flag"] = np.arange(len(frame)) % 2 == 0
    path = tmp_path / f"flags{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--weights", "flag",
                        "--method", "nb", *extra)
    _clear(code, err, 2, ("weights column 'flag' holds true/false values, not survey weights",
                          "leave out --weights and give --population-size"))


def test_boolean_weights_refused_from_a_frame():
    frame = _frame()
    frame["flag"] = True
    with pytest.raises(InputError, match="'flag' holds true/false values"):
        Microdata.from_source(frame, ["a", "b"], weights="flag")
