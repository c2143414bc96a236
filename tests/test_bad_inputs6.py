"""The sixth bad-input sweep, on the surfaces the earlier ones touched least: the Python API
used directly (a Microdata built by hand, options given as huge integers, the result's
accessors on a method without record risks), ``evaluate --methods`` option specs, the number
options of the command line, the streaming reader's header and the weights column. Each test
pins an input that ended in a traceback, in a wrong figure given without a word, or in a
message naming neither the value nor the remedy: the exception or exit code and the words of
the message, or the figures once read right."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from conftest import assert_refused_clearly as _clear
from conftest import run_cli as _run
from sdcrisk import (
    AutoRisk,
    BetaBinomialPrior,
    FrequencyTable,
    GraphicalRisk,
    HdpRisk,
    InputError,
    Microdata,
    MixedMembershipRisk,
    NegativeBinomialRisk,
    ParameterError,
    PoissonGammaRisk,
    RiskTarget,
    SkinnerElliotTheta,
    household_microdata,
    parse_loss,
    recommend,
    suda2,
    tabulate,
    truth_measures,
    validate,
)


def _frame() -> pd.DataFrame:
    """Five records over two keys: a = 1,2,2,1,2 and b = x,x,y,y,y give the cells (1,x),
    (2,x), (1,y) once and (2,y) twice: three sample uniques."""
    return pd.DataFrame({"a": [1, 2, 2, 1, 2], "b": ["x", "x", "y", "y", "y"]})


# --- evaluate --methods: an option given twice -----------------------------------------------

def test_candidate_option_given_twice_is_refused(capsys):
    """'loglinear:terms=all-2-way,terms=independence' fitted the independence model under
    the label loglinear(terms=independence): the first setting was dropped without a word."""
    code, _, err = _run(capsys, "evaluate", "example:uk_census2011", "--keys",
                        "region,sex,age_band", "--fraction", "0.01", "--methods",
                        "loglinear:terms=all-2-way,terms=independence")
    _clear(code, err, 2, ["--methods item 'loglinear:terms=all-2-way,terms=independence'",
                          "option 'terms' is given twice", "give each option once"])
    with pytest.raises(ParameterError, match="option 'terms' is given twice"):
        AutoRisk(candidates=["loglinear:terms=independence,terms=all-2-way", "nb"])


# --- results: accessors --------------------------------------------------------------------

def test_estimate_of_a_measure_the_result_lacks():
    """result.estimate('tua1') was a bare KeyError: 'tua1'."""
    table = tabulate(Microdata.from_source(_frame(), keys=["a", "b"], population_size=100))
    result = NegativeBinomialRisk().fit(table)
    assert result.estimate("tau1") == pytest.approx(3 * 0.05)  # nb: P(F=1|f=1) = n/N each
    with pytest.raises(ParameterError, match="nb gives no measure 'tua1'; its measures: tau1, "
                                             "tau2"):
        result.estimate("tua1")


def test_record_risk_of_a_file_level_method_names_the_remedy():
    """skinner-elliot's record_risk() said "gives no 'reidentification' risk; available: []"
    with no way forward."""
    table = tabulate(Microdata.from_source(_frame(), keys=["a", "b"], population_size=100))
    result = SkinnerElliotTheta().fit(table)
    with pytest.raises(ParameterError, match=r"skinner-elliot gives no per-cell or record "
                                             r"risk \(its measures are for the file as a whole: "
                                             r"theta\); fit a method that does, e.g. nb"):
        result.record_risk()


# --- options given as Python integers beyond a float ------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: MixedMembershipRisk(mh_step=10**400),
    lambda: HdpRisk(tolerance=10**400),
    lambda: RiskTarget(value=10**400),
], ids=["mh_step", "tolerance", "target value"])
def test_integer_options_beyond_float_are_refused(make):
    """An int too large for a float (10**400) ended in OverflowError in float(); 10**30 in
    TypeError from np.isfinite (mh_step, tolerance, RiskTarget's value)."""
    with pytest.raises(ParameterError, match="must be"):
        make()


def test_huge_integer_tolerance_names_the_range():
    """tolerance=10**30 ended in numpy's TypeError ("ufunc 'isfinite' not supported")."""
    with pytest.raises(ParameterError, match=r"tolerance=10+ must be a number in \[0, 1\]"):
        MixedMembershipRisk(tolerance=10**30)
    assert MixedMembershipRisk(mh_step=10**30).mh_step == 10**30  # finite and positive: valid


def test_suda_dis_fraction_must_be_a_number():
    """suda2(dis_fraction='x') was a ValueError from float(); dis_fraction=True was read as 1
    (every DIS score then 1) without a word."""
    md = Microdata.from_source(_frame(), keys=["a", "b"], population_size=100)
    for value in ("x", True):
        with pytest.raises(ParameterError, match=f"dis_fraction={value!r} must be a number"):
            suda2(md, dis_fraction=value)


# --- the models' numeric ranges ------------------------------------------------------------

def _three_keys():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 60), "b": rng.integers(0, 3, 60),
                          "c": rng.integers(0, 4, 60)})
    return tabulate(Microdata.from_source(frame, keys=["a", "b", "c"], population_size=2000))


