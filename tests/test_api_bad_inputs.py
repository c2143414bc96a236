"""Bad input to the Python API ends in the project's own exception (docs/errors.md).

tests/test_bad_inputs.py covers the CLI and the main API arguments; the cases here are the
ones a probe of the public API (``sdcrisk.__all__``) found ending in someone else's exception
(a KeyError, numpy's ValueError, an AttributeError) or in a silent wrong answer. Each asserts
the exception class and the words naming the value and option.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import InputError, Microdata, ParameterError, SdcRiskError


def _frame(n=60, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                         "c": rng.integers(0, 5, n), "w": np.full(n, 40.0)})


# --- Microdata.from_source -----------------------------------------------------------------

SOURCE_CASES = [
    # a None among the keys passed the check (next(..., None) found None and took it for
    # "no bad key"), then failed as AttributeError: 'NoneType' object has no attribute 'lower'
    (lambda: Microdata.from_source(_frame(), keys=["a", None]), ParameterError,
     "keys: None is not a column name"),
    # a column of lists: numpy's "setting an array element with a sequence"
    (lambda: Microdata.from_source(_frame().assign(a=[[1], [2]] * 30), keys=["a"]),
     InputError, "column 'a' holds nested values (e.g. [1])"),
    # a column of dicts was counted by each dict's repr
    (lambda: Microdata.from_source(_frame().assign(a=[{1: 2}] * 60), keys=["a"]),
     InputError, "column 'a' holds nested values"),
    (lambda: Microdata.from_source(_frame().assign(h=[(1, 2)] * 60), keys=["a"],
                                   household="h"),
     InputError, "column 'h' holds nested values"),
    (lambda: Microdata.from_source({"a": [[1], [2, 3]]}, keys=["a"]),
     InputError, "column 'a' holds nested values"),
    # a polars LazyFrame: AttributeError 'LazyFrame' object has no attribute 'get_column'
    (lambda: Microdata.from_source(pytest.importorskip("polars").DataFrame({"a": [1, 2]})
                                   .lazy(), keys=["a"]),
     InputError, "LazyFrame; collect it first"),
]


@pytest.mark.parametrize(("call", "error", "words"), SOURCE_CASES,
                         ids=[c[2][:40] for c in SOURCE_CASES])
def test_microdata_bad_source(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_frame_with_number_labels_is_read_by_the_label_text():
    """pd.DataFrame(array) has columns 0, 1, ...: keys=["0"] was listed as present and then
    failed with pandas' KeyError: '0'."""
    df = pd.DataFrame(np.array([[1, 5], [2, 5], [2, 6]]))
    md = Microdata.from_source(df, keys=["0", "1"])
    assert md.n == 3
    assert md.levels == ((1, 2), (5, 6))
    assert md.n_levels == (2, 2)
    with pytest.raises(InputError, match="missing column '2'"):
        Microdata.from_source(df, keys=["2"])


def test_exceptions_are_the_projects():
    assert issubclass(InputError, SdcRiskError) and issubclass(ParameterError, SdcRiskError)


# --- Microdata.subset, CellTable -----------------------------------------------------------

def _md():
    return Microdata.from_source(_frame(), keys=["a", "b", "c"], population_size=10_000)


SUBSET_CASES = [
    # each was numpy's IndexError/TypeError, or a silent wrong sample; the words are those of
    # CellTable.cell_labels' cells (one check: data._cells.check_index)
    (["x"], "rows contains 'x': rows must be indices of records, integers in [0, 59]"),
    ([0.5, 1.5], "rows contains 0.5: rows must be indices of records, integers in [0, 59]"),
    ([1000], "rows contains 1000: rows must be indices of records, integers in [0, 59]"),
    ([-1], "rows contains -1"),  # was the last record, silently
    (np.ones(5, bool), "rows is a boolean mask of length 5; a mask must have one entry per "
     "record (60)"),  # was the first 5 records
    (np.zeros((2, 2), int), "give a list or a 1-d array of them"),
    (None, "rows=None"),
    (3, "rows=3"),
]


