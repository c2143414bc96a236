"""A method that fails (the package's own error) is shown as failed; the others go on.

The failure is real: a memory limit of 1 MiB (SDCRISK_MEMORY_LIMIT) that the log-linear and
graphical fits exceed on the UK census nanodata KS8 keys (K = 1,440,000 cells), while the
exchangeable methods (memory in the observed cells only) fit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import sdcrisk
from conftest import shared_data
from sdcrisk import Bernoulli, Microdata, evaluate
from sdcrisk.analyses.grid import evaluate_grid
from sdcrisk.cli import main

KS8 = ["region", "sex", "age_band", "marital_status", "ethnic_group", "religion",
       "country_of_birth", "economic_activity"]


@pytest.fixture
def uk_path():
    return shared_data("uk_census2011_nanodata", "uk_census2011_nanodata.csv.gz")


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1M")


def test_one_failing_method_keeps_the_others(uk_path, small_limit):
    pop = Microdata.from_source(uk_path, keys=KS8)
    with pytest.warns(sdcrisk.SdcRiskWarning, match=r"method 'loglinear' failed"):
        ev = evaluate(pop, ["nb", "loglinear", "poisson-gamma"], design=Bernoulli(0.05),
                      seed=0)
    alone = evaluate(pop, ["nb", "poisson-gamma"], design=Bernoulli(0.05), seed=0)
    # the truth of the README's KS8 5% sample (numpy default_rng(0))
    assert (ev.truth["n"], ev.truth["sample_uniques"], ev.truth["tau1"]) == (503, 352, 118)
    assert ev.truth["tau2"] == pytest.approx(174.7, abs=0.05)
    for name in ("nb", "poisson-gamma"):
        assert not ev.methods[name].failed
        assert ev.methods[name].estimates == alone.methods[name].estimates
        assert ev.methods[name].relative_errors == alone.methods[name].relative_errors
    # nb on equal weights: tau1 = sum over sample uniques of n/N (Bethlehem: each 503/10,000)
    assert ev.methods["nb"].estimates["tau1"] == pytest.approx(352 * 503 / 10_000, rel=0.01)
    ll = ev.methods["loglinear"]
    assert ll.failed and ll.result is None and ll.auc is None
    assert ev.failed == {"loglinear": ll.error} and alone.failed == {}
    assert "needs" in ll.error and "memory limit is 1.0 MiB" in ll.error
    assert all(v is None for v in ll.estimates.values())
    d = ev.to_dict()
    assert d["estimates"]["loglinear"]["error"] == ll.error
    assert d["estimates"]["loglinear"]["tau1"] is None
    assert "error" not in d["estimates"]["nb"]
    assert "error='method 'loglinear'" in repr(ll).replace('"', "'")
    assert np.isnan(ev.summary().loc["loglinear", "tau1"])


def test_every_method_failing_raises(uk_path, small_limit):
    pop = Microdata.from_source(uk_path, keys=KS8)
    # one method: its own error, as before
    with pytest.raises(sdcrisk.MemoryLimitError, match=r"method 'loglinear'.*memory limit"):
        evaluate(pop, ["loglinear"], design=Bernoulli(0.05), seed=0)
    # several: their common class, with each message
    with pytest.raises(sdcrisk.MemoryLimitError,
                       match=r"every method failed: loglinear: .*; graphical: "):
        evaluate(pop, ["loglinear", "graphical"], design=Bernoulli(0.05), seed=0)
    with pytest.warns(sdcrisk.SdcRiskWarning, match="shown as failed"):
        ev = evaluate(pop, ["loglinear"], design=Bernoulli(0.05), seed=0,
                      all_failed="return")
    assert ev.methods["loglinear"].failed and ev.truth["tau1"] == 118


def test_a_small_sample_failure_of_pitman_yor():
    # a one-record sample: Pitman-Yor refuses (it needs two cells); nb still gives n/N per
    # sample unique
    pop = Microdata.from_source({"a": np.arange(40) % 7, "b": np.arange(40) % 3},
                                keys=["a", "b"])
    with pytest.warns(sdcrisk.SdcRiskWarning, match="'pitman-yor' failed"):
        ev = evaluate(pop, ["nb", "pitman-yor"], design=sdcrisk.SimpleRandomSample(1), seed=3)
    assert ev.methods["pitman-yor"].error.startswith("the Pitman-Yor fit needs at least two")
    assert ev.methods["nb"].estimates["tau1"] == pytest.approx(1 / 40)


def test_bugs_still_propagate(uk_path):
    class Broken(sdcrisk.NegativeBinomialRisk):
        def fit(self, table, **kwargs):
            raise ZeroDivisionError("a bug")

    pop = Microdata.from_source(uk_path, keys=KS8[:3])
    with pytest.raises(ZeroDivisionError):
        evaluate(pop, ["nb", Broken()], design=Bernoulli(0.05), seed=0)


def test_grid_keeps_failed_units(uk_path, small_limit):
    spec = (str(uk_path), KS8)
    with pytest.warns(sdcrisk.SdcRiskWarning,
                      match=r"'loglinear' failed on 2 of 2 samples .* fraction 0.05"):
        rows = evaluate_grid({"uk": spec}, [0.05], ["nb", "loglinear"], seeds=[0, 1],
                             workers=1)
    assert [(r["seed"], r["method"], "error" in r) for r in rows] == [
        (0, "nb", False), (0, "loglinear", True), (1, "nb", False), (1, "loglinear", True)]
    assert rows[0]["truth"]["tau1"] == 118 and rows[1]["truth"]["tau1"] == 118
    assert rows[1]["estimates"]["tau1"] is None and "memory limit" in rows[1]["error"]
    with pytest.raises(sdcrisk.SdcRiskError, match="every unit of the grid failed"):
        evaluate_grid({"uk": spec}, [0.05], ["loglinear"], seeds=[0], workers=1)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_one_sample_table_and_json(uk_path, small_limit, capsys):
    base = [str(uk_path), "--keys", ",".join(KS8), "--fraction", "0.05"]
    code, out, err = _cli(capsys, "evaluate", *base, "--methods", "nb,loglinear,poisson-gamma")
    assert code == 0
    assert "sdcrisk: warning: evaluate(): method 'loglinear' failed" in err
    row = next(line for line in out.splitlines() if line.startswith("loglinear"))
    assert "failed: method 'loglinear'" in row and "memory limit is 1.0 MiB" in row
    code, out, _ = _cli(capsys, "evaluate", *base, "--methods", "nb,loglinear,poisson-gamma",
                        "--format", "json")
    both = json.loads(out)["estimates"]
    code, out, _ = _cli(capsys, "evaluate", *base, "--methods", "nb,poisson-gamma",
                        "--format", "json")
    alone = json.loads(out)["estimates"]
    assert code == 0
    for name in ("nb", "poisson-gamma"):
        assert {k: v for k, v in both[name].items() if k != "seconds"} == {
            k: v for k, v in alone[name].items() if k != "seconds"}
    assert "memory limit" in both["loglinear"]["error"] and both["loglinear"]["tau1"] is None
    # every method failing: exit 2 with each message
    code, out, err = _cli(capsys, "evaluate", *base, "--methods", "loglinear,graphical")
    assert code == 2 and out == ""
    assert "sdcrisk: error: every method failed: loglinear: " in err and "graphical: " in err


def test_cli_grid(uk_path, small_limit, capsys):
    code, out, err = _cli(capsys, "evaluate", str(uk_path), "--keys", ",".join(KS8),
                          "--fraction", "0.05", "--seeds", "0-1", "--workers", "1",
                          "--methods", "nb,loglinear", "--format", "json")
    assert code == 0 and "'loglinear' failed on 2 of 2 samples" in err
    g = json.loads(out)
    summary = {s["method"]: s for s in g["summaries"]}
    assert summary["loglinear"]["failed"] == 2 and summary["nb"]["failed"] == 0
    assert summary["loglinear"]["tau1"]["n"] == 0 and summary["nb"]["tau1"]["n"] == 2
    code, out, err = _cli(capsys, "evaluate", str(uk_path), "--keys", ",".join(KS8),
                          "--fraction", "0.05", "--seeds", "0-1", "--workers", "1",
                          "--methods", "nb,loglinear")
    assert "failed on 2 seed(s)" in out
    assert sum("loglinear" in line and "failed: method 'loglinear'" in line
               for line in out.splitlines()) == 2


def _report(capsys, tmp_path, uk_path, methods):
    out = tmp_path / f"{methods}.html"
    code, _, err = _cli(capsys, "report", str(uk_path), "--keys", ",".join(KS8),
                        "--population-size", "56000000", "--methods", methods,
                        "--no-suda", "--no-uniqueness", "--contributions", "none",
                        "--fail-above", "tau2=1", "--out", str(out))
    return code, err, out.read_text(encoding="utf-8") if out.exists() else ""


def test_report_with_one_failing_method(uk_path, small_limit, tmp_path, capsys):
    code, err, page = _report(capsys, tmp_path, uk_path, "loglinear,nb")
    code_alone, err_alone, _ = _report(capsys, tmp_path, uk_path, "nb")
    # nb's figure (and the gate on it) as when nb runs alone
    gate = [line for line in err.splitlines() if "fail-above" in line]
    assert code == code_alone == 3
    assert gate == [line for line in err_alone.splitlines() if "fail-above" in line]
    assert gate[0].startswith("sdcrisk: fail-above: tau2 = ") and "(method nb)" in gate[0]
    assert "sdcrisk: warning: report: method 'loglinear' failed and is left out" in err
    assert "loglinear: failed, not shown: method &#39;loglinear&#39;" in page
    assert "loglinear (failed)" in page  # its row in the comparison of methods
    code, err, page = _report(capsys, tmp_path, uk_path, "loglinear,graphical")
    assert code == 2 and page == ""
    assert "sdcrisk: error: every method failed: loglinear: " in err and "graphical: " in err


def test_a_misspelt_key_in_an_option_is_the_users_error_before_any_fit(uk_path, capsys,
                                                                       tmp_path):
    """A key in --terms that --keys lacks is wrong for every sample: the command stops (exit 2,
    naming --terms and the keys) rather than showing loglinear as failed beside nb."""
    pop = Microdata.from_source(uk_path, keys=KS8[:4])
    with pytest.raises(sdcrisk.ParameterError, match=r"terms='region:zz'.*(keys|key)"):
        evaluate(pop, ["nb", sdcrisk.LogLinearRisk(terms="region:zz")],
                 design=Bernoulli(0.05), seed=0)
    with pytest.raises(sdcrisk.ParameterError, match=r"partition='zz:2'.*not a key"):
        evaluate(pop, ["nb", sdcrisk.LogLinearRisk(terms="all-2-way", partition="zz:2")],
                 design=Bernoulli(0.05), seed=0)
    common = ["--keys", ",".join(KS8[:4]), "--terms", "region:zz"]
    assert main(["evaluate", str(uk_path), "--fraction", "0.05", "--methods", "nb,loglinear",
                 *common]) == 2
    err = capsys.readouterr().err
    assert "--terms 'region:zz'" in err and "failed" not in err
    out = tmp_path / "r.html"
    assert main(["report", str(uk_path), "--population-size", "1e6", "--methods", "nb,loglinear",
                 "--out", str(out), *common]) == 2
    err = capsys.readouterr().err
    assert "--terms 'region:zz'" in err and not out.exists()
    # auto's own candidates: refused by name, not set aside as "not compared"
    with pytest.raises(sdcrisk.ParameterError, match=r"terms='region:zz'"):
        sdcrisk.AutoRisk(candidates=["nb", "loglinear:terms=region:zz"]).fit(
            sdcrisk.tabulate(Microdata.from_source(uk_path, keys=KS8[:4],
                                                   population_size=1e6)))
    # a key that exists passes the check, and the search (no keys named) always does
    sdcrisk.AutoRisk(candidates=["nb", "loglinear:terms=region:sex"]).check_keys(KS8[:4])
    sdcrisk.LogLinearRisk(terms="region:sex").check_keys(KS8[:4])
    sdcrisk.LogLinearRisk().check_keys(KS8[:4])