def test_poisson_gamma_alpha_beyond_the_poisson_limit_is_refused():
    """alpha=1e20 gave tau1 = tau2 = 21, every sample unique a population unique, without a
    word: 1 + n beta rounds to 1, so the NB's prob is 1 and F = f. Up to 1e8 (the ML search's
    bound) the figures are the Poisson limit's: with N = 2,000 over K = 60 cells (33 people
    a cell) no sample unique is a population unique."""
    table = _three_keys()
    near = PoissonGammaRisk(alpha=1e8).fit(table)
    assert int((table.counts == 1).sum()) == 21
    assert near.estimate("tau1") < 1e-12
    assert 0.6 < near.estimate("tau2") < 0.7
    for alpha in (1e20, 10**400):
        with pytest.raises(ParameterError, match=r"alpha=1[\de+]* must be a positive number up "
                                                 r"to 1e\+08 \(larger values are the Poisson "
                                                 r"limit"):
            PoissonGammaRisk(alpha=alpha)


@pytest.mark.parametrize("weight", [1e308, 1e-320])
def test_graphical_prior_weight_beyond_its_range_is_refused(weight):
    """prior_weight=1e308 (or 1e-320) ended in "ValueError: max() arg is an empty sequence":
    every marginal likelihood was NaN and Occam's window kept no model."""
    with pytest.raises(ParameterError, match=re.escape(
            f"prior_weight={weight!r} must be a positive number from 1e-100 to 1e+100")):
        GraphicalRisk(prior_weight=weight)
    assert GraphicalRisk(prior_weight=1e100).fit(_three_keys()).estimate("tau1") < 1e-9


@pytest.mark.filterwarnings("ignore::sdcrisk.ConvergenceWarning")  # 200 iterations: expected
def test_mcmc_first_block_is_held_to_max_iterations():
    """The adaptive run's first block was not held to max_iterations, as the later ones are:
    block=2,000 with max_iterations=200 ran 2,000 iterations per chain, and block=10**30 (a
    slip of the exponent) never ended."""
    table = _three_keys()
    for cls in (HdpRisk, MixedMembershipRisk):
        result = cls(block=2000, max_iterations=200, chains=2, burn_in=20,
                     mc_draws=20).fit(table)
        assert result.diagnostics["mcmc"]["iterations"] == 200


def test_truth_measures_population_size_must_be_finite():
    """population_size=nan gave p_pu = nan without a word (the check 'N < n' passed NaN)."""
    f, big_f = np.array([1, 1, 2]), np.array([1, 3, 2])
    truth = truth_measures(f, big_f, population_size=10, population_uniques=2)
    assert truth["tau1"] == 1 and truth["tau2"] == pytest.approx(1 + 1 / 3)
    assert truth["p_pu"] == pytest.approx(0.2)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ParameterError, match=f"population_size={bad!r} must be a finite "
                                                 "number at least the sample's n=4"):
            truth_measures(f, big_f, population_size=bad, population_uniques=2)


