"""The CLI, in-process through ``sdcrisk.cli.main``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import skewed_population
from sdcrisk.cli import main

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
UK_KEYS = "region,sex,age_band,marital_status,ethnic_group,religion"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def small_csv(tmp_path):
    # 4 records: cells (1,1) x2, (1,2) x1, (2,1) x1 -> two sample uniques; weights 10 each
    df = pd.DataFrame({"a": [1, 1, 1, 2], "b": [1, 1, 2, 1], "w": [10.0] * 4,
                       "hh": [1, 1, 2, 3]})
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    return path


def test_assess_example_json_has_the_contract_fields(capsys):
    code, out, err = run(capsys, "assess", "example:uk_census2011", "--keys", UK_KEYS,
                         "--population-size", "56075912", "--method", "nb", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["method"] == "nb"
    assert d["n"] == 10_000
    assert d["population_size"] == 56_075_912
    # 1,001 sample uniques on these keys: the shared ground truth's population uniques of KS6
    assert d["sample_uniques"] == 1001
    for name in ("tau1", "tau2"):
        assert set(d["measures"][name]) >= {"estimate", "lower", "upper"}
    # equal weights: p = n/N, so tau1 = n1 * p exactly
    p = 10_000 / 56_075_912
    assert d["measures"]["tau1"]["estimate"] == pytest.approx(1001 * p, rel=1e-12)
    assert d["measures"]["expected_reidentifications"]["estimate"] == pytest.approx(
        d["expected_reidentifications"])
    assert d["k_anonymity_violations"]["2"] == 1001


def test_assess_example_defaults_and_table_output(capsys):
    # the default method is auto: the table names it, shows every candidate's estimate
    # and the reason for the combination in words
    code, out, _ = run(capsys, "assess", "example:uk_census2011")
    assert code == 0
    assert "tau2" in out and "sample uniques 1,001" in out and "assumptions" in out
    assert "method: auto" in out and "method choice (calibrated combination" in out
    for candidate in ("nb", "poisson-gamma", "graphical"):
        assert f"\n  {candidate} " in out
    assert "regression learned on the calibration corpus" in out


def test_assess_weights_household_hand_values(capsys, small_csv):
    code, out, err = run(capsys, "assess", str(small_csv), "--keys", "a,b", "--weights", "w",
                         "--household", "hh", "--method", "nb", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["population_size"] == 40.0
    # SU cells have p = 1/10: r = p/(1-p) log(1/p) = 0.2558427881 each
    r1 = 0.1 / 0.9 * np.log(10)
    assert d["measures"]["tau2"]["estimate"] == pytest.approx(2 * r1, rel=1e-12)
    assert d["measures"]["tau1"]["estimate"] == pytest.approx(0.2, rel=1e-12)
    # cell (1,1): f = 2, F_hat = 20, p = 0.1: r = p/q - (p/q)^2 log(1/p)
    r2 = 0.1 / 0.9 - (0.1 / 0.9) ** 2 * np.log(10)
    er = 2 * r2 + 2 * r1
    assert d["measures"]["expected_reidentifications"]["estimate"] == pytest.approx(er)
    # households: {rec1, rec2} both r2 -> 1-(1-r2)^2 for each of 2 members; singles r1
    hh = 2 * (1 - (1 - r2) ** 2) + 2 * r1
    assert d["measures"]["household_expected_reidentifications"]["estimate"] == pytest.approx(hh)


def test_assess_writes_out_file(capsys, small_csv, tmp_path):
    out_path = tmp_path / "r.json"
    code, out, _ = run(capsys, "assess", str(small_csv), "--keys", "a,b", "--sampling-fraction",
                       "0.5", "--method", "poisson-gamma", "--format", "json", "--out",
                       str(out_path))
    assert code == 0 and out == ""
    d = json.loads(out_path.read_text())
    assert d["method"] == "poisson-gamma" and d["population_size"] == 8.0


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--keys", "a,zz", "--whole-population"], "missing column 'zz'"),
        (["--keys", "a,b", "--population-size", "2"], "smaller than the sample size"),
        (["--keys", "a,b", "--weights", "bad"], "weights column 'bad'"),
        (["--keys", "a,b", "--max-levels", "1", "--whole-population"],
         "more than --max-levels 1"),
        (["--keys", "a,b", "--method", "nb", "--max-global-risk", "2", "--whole-population"],
         "--max-global-risk 2"),
        (["--keys", "a,b"], "--population-size N, --sampling-fraction F, --weights"),
        (["--keys", "a,b", "--whole-population", "--population-size", "9"],
         "--whole-population says N = n; --population-size gives another N"),
    ],
)
def test_assess_bad_input_one_line_nonzero(capsys, tmp_path, argv, fragment):
    df = pd.DataFrame({"a": [1, 1, 2], "b": [1, 2, 2], "bad": [1.0, -1.0, 2.0]})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    code, out, err = run(capsys, "assess", str(path), *argv)
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_empty_file_and_missing_file(capsys, tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text("a,b\n")
    code, _, err = run(capsys, "assess", str(empty), "--keys", "a,b", "--whole-population")
    assert code == 2 and "empty" in err
    code, _, err = run(capsys, "assess", str(tmp_path / "nope.csv"), "--keys", "a",
                       "--population-size", "10")
    assert code == 2 and "not found" in err


def test_debug_shows_traceback(tmp_path):
    from sdcrisk import InputError

    with pytest.raises(InputError):
        main(["assess", str(tmp_path / "nope.csv"), "--keys", "a", "--population-size", "9",
              "--debug"])


@pytest.mark.parametrize("keys", ["a,b", "a,zz"])
def test_loglinear_warm_up_ends_before_the_fit_and_the_command(capsys, small_csv, monkeypatch,
                                                              keys):
    """`assess --method loglinear` loads numba's IPF kernel in a thread while the file is read.
    numba swaps sys.stdout/sys.stderr (colorama) while it compiles, process-wide: a thread
    still in numba when the fit starts or when main() returns clobbered the streams of the
    caller (intermittent failures of in-process CLI tests: an error message went to the
    previous test's captured stream). The warm-up must end before the fit starts and before
    main() returns, also when reading the file fails (keys a,zz)."""
    import threading
    import time

    from sdcrisk import LogLinearRisk
    from sdcrisk.estimators import _ipf

    events = []

    def slow_warm_up():
        time.sleep(0.3)  # longer than reading this 4-record file
        events.append("warm-up done")

    real_fit = LogLinearRisk.fit

    def fit(self, *args, **kwargs):
        events.append("fit")
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(_ipf, "warm_up", slow_warm_up)
    monkeypatch.setattr(LogLinearRisk, "fit", fit)
    code, _, err = run(capsys, "assess", str(small_csv), "--keys", keys, "--population-size",
                       "100", "--method", "loglinear")
    alive = [t for t in threading.enumerate() if t.name == "sdcrisk-warm-up"]
    if keys == "a,b":
        assert code == 0, err
        assert events == ["warm-up done", "fit"]
    else:
        assert code == 2 and "'zz'" in err
        assert events == ["warm-up done"]
    assert not alive


def test_python_dash_m(tmp_path):
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "sdcrisk", "--version"], capture_output=True,
                         text=True, check=False)
    assert res.returncode == 0 and "sdcrisk" in res.stdout


def _population(tmp_path):
    return skewed_population(tmp_path)


def test_evaluate_json_truth_matches_brute_force(capsys, tmp_path):
    df, path = _population(tmp_path)
    code, out, err = run(capsys, "evaluate", str(path), "--keys", "x,y,z", "--fraction", "0.05",
                         "--seed", "3", "--methods", "nb,poisson-gamma", "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    take = np.random.default_rng(3).random(len(df)) < 0.05
    keys = ["x", "y", "z"]
    big_f = df.groupby(keys).size().rename("F")
    s = df[take].groupby(keys).size().rename("f").to_frame().join(big_f)
    su = s[s.f == 1]
    assert d["truth"]["n"] == int(take.sum())
    assert d["truth"]["sample_uniques"] == len(su)
    assert d["truth"]["tau1"] == int((su.F == 1).sum())
    assert d["truth"]["tau2"] == pytest.approx(float((1 / su.F).sum()), rel=1e-12)
    assert d["truth"]["population_size"] == len(df)
    for m in ("nb", "poisson-gamma"):
        e = d["estimates"][m]
        assert {"tau1", "tau2", "seconds", "auc"} <= set(e)
        assert e["relative_error"]["tau2"] == pytest.approx(
            (e["tau2"] - d["truth"]["tau2"]) / d["truth"]["tau2"])


def test_evaluate_households_and_srs_and_given_sample(capsys, tmp_path):
    df, path = _population(tmp_path)
    code, out, _ = run(capsys, "evaluate", str(path), "--keys", "x,y", "--fraction", "0.1",
                       "--household", "hid", "--methods", "nb", "--format", "json")
    assert code == 0
    assert json.loads(out)["truth"]["n"] % 2 == 0  # whole households of two
    code, out, _ = run(capsys, "evaluate", str(path), "--keys", "x,y", "--n", "123",
                       "--methods", "nb", "--format", "json")
    assert code == 0 and json.loads(out)["truth"]["n"] == 123
    sample = tmp_path / "sample.csv"
    df.iloc[:300].to_csv(sample, index=False)
    code, out, _ = run(capsys, "evaluate", str(path), "--keys", "x,y,z", "--sample",
                       str(sample), "--methods", "nb", "--format", "json")
    assert code == 0 and json.loads(out)["truth"]["n"] == 300
    # a record that is not in the population
    bad = df.iloc[:5].copy()
    bad.loc[0, "x"] = 99
    bad.to_csv(sample, index=False)
    code, _, err = run(capsys, "evaluate", str(path), "--keys", "x,y,z", "--sample", str(sample),
                       "--methods", "nb")
    assert code == 2 and "99" in err


@pytest.mark.skipif(not (SHARED / "census_income_kdd").exists(),
                    reason="../shared/data not present: no real population to evaluate on")
def test_evaluate_kdd_reproduces_shared_ground_truth(capsys):
    code, out, _ = run(capsys, "evaluate", str(SHARED / "census_income_kdd" /
                                               "census_income_kdd.csv.gz"),
                       "--keys", "age,sex,race,marital_stat,education,citizenship",
                       "--fraction", "0.03", "--seed", "0", "--methods", "nb",
                       "--format", "json")
    assert code == 0
    t = json.loads(out)["truth"]
    # ground_truth.csv, KS6 at 3%
    assert (t["n"], t["sample_uniques"], t["tau1"]) == (8927, 2481, 429)
    assert t["tau2"] == pytest.approx(785.7528086898642, rel=1e-12)