@pytest.mark.parametrize(("rows", "words"), SUBSET_CASES, ids=[c[1][:40] for c in SUBSET_CASES])
def test_subset_bad_rows(rows, words):
    with pytest.raises(ParameterError) as info:
        _md().subset(rows)
    assert words.lower() in str(info.value).lower()


def test_subset_good_rows_still_work():
    md = _md()
    mask = np.zeros(md.n, bool)
    mask[[3, 7]] = True
    assert md.subset(mask).n == 2
    sub = md.subset(np.array([3, 7], np.uint8))
    assert sub.n == 2 and sub.codes[0].tolist() == [md.codes[0][3], md.codes[0][7]]
    with pytest.raises(InputError, match="the sample is empty"):
        md.subset([])


@pytest.mark.parametrize(("ks", "words"), [("3", "ks='3'"), (3, "ks=3"), ([0], "ks=[0]"),
                                           ([2.5], "ks=[2.5]")])
def test_k_anonymity_violations_bad_ks(ks, words):
    table = sdcrisk.tabulate(_md())
    with pytest.raises(ParameterError, match="must be a list of integers k >= 1") as info:
        table.k_anonymity_violations(ks)
    assert words in str(info.value)


# --- analyses ------------------------------------------------------------------------------

ANALYSIS_CASES = [
    # RiskTarget: TypeError '>=' not supported between 'str' and 'int'
    (lambda: sdcrisk.RiskTarget(value="x"), ParameterError, "value='x' must be a number"),
    (lambda: sdcrisk.RiskTarget(value=None), ParameterError, "value=None must be a number"),
    (lambda: sdcrisk.RiskTarget(value=[1]), ParameterError, "value=[1] must be a number"),
    (lambda: sdcrisk.RiskTarget(objective="records_above", value=1, risk_threshold="0.1"),
     ParameterError, "risk_threshold='0.1' must be a number"),
    # sampling designs: TypeError '<' not supported; SimpleRandomSample(2.5) was accepted
    (lambda: sdcrisk.Bernoulli("x"), ParameterError, "fraction='x' must be a number"),
    (lambda: sdcrisk.HouseholdBernoulli(None), ParameterError, "fraction=None"),
    (lambda: sdcrisk.SimpleRandomSample("x"), ParameterError, "n='x' must be an integer >= 1"),
    (lambda: sdcrisk.SimpleRandomSample(2.5), ParameterError, "n=2.5 must be an integer"),
    # protect: AttributeError 'str' object has no attribute 'fit'; k=2.5 and k="3" accepted
    (lambda: sdcrisk.protect(_frame(), ["a", "b"], target="tau2=1", estimator=3),
     ParameterError, "estimator=3: give a method name"),
    (lambda: sdcrisk.protect(_frame(), ["a", "b"], target="tau2=1", estimator="zz"),
     ParameterError, "unknown method 'zz'"),
    (lambda: sdcrisk.protect(_frame(), ["a", "b"], k=2.5), ParameterError,
     "k=2.5 must be an integer >= 2"),
    (lambda: sdcrisk.protect(_frame(), ["a", "b"], k="3"), ParameterError, "k='3'"),
    # protect keys: a string was read letter by letter ("missing column ','")
    (lambda: sdcrisk.protect(_frame(), "a,zz", k=2), InputError, "missing column 'zz'"),
    (lambda: sdcrisk.protect(_frame(), ["a", None], k=2), ParameterError,
     "None is not a column name"),
    # assess_scenarios: TypeError from ** of a non-mapping / an unknown keyword
    (lambda: sdcrisk.assess_scenarios(_frame(), [["a"]], options=3), ParameterError,
     "options=3 must map option names"),
    (lambda: sdcrisk.assess_scenarios(_frame(), [["a"]], zz=1), ParameterError,
     "unknown option 'zz'"),
    # ... a negative or text seed and a negative memory limit were accepted (the limit failed
    # each scenario, not the call)
    (lambda: sdcrisk.assess_scenarios(_frame(), [["a"]], seed=-1), ParameterError,
     "seed=-1 must be a non-negative integer"),
    (lambda: sdcrisk.assess_scenarios(_frame(), [["a"]], seed="x"), ParameterError, "seed='x'"),
    (lambda: sdcrisk.assess_scenarios(_frame(), [["a"]], memory_limit=-1), ParameterError,
     "memory_limit=-1"),
    # ... key sets given as one string were read letter by letter
    (lambda: sdcrisk.assess_scenarios(_frame(), "a,b"), ParameterError,
     "key_sets='a,b': give a list of key sets"),
    # KeySet: TypeError from '+'.join
    (lambda: sdcrisk.KeySet(keys=(None,)), ParameterError, "None is not a column name"),
    # evaluate: AttributeError 'int' object has no attribute 'name'; "nb" read as "n", "b"
    (lambda: sdcrisk.evaluate(_md(), [3], design=sdcrisk.Bernoulli(0.5)), ParameterError,
     "3 is not an estimator"),
    (lambda: sdcrisk.evaluate(_md(), "nb", design=sdcrisk.Bernoulli(0.5)), ParameterError,
     "estimators='nb': give a list"),
    # global_risk_threshold: a bare ValueError
    (lambda: sdcrisk.global_risk_threshold(np.array([0.1, 0.2]), 0), ParameterError,
     "max_global_risk=0 must be a number in (0, 1)"),
]