@pytest.mark.parametrize(("options", "words"), [
    ({"replicates": True}, "replicates=True must be an integer >= 1"),
    ({"min_records": -1}, "min_records=-1 must be an integer >= 0"),
    ({"max_fraction": 0}, "max_fraction=0 must lie in (0, 1]"),
    ({"random_state": -1}, "random_state=-1 must be a non-negative integer"),
    ({"estimator_options": "x"}, "estimator_options='x' must be a mapping"),
])
def test_validate_checks_its_options_as_auto_does(options, words):
    """validate() took replicates=True for 1, min_records=-1 and max_fraction=0 without a
    word (AutoRisk refused them); random_state=-1 and estimator_options='x' were numpy's and
    dict's ValueErrors."""
    table = _three_keys()
    with pytest.raises(ParameterError, match=re.escape(words)):
        validate(table, ["nb"], **options)
    valid = validate(table, ["nb"], replicates=2)
    assert valid.rows[0].candidate.method == "nb" and len(valid.rows[0].tau1) == 2


def test_recommend_keys_and_actions_as_text_or_empty():
    """actions='suppression' was read letter by letter ("action 's'"), keys='a,b' likewise;
    keys=[] or actions=[] searched nothing and returned no recommendation without a word."""
    md = Microdata.from_source(_frame(), keys=["a", "b"], population_size=100)
    target = RiskTarget(value=0.0)
    rec = recommend(md, target, actions="suppression", keys="a,b", workers=1)
    assert [p.kind for p in rec.plans] == ["suppression"]
    listed = recommend(md, target, actions=["suppression"], keys=["a", "b"], workers=1)
    assert [repr(p) for p in rec.plans] == [repr(p) for p in listed.plans]
    with pytest.raises(ParameterError, match=r"keys=\[\] lets no key change"):
        recommend(md, target, keys=[], workers=1)
    with pytest.raises(ParameterError, match=r"actions=\[\] gives no plan to search"):
        recommend(md, target, actions=[], workers=1)


# --- a Microdata built by hand --------------------------------------------------------------

def _by_hand(**changes):
    fields = dict(keys=("a", "b"), codes=(np.array([0, 1, 1, 0, 1]), np.array([0, 0, 1, 1, 1])),
                  levels=((1, 2), ("x", "y")), weights=None, household=None,
                  population_size=100.0, population_size_source="given")
    return Microdata(**{**fields, **changes})


def test_microdata_by_hand_is_checked_like_from_source():
    """The constructor checked nothing: N=2 < n=5 was taken for a census (nb said tau1 = 3
    'exact', every sample unique a population unique), codes beyond the levels ended in an
    IndexError in tabulate, a code array shorter than the others cut the file to its length,
    N=inf ended in a ZeroDivisionError (loglinear)."""
    table = tabulate(_by_hand())
    ok = NegativeBinomialRisk().fit(table)
    assert table.n == 5 and int((table.counts == 1).sum()) == 3
    assert ok.estimate("tau1") == pytest.approx(3 * 5 / 100)  # P(F=1|f=1) = n/N per unique
    with pytest.raises(InputError, match="population_size=2 gives N=2, smaller than the "
                                         "sample size n=5"):
        _by_hand(population_size=2.0)
    with pytest.raises(ParameterError, match="population_size=inf is not finite"):
        _by_hand(population_size=float("inf"))
    with pytest.raises(ParameterError, match=r"key 'a' has the code 5, outside its 2 levels.*"
                                             r"Microdata.from_source"):
        _by_hand(codes=(np.array([0, 5, 1, 0, 1]), np.array([0, 0, 1, 1, 1])))
    with pytest.raises(ParameterError, match="the codes of key 'b' must be a 1-D integer array "
                                             "of the n=5 records"):
        _by_hand(codes=(np.array([0, 1, 1, 0, 1]), np.array([0, 0, 1])))
    with pytest.raises(InputError, match="non-finite weight -1 at row 2"):
        _by_hand(weights=np.array([1.0, -1.0, 2.0, 3.0, 4.0]))
    # a key named twice: its cells, keyed by name, would collide (summary, record risks)
    with pytest.raises(ParameterError, match="key 'a' is given twice; name each key once"):
        _by_hand(keys=("a", "a"))


