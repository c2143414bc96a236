"""Loose ends (the polish pass): the census answer of every method, bounded tolerance
options, a constant key in the Gaussian copula, one row check for subsets and cell indices,
recommend's integer options, and protect's --ci-level / --max-global-risk."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import Microdata, tabulate
from sdcrisk.analyses.methods import ESTIMATORS, get_estimator

# --- a. a census (N = n) through every method ------------------------------------------------


def _census_frames():
    rng = np.random.default_rng(1)
    return {
        "19 sample uniques": pd.DataFrame({"a": rng.integers(0, 4, 80),
                                           "b": rng.integers(0, 3, 80),
                                           "c": rng.integers(0, 5, 80)}),
        "one cell": pd.DataFrame({"a": [1] * 5, "b": [2] * 5}),
        "one record": pd.DataFrame({"a": [1], "b": [2]}),
        "two cells, one unique": pd.DataFrame({"a": [1, 1, 2], "b": [2, 2, 3]}),
    }


CENSUS = _census_frames()


@pytest.mark.parametrize("case", list(CENSUS))
@pytest.mark.parametrize("method", list(ESTIMATORS))
def test_every_method_answers_a_census_exactly(method, case):
    """Under a census every sample unique is a population unique: tau1 = tau2 = SU exactly,
    P(PU | SU) = 1 and every interval is its point; each record's risk is 1/f. pitman-yor
    refused a one-cell or one-record census ('needs at least two sample cells'), and the MCMC
    models gave tau2 = 0.9999999999999999 with a posterior interval."""
    frame = CENSUS[case]
    table = tabulate(Microdata.from_source(frame, keys=list(frame.columns),
                                           population_size=len(frame)))
    su = table.sample_uniques
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        res = get_estimator(method).fit(table)
    if method == "skinner-elliot":  # theta only: pi = 1 gives theta = pi n1 / (pi n1) = 1
        assert res.measures["theta"].estimate == (1.0 if su else None)
        return
    for name in ("tau1", "tau2"):
        m = res.measures[name]
        assert m.estimate == su and m.lower == su and m.upper == su, m
    pu = res.measures["p_pu_given_su"]
    assert (pu.estimate, pu.lower, pu.upper) == ((1.0, 1.0, 1.0) if su else (None,) * 3)
    counts = table.counts[table.record_map()]
    np.testing.assert_array_equal(res.record_risk(), 1.0 / counts)


@pytest.mark.parametrize("method", ["poisson-gamma", "pitman-yor"])
def test_census_of_frequencies(method, tmp_path):
    """The methods that fit the frequencies of the counts answer a census of them too."""
    path = tmp_path / "f.csv"
    pd.DataFrame({"a": [1, 2, 3, 4, 4, 5, 5, 5, 5, 5]}).to_csv(path, index=False)
    table = sdcrisk.tabulate_frequencies(path, ["a"], population_size=10)
    res = get_estimator(method).fit(table)
    assert res.measures["tau1"].estimate == res.measures["tau2"].estimate == 3


def test_cli_pitman_yor_on_a_one_record_census(capsys, tmp_path):
    from sdcrisk.cli import main

    path = tmp_path / "one.csv"
    CENSUS["one record"].to_csv(path, index=False)
    assert main(["assess", str(path), "--keys", "a,b", "--method", "pitman-yor",
                 "--whole-population", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["measures"]["tau1"]["estimate"] == out["measures"]["tau2"]["estimate"] == 1


# --- b. tolerance options are bounded --------------------------------------------------------

@pytest.mark.parametrize(("method", "option", "value", "words"), [
    # an IPF stopping when its margins are a million persons off stopped at once
    ("loglinear", "tol", 1e6, "tol=1000000.0 must be a number in (0, 1]"),
    ("loglinear", "tol", 0, "tol=0 must be a number in (0, 1]"),
    ("loglinear", "tol", float("inf"), "tol=inf must be a number in (0, 1]"),
    ("latent-class", "tol", 1e6, "tol=1000000.0 must be a number in [0, 0.01]"),
    ("latent-class", "tol", -1e-9, "tol=-1e-09 must be a number in [0, 0.01]"),
    ("hdp", "tolerance", 1e6, "tolerance=1000000.0 must be a number in [0, 1]"),
    ("mixed-membership", "tolerance", 2.0, "tolerance=2.0 must be a number in [0, 1]"),
    ("hdp", "rhat_max", 1e6, "rhat_max=1000000.0 must be a number in (1, 2]"),
    ("mixed-membership", "rhat_max", 1.0, "rhat_max=1.0 must be a number in (1, 2]"),
])
def test_tolerance_options_are_bounded(method, option, value, words):
    with pytest.raises(sdcrisk.ParameterError) as info:
        get_estimator(method, **{option: value})
    text = str(info.value)
    assert words in text
    assert "e.g." in text  # a typical value to give instead


@pytest.mark.parametrize(("method", "option", "value"), [
    ("loglinear", "tol", 1.0), ("loglinear", "tol", 1e-12), ("latent-class", "tol", 0.0),
    ("latent-class", "tol", 0.01), ("hdp", "tolerance", 0), ("hdp", "tolerance", 1),
    ("hdp", "rhat_max", 1.1), ("mixed-membership", "rhat_max", 2.0)])
def test_tolerance_options_in_range_are_taken(method, option, value):
    assert getattr(get_estimator(method, **{option: value}), option) == value


# --- c. a constant key leaves the Gaussian copula's answer as it was --------------------------

@pytest.mark.parametrize("where", ["last", "first", "middle"])
def test_copula_ignores_a_constant_key(where):
    """A key with one level carries no information. The copula's tau1 moved 0.2% with it
    appended (the lattice's random shifts were drawn for one more dimension) and 0.4% with
    it first (the sign of the correspondence analysis' eigenvector flipped, reversing every
    key's category order: the model is symmetric under that, its lattice is not)."""
    from sdcrisk.data.datasets import EXAMPLES, example_path

    frame = pd.read_csv(example_path("uk_census2011"))
    keys = EXAMPLES["uk_census2011"]["keys"]
    sample = frame.sample(1000, random_state=0)
    at = {"last": len(keys), "first": 0, "middle": 3}[where]
    with_constant = [*keys[:at], "constant", *keys[at:]]
    got = {}
    for name, ks, data in (("plain", keys, sample),
                           ("constant", with_constant, sample.assign(constant="x"))):
        table = tabulate(Microdata.from_source(data, ks, population_size=len(frame)))
        res = sdcrisk.GaussianCopulaRisk().fit(table)
        got[name] = res
    for m in ("tau1", "tau2"):
        a, b = got["plain"].measures[m], got["constant"].measures[m]
        assert b.estimate == pytest.approx(a.estimate, rel=1e-12), m
        assert b.lower == pytest.approx(a.lower, rel=1e-12)
        assert b.upper == pytest.approx(a.upper, rel=1e-12)
    assert got["plain"].measures["tau1"].estimate > 10  # a sample with risk to move


# --- d. one check of record and cell indices -------------------------------------------------

@pytest.mark.parametrize(("bad", "rows_words", "cells_words"), [
    ([7], "rows contains 7: rows must be indices of records, integers in [0, 3] (there are 4)",
     "cells contains 7: cells must be indices of observed cells, integers in [0, 2] "
     "(there are 3)"),
    ([True], "rows is a boolean mask of length 1; a mask must have one entry per record (4)",
     "cells is a boolean mask of length 1; a mask must have one entry per observed cell (3)"),
    ("ab", "rows='ab': rows must be indices of records",
     "cells='ab': cells must be indices of observed cells"),
])
def test_subset_and_cell_labels_share_one_index_check(bad, rows_words, cells_words):
    """Microdata.subset(rows) and CellTable.cell_labels(cells) said the same thing in two
    formats ('record index 7 is outside 0..3' against 'cells contains 7: ...')."""
    frame = pd.DataFrame({"a": [1, 2, 2, 3], "b": ["x", "y", "y", "x"]})
    md = Microdata.from_source(frame, keys=["a", "b"], population_size=40)
    with pytest.raises(sdcrisk.ParameterError) as rows_info:
        md.subset(bad)
    with pytest.raises(sdcrisk.ParameterError) as cells_info:
        tabulate(md).cell_labels(bad)
    assert rows_words in str(rows_info.value)
    assert cells_words in str(cells_info.value)
    assert md.subset(np.array([True, False, True, True])).n == 3


# --- e. recommend's integer options through the shared check ---------------------------------

def _recommend_sample():
    data = {"age": [30, 31, 32, 33, 40, 40, 41, 41], "sex": [1, 1, 2, 2, 1, 1, 2, 2]}
    return Microdata.from_source(data, keys=["age", "sex"], population_size=80)


@pytest.mark.parametrize(("option", "value", "words"), [
    ("refit_candidates", 0, "refit_candidates=0 must be an integer >= 1"),
    ("max_pattern_size", True, "max_pattern_size=True must be an integer >= 1"),  # was taken
    ("max_steps", 2.0, "max_steps=2.0 must be an integer >= 1"),
    ("workers", -1, "workers=-1 must be an integer >= 1"),
])
def test_recommend_integer_options(option, value, words):
    with pytest.raises(sdcrisk.ParameterError, match=words.replace("(", r"\(")):
        sdcrisk.recommend(_recommend_sample(), sdcrisk.RiskTarget(value=0.0),
                          **{option: value})


def test_recommend_takes_numpy_integers():
    """A count from numpy (np.int64(2)) was refused as 'not a positive integer'."""
    rec = sdcrisk.recommend(_recommend_sample(), sdcrisk.RiskTarget(objective="tau2", value=0.0),
                            actions=["recoding"], refit_candidates=np.int64(2))
    assert rec.best.records_changed >= 1


@pytest.mark.parametrize(("flag", "words"), [
    ("--refit-candidates", "--refit-candidates 0 must be an integer >= 1"),
    ("--max-pattern-size", "--max-pattern-size 0 must be an integer >= 1")])
def test_cli_recommend_integer_options_named_as_typed(capsys, tmp_path, flag, words):
    from sdcrisk.cli import main

    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    assert main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--target", "0", "--method", "nb", flag, "0"]) == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize(("estimator", "frame", "words"), [
    (lambda: sdcrisk.PoissonGammaRisk(cell_space=2),
     pd.DataFrame({"a": [1, 2, 3]}), "cell_space=2 is smaller than the 3 observed cells"),
    (lambda: sdcrisk.LogLinearRisk(terms="independence", weighted=True),
     pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]}), "weighted=True needs survey weights"),
    (lambda: sdcrisk.LogLinearRisk(terms="independence", structural_zeros=[{"a": "1", "b": "1"}]),
     pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]}), "records fall in structural zeros"),
    (lambda: sdcrisk.HdpRisk(structural_zeros=[{"a": "1", "b": "1"}]),
     pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2]}), "records fall in structural zeros"),
])
def test_a_census_still_refuses_options_that_contradict_the_table(estimator, frame, words):
    """The census answer fits no model, but an option the table contradicts is still the
    user's error (check_table runs before it)."""
    table = tabulate(Microdata.from_source(frame, keys=list(frame.columns)))
    assert table.population_size == table.n
    with pytest.raises(sdcrisk.SdcRiskError, match=words):
        estimator().fit(table)
