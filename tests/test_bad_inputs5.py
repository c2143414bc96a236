"""The fifth bad-input sweep, on what changed on 2026-11-25: combined recommend/protect plans,
the repeated-header refusal, SUDA's size bound, the shared output checks. Each test pins an
input that was refused though legitimate, read into a wrong figure without a word, or ended
in a traceback: the exit code and the words of the message, or the figures once read right."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import assert_refused_clearly as _clear
from conftest import run_cli as _run
from sdcrisk import Microdata

# --- repeated header line ----------------------------------------------------------------

def test_numbers_under_a_header_of_numbers_are_data(tmp_path):
    """A frame written by pandas without column names has the header 0,1,2; a record of
    codes 0,1,2 under it was refused as a repeated header line (nothing tells the two
    apart, and the file is legitimate): it is read, and counted as the record it is."""
    rows = [[0, 1, 2], [0, 1, 2], [1, 1, 0], [2, 0, 1], [0, 1, 2]]
    path = tmp_path / "unnamed.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert path.read_text().splitlines()[0] == "0,1,2"
    md = Microdata.from_source(str(path), keys=["0", "1", "2"], population_size=50)
    assert md.n == 5
    assert md.levels == ((0, 1, 2), (0, 1), (0, 1, 2))


def test_numbers_under_a_header_of_numbers_cli(capsys, tmp_path):
    path = tmp_path / "unnamed.csv"
    pd.DataFrame([[0, 1], [0, 1], [1, 1], [1, 0]]).to_csv(path, index=False)
    for extra in ((), ("--out-of-core",)):
        code, out, err = _run(capsys, "assess", path, "--keys", "0,1", "--population-size",
                              "40", "--method", "nb", "--format", "json", *extra)
        assert code == 0, err


@pytest.mark.parametrize("extra", [(), ("--out-of-core",)])
def test_repeated_header_with_a_column_named_na_is_refused(capsys, tmp_path, extra):
    """A column named "NA": its repeated name reads as a missing value, so the check (which
    looked for the text "NA") missed the joined files and the other columns' names became
    categories without a word."""
    part = "NA,b\nx,1\ny,2\nx,1\n"
    path = tmp_path / "joined.csv"
    path.write_text(part + part)
    code, _, err = _run(capsys, "assess", path, "--keys", "NA,b", "--population-size", "100",
                        "--method", "nb", *extra)
    _clear(code, err, 2, ("joined.csv, line 5", "header line is repeated"))


def test_na_column_without_repeated_header_is_read():
    """The same column with missing values (but no header line among the records) is data."""
    frame = "NA,b\nx,1\nNA,b2\n,1\n"
    import io as _io
    md = Microdata.from_source(pd.read_csv(_io.StringIO(frame), keep_default_na=False),
                               keys=["NA", "b"], population_size=30)
    assert md.n == 3


# --- recommend: suppression of a value missing already -------------------------------------

def _messy_sample(**kw):
    rng = np.random.default_rng(7)
    n = 400
    df = pd.DataFrame({"a": rng.integers(1, 6, n), "b": rng.choice(list("xyzw"), n),
                       "c": rng.integers(1, 9, n), "w": rng.uniform(5, 15, n)})
    df.loc[rng.random(n) < 0.05, "c"] = np.nan
    return Microdata.from_source(df, keys=["a", "b", "c"], **kw)


@pytest.mark.parametrize("kw", [{"weights": "w"}, {"population_size": 4000}])
def test_suppression_never_suppresses_a_missing_value(kw):
    """A group suppressed on two keys held a record missing on one of them already: the
    plan listed that value as suppressed and counted it in values (and records) changed,
    overstating the information loss (51 values said, 50 changed, with the weights)."""
    from sdcrisk import RiskTarget, recommend

    md = _messy_sample(**kw)
    recs = recommend(md, RiskTarget(value=0.3), estimator="nb")
    for plan in recs.plans:
        if plan.kind == "recoding":
            continue
        rows, cols = plan.suppressions[:, 0], plan.suppressions[:, 1]
        was = np.array([md.levels[j][md.codes[j][r]] for r, j in zip(rows, cols, strict=True)],
                       dtype=object)
        assert not any(v is None for v in was), plan.label()
        if plan.kind == "suppression":
            new = plan.apply(md)
            changed = np.zeros((md.n, 3), bool)
            for j in range(3):
                changed[:, j] = [md.levels[j][x] != new.levels[j][y]
                                 for x, y in zip(md.codes[j], new.codes[j], strict=True)]
            assert plan.values_changed == changed.sum() == len(rows)
            assert plan.records_changed == changed.any(axis=1).sum()


# --- report: SUDA's size bound -----------------------------------------------------------

def test_suda_max_size_with_no_suda_is_refused(capsys, tmp_path):
    """--suda-max-size 3 --no-suda: the bound was ignored without a word (exit 0)."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"a": [1, 2, 3, 1, 2, 3], "b": [1, 1, 2, 2, 1, 1]}).to_csv(path, index=False)
    code, _, err = _run(capsys, "report", path, "--keys", "a,b", "--population-size", "60",
                        "--methods", "nb", "--out", tmp_path / "r.html", "--no-suda",
                        "--suda-max-size", "2")
    _clear(code, err, 2, ("--suda-max-size '2'", "--no-suda", "drop one"))
    assert not (tmp_path / "r.html").exists()


