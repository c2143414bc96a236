"""Defects found by walking the release workflow (assess -> report -> recommend -> protect ->
report --protected) on real files as a disclosure-control officer would: figures that
contradicted each other between the outputs of one run, gates that checked the wrong file."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from sdcrisk.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# keys a, b: (1, 1) twice, (1, missing) once, (2, 2), (2, 3). With missing = wildcard the
# missing value matches b = 1, so the first three records have f = 3 (sdcMicro's freqCalc) and
# two records are alone in their key combination; counted exactly, (1, missing) is alone too.
WILD = pd.DataFrame({"a": [1, 1, 1, 2, 2], "b": [1, 1, None, 2, 3]})
WILD_OPTS = ("--keys", "a,b", "--population-size", "50", "--missing", "wildcard",
             "--method", "nb", "--mode", "sdcmicro")


@pytest.fixture
def wild_csv(tmp_path):
    path = tmp_path / "p.csv"
    WILD.to_csv(path, index=False)
    return path


def test_sample_uniques_agree_with_k2_under_wildcards_in_every_output(wild_csv, capsys):
    # The header line said "sample uniques 3" next to "k=2: 2", and the JSON's
    # sample_uniques (3) contradicted its own k_anonymity_violations["2"] (2) and the report's
    # "Sample uniques" card (2): a record is a sample unique when no other record matches it.
    code, out, err = run(capsys, "assess", wild_csv, *WILD_OPTS)
    assert code == 0, err
    assert "sample uniques 2\n" in out and "k=2: 2," in out
    code, out, err = run(capsys, "assess", wild_csv, *WILD_OPTS, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["sample_uniques"] == 2 == d["k_anonymity_violations"]["2"]


def test_fail_above_sample_uniques_counts_wildcards_as_the_report_shows(wild_csv, tmp_path,
                                                                      capsys):
    # --fail-above sample_uniques=2 failed with "sample_uniques = 3" while the page written by
    # the same command showed 2 sample uniques
    code, _, err = run(capsys, "assess", wild_csv, *WILD_OPTS, "--fail-above",
                       "sample_uniques=2")
    assert code == 0, err
    code, _, err = run(capsys, "assess", wild_csv, *WILD_OPTS, "--fail-above",
                       "sample_uniques=1")
    assert code == 3 and "sample_uniques = 2 exceeds the limit 1" in err
    page = tmp_path / "r.html"
    opts = [o for o in WILD_OPTS if o != "--method"]
    opts[opts.index("nb")] = "--methods"
    opts.insert(opts.index("--methods") + 1, "nb")
    code, _, err = run(capsys, "report", wild_csv, *opts, "--no-suda", "--no-uniqueness",
                       "--fail-above", "sample_uniques=2", "--out", page)
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert re.search(r'data-figure="sample_uniques">2<', html)
    assert "fails sample uniques" not in html


def test_report_protected_gates_the_protected_file(tmp_path, capsys):
    # With --protected the file to release is the protected one, but --fail-above checked only
    # the original (which nearly always fails: that is why it was protected), so a release
    # pipeline could never pass, and the message did not say which file it was about.
    orig, prot, page = tmp_path / "o.csv", tmp_path / "p.csv", tmp_path / "r.html"
    pd.DataFrame({"a": [1, 1, 2, 3, 4], "b": [1] * 5}).to_csv(orig, index=False)  # 3 uniques
    pd.DataFrame({"a": [1, 1, 2, 2, 9], "b": [1] * 5}).to_csv(prot, index=False)  # 1 unique
    opts = ("--keys", "a,b", "--population-size", "50", "--methods", "nb", "--no-suda",
            "--no-uniqueness", "--protected", prot, "--out", page)
    code, _, err = run(capsys, "report", orig, *opts, "--fail-above", "sample_uniques=1")
    assert code == 0, err
    assert err == ""
    code, _, err = run(capsys, "report", orig, *opts, "--fail-above", "sample_uniques=0")
    assert code == 3
    assert err.strip().splitlines() == [
        f"sdcrisk: fail-above: sample_uniques = 1 exceeds the limit 0 (method nb, protected "
        f"file {str(prot)!r})"]
    # without --protected the original is gated, as before
    code, _, err = run(capsys, "report", orig, *opts[:7], "--out", page, "--fail-above",
                       "sample_uniques=1")
    assert code == 3 and "sample_uniques = 3 exceeds the limit 1 (method nb)" in err


def test_key_set_warnings_are_one_line_and_name_their_key_set(tmp_path, capfd):
    # --key-sets on local processes printed the workers' warnings as Python's two-line
    # "/path/to/_base.py:298: ApproximationWarning: ...\n  result = self._fit(table)", without
    # saying which key set they were about
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({k: rng.integers(0, 6, 400) for k in "abcd"})
    data, sets = tmp_path / "s.csv", tmp_path / "sets.txt"
    frame.to_csv(data, index=False)
    sets.write_text("three: a,b,c\nfour: a,b,c,d\n")
    code = main(["assess", str(data), "--key-sets", str(sets), "--population-size", "40000",
                 "--workers", "2"])
    out, err = capfd.readouterr()
    assert code == 0, err
    lines = err.strip().splitlines()
    assert lines and all(line.startswith("sdcrisk: warning: key set ") for line in lines), err
    # 3 keys lie outside auto's corpus (4-10 keys); the warning names that key set
    assert any(line.startswith("sdcrisk: warning: key set three: auto (calibrated): this "
                               "file lies outside the calibration corpus (")
               and "number of keys = 3 (corpus range 4 to 10)" in line for line in lines), err


# --- protect on labelled Stata and SPSS files ----------------------------------------------------
LABELS = {"sex": {1: "male", 2: "female"}, "region": {1: "north", 2: "south", 3: "east"}}


def _labelled_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 60
    return pd.DataFrame({"id": np.arange(1, n + 1, dtype=float),
                         "region": rng.integers(1, 4, n).astype(float),
                         "sex": rng.integers(1, 3, n).astype(float),
                         "age": rng.integers(20, 70, n).astype(float)})


@pytest.mark.parametrize("suffix", [".dta", ".sav"])
def test_protect_keeps_the_value_labels_of_a_labelled_file(tmp_path, capsys, suffix):
    # protect wrote a Stata file's keys back without their value labels ("male"/"female"
    # became bare 1/2 for every user of the released file), and read a .sav as CSV ("could not
    # be read (ParserError ...)"), though assess reads both
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _labelled_frame()
    src, out = tmp_path / f"s{suffix}", tmp_path / f"p{suffix}"
    write = pyreadstat.write_dta if suffix == ".dta" else pyreadstat.write_sav
    write(frame, str(src), variable_value_labels=LABELS,
          column_labels=["record id", "region of residence", "sex", "age in years"])
    code, text, err = run(capsys, "protect", src, "--keys", "region,sex,age",
                          "--population-size", "6000", "--k-anonymity", "2", "--method", "nb",
                          "--out", out)
    assert code == 0, err
    read = pyreadstat.read_dta if suffix == ".dta" else pyreadstat.read_sav
    got, meta = read(str(out))
    assert {k: {int(c): lab for c, lab in v.items()}
            for k, v in meta.variable_value_labels.items()} == LABELS
    assert meta.column_labels == ["record id", "region of residence", "sex", "age in years"]
    assert got["id"].tolist() == frame["id"].tolist()  # every other column as read
    suppressed = int(got[["region", "sex", "age"]].isna().sum().sum())
    assert suppressed > 0 and f"values suppressed: {suppressed} " in text
    # the released file's labelled keys are what assess reads: labels, with the gaps missing
    labelled, _ = read(str(out), apply_value_formats=True)
    assert set(labelled["sex"].dropna()) <= {"male", "female"}


def test_numbers_of_one_column_share_their_thousands_separators(capsys, tmp_path):
    # the report's uniqueness table read "pitman 6347" above "zayatz 10,010", and protect
    # printed "1411 records below k" where assess prints "1,411"
    from sdcrisk.report.formats import fmt

    assert [fmt(6347.2), fmt(10010.4), fmt(1234.5), fmt(999.94), fmt(12.3456)] == [
        "6,347", "10,010", "1,234", "999.9", "12.35"]
    data, out = tmp_path / "s.csv", tmp_path / "p.csv"
    pd.DataFrame({"a": np.arange(1500) % 700, "b": 1}).to_csv(data, index=False)
    code, text, err = run(capsys, "protect", data, "--keys", "a,b", "--population-size",
                          "150000", "--k-anonymity", "3", "--method", "nb", "--out", out)
    assert code == 0, err
    assert "1,200 records below k before, 0 after" in text


def test_plain_text_outputs_read_as_sentences(tmp_path, capsys):
    # assess printed a bare "record risk threshold for max global risk 0.01: 0" where the
    # report says why; evaluate --sample printed "Given sample, seed None" (no seed is used);
    # --workers 1 key sets printed "ran on serial"
    data = tmp_path / "s.csv"
    pd.DataFrame({"a": np.arange(50), "b": np.arange(50) % 7}).to_csv(data, index=False)
    code, out, err = run(capsys, "assess", data, "--keys", "a,b", "--population-size", "60",
                         "--method", "nb")
    assert code == 0, err
    assert ("record risk threshold for max global risk 0.01: 0 (no threshold among the record "
            "risks reaches the target)") in out
    code, out, err = run(capsys, "evaluate", data, "--keys", "a,b", "--sample", data,
                         "--methods", "nb")
    assert code == 0, err
    assert out.lower().startswith("given sample; keys a, b;")
    code, out, err = run(capsys, "assess", data, "--all-subsets-up-to", "1", "--keys", "a,b",
                         "--population-size", "60", "--method", "nb", "--workers", "1")
    assert code == 0, err
    assert "(highest first; ran in this process)" in out


def test_every_option_of_every_command_has_help(capsys):
    # recommend's --objective, --refit-candidates and --max-pattern-size printed no help at
    # all: a user could not tell what they do
    import argparse

    from sdcrisk.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"{name} {'/'.join(a.option_strings)}" for name, sub in subs.choices.items()
            for a in sub._actions if a.option_strings and not a.help]
    assert bare == []


def test_auto_outside_corpus_numbers_read_without_exponents():
    # the warning on a 50,000-record file read "records n = 5e+04 (corpus range 43 to 3.02e+04)"
    import math

    from sdcrisk.analyses._auto_calibrated import describe_feature

    assert describe_feature("log_n", math.log(50_000), math.log(43), math.log(30_210)) == (
        "records n = 50,000 (corpus range 43 to 30,210)")
    assert describe_feature("log_fraction", math.log(0.167), math.log(0.0043),
                            math.log(0.108)) == (
        "sampling fraction n/N = 0.167 (corpus range 0.0043 to 0.108)")


def test_recommend_records_above_without_threshold_names_the_flag(tmp_path, capsys):
    # "risk_threshold=None: give a record risk threshold ..." named no flag to type
    data = tmp_path / "s.csv"
    pd.DataFrame({"a": np.arange(40) % 9, "b": np.arange(40) % 4}).to_csv(data, index=False)
    code, _, err = run(capsys, "recommend", data, "--keys", "a,b", "--population-size", "400",
                       "--method", "nb", "--objective", "records-above", "--target", "3")
    assert code == 2
    assert "--risk-threshold R" in err and "records-above" in err


def test_report_with_protected_file_says_which_file_each_verdict_is_about(tmp_path, capsys):
    # The page of `report --protected` opened with a red "Fails the thresholds given" banner
    # (the original's) although the file to release passed and the command exited 0: the
    # banner did not say which file it judged, and the release decision was further down.
    orig, prot, page = tmp_path / "o.csv", tmp_path / "p.csv", tmp_path / "r.html"
    pd.DataFrame({"a": [1, 1, 2, 3, 4], "b": [1] * 5}).to_csv(orig, index=False)  # 3 uniques
    pd.DataFrame({"a": [1, 1, 2, 2, 9], "b": [1] * 5}).to_csv(prot, index=False)  # 1 unique
    code, _, err = run(capsys, "report", orig, "--keys", "a,b", "--population-size", "50",
                       "--methods", "nb", "--no-suda", "--no-uniqueness", "--protected", prot,
                       "--out", page, "--fail-above", "sample_uniques=1",
                       "--max-global-risk", "0.9")
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    top = html[html.index('<div class="verdict'):html.index('<div class="cards">')]
    assert re.search(r'data-verdict="pass">\s*<div class="head">Protected file p\.csv: passes '
                     r'the limit given \(method nb\)</div>', top)
    assert "Original file o.csv: fails the limit given (method nb)" in top
    assert top.index("Protected file p.csv") < top.index("Original file o.csv")


def test_where_n_comes_from_reads_as_words(tmp_path, capsys):
    # "population N = 149,640 (sampling_fraction)" and "(assumed_population)" printed the
    # internal codes
    data = tmp_path / "s.csv"
    pd.DataFrame({"a": np.arange(40) % 9, "b": np.arange(40) % 4}).to_csv(data, index=False)
    code, out, err = run(capsys, "assess", data, "--keys", "a,b", "--sampling-fraction", "0.1",
                         "--method", "nb")
    assert code == 0, err
    assert "population N = 400 (n / sampling fraction);" in out
    code, out, err = run(capsys, "assess", data, "--keys", "a,b", "--whole-population",
                         "--method", "nb")
    assert code == 0, err
    assert "population N = 40 (the file is the whole population);" in out
    page = tmp_path / "r.html"
    code, _, err = run(capsys, "report", data, "--keys", "a,b", "--sampling-fraction", "0.1",
                       "--methods", "nb", "--out", page)
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert "400 (n / sampling fraction)" in html and "(sampling_fraction)" not in html


def test_evaluate_unknown_method_lists_auto_too(tmp_path, capsys):
    # the list of methods evaluate takes omitted auto, its default
    data = tmp_path / "pop.csv"
    pd.DataFrame({"a": np.arange(200) % 9, "b": np.arange(200) % 4}).to_csv(data, index=False)
    code, _, err = run(capsys, "evaluate", data, "--keys", "a,b", "--fraction", "0.1",
                       "--methods", "nb,foo")
    assert code == 2
    assert "--methods item 'foo': unknown method 'foo'; available: " in err
    assert "auto" in err.split("available: ")[1].strip().split(", ")


def test_protect_target_already_met_says_so(tmp_path, capsys):
    # with the target already met, protect wrote the file unchanged and noted "recommended
    # plan (nb): local suppression, tau2 164.4 -> 164.4", as if it had suppressed something
    data, out = tmp_path / "s.csv", tmp_path / "p.csv"
    pd.DataFrame({"a": np.arange(60) % 9, "b": np.arange(60) % 4}).to_csv(data, index=False)
    code, text, err = run(capsys, "protect", data, "--keys", "a,b", "--population-size", "600",
                          "--target", "tau2=1000", "--method", "nb", "--out", out)
    assert code == 0, err
    assert "values suppressed: 0 " in text
    assert "note: target tau2 <= 1000 already met before any change (nb: tau2 " in text
    assert "recommended plan" not in text
    assert pd.read_csv(out).equals(pd.read_csv(data))


def test_protect_note_says_its_before_figures_are_not_the_default_methods(tmp_path, capsys):
    # protect's "before" tau2 (nb on wildcard counts, 164.4 on the adult sample) sat beside
    # assess's auto figure for the same file (486.1) with nothing saying they differ by design
    data, out = tmp_path / "s.csv", tmp_path / "p.csv"
    pd.DataFrame({"a": np.arange(60) % 9, "b": np.arange(60) % 7}).to_csv(data, index=False)
    code, text, err = run(capsys, "protect", data, "--keys", "a,b", "--population-size", "600",
                          "--k-anonymity", "2", "--out", out)
    assert code == 0, err
    assert ("note: risk before and after by nb (mode sdcmicro) on wildcard counts, not by "
            "method 'auto', which cannot count missing (suppressed) values as wildcards: the "
            "'before' figures differ from assess --method auto on the same file") in text


@pytest.mark.parametrize("suffix", [".dta", ".sav"])
def test_protected_text_keys_in_stata_spss_stay_missing_when_read_back(tmp_path, capsys,
                                                                        suffix):
    # Stata and SPSS hold a missing text value as "" (Stata's missing string); assess read
    # those "" back as a category of their own, so a 2-anonymous protected file written as
    # .dta from a CSV with text keys re-assessed with 294 sample uniques, not 0
    pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"region": rng.choice(["north", "south", "east", "west"], 80),
                          "job": rng.choice([f"job{i}" for i in range(12)], 80),
                          "sex": rng.choice(["m", "f"], 80)})
    data, out = tmp_path / "s.csv", tmp_path / f"p{suffix}"
    frame.to_csv(data, index=False)
    keys = ("--keys", "region,job,sex", "--population-size", "8000")
    code, text, err = run(capsys, "protect", data, *keys, "--k-anonymity", "2",
                          "--method", "nb", "--out", out)
    assert code == 0, err
    suppressed = int(re.search(r"values suppressed: (\d+)", text).group(1))
    assert suppressed > 0
    code, text, err = run(capsys, "assess", out, *keys, "--missing", "wildcard",
                          "--method", "nb", "--mode", "sdcmicro", "--format", "json")
    assert code == 0, err
    assert json.loads(text)["k_anonymity_violations"]["2"] == 0
    code, _, err = run(capsys, "assess", out, *keys, "--missing", "error", "--method", "nb")
    assert code == 2 and "missing value(s)" in err


def test_levels_errors_name_the_remedy(tmp_path, capsys):
    # "column 'sex' has value 'Male' that is not among its declared levels" and "levels given
    # for 'zz', which is not a key" named neither the option nor what to do
    data, lev = tmp_path / "s.csv", tmp_path / "lev.json"
    pd.DataFrame({"sex": ["Female", "Male"] * 5, "race": ["a"] * 10}).to_csv(data, index=False)
    opts = ("--keys", "sex,race", "--population-size", "100", "--method", "nb", "--levels", lev)
    lev.write_text('{"sex": ["Female"]}')
    code, _, err = run(capsys, "assess", data, *opts)
    assert code == 2
    assert ("column 'sex' has value 'Male' that is not among its declared levels: add it to the "
            "levels of 'sex' (--levels on the command line)") in err
    lev.write_text('{"zz": ["a"]}')
    code, _, err = run(capsys, "assess", data, *opts)
    assert code == 2
    assert ("levels given for 'zz', which is not a key: give levels for the keys sex, race "
            "only (--levels on the command line)") in err


def test_missing_column_suggests_the_close_name(tmp_path, capsys):
    # a key typed 'Age' for a column 'age' (or 'maritalstat' for 'marital_stat' among 39
    # columns, only 20 of which are listed) left the user to search the list
    data = tmp_path / "s.csv"
    cols = {f"col{i:02d}": [1, 2] for i in range(30)}
    pd.DataFrame({**cols, "age": [30, 40], "marital_stat": [1, 2]}).to_csv(data, index=False)
    for typed, meant in (("Age", "age"), ("maritalstat", "marital_stat")):
        code, _, err = run(capsys, "assess", data, "--keys", typed, "--population-size", "10")
        assert code == 2
        assert f"missing column {typed!r} (did you mean {meant!r}?); available columns: " in err


def test_long_key_set_names_are_cut_visibly(tmp_path, capsys):
    # "major_occupation_code+country_of_birth_" was cut at 39 characters with no sign of it
    data = tmp_path / "s.csv"
    pd.DataFrame({"major_occupation_code": np.arange(30) % 5,
                  "country_of_birth_self": np.arange(30) % 3}).to_csv(data, index=False)
    code, out, err = run(capsys, "assess", data, "--keys",
                         "major_occupation_code,country_of_birth_self", "--all-subsets-up-to",
                         "2", "--population-size", "300", "--method", "nb", "--workers", "1")
    assert code == 0, err
    assert "major_occupation_code+country_of_birth…" in out
    assert "major_occupation_code " in out  # a short name is shown whole