@pytest.mark.parametrize(("call", "error", "words"), ANALYSIS_CASES,
                         ids=[c[2][:40] for c in ANALYSIS_CASES])
def test_analysis_bad_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_keyset_and_scenarios_take_a_comma_separated_string_as_keys():
    assert sdcrisk.KeySet(keys="a, b").keys == ("a", "b")
    rep = sdcrisk.assess_scenarios(_frame(), ["a,b", ["c"]], population_size=10_000,
                                   executor="serial", rank_by="sample_uniques")
    assert sorted(r["name"] for r in rep.rows) == ["a+b", "c"]
    assert all(r.get("error") is None for r in rep.rows)


# --- estimator options ---------------------------------------------------------------------

OPTION_CASES = [
    # each was TypeError: '<' / '>' not supported between 'str' (or 'NoneType') and 'int'
    ("poisson-gamma", dict(alpha="x"), "alpha='x' must be a number"),
    ("poisson-gamma", dict(cell_space="x"), "cell_space='x' must be an integer >= 1"),
    ("poisson-gamma", dict(cell_space=2.5), "cell_space=2.5 must be an integer >= 1"),
    ("loglinear", dict(max_iter="x"), "max_iter='x' must be an integer >= 1"),
    ("loglinear", dict(max_iter=None), "max_iter=None"),
    ("loglinear", dict(tol="x"), "tol='x' must be a number"),
    ("loglinear", dict(tol=float("inf")), "tol=inf must be a number in (0, 1]"),
    ("loglinear", dict(sdcmicro_bound=None), "sdcmicro_bound=None must be a number"),
    ("loglinear", dict(max_added_terms="x"), "max_added_terms='x' must be an integer >= 0"),
    ("hdp", dict(rhat_max="x"), "rhat_max='x' must be a number"),
    ("hdp", dict(ess_per_chain=None), "ess_per_chain=None must be a number"),
    ("hdp", dict(mode_gap="x"), "mode_gap='x'"),
    ("mixed-membership", dict(tolerance=None), "tolerance=None must be a number"),
    ("mixed-membership", dict(mh_step="x"), "mh_step='x' must be a number"),
]

# accepted and then failed inside fit: TypeError 'float' object cannot be interpreted as an
# integer (range(max_iter) in the IPF)
OPTION_CASES += [
    ("loglinear", dict(max_iter=1.5), "max_iter=1.5 must be an integer >= 1"),
    ("loglinear", dict(max_iter=float("nan")), "max_iter=nan must be an integer >= 1"),
]


@pytest.mark.parametrize(("name", "options", "words"), OPTION_CASES,
                         ids=[c[2][:40] for c in OPTION_CASES])