def test_object_column_of_ints_and_floats_counts_equal_numbers_together():
    """A pandas object column holding 1 and 1.0 (a frame built from mixed sources) was read
    by the text of each value: '1' and '1.0' were two categories, so two records of the same
    category were counted as two sample uniques; a mapping, a float64 column and a CSV read
    them as one number."""
    mixed = pd.DataFrame({"a": pd.Series([1, 1.0, 2, 2.0], dtype=object), "b": [1, 1, 1, 1]})
    plain = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0], "b": [1, 1, 1, 1]})
    tables = [tabulate(Microdata.from_source(f, keys=["a", "b"], population_size=40))
              for f in (mixed, plain)]
    for table in tables:
        assert table.levels[0] == (1, 2)
        assert sorted(table.counts.tolist()) == [2, 2]  # no sample unique
    with pytest.raises(InputError, match="value 2.5 is not an integer code"):
        Microdata.from_source(pd.DataFrame({"a": pd.Series([1, 2.5], dtype=object)}),
                              keys=["a"], population_size=40)



def test_true_false_key_reads_alike_from_every_in_memory_source():
    """A key of true/false values has the levels (0, 1) whether it comes in a mapping, a
    pandas or polars frame or an Arrow table (a mapping gave the texts 'False'/'True', so
    the same records were keyed by other labels in the cells table and a protected copy)."""
    import polars as pl
    import pyarrow as pa

    data = {"smoker": [True, False, True, True, False], "sex": [1, 2, 1, 2, 1]}
    for source in (data, pd.DataFrame(data), pl.DataFrame(data), pa.table(data)):
        md = Microdata.from_source(source, keys=["smoker", "sex"], population_size=100)
        assert md.levels[0] == (0, 1), type(source).__module__
        assert md.codes[0].tolist() == [1, 0, 1, 1, 0]


def test_wildcard_alpha_is_not_a_bool():
    """wildcard_alpha=False was read as 0 (wildcard matches ignored), True as 1."""
    for flag in (True, False):
        with pytest.raises(ParameterError, match=f"wildcard_alpha={flag} is not a number"):
            Microdata.from_source(_frame(), keys=["a", "b"], population_size=100,
                                  missing="wildcard", wildcard_alpha=flag)


# --- household-level keys, decision losses -----------------------------------------------

def _couples():
    frame = pd.DataFrame({"hid": [0, 0, 1, 1, 2, 2], "sex": [1, 2, 1, 2, 1, 1],
                          "age": [3, 3, 4, 2, 1, 4]})
    return Microdata.from_source(frame, keys=["sex", "age"], household="hid",
                                 population_size=600)


@pytest.mark.parametrize(("options", "error", "words"), [
    ({"size": 2.0}, ParameterError, "household size 2.0 must be an integer >= 1"),
    ({"size": True}, ParameterError, "household size True must be an integer >= 1"),
    ({"size": 10**30}, InputError, "no household of size 1000000000000000000000000000000 in "
                                   "the file (sizes present: {2: 3})"),
    ({"size": 2, "population_households": "5"}, ParameterError,
     "population_households='5' must be a number"),
    ({"size": 2, "population_households": float("nan")}, ParameterError,
     "population_households=nan is not finite"),
])
def test_household_microdata_options(options, error, words):
    """size=2.0 and True were numpy TypeErrors, size=10**30 'Maximum allowed dimension
    exceeded', population_households='5' a TypeError and nan was reported as
    'population_size=nan'."""
    with pytest.raises(error, match=re.escape(words)):
        household_microdata(_couples(), ["sex", "age"], **options)
    # three couples over 6 persons in 600 -> 300 households of two: N = 3 * 600 / 6
    assert household_microdata(_couples(), ["sex", "age"], size=2).population_size == 300


def test_parse_loss_kind_is_checked():
    """kind='l2' was read as an l1 loss without a word."""
    with pytest.raises(ParameterError, match="kind='l2'; use 'l1'"):
        parse_loss("exp:1", kind="l2")


