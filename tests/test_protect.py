"""``sdcrisk protect`` and :mod:`sdcrisk.analyses.protect` (issue 18 item 3), the CLI's one
default and population-size refusal (item 1), and the message plumbing (item 5).

There are no sdcMicro ``localSuppression`` reference outputs in ../shared (only freqCalc,
measure_risk, modRisk, suda2, ldiversity), so k-anonymity is checked directly: every record
of the protected file is compared with every other, a missing value matching any category.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from conftest import high_risk_csv, shared_data
from sdcrisk import Microdata
from sdcrisk.analyses.protect import (
    apply_recodes,
    information_loss,
    local_suppression,
    microdata_of,
    protect,
)
from sdcrisk.cli import main
from sdcrisk.exceptions import ParameterError

KEYS5 = ["urbrur", "roof", "walls", "water", "sex"]


def _brute_force_fk(frame: pd.DataFrame, keys) -> np.ndarray:
    """Wildcard fk of every record by comparing it with every record (alpha = 1)."""
    vals = frame[keys].astype(str).to_numpy()
    miss = np.isin(vals, ["", "nan", "None"])
    out = np.empty(len(frame), np.int64)
    for i in range(len(frame)):
        ok = np.ones(len(frame), bool)
        for j in range(len(keys)):
            if not miss[i, j]:
                ok &= (vals[:, j] == vals[i, j]) | miss[:, j]
        out[i] = ok.sum()
    return out


def test_done_when_testdata_5_keys_k3_is_3_anonymous(tmp_path, capsys):
    src = shared_data("sdcmicro_testdata", "sdcmicro_testdata.csv.gz")
    out = tmp_path / "protected.csv"
    code = main(["protect", str(src), "--keys", ",".join(KEYS5), "--k-anonymity", "3",
                 "--whole-population", "--out", str(out)])
    text, err = capsys.readouterr()
    assert code == 0, err
    before = pd.read_csv(src, dtype=str, keep_default_na=False)
    after = pd.read_csv(out, dtype=str, keep_default_na=False)
    # before: 24 records below k = 3 (sdcMicro: 12 sample uniques + 12 with fk = 2)
    assert int((_brute_force_fk(before, KEYS5) < 3).sum()) == 24
    fk = _brute_force_fk(after, KEYS5)
    assert fk.min() >= 3
    suppressed = int((after[KEYS5] == "").to_numpy().sum())
    assert 0 < suppressed <= 24 * 2
    assert f"values suppressed: {suppressed} (" in text
    assert "24 records below k before, 0 after" in text
    # only suppressions: every key value is either unchanged or blank
    same = (after[KEYS5] == before[KEYS5]) | (after[KEYS5] == "")
    assert same.to_numpy().all()
    # every non-key column byte-identical, and the header and row order kept
    assert list(after.columns) == list(before.columns)
    other = [c for c in before.columns if c not in KEYS5]
    assert after[other].equals(before[other])
    raw_in = [line.split(",") for line in
              pd.io.common.get_handle(src, "r", compression="gzip").handle.read().splitlines()]
    raw_out = [line.split(",") for line in out.read_text().splitlines()]
    idx = [raw_in[0].index(c) for c in other]
    assert [[r[i] for i in idx] for r in raw_out] == [[r[i] for i in idx] for r in raw_in]
    # nothing left behind by the atomic write
    assert sorted(p.name for p in tmp_path.iterdir()) == ["protected.csv"]


def test_importance_order_is_honoured():
    # record 4 (2, 1, 1) is alone; suppressing a or b alone makes it match 3 records
    data = {"a": [1, 1, 1, 2], "b": [1, 1, 1, 1], "c": [1, 1, 1, 1]}
    md = Microdata.from_source(data, ["a", "b", "c"], missing="wildcard")
    assert local_suppression(md, 2, importance=["b", "c", "a"]).tolist() == [[3, 0]]
    # only a helps: it is suppressed even though it is the most important (one value, not
    # three: the least important key that suffices on its own is taken)
    assert local_suppression(md, 2, importance=["a", "b", "c"]).tolist() == [[3, 0]]
    # record 7 (1, 2): suppressing a gives (*, 2) -> 4 records, b gives (1, *) -> 4 records;
    # the importance decides which
    md2 = Microdata.from_source({"a": [1, 1, 1, 2, 2, 2, 1], "b": [1, 1, 1, 2, 2, 2, 2]},
                                ["a", "b"], missing="wildcard")
    assert local_suppression(md2, 3, importance=["a", "b"]).tolist() == [[6, 1]]
    assert local_suppression(md2, 3, importance=["b", "a"]).tolist() == [[6, 0]]
    # sdcMicro's numeric importance (key order a, b; 1 = most important)
    assert local_suppression(md2, 3, importance=[1, 2]).tolist() == [[6, 1]]
    assert local_suppression(md2, 3, importance=["2", "1"]).tolist() == [[6, 0]]
    with pytest.raises(ParameterError, match="one per key in key order"):
        local_suppression(md2, 3, importance=[1, 3])
    # nothing suffices alone: the least important goes first, then the next; records 1-2
    # then match the two blanked records and need nothing
    md3 = Microdata.from_source({"a": [1, 1, 2, 3], "b": [1, 1, 2, 3]}, ["a", "b"],
                                missing="wildcard")
    assert local_suppression(md3, 4, importance=["a", "b"]).tolist() == [
        [2, 1], [2, 0], [3, 1], [3, 0]]
    with pytest.raises(ParameterError, match="list every key once"):
        local_suppression(md, 2, importance=["a", "b"])
    with pytest.raises(ParameterError, match="larger than the number of records"):
        local_suppression(md, 5)


def test_default_importance_suppresses_the_key_with_most_categories_first():
    # sdcMicro: more categories = less important. b has 4 categories, a has 2
    data = {"a": [1, 1, 2, 2, 1], "b": [1, 1, 2, 2, 3]}
    md = Microdata.from_source(data, ["a", "b"], missing="wildcard")
    assert local_suppression(md, 2).tolist() == [[4, 1]]


def test_information_loss_hand_worked():
    data = {"a": [1, 1, 1, 2], "b": [1, 2, 3, 3]}
    before = Microdata.from_source(data, ["a", "b"], missing="wildcard")
    after = Microdata.from_source({"a": [1, 1, 1, None], "b": [1, 1, 3, 3]}, ["a", "b"],
                                  missing="wildcard")
    il = information_loss(before, after)
    # a: record 4 suppressed, P(a = 2) = 1/4 -> 2 bits; b: 1 and 2 merged, each 1 bit
    assert il["per_key"]["a"] == {"suppressed": 1, "entropy_loss_bits": pytest.approx(2.0)}
    assert il["per_key"]["b"]["entropy_loss_bits"] == pytest.approx(2.0)
    assert il["share_of_key_values_suppressed"] == pytest.approx(1 / 8)
    info = -(3 * np.log2(0.75) + np.log2(0.25)) - (2 * np.log2(0.25) + 2 * np.log2(0.5))
    assert il["entropy_loss_share"] == pytest.approx(4.0 / info)


def _small_csv(tmp_path):
    df = pd.DataFrame({"id": [f"r{i:02d}" for i in range(12)],
                       "age": [30, 31, 32, 33, 30, 31, 32, 33, 40, 41, 42, 43],
                       "sex": [1, 2] * 6,
                       "income": ["1.50", "2", "3.25", "007", "5", "6", "7", "8", "9", "10",
                                  "11", "12"]})
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return df, path


def test_recodes_from_json_and_formats(tmp_path, capsys):
    df, path = _small_csv(tmp_path)
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"age": {"31": 30, "33": 32, "41": 40, "43": 42}}))
    for name in ("out.csv", "out.parquet", "out.dta"):
        out = tmp_path / name
        code = main(["protect", str(path), "--keys", "age,sex", "--recode", str(rec),
                     "--population-size", "1200", "--method", "nb", "--out", str(out)])
        text, err = capsys.readouterr()
        assert code == 0, err
        assert "categories merged in age: {31} -> 30; {33} -> 32" in text
        got = (pd.read_csv(out, dtype=str, keep_default_na=False) if name.endswith(".csv")
               else pd.read_parquet(out) if name.endswith(".parquet") else pd.read_stata(out))
        ages = got["age"].astype(float).astype(int).tolist()
        assert ages == [30, 30, 32, 32, 30, 30, 32, 32, 40, 40, 42, 42]
        assert got["income"].astype(str).tolist() == df["income"].astype(str).tolist() or \
            name != "out.csv"
        assert got["id"].tolist() == df["id"].tolist()
    # the CSV keeps the text of the other columns ("007", "1.50") byte for byte
    assert "r03,32,2,007" in (tmp_path / "out.csv").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"age": {"99": 1}}))
    code = main(["protect", str(path), "--keys", "age,sex", "--recode", str(bad),
                 "--population-size", "1200", "--out", str(tmp_path / "x.csv")])
    assert code == 2 and "'99' does not occur" in capsys.readouterr().err


def test_output_path_checked_before_any_work(tmp_path, capsys):
    df, path = _small_csv(tmp_path)
    before = path.read_bytes()
    base = ["protect", str(path), "--keys", "age,sex", "--k-anonymity", "2",
            "--population-size", "1200"]
    assert main([*base, "--out", str(path)]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert main([*base, "--out", str(path), "--overwrite"]) == 2
    assert "never overwrites its input" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert main([*base, "--out", str(tmp_path / "x.xlsx")]) == 2
    assert "format comes from the extension" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "no" / "x.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    existing = tmp_path / "old.csv"
    existing.write_text("keep")
    assert main([*base, "--out", str(existing)]) == 2
    assert "exists" in capsys.readouterr().err and existing.read_text() == "keep"
    assert main([*base, "--out", str(existing), "--overwrite", "--method", "nb"]) == 0
    assert existing.read_text() != "keep"
    # no population size: refused (exit 2), naming the options
    code = main(["protect", str(path), "--keys", "age,sex", "--k-anonymity", "2",
                 "--out", str(tmp_path / "y.csv")])
    assert code == 2 and "--whole-population" in capsys.readouterr().err


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "no" / "x.csv", "the folder {folder!r} does not exist; create it first"),
    (lambda d: (d / "dir.csv").mkdir() or d / "dir.csv", "is a directory; give a file name"),
    (lambda d: os.mkfifo(d / "pipe.csv") or d / "pipe.csv",
     "is a named pipe, not a regular file; give a file name"),
])
def test_protect_and_assess_refuse_a_bad_output_alike(tmp_path, capsys, make, message):
    """One check of an output's kind and folder (data.outputs.check_target) for protect's
    --out and the other commands' --out: the same refusal, in the same words."""
    df, path = _small_csv(tmp_path)
    target = make(tmp_path)
    expected = message.format(folder=str(target.parent))
    assert main(["protect", str(path), "--keys", "age,sex", "--k-anonymity", "2",
                 "--population-size", "1200", "--out", str(target)]) == 2
    protect_err = capsys.readouterr().err
    assert main(["assess", str(path), "--keys", "age,sex", "--population-size", "1200",
                 "--method", "nb", "--out", str(target)]) == 2
    assess_err = capsys.readouterr().err
    assert expected in protect_err and expected in assess_err