def test_estimator_option_of_the_wrong_type(name, options, words):
    """The estimator classes themselves (get_estimator takes None as "the default")."""
    from sdcrisk.estimators import MODELS

    with pytest.raises(ParameterError) as info:
        MODELS[name](**options)
    assert words.lower() in str(info.value).lower()


# --- decision (Zaslavsky-Horton) -----------------------------------------------------------

def _domains():
    return sdcrisk.DomainTable.from_microdata(_md(), domain="a", class_definition={"b": 1})


def _prior():
    return sdcrisk.BetaBinomialPrior(1, 10)


DECISION_CASES = [
    # TypeError / ValueError / AttributeError before
    (lambda: sdcrisk.fit_beta_binomial(["a"], [3]), InputError, "y=['a'] and n=[3] must be"),
    (lambda: sdcrisk.posterior_table("1", 3, _prior(), "exp:10"), ParameterError,
     "n='1' must be a number"),
    (lambda: sdcrisk.posterior_table(3, 8, 3, "exp:10"), ParameterError,
     "prior=3 must be a BetaBinomialPrior"),
    (lambda: sdcrisk.decision_table(3, _prior(), l1="exp:10"), ParameterError,
     "domain_types=3"),
    (lambda: sdcrisk.decision_table([(3, 8, 1)], "x", l1="exp:10"), ParameterError,
     "prior='x'"),
    (lambda: sdcrisk.sensitivity([(3, 8, 1)], _prior(), l1="exp:10", alternatives=3),
     ParameterError, "alternatives=3 must map a name to an (l1, l0) pair"),
    (lambda: sdcrisk.sensitivity([(3, 8, 1)], _prior(), l1="exp:10",
                                 alternatives={"a": ("exp:5",)}),
     ParameterError, "(l1, l0) pair"),
    (lambda: sdcrisk.DomainTable.from_microdata(_md(), domain="a", class_definition={"b": 1},
                                                domain_sizes=3),
     ParameterError, "domain_sizes=3 must map each category of 'a'"),
    (lambda: sdcrisk.DomainTable.from_microdata(_md(), domain="a", class_definition={"b": 1},
                                                population=3),
     ParameterError, "population=3 must be a Microdata"),
    (lambda: sdcrisk.decide(_domains(), l1="exp:10", ratio_threshold="x"), ParameterError,
     "ratio_threshold='x' must be a number"),
    (lambda: sdcrisk.decide(_domains(), l1="exp:10", target_risk_fraction="x"),
     ParameterError, "target_risk_fraction='x' must be a number"),
    (lambda: sdcrisk.decide(_domains(), l1="exp:10", prior=3), ParameterError,
     "prior=3 must be a BetaBinomialPrior"),
    # a user loss of the wrong arity: TypeError deep in the risk sums
    (lambda: sdcrisk.decide(_domains(), l1=lambda y, Y: y * np.exp(-Y)), ParameterError,
     "must take four arguments (y, Y, n, N)"),
    # N = 10^9: a Python row per (y, Y), endless (and ~GBs) before
    (lambda: sdcrisk.posterior_table(3, 10**9, _prior(), "exp:10"), ParameterError,
     "4,000,000,004 rows, more than 1,000,000"),
]


@pytest.mark.parametrize(("call", "error", "words"), DECISION_CASES,
                         ids=[c[2][:40] for c in DECISION_CASES])
def test_decision_bad_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_decide_takes_a_four_argument_callable_loss():
    dec = sdcrisk.decide(_domains(), l1=lambda y, Y, n, N: y * np.exp(-Y / 10))
    ref = sdcrisk.decide(_domains(), l1="exp:10")
    assert np.asarray(dec.publish).tolist() == np.asarray(ref.publish).tolist()
    assert dec.totals == pytest.approx(ref.totals)