# --- true/false weights ------------------------------------------------------------------

@pytest.mark.parametrize("how", [("--target", "tau2=0.5"), ("--k-anonymity", "2")])
def test_protect_refuses_true_false_weights_in_the_same_words(capsys, tmp_path, how):
    """protect reads a CSV as its text: a True/False weights column reached the weights
    check as the texts 'True'/'False' and was refused as "not numeric: value 'False'",
    without the remedy every other command gives."""
    path = tmp_path / "flags.csv"
    pd.DataFrame({"a": [1, 2, 1, 2, 1], "b": [1, 1, 2, 2, 1],
                  "bw": [True, False, True, True, False]}).to_csv(path, index=False)
    code, _, err = _run(capsys, "protect", path, "--keys", "a,b", "--weights", "bw",
                        "--method", "nb", *how, "--out", tmp_path / "p.csv")
    _clear(code, err, 2, ("weights column 'bw' holds true/false values",
                          "leave out --weights"))


# --- partly labelled codes ---------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["sav", "dta"])
def test_label_equal_to_an_unlabelled_code_keeps_two_categories(capsys, tmp_path, fmt):
    """Code 1 labelled "2" and code 2 without a label (shown '2' since today): the two
    codes became one category, 5 records where the file has 2 and 3, and the records alone
    on code 1 were no longer sample uniques (1 sample unique counted instead of 4)."""
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0, 2.0, 3.0],
                          "b": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]})
    path = tmp_path / f"clash.{fmt}"
    write = pyreadstat.write_sav if fmt == "sav" else pyreadstat.write_dta
    write(frame, str(path), variable_value_labels={"a": {1: "2", 3: "three"}})
    md = Microdata.from_source(str(path), keys=["a", "b"], population_size=100)
    assert md.levels[0] == ("2", "2 (1)", "three")
    assert np.bincount(md.codes[0]).tolist() == [3, 2, 1]
    code, out, err = _run(capsys, "assess", path, "--keys", "a,b", "--population-size",
                          "100", "--method", "nb", "--format", "json")
    assert code == 0, err
    import json

    # cells (1,1), (1,2), (2,2), (3,2) once each, (2,1) twice: 5 cells, 4 sample uniques
    # (merged: (2,1) 3 times, (2,2) twice, (3,2) once, 1 unique)
    result = json.loads(out)
    assert result["observed_cells"] == 5
    assert result["sample_uniques"] == 4


# --- protect: keys named by numbers --------------------------------------------------------

def test_k_anonymity_with_keys_named_by_numbers(capsys, tmp_path):
    """Keys named 0,1,2 (pandas' unnamed columns): the default importance order (the key
    names) was read as sdcMicro's numeric importance vector and refused with a message
    about --importance, which the user never gave."""
    path = tmp_path / "unnamed.csv"
    pd.DataFrame([[0, 1, 2], [0, 1, 2], [1, 1, 0], [1, 1, 0], [2, 0, 1]]).to_csv(path,
                                                                                index=False)
    code, out, err = _run(capsys, "protect", path, "--keys", "0,1,2", "--population-size",
                          "100", "--k-anonymity", "2", "--out", tmp_path / "p.csv",
                          "--format", "json")
    assert code == 0, err
    import json

    summary = json.loads(out)
    # the one record alone, (2,0,1), holds in every key a value no other record has: only
    # with all three suppressed (wildcards) does it match another record
    assert summary["k_violations_before"] == 1 and summary["k_violations_after"] == 0
    assert summary["values_suppressed"] == 3


# --- a sampling fraction given as a percentage -------------------------------------------------

@pytest.mark.parametrize("fraction", ["5", "0"])
def test_a_sampling_fraction_out_of_range_says_it_is_a_share(capsys, tmp_path, fraction):
    """'--sampling-fraction 5' (a 5% sample typed as a percentage) was refused as
    '--sampling-fraction 5.0 must lie in (0, 1]': another number than the one typed, and no
    word of what a fraction is here."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"a": [1, 2, 2], "b": [1, 1, 2]}).to_csv(path, index=False)
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--sampling-fraction",
                        fraction, "--method", "nb")
    _clear(code, err, 2, (f"--sampling-fraction {fraction} must lie in (0, 1]",
                          "it is n/N, a share (a 5% sample is 0.05)"))