def test_frequency_and_cell_tables_by_hand_are_checked():
    """A FrequencyTable with N=2 below its n=3 records was taken for a census (nb: tau1 = 1
    'exact'); 10 observed cells in a key space of K=3 were fitted; a count of 1.5 was cut
    to 1. A CellTable given N < n was likewise a census."""
    fields = dict(keys=("a",), levels=((1, 2, 3),), population_size=100.0,
                  population_size_source="given")
    ok = NegativeBinomialRisk().fit(FrequencyTable(sizes=np.array([1, 2]),
                                                   cells=np.array([1, 1]), **fields))
    assert ok.estimate("tau1") == pytest.approx(3 / 100)  # one unique, P(F=1|f=1) = n/N
    with pytest.raises(InputError, match="population_size=2 gives N=2, smaller than the "
                                         "sample size n=3"):
        FrequencyTable(sizes=np.array([1, 2]), cells=np.array([1, 1]),
                       **{**fields, "population_size": 2.0})
    with pytest.raises(InputError, match="10 observed cells but its keys' levels make only "
                                         "K=3"):
        FrequencyTable(sizes=np.array([1]), cells=np.array([10]), **fields)
    with pytest.raises(InputError, match="must be whole numbers"):
        FrequencyTable(sizes=np.array([1.5, 2]), cells=np.array([1, 1]), **fields)
    table = tabulate(_by_hand())
    with pytest.raises(InputError, match="gives N=2, smaller than the sample size n=5"):
        dataclasses.replace(table, population_size=2.0)


@pytest.mark.parametrize("value", [True, 10**400])
def test_beta_binomial_prior_parameters_are_numbers(value):
    """alpha=True was read as 1; alpha=10**400 was an OverflowError."""
    with pytest.raises(ParameterError, match="alpha=.* must be a positive number"):
        BetaBinomialPrior(value, 1)


# --- the command line's numbers -------------------------------------------------------------

@pytest.mark.parametrize(("option", "value", "remedy"), [
    ("--population-size", "1,000,000", "write the number without separators, e.g. 1000000"),
    ("--population-size", "56 075 912", "write the number without separators"),
    ("--sampling-fraction", "5%", "e.g. 0.05 for 5%"),
])
def test_number_options_name_the_way_to_write_them(capsys, option, value, remedy):
    """argparse said "invalid float value: '1,000,000'" and stopped there."""
    with pytest.raises(SystemExit) as exit_:  # argparse's usage error
        _run(capsys, "assess", "example:uk_census2011", "--method", "nb", option, value)
    code, err = exit_.value.code, capsys.readouterr().err
    _clear(code, err, 2, [f"argument {option}: invalid float value: {value!r}", remedy])


@pytest.mark.parametrize(("spec", "remedy"), [
    ("tau2=5,tau1=3", "give one limit per --fail-above, repeating the option"),
    ("global_risk=0,01", "write it with a decimal point, e.g. 0.01"),
])
def test_fail_above_with_a_comma_names_the_remedy(capsys, spec, remedy):
    """Two limits in one --fail-above, or a decimal comma, said only "the limit '5,tau1=3'
    is not a number"."""
    code, _, err = _run(capsys, "assess", "example:uk_census2011", "--method", "nb",
                        "--fail-above", spec)
    _clear(code, err, 2, [f"--fail-above {spec!r}: the limit", "is not a number", remedy])


# --- the memory limit --------------------------------------------------------------------------

def test_memory_limit_below_a_kib_and_a_unit_suffix(capsys, tmp_path, monkeypatch):
    """SDCRISK_MEMORY_LIMIT=1 printed 'the memory limit is 0.0 KiB'; '1.5GB' said only
    "is not a size like 8G", not which suffixes there are."""
    path = tmp_path / "s.csv"
    _frame().to_csv(path, index=False)
    argv = ("assess", path, "--keys", "a,b", "--population-size", 100, "--method", "nb")
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1")
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ["but the memory limit is 1 byte "])
    assert "0.0 KiB" not in err
    monkeypatch.setenv("SDCRISK_MEMORY_LIMIT", "1.5GB")
    code, _, err = _run(capsys, *argv)
    _clear(code, err, 2, ["SDCRISK_MEMORY_LIMIT='1.5GB' is not a size", "K, M or G",
                          "e.g. 8G or 1.5G"])