@pytest.mark.parametrize("kind", ["sav", "dta"])
def test_codes_from_stata_or_spss_are_written_to_csv_as_the_file_shows_them(tmp_path, kind):
    """Stata and SPSS store codes as doubles: the CSV said 3.0 for code 3 (and 1.0 for
    the other keys); a weight with a fraction keeps it."""
    pyreadstat = pytest.importorskip("pyreadstat")
    df = pd.DataFrame({"a": [1.0, 1.0, 2.0, 3.0, 3.0, 3.0], "b": [1.0] * 6,
                       "w": [2.5, 10.0, 10.0, 10.0, 10.0, 10.0]})
    path = tmp_path / f"codes.{kind}"
    getattr(pyreadstat, f"write_{kind}")(df, str(path))
    out = tmp_path / "out.csv"
    assert main(["protect", str(path), "--keys", "a,b", "--k-anonymity", "2",
                 "--population-size", "600", "--out", str(out)]) == 0
    assert out.read_text().splitlines() == ["a,b,w", "1,1,2.5", "1,1,10.0", ",1,10.0",
                                            "3,1,10.0", "3,1,10.0", "3,1,10.0"]


def test_key_combinations_count_cells_of_the_key_space_and_patterns_apart(tmp_path, capsys):
    # (a, b): (1,1) twice, (1,2), (2,2) twice: 3 cells. 2-anonymity with b the least
    # important suppresses b of the lone (1,2); (1, missing) matches (1,1) and (1,2), so every
    # record then has f >= 2. Left: cells (1,1) and (2,2), and one pattern with a missing
    # value, which is no cell of the key space (3 rows of the table, not 3 cells).
    path = tmp_path / "tiny.csv"
    path.write_text("a,b,x\n1,1,a\n1,1,b\n1,2,c\n2,2,d\n2,2,e\n")
    base = ["protect", str(path), "--keys", "a,b", "--k-anonymity", "2", "--importance",
            "a,b", "--population-size", "100", "--out", str(tmp_path / "p.csv"),
            "--overwrite"]
    assert main([*base, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["values_suppressed_per_key"] == {"a": 0, "b": 1}
    assert d["key_combinations_before"] == {"observed_cells": 3,
                                            "patterns_with_missing_values": 0}
    assert d["key_combinations_after"] == {"observed_cells": 2,
                                           "patterns_with_missing_values": 1}
    assert main(base) == 0
    assert ("observed key combinations: 3 before, 2 after (and patterns with missing values, "
            "each matching several: 0 before, 1 after)") in capsys.readouterr().out


def test_target_applies_the_recommended_plan(tmp_path, capsys):
    df, path = _small_csv(tmp_path)
    out = tmp_path / "t.csv"
    code = main(["protect", str(path), "--keys", "age,sex", "--target", "tau2=0",
                 "--population-size", "120", "--method", "nb", "--out", str(out),
                 "--format", "json"])
    text, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(text)
    assert d["risk_after"]["tau2"] == 0.0 < d["risk_before"]["tau2"]
    assert any(n.startswith("recommended plan (nb)") for n in d["notes"])
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got["id"].tolist() == df["id"].tolist()


def test_protect_api_k_anonymity_and_risk_before_after(shared_data):
    src = shared_data("sdcmicro", "testdata.csv")
    p = protect(src, KEYS5, k=3, weights="sampling_weight")
    # sdcMicro measure_risk(testdata, keys5, w = "sampling_weight"): ER = 1.5272044885239107
    assert p.risk_before["expected_reidentifications"] == pytest.approx(1.5272044885239107,
                                                                        rel=1e-12)
    assert p.risk_after["expected_reidentifications"] < p.risk_before[
        "expected_reidentifications"]
    assert p.k_violations_before == 24 and p.k_violations_after == 0
    assert sum(p.suppressed.values()) == p.information_loss["values_suppressed"]
    md = microdata_of(p.frame, KEYS5, population_size=None)
    assert md.missing == "wildcard"


def test_apply_recodes_rejects_non_keys():
    frame = pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"]})
    with pytest.raises(ParameterError, match="not a key"):
        apply_recodes(frame, ["a"], {"b": {"x": "y"}})
    got, merged = apply_recodes(frame, ["a", "b"], {"b": {"x": "y"}})
    assert got["b"].tolist() == ["y", "y"] and merged == {"b": {"y": ["x"]}}
    assert frame["b"].tolist() == ["x", "y"]  # input not mutated


# --- one default (item 1) ------------------------------------------------------------------
def test_defaults_are_auto_and_help_tells_the_truth(capsys):
    from sdcrisk.cli import build_parser

    p = build_parser()
    for cmd, attr in (("assess", "method"), ("recommend", "method"), ("protect", "method"),
                      ("evaluate", "methods")):
        argv = {"assess": ["assess", "x"], "recommend": ["recommend", "x", "--target", "1"],
                "protect": ["protect", "x", "--out", "y.csv"],
                "evaluate": ["evaluate", "x"]}[cmd]
        assert getattr(p.parse_args(argv), attr) == "auto", cmd
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "estimators (default: auto" in help_text
    assert "estimators (default: all)" not in help_text


def test_whole_population_gives_the_old_assumed_population(tmp_path, capsys):
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": [1, 1, 2], "b": [1, 1, 2]}).to_csv(path, index=False)
    code = main(["assess", str(path), "--keys", "a,b", "--method", "nb", "--format", "json",
                 "--whole-population"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["population_size_source"] == "assumed_population"
    assert d["measures"]["tau1"]["estimate"] == 1.0
    code = main(["recommend", str(path), "--keys", "a,b", "--target", "0", "--method", "nb"])
    assert code == 2 and "--sampling-fraction" in capsys.readouterr().err
    code = main(["report", str(path), "--keys", "a,b", "--out", str(tmp_path / "r.html")])
    assert code == 2 and "--whole-population" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
    sets = tmp_path / "sets.txt"
    sets.write_text("ab: a,b\n")
    code = main(["assess", str(path), "--key-sets", str(sets), "--method", "nb"])
    assert code == 2 and "population size is unknown" in capsys.readouterr().err


# --- progress and warnings (item 5) --------------------------------------------------------
class _Tty:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_switch(monkeypatch):
    import sys

    from sdcrisk.runtime import progress as prog

    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert not prog.progress_on()  # library default: silent
    with prog.progress_enabled():
        assert prog.progress_on()
        monkeypatch.setattr(prog, "DELAY", 0.0)
        with prog.progress(total=3, desc="test") as bar:
            bar.update(3)
    assert "sdcrisk: test" in tty.text
    monkeypatch.setattr(sys, "stderr", _NotTty())
    with prog.progress_enabled():
        assert not prog.progress_on()


class _NotTty(_Tty):
    def isatty(self):
        return False


def test_warnings_are_one_line_without_source_paths(monkeypatch, capsys, tmp_path):
    from sdcrisk.cli import assess
    from sdcrisk.exceptions import ConvergenceWarning

    def fake(args):
        warnings.warn("the chain did not\n  converge", ConvergenceWarning, stacklevel=1)
        return "done"

    monkeypatch.setattr(assess, "_assess", fake)
    before = warnings.showwarning
    assert main(["assess", "x.csv", "--keys", "a", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out == "done\n"
    assert err == "sdcrisk: warning: the chain did not converge (ConvergenceWarning)\n"
    assert os.sep + "sdcrisk" not in err and warnings.showwarning is before


def test_auto_is_validated_once_then_its_choice_refitted():
    """recommend/protect with auto: the chosen candidate's estimator gives auto's estimate."""
    from sdcrisk import tabulate
    from sdcrisk.analyses.auto import AutoRisk
    from sdcrisk.analyses.protect import concrete_estimator

    rng = np.random.default_rng(4)
    md = Microdata.from_source({"a": rng.integers(0, 8, 500), "b": rng.integers(0, 6, 500)},
                               ["a", "b"], population_size=10_000)
    table = tabulate(md)
    auto = AutoRisk(candidates=("nb", "poisson-gamma:fit_method=moments"), replicates=2,
                    combine=False)
    est, res = concrete_estimator(auto, table)
    choice = res.fitted["choice"]
    assert est.name == choice["methods"][0] and est.name in ("nb", "poisson-gamma")
    if est.name == "poisson-gamma":
        assert est.fit_method == "moments"
    assert est.fit(table).measures["tau2"].estimate == pytest.approx(
        res.measures["tau2"].estimate, rel=1e-12)
    from sdcrisk import NegativeBinomialRisk

    same, none = concrete_estimator(NegativeBinomialRisk(), table)  # others pass through
    assert none is None and same == NegativeBinomialRisk()


def test_recommend_heading_names_no_candidate_for_the_calibrated_auto(tmp_path, capsys):
    """The calibrated auto is re-fitted as a whole after each change; the heading said
    'auto chose pitman-yor; auto' (its first candidate), which it did not choose."""
    rng = np.random.default_rng(4)
    path = tmp_path / "in.csv"
    pd.DataFrame({"a": rng.integers(0, 8, 500), "b": rng.integers(0, 6, 500),
                  "c": rng.integers(0, 3, 500)}).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["recommend", str(path), "--keys", "a,b,c", "--population-size", "10000",
                   "--target", "0.5", "--actions", "suppression", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("recommendations (auto): target estimated tau2 <= 0.5")
    assert "auto chose" not in out


def test_csv_bytes_of_other_columns_and_line_endings_kept(tmp_path, capsys):
    text = ('id,age,sex,note\r\n'
            + "".join(f'{i:03d},{30 + i % 3},{i % 2},"x, {i}.50"\r\n' for i in range(9))
            + '009,99,1,"last, 0.1"\r\n')
    path = tmp_path / "in.csv"
    path.write_bytes(text.encode())
    out = tmp_path / "out.csv.gz"
    assert main(["protect", str(path), "--keys", "age,sex", "--k-anonymity", "2",
                 "--whole-population", "--method", "nb", "--out", str(out)]) == 0
    import gzip

    got = gzip.open(out, "rb").read().decode().split("\r\n")
    want = text.split("\r\n")
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):  # id and note exactly as written, quotes too
        assert g.split(",")[0] == w.split(",")[0] and g.split(",", 3)[3:] == w.split(",", 3)[3:]
    blanks = sum(1 for g in got[1:-1] if ",," in g.split('"')[0])
    assert blanks > 0 and f"values suppressed: {blanks} (" in capsys.readouterr().out


@pytest.mark.parametrize("keys,expected", [
    # sdcMicro createSdcObj(testdata, keyVars, w = "sampling_weight")@risk: kAnon_violations
    (["urbrur", "roof", "walls", "water", "electcon"], {2: 2, 3: 8, 5: 46}),
    (["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"],
     {2: 157, 3: 281, 5: 458}),
])
def test_k_anonymity_violations_match_sdcmicro(keys, expected):
    from sdcrisk.analyses.protect import k_anonymity_violations

    frame = pd.read_csv(shared_data("sdcmicro", "testdata.csv"))
    md = microdata_of(frame, keys)
    assert {k: k_anonymity_violations(md, k) for k in expected} == expected


@pytest.mark.parametrize("suffix", [".parquet", ".dta"])
def test_csv_in_typed_format_out_keeps_values_and_writes_missing(tmp_path, suffix, capsys):
    src = shared_data("sdcmicro", "testdata.csv")
    out = tmp_path / f"p{suffix}"
    assert main(["protect", str(src), "--keys", ",".join(KEYS5), "--k-anonymity", "3",
                 "--weights", "sampling_weight", "--method", "nb", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    got = pd.read_parquet(out) if suffix == ".parquet" else pd.read_stata(out)
    orig = pd.read_csv(src)
    other = [c for c in orig.columns if c not in KEYS5]
    np.testing.assert_array_equal(got[other].to_numpy(float), orig[other].to_numpy(float))
    n_missing = int(got[KEYS5].isna().to_numpy().sum())
    assert n_missing > 0 and f"values suppressed: {n_missing} (" in text
    # read back, the protected file is 3-anonymous with missing values as wildcards
    from sdcrisk.analyses.protect import k_anonymity_violations

    assert k_anonymity_violations(microdata_of(got, KEYS5), 3) == 0


@pytest.mark.parametrize("suffix", [".parquet", ".dta", ".sav"])
def test_csv_in_typed_format_out_keeps_zero_padded_codes(tmp_path, suffix, capsys):
    """A zero-padded code ("07", "018") stays text in a typed output: written as a number it
    would lose its zeros ("07" -> 7.0). A whole-number key with suppressions is an integer
    column with nulls (Parquet), not a float one."""
    pytest.importorskip("pyreadstat") if suffix == ".sav" else None
    rows = [("07", "1", "018", "a"), ("07", "1", "018", "b"), ("07", "2", "031", "c"),
            ("10", "2", "031", "d"), ("10", "1", "200", "e"), ("02", "2", "018", "f")]
    path = tmp_path / "in.csv"
    path.write_text("region,age,occ,note\n" + "".join(",".join(r) + "\n" for r in rows))
    out = tmp_path / f"p{suffix}"
    assert main(["protect", str(path), "--keys", "region,age,occ", "--k-anonymity", "2",
                 "--sampling-fraction", "0.1", "--method", "nb", "--out", str(out)]) == 0
    capsys.readouterr()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        assert str(table.schema.field("region").type) in ("string", "large_string")
        assert str(table.schema.field("age").type) == "int64"
        got = table.to_pandas()
        blank = got.isna()
    else:
        got = (pd.read_stata(out) if suffix == ".dta"
               else __import__("pyreadstat").read_sav(str(out))[0])
        blank = got[["region", "occ"]] == ""
        blank["age"] = got["age"].isna()
    kept = ~blank
    for i, row in enumerate(rows):  # every value not suppressed is the input's text
        for j, name in enumerate(("region", "age", "occ")):
            if kept[name].iloc[i]:
                value = got[name].iloc[i]
                assert (str(int(value)) if name == "age" else value) == row[j]
    assert blank[["region", "age", "occ"]].to_numpy().sum() > 0  # something was suppressed
    assert got["note"].tolist() == [r[3] for r in rows]


@pytest.mark.parametrize("suffix", [".dta", ".sav"])
def test_stata_or_spss_in_parquet_out_writes_suppressed_text_as_null(tmp_path, suffix, capsys):
    """Stata and SPSS hold a missing text value as ""; in Parquet "" is a category (as assess
    reads it), so a suppressed text key must be written as null, or the copy read back is
    not k-anonymous."""
    if suffix == ".sav":
        pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"region": rng.choice([f"area {c}" for c in "abcdefghijkl"], 80),
                          "sex": rng.choice(["m", "f"], 80),
                          "age": rng.integers(20, 22, 80).astype(float)})
    path = tmp_path / f"in{suffix}"
    if suffix == ".dta":
        frame.to_stata(path, write_index=False)
    else:
        pyreadstat.write_sav(frame, str(path))
    out = tmp_path / "p.parquet"
    assert main(["protect", str(path), "--keys", "region,sex,age", "--k-anonymity", "3",
                 "--sampling-fraction", "0.1", "--method", "nb", "--out", str(out)]) == 0
    capsys.readouterr()
    got = pd.read_parquet(out)
    assert not (got[["region", "sex"]] == "").to_numpy().any()
    assert got["region"].isna().sum() + got["sex"].isna().sum() > 0
    from sdcrisk.analyses.protect import k_anonymity_violations

    assert k_anonymity_violations(Microdata.from_source(str(out), keys=["region", "sex", "age"]),
                                  3) == 0


def test_one_number_written_two_ways_counts_as_two_categories(tmp_path, capsys):
    """'07' and '7' are one number but two values of the written file: read as numbers, the
    lone '07' record shared a cell with the two '7's and was released unique."""
    path = tmp_path / "in.csv"
    path.write_text("a,b\n07,x\n7,x\n7,x\n8,x\n8,x\n")
    out = tmp_path / "out.csv"
    assert main(["protect", str(path), "--keys", "a,b", "--k-anonymity", "2",
                 "--whole-population", "--method", "nb", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "values suppressed: 1 (a 1, b 0)" in text
    assert "key 'a': '07' and '7' are the same number written two ways" in text
    assert out.read_text().splitlines() == ["a,b", ",x", "7,x", "7,x", "8,x", "8,x"]
    # each number written one way: read as numbers, nothing to suppress, no note
    path.write_text("a,b\n07,x\n07,x\n10,y\n10,y\n")
    assert main(["protect", str(path), "--keys", "a,b", "--k-anonymity", "2",
                 "--whole-population", "--method", "nb", "--out", str(out), "--overwrite"]) == 0
    text = capsys.readouterr().out
    assert "values suppressed: 0 (a 0, b 0)" in text and "written two ways" not in text


def _latin1_csv(tmp_path):
    """A Windows-1252 export with one UTF-8 value: 8 records ('€' is the byte 0x80, '–'
    0x96)."""
    rows = [("Mon\xe9e", "1", "caf\xe9"), ("Mon\xe9e", "1", "th\xe9"), ("Mon\xe9e", "2", "x"),
            ("Z\xfcrich", "2", "y"), ("Z\xfcrich", "2", "z"), ("Z\xfcrich", "1", "\xe0 la"),
            ("Bern", "1", "\u20acuro"), ("Bern", "2", "a\u2013b")]
    lines = [b"region,age,note"] + [
        b",".join(v.encode("cp1252") for v in row) for row in rows]
    lines[5] = "Z\xfcrich,2,z".encode()  # this one value is UTF-8 (0xc3 0xbc), decoded as such
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_protect_reads_a_latin1_csv_as_assess_does(tmp_path, capsys):
    path = _latin1_csv(tmp_path)
    out = tmp_path / "out.csv"
    code = main(["protect", str(path), "--keys", "region,age", "--k-anonymity", "2",
                 "--population-size", "1000", "--method", "nb", "--format", "json",
                 "--out", str(out)])
    text, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(text)
    # 10 values are not UTF-8: Monée x 3, Zürich x 2 (the third is UTF-8), café, thé, à la,
    # €uro, a–b
    assert got["notes"][0] == ("latin1.csv is not UTF-8: 10 values read as Windows-1252 (as "
                               "assess reads them); the protected file is written in UTF-8")
    # the same labels and counts as assess reads: the risk before equals assess's
    assert main(["assess", str(path), "--keys", "region,age", "--population-size", "1000",
                 "--method", "nb", "--format", "json"]) == 0
    assessed = json.loads(capsys.readouterr().out)
    assert got["risk_before"]["tau2"] == pytest.approx(
        assessed["measures"]["tau2"]["estimate"], rel=1e-12)
    md = Microdata.from_source(path, ["region", "age"], population_size=1000)
    assert sorted(map(str, md.levels[0])) == ["Bern", "Monée", "Zürich"]
    # written as UTF-8 text; the non-key column keeps every value as decoded
    after = pd.read_csv(out, dtype=str, keep_default_na=False, encoding="utf-8")
    assert after["note"].tolist() == ["café", "thé", "x", "y", "z", "à la", "€uro", "a–b"]
    assert set(after["region"]) <= {"Monée", "Zürich", "Bern", ""}


def test_column_names_not_utf8_refused_by_assess_and_protect(tmp_path, capsys):
    path = tmp_path / "names.csv"
    path.write_bytes(b"r\xe9gion,age\nA,1\nB,2\nA,1\n")
    for argv in (["assess", str(path), "--population-size", "100"],
                 ["protect", str(path), "--k-anonymity", "2", "--population-size", "100",
                  "--out", str(tmp_path / "o.csv")]):
        code = main([*argv, "--keys", "age", "--method", "nb"])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "names.csv: the column name b'r\\xe9gion' in the header line is not UTF-8" in err
        assert "re-save the file as UTF-8" in err and err.count("\n") == 1


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    try:
        yield 0o640  # what open(path, "w") gives under this umask
    finally:
        os.umask(old)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_outputs_get_the_mode_of_a_plain_write(tmp_path, capsys, umask_027, suffix):
    """Every atomic write (protect's file, --out JSON/HTML) gets 0o666 & ~umask like a plain
    open(path, "w"), not mkstemp's 0o600; an existing file (--overwrite) keeps its mode."""
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{i % 3},{i % 2}\n" for i in range(12)))
    out, report = tmp_path / f"p{suffix}", tmp_path / "r.json"
    argv = ["protect", str(src), "--keys", "a,b", "--k-anonymity", "2", "--method", "nb",
            "--population-size", "1000", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    assert os.stat(out).st_mode & 0o777 == umask_027
    assert main(["assess", str(src), "--keys", "a,b", "--method", "nb", "--format", "json",
                 "--population-size", "1000", "--out", str(report)]) == 0
    assert os.stat(report).st_mode & 0o777 == umask_027
    os.chmod(out, 0o604)
    assert main([*argv, "--overwrite"]) == 0
    assert os.stat(out).st_mode & 0o777 == 0o604
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]  # no leftovers


def test_method_options_reach_the_before_after_figures(tmp_path, capsys):
    """protect takes the per-method options as assess does: its 'before' figure with
    --method loglinear --terms independence is assess's on the same file, and a key
    misspelt in --terms stops it (exit 2) before anything is written."""
    _, path = _small_csv(tmp_path)
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps({"age": {"31": 30, "33": 32, "41": 40, "43": 42}}))
    common = ["--keys", "age,sex", "--population-size", "1200", "--method", "loglinear",
              "--terms", "independence", "--format", "json"]
    assert main(["protect", str(path), "--recode", str(rec), "--out",
                 str(tmp_path / "p.csv"), *common]) == 0
    prot = json.loads(capsys.readouterr().out)
    assert main(["assess", str(path), *common]) == 0
    ass = json.loads(capsys.readouterr().out)
    assert prot["risk_before"]["method"] == "loglinear"
    assert prot["risk_before"]["tau2"] == pytest.approx(ass["measures"]["tau2"]["estimate"],
                                                   rel=1e-12)
    out = tmp_path / "q.csv"
    assert main(["protect", str(path), "--recode", str(rec), "--out", str(out),
                 *common[:6], "--terms", "age:zz"]) == 2
    assert "--terms 'age:zz'" in capsys.readouterr().err and not out.exists()


def _assessed(capsys, path, common, *extra):
    assert main(["assess", str(path), *common, *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", ["recode, nb", "k-anonymity, nb sdcmicro"])
def test_protect_ci_level_and_max_global_risk_as_assess(tmp_path, capsys, case):
    """protect had no --ci-level or --max-global-risk: its before/after figures took the
    defaults (95%, 0.01) whatever assess was asked. Now they are assess's on the input
    (before) and on the protected file (after): estimates, intervals at the level asked and
    the record-risk threshold for the global-risk target asked."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"age": rng.integers(20, 60, 300), "sex": rng.integers(1, 3, 300),
                          "region": rng.integers(1, 6, 300)})
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    settings = ["--ci-level", "0.9", "--max-global-risk", "0.05"]
    common = ["--keys", "age,sex,region", "--population-size", "1500", "--format", "json",
              *settings]
    if case == "recode, nb":
        rec = tmp_path / "rec.json"
        rec.write_text(json.dumps({"age": {str(a): a // 10 * 10 for a in range(20, 60)}}))
        goal, method, after_extra = ["--recode", str(rec)], ["--method", "nb"], []
    else:  # suppressed values are wildcards: assess counts them so with --missing wildcard
        goal = ["--k-anonymity", "2"]
        method = ["--method", "nb", "--mode", "sdcmicro"]
        after_extra = ["--missing", "wildcard"]
    assert main(["protect", str(path), *goal, "--out", str(out), *common, *method]) == 0
    prot = json.loads(capsys.readouterr().out)
    before = _assessed(capsys, path, common, *method)
    after = _assessed(capsys, out, common, *method, *after_extra)
    for got, want in ((prot["risk_before"], before), (prot["risk_after"], after)):
        assert got["ci_level"] == 0.9 and got["max_global_risk"] == 0.05
        assert got["record_risk_threshold"] == want["thresholds"]["record_risk_threshold"]
        for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
            m = want["measures"][name]
            assert got[name] == pytest.approx(m["estimate"], rel=1e-12), name
            if m["lower"] is not None:
                assert m["level"] == 0.9
                assert got["intervals"][name] == pytest.approx(
                    {"lower": m["lower"], "upper": m["upper"]}, rel=1e-12), name
    assert prot["risk_before"]["record_risk_threshold"] is not None  # the target is not met
    assert set(prot["risk_before"]["intervals"]) == {"tau1", "tau2"}
    # the table says the same
    assert main(["protect", str(path), *goal, "--out", str(tmp_path / "t.csv"),
                 *common[:-4], "--format", "table", *settings, *method]) == 0
    text = capsys.readouterr().out
    assert "lower 90%" in text and "record risk threshold for max global risk 0.05" in text


@pytest.mark.parametrize("method", [["--method", "poisson-gamma"], ["--method", "pitman-yor"]])
def test_method_without_wildcards_also_shows_its_own_figures(tmp_path, capsys, method):
    """With a method that cannot count suppressed values as wildcards, the before/after table
    is nb (mode sdcmicro)'s; the method's own figures, with missing values as a category,
    come beside it and equal assess's on the input (before) and on the protected file
    (after, assess's default missing policy). Before, only the nb table was shown, so a
    --target plan's 'tau2 291 -> 100' sat next to a table reading 80 -> 40."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"age": rng.integers(20, 60, 400), "sex": rng.integers(1, 3, 400),
                          "region": rng.integers(1, 8, 400)})
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    common = ["--keys", "age,sex,region", "--population-size", "8000", "--format", "json"]
    assert main(["protect", str(path), "--k-anonymity", "2", "--out", str(out), *common,
                 *method]) == 0
    prot = json.loads(capsys.readouterr().out)
    assert prot["risk_before"]["method"] == "nb"
    own = prot["risk_missing_as_category"]
    assert own["missing"] == "category"
    before = _assessed(capsys, path, common, *method)
    after = _assessed(capsys, out, common, *method)
    assert pd.read_csv(out)[["age", "sex", "region"]].isna().any().any()  # values suppressed
    for got, want in ((own["before"], before), (own["after"], after)):
        assert got["method"] == method[1]
        for name in ("tau1", "tau2"):
            assert got[name] == pytest.approx(want["measures"][name]["estimate"], rel=1e-12)
    # a suppressed value as a category of its own is not credited as a wildcard is: the
    # exchangeable models' tau2 hardly moves, while nb on wildcard counts falls
    assert prot["risk_after"]["tau2"] < 0.8 * prot["risk_before"]["tau2"]
    assert own["after"]["tau2"] > 0.8 * own["before"]["tau2"]
    assert main(["protect", str(path), "--k-anonymity", "2", "--out",
                 str(tmp_path / "t.csv"), *common[:-2], *method]) == 0
    text = capsys.readouterr().out
    assert f"risk ({method[1]}, missing as a category)" in text
    # a method that counts wildcards itself: one table, no second block
    assert main(["protect", str(path), "--k-anonymity", "2", "--out",
                 str(tmp_path / "n.csv"), *common, "--method", "nb", "--mode",
                 "sdcmicro"]) == 0
    assert json.loads(capsys.readouterr().out)["risk_missing_as_category"] is None


def test_risk_table_titles_say_how_suppressed_values_count(tmp_path, capsys):
    """The first before/after table of a method that cannot count wildcards is nb --mode
    sdcmicro's on wildcard counts, but was titled 'risk (nb)' (for --method nb too, whose
    default mode is exact, and next to 'risk (nb, missing as a category)', whose 'before'
    ER differed: 10.7783 against 10.7755 on testdata). The title now names the mode and
    the wildcard convention."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"age": rng.integers(20, 60, 400), "sex": rng.integers(1, 3, 400),
                          "region": rng.integers(1, 8, 400)})
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    common = ["--keys", "age,sex,region", "--population-size", "8000", "--k-anonymity", "2"]

    def titles(*method):
        assert main(["protect", str(path), *common, "--out", str(tmp_path / "o.csv"),
                     "--overwrite", *method]) == 0
        return _titles(capsys.readouterr().out)

    assert titles("--method", "nb") == ["risk (nb --mode sdcmicro, missing as a wildcard)",
                                        "risk (nb, missing as a category)"]
    assert titles("--method", "nb", "--mode", "sdcmicro") == ["risk (nb, missing as a wildcard)"]
    # a recode alone suppresses nothing: no wildcard, the method's own figures
    recode = tmp_path / "r.json"
    recode.write_text('{"sex": {"2": 1}}')
    assert main(["protect", str(path), "--keys", "age,sex,region", "--population-size", "8000",
                 "--recode", str(recode), "--method", "nb", "--out", str(tmp_path / "r.csv")]) == 0
    assert _titles(capsys.readouterr().out) == ["risk (nb)"]


def _titles(text: str) -> list[str]:
    """The titles of protect's before/after tables (without the 'before after' header)."""
    return [line.split("   before")[0].rstrip() for line in text.splitlines()
            if line.startswith("risk (")]


def test_a_threshold_of_zero_is_explained(tmp_path, capsys):
    """protect printed 'record risk threshold ...: 0 before, 0 after (- = already met)', and
    0 read as a threshold; it is mu-Argus's 'no threshold among the record risks reaches the
    target' (global risk 0.058 > 0.01 here, every record's risk above 0.01)."""
    path = high_risk_csv(tmp_path / "hr.csv")
    assert main(["protect", str(path), "--keys", "a,b,c", "--population-size", "2000",
                 "--k-anonymity", "3", "--method", "nb", "--out", str(tmp_path / "p.csv")]) == 0
    out = capsys.readouterr().out
    assert "global_risk                    0.0586679" in out
    assert ("record risk threshold for max global risk 0.01: 0 before, 0.00990099 after "
            "(- = already met; 0 = no threshold among the record risks reaches the target)"
            ) in out


def test_a_target_run_says_its_outcome_first(tmp_path, capsys):
    """The target's outcome was the last of the notes, under two risk tables whose nb
    (wildcard) figures sit above the target (tau2 1.535 after, target 0.5): read alone they
    looked like a miss."""
    path = high_risk_csv(tmp_path / "hr.csv")
    assert main(["protect", str(path), "--keys", "a,b,c", "--population-size", "2000",
                 "--target", "tau2=0.5", "--out", str(tmp_path / "p.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("note: recommended plan (auto): local suppression, tau2 0.9522 -> "
                        "0.4392, target <= 0.5 met (a suppressed value counted as a category "
                        "of its own, as the search counts it)")
    assert sum(x.startswith("note: recommended plan") for x in lines) == 1


@pytest.mark.parametrize("seed", range(12))
def test_local_suppression_is_the_greedy_rule_of_its_docstring(seed):
    """The rule written out with a scan of every record per question (the implementation
    before RecordMatcher, quadratic in n), against local_suppression on random files with
    missing values: the same values suppressed, in the same order."""
    from sdcrisk.data.wildcard import wildcard_record_counts

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    data = {f"k{j}": rng.integers(0, int(rng.integers(2, 7)), n).astype(float)
            for j in range(int(rng.integers(2, 5)))}
    for col in data.values():
        col[rng.random(n) < 0.05] = np.nan
    md = Microdata.from_source(data, list(data), missing="wildcard")
    k = int(rng.integers(2, 5))
    got = local_suppression(md, k)

    codes = np.stack([np.asarray(c, np.int64) for c in md.codes], axis=1)
    missing = np.zeros_like(codes, bool)
    for j, levels in enumerate(md.levels):
        if None in levels:
            missing[:, j] = codes[:, j] == levels.index(None)

    def scan(i, skip=-1):
        match = np.ones(n, bool)
        for j in range(codes.shape[1]):
            if j != skip and not missing[i, j]:
                match &= (codes[:, j] == codes[i, j]) | missing[:, j]
        return int(match.sum())

    order = sorted(range(len(md.keys)), key=lambda j: (len(md.levels[j]), j))  # sdcMicro's
    least_first = order[::-1]
    fk, _ = wildcard_record_counts(md.codes, md.levels)
    todo = np.flatnonzero(fk < k)
    want = []
    for i in todo[np.argsort(fk[todo], kind="stable")]:
        while scan(i) < k:
            left = [j for j in least_first if not missing[i, j]]
            pick = next((j for j in left if scan(i, skip=j) >= k), left[0])
            missing[i, pick] = True
            want.append((int(i), pick))
    assert got.tolist() == [list(p) for p in want]  # 8 of the 12 files suppress 1-106 values


@pytest.mark.parametrize("values", [
    ["a", " b", "NA", None, "a", "", "b "],
    ["1", "2", " 3", "NA", None, "2"],
    ["07", "7", "1", "07"],
    [b"1", b"2", None, b"1"],
    [b"\xe9t\xe9", b"ete", b"\xe9t\xe9"],
    ["x", np.nan, "y", "  ", "n/a"],
    [1, 1.0, True, "x"],  # not all text: read entry by entry (1 and 1.0 hash alike)
    [None, None],
])
def test_key_values_by_distinct_value_equal_the_rules_entry_by_entry(values):
    """protect applied its key rules (bytes decoded, missing texts, stripping, numbers) to
    every entry, five keys three times: 26 of 40 s on 10^6 records. They now run once per
    distinct text; the column must come out as the entry-by-entry rules give it."""
    from sdcrisk.analyses.protect import _key_rules, _key_values

    col = pd.Series(values * 50, dtype=object)

    def plain(series):
        return [None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v
                for v in series]

    assert plain(_key_values(col)) == plain(_key_rules(col))