# --- generated frames ----------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3), st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=1), st.integers(0, 1), max_size=1))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.lists(_VALUES, min_size=0, max_size=6), data=st.data())
def test_any_column_of_values_is_read_or_refused_in_the_projects_words(a, data):
    """A key or weights column of any mix of values (None, NaN, inf, text, lists, dicts, bools)
    tabulates and fits, or raises SdcRiskError: never numpy's/pandas' own exception."""
    w = data.draw(st.lists(_VALUES, min_size=len(a), max_size=len(a)))
    frame = pd.DataFrame({"a": pd.Series(a, dtype=object), "w": pd.Series(w, dtype=object)})
    weights = data.draw(st.sampled_from([None, "w"]))
    try:
        md = Microdata.from_source(frame, keys=["a"], weights=weights)
        res = sdcrisk.NegativeBinomialRisk().fit(sdcrisk.tabulate(md))
    except SdcRiskError:
        return
    assert md.n == len(a)
    assert np.isfinite(res.measures["tau1"].estimate)


# --- uniqueness, household, report ---------------------------------------------------------

def _build_report(*args, **kwargs):
    from sdcrisk.report import build_report

    return build_report(*args, **kwargs)


OTHER_CASES = [
    # AttributeError: 'CellTable' object has no attribute 'n_classes' (and the like)
    (lambda: sdcrisk.pitman_uniques(sdcrisk.tabulate(_md())), ParameterError,
     "pitman_uniques() takes a FrequencyProfile, not CellTable"),
    (lambda: sdcrisk.zayatz_uniques(3), ParameterError,
     "zayatz_uniques() takes a FrequencyProfile, not int"),
    (lambda: sdcrisk.snb_uniques("x"), ParameterError,
     "snb_uniques() takes a FrequencyProfile, not str"),
    (lambda: sdcrisk.household_sizes(3), ParameterError,
     "household_sizes() takes a Microdata, not int"),
    # TypeError: '<' not supported between 'int' and 'str'
    (lambda: _build_report(sdcrisk.NegativeBinomialRisk().fit(sdcrisk.tabulate(_md())),
                           risk_threshold="x"),
     ParameterError, "risk_threshold='x' must be a number"),
]


@pytest.mark.parametrize(("call", "error", "words"), OTHER_CASES,
                         ids=[c[2][:40] for c in OTHER_CASES])
def test_other_entry_points_bad_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_uniqueness_functions_still_take_a_profile():
    table = sdcrisk.tabulate(_md())
    profile = sdcrisk.FrequencyProfile.from_counts(table.counts, table.population_size)
    assert profile.n == 60
    for fn in (sdcrisk.pitman_uniques, sdcrisk.zayatz_uniques, sdcrisk.snb_uniques):
        est = fn(profile)
        assert isinstance(est, sdcrisk.UniquenessEstimate)


def test_roc_auc_of_scores_and_labels_of_different_lengths():
    """Was None (read as "one class") or numpy's IndexError, depending on the lengths."""
    for scores, labels in (([0.1, 0.2], [1]), ([0.1, 0.2, 0.3], [0, 1])):
        with pytest.raises(ParameterError, match="must be 1-d and of the same length"):
            sdcrisk.roc_auc(scores, labels)
    assert sdcrisk.roc_auc([0.1, 0.9, 0.5], [0, 1, 0]) == 1.0
    assert sdcrisk.roc_auc([0.1, 0.2], [1, 1]) is None


def test_protect_of_a_microdata_says_it_takes_the_records():
    """Was InputError: file not found: "Microdata(n=60, ...)"."""
    with pytest.raises(ParameterError, match="protect\\(\\) takes the records themselves"):
        sdcrisk.protect(_md(), ["a", "b"], k=2)


def test_a_bad_scheduler_address_from_python_names_executor():
    """fit(executor='junk') is refused in words a Python user can act on (executor=), not only
    the command line's --scheduler."""
    md = Microdata.from_source({"a": np.arange(60) % 5, "b": np.arange(60) % 3},
                               keys=["a", "b"], population_size=1000)
    table = sdcrisk.tabulate(md)
    with pytest.raises(ParameterError, match=r"'junk' is not a Dask scheduler address .*"
                                             r"executor= or scheduler= in Python"):
        sdcrisk.HdpRisk(iterations=20, burn_in=10).fit(table, executor="junk")