# --- files ------------------------------------------------------------------------------------

def test_streamed_csv_naming_a_key_twice(capsys, tmp_path):
    """--out-of-core said "could not be read as CSV (CSV file contained multiple columns named
    age)"; the in-memory reader names the positions and the remedy."""
    path = tmp_path / "dup.csv"
    path.write_text("age,age,sex\n1,2,1\n2,3,2\n3,1,1\n")
    for extra in ((), ("--out-of-core",)):
        code, _, err = _run(capsys, "assess", path, "--keys", "age,sex", "--population-size",
                            100, "--method", "nb", *extra)
        _clear(code, err, 2, ["dup.csv: column 'age' appears 2 times (positions 1, 2)",
                              "rename the duplicates"])


def test_missing_weight_names_the_remedy(capsys, tmp_path):
    """'weights column 'w' is missing at row 3' said nothing of what to do."""
    path = tmp_path / "w.csv"
    path.write_text("a,b,w\n1,1,50\n1,2,50\n2,1,\n2,2,50\n")
    for extra in ((), ("--out-of-core",)):
        code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--weights", "w",
                            "--method", "nb", *extra)
        _clear(code, err, 2, ["weights column 'w' is missing at row 3", "fill it in",
                              "leave out --weights and give --population-size"])


@pytest.mark.parametrize("extra", [[], ["--out-of-core"]])
def test_a_key_with_no_value_is_named(capsys, tmp_path, extra):
    """A key column whose every value is missing (a misread column, or a code read as
    missing) gave the figures of the file without that key, without a word. It is named in
    a warning, in memory and streamed; the figures are unchanged."""
    from conftest import run_cli

    path = tmp_path / "b_empty.csv"
    path.write_text("a,b,c\n1,,x\n2,,y\n1,,x\n")
    code, out, err = run_cli(capsys, "assess", path, "--keys", "a,b,c", "--population-size",
                             "100", "--method", "nb", "--format", "json", *extra)
    assert code == 0
    assert err.count("key 'b' holds no value: every one is missing") == 1
    without = run_cli(capsys, "assess", path, "--keys", "a,c", "--population-size", "100",
                      "--method", "nb", "--format", "json", *extra)[1]
    import json

    assert (json.loads(out)["measures"]["tau2"]["estimate"]
            == json.loads(without)["measures"]["tau2"]["estimate"])


def test_a_negative_limit_is_refused_by_the_cli_and_the_api(capsys):
    """--fail-above tau2=-1 was accepted and then failed every file ("0 exceeds -1", exit
    3); build_report(limits={'tau2': -1}) the same. Both ways now share one check."""
    from sdcrisk.report.verdict import normalise_limits

    code, _, err = _run(capsys, "assess", "example:uk_census2011", "--keys", "region,sex",
                           "--population-size", "56075912", "--method", "nb",
                           "--fail-above", "tau2=-1")
    _clear(code, err, 2, ["--fail-above 'tau2=-1'", "below 0", "give 0 or more"])
    with pytest.raises(ParameterError, match="the limit -1 is below 0"):
        normalise_limits({"tau2": -1})
    assert normalise_limits({"tau2.upper": 0}) == [("tau2", "upper", 0.0)]


@pytest.mark.parametrize("extra", [[], ["--out-of-core"]])
def test_a_missing_household_id_says_what_to_do(capsys, tmp_path, extra):
    """The refusal named the row only; it now says what to do, in the same words in memory
    and streamed (the weights' refusal already did)."""
    path = tmp_path / "hh.csv"
    path.write_text("hh,a,b\n1,1,2\n,2,1\n2,1,1\n")
    code, _, err = _run(capsys, "assess", path, "--keys", "a,b", "--household", "hh",
                        "--population-size", "100", "--method", "nb", *extra)
    _clear(code, err, 2, ["household column 'hh' is missing at row 2", "fill it in",
                          "leave out --household"])
