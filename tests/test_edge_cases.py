"""Edge cases, second pass (after tests/test_bad_inputs.py, test_api_bad_inputs.py and
test_properties*.py): no bad input ends in a traceback, and degenerate inputs give the numbers
that can be worked out by hand.

Sections: CellTable.cell_labels; roc_auc (hand-worked AUCs; NaN scores refused); the key space
K under missing="wildcard"; every option of every registered estimator (and auto) with wrong
values, through the API and the CLI; degenerate tables (one record, one cell, all unique, a
single-level key, a census given or by weights, sampling fraction 0.999) through every
estimator (MCMC ones one tiny run); hypothesis invariants on random small tables; the public
measure functions; the file-path entry points; warnings pointing at the caller's line."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdcrisk
from sdcrisk import Microdata, ParameterError, tabulate

# --- CellTable.cell_labels ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_table():
    frame = pd.DataFrame({"a": [1, 2, 2, 3], "b": ["x", "y", "y", "x"]})
    return tabulate(Microdata.from_source(frame, keys=["a", "b"], population_size=40))


def test_cell_labels_of_good_indices(small_table):
    assert small_table.n_cells == 3
    assert small_table.cell_labels() == [(1, "x"), (2, "y"), (3, "x")]
    assert small_table.cell_labels([2, 0]) == [(3, "x"), (1, "x")]
    assert small_table.cell_labels(np.array([1], dtype=np.uint8)) == [(2, "y")]
    assert small_table.cell_labels(range(1, 3)) == [(2, "y"), (3, "x")]
    assert small_table.cell_labels(np.array([True, False, True])) == [(1, "x"), (3, "x")]
    # was IndexError: an empty list is a float array to numpy
    assert small_table.cell_labels([]) == []


@pytest.mark.parametrize(("cells", "words"), [
    ([3], "cells contains 3"),          # was IndexError: index 3 is out of bounds
    ([0, 99], "cells contains 99"),
    ([-1], "cells contains -1"),        # was read as the last cell
    (np.array([-4]), "cells contains -4"),  # was IndexError
    ([1.0], "cells contains 1.0"),      # was IndexError: arrays used as indices must be ...
    (np.array([0.5]), "cells contains 0.5"),
    (["a"], "cells contains 'a'"),
    ([None], "cells contains None"),
    ([0, [1]], "cells=[0, [1]]"),       # was ValueError: inhomogeneous shape
    ([[0, 1]], "cells=[[0, 1]]"),
    (1, "cells=1"),
    ("ab", "cells='ab'"),
    ([True], "boolean mask of length 1"),
], ids=repr)
def test_cell_labels_bad_indices_are_named(small_table, cells, words):
    with pytest.raises(ParameterError) as info:
        small_table.cell_labels(cells)
    text = str(info.value)
    assert words in text
    assert "[0, 2]" in text or "(3)" in text  # the valid range / the mask's length


# --- roc_auc -----------------------------------------------------------------------------------


def test_roc_auc_hand_worked():
    # positives 0.35, 0.8; negatives 0.1, 0.4: ordered pairs (0.35>0.1), (0.8>0.1), (0.8>0.4)
    assert sdcrisk.roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    # a tie between a positive and a negative counts one half: (0.5 + 1) / 2
    assert sdcrisk.roc_auc([0.2, 0.2, 0.5], [0, 1, 1]) == 0.75
    assert sdcrisk.roc_auc([0.2, 0.2, 0.5], [False, True, True]) == 0.75
    assert sdcrisk.roc_auc([0.2, 0.2, 0.5], [0.0, 1.0, 1.0]) == 0.75
    # infinite scores rank first / last
    assert sdcrisk.roc_auc([-np.inf, 3.0, np.inf], [0, 1, 1]) == 1.0
    assert sdcrisk.roc_auc([np.inf, 3.0], [0, 1]) == 0.0
    assert sdcrisk.roc_auc([], []) is None


@pytest.mark.parametrize(("scores", "labels", "words"), [
    # NaN scores were ranked as the largest (np.sort puts NaN last): AUC 1.0 here
    ([0.1, np.nan, 0.3, 0.2], [0, 1, 1, 0], "1 of the 4 scores are NaN (the first at position 1)"),
    ([np.nan, np.nan, 0.5], [0, 1, 1], "2 of the 3 scores are NaN (the first at position 0)"),
    ([None, 0.2], [0, 1], "1 of the 2 scores are NaN"),
    # labels were cast to bool: 2, -1, 0.5 and NaN counted as positives
    ([0.1, 0.2, 0.3], [0, 2, 1], "got 2"),
    ([0.1, 0.2], [-1, 1], "got -1"),
    ([0.1, 0.2], [0.5, 1], "got 0.5"),
    ([0.1, 0.2], [0, np.nan], "got nan"),
    ([0.1, 0.2], ["no", "yes"], "got 'no'"),
    (["x", "y"], [0, 1], "scores=['x', 'y'] must be numbers"),
    ([0.1, 0.2], [[0, 1]], "must be 1-d and of the same length"),
])
def test_roc_auc_bad_scores_and_labels(scores, labels, words):
    with pytest.raises(ParameterError) as info:
        sdcrisk.roc_auc(scores, labels)
    assert words in str(info.value)


# --- the key space K under missing="wildcard" ----------------------------------------------------

WILDCARD_FRAME = pd.DataFrame({"a": ["x", "x", "y", None, "y"], "b": [1, 2, 1, 2, None]})


def test_key_space_without_the_missing_level_under_wildcard():
    """a has categories x, y and b 1, 2; under wildcard matching a missing value is any of them,
    not a third category: K = 2 x 2 = 4 (it was 3 x 3 = 9). Under missing="category" the
    missing level is a category: K = 9."""
    wild = Microdata.from_source(WILDCARD_FRAME, keys=["a", "b"], missing="wildcard",
                                 population_size=50)
    table = tabulate(wild)
    assert wild.cell_space == table.cell_space == 4
    assert table.n_categories == (2, 2)
    res = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(table)
    assert res.to_dict()["cell_space"] == 4
    # 5 observed patterns: (x,1), (x,2), (y,1) are cells of the key space; (None,2) and
    # (y,None) are not (each matches two cells): observed cells 3 <= K, not 5 > K
    assert table.n_cells == 5 and table.key_cells == 3
    assert res.to_dict()["observed_cells"] == 3
    assert res.to_dict()["patterns_with_missing_values"] == 2
    assert "K=4" in repr(table)
    # the wildcard counts: (x,1) alone; (x,2) with (None,2); (y,1) with (y,None);
    # (None,2) matches (x,2) and (y,None); (y,None) matches (y,1) and (None,2)
    assert table.wildcard.counts.tolist() == [1, 2, 2, 3, 3]
    assert res.sample_uniques == 1
    cat = Microdata.from_source(WILDCARD_FRAME, keys=["a", "b"], population_size=50)
    assert cat.cell_space == tabulate(cat).cell_space == 9
    assert tabulate(cat).key_cells == 5
    assert "patterns_with_missing_values" not in sdcrisk.NegativeBinomialRisk().fit(
        tabulate(cat)).to_dict()
    assert tabulate(cat).n_categories == (3, 3)


def test_key_space_of_an_all_missing_key_under_wildcard():
    """A key whose every value is missing separates no one: one category, K unchanged."""
    frame = WILDCARD_FRAME.assign(c=[None] * 5)
    table = tabulate(Microdata.from_source(frame, keys=["a", "b", "c"], missing="wildcard",
                                           population_size=50))
    assert table.n_categories == (2, 2, 1)
    assert table.cell_space == 4


def test_key_space_under_wildcard_through_the_cli(capsys, tmp_path):
    from sdcrisk.cli import main

    path = tmp_path / "w.csv"
    WILDCARD_FRAME.to_csv(path, index=False)
    code = main(["assess", str(path), "--keys", "a,b", "--missing", "wildcard", "--method",
                 "nb", "--mode", "sdcmicro", "--population-size", "50", "--format", "table"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cell space K = 4; observed cells 3 (and 2 patterns with missing values);" in out


# --- every option of every registered estimator ----------------------------------------------

def _option_cases():
    import dataclasses

    from sdcrisk.estimators import MODELS

    return [(name, f.name) for name in MODELS for f in dataclasses.fields(MODELS[name])]


#: (method, option, value) a constructor accepts: yes/no options take True; options that take
#: text (a formula, a file, a spec) check the text against the table in fit (tested below)
ACCEPTED = {
    ("hdp", "compat_bnpdr", True), ("mixed-membership", "compat_bnpdr", True),
    ("hdp", "progress", True), ("mixed-membership", "progress", True),
    ("hdp", "block_moves", True),
    ("loglinear", "terms", "x"), ("loglinear", "partition", "x"),
    ("loglinear", "structural_zeros", "x"), ("hdp", "structural_zeros", "x"),
    ("mixed-membership", "structural_zeros", "x"),
}


class _Thing:
    def __repr__(self):
        return "<thing>"


@pytest.mark.parametrize(("name", "option"), _option_cases(), ids="-".join)
def test_every_option_refuses_wrong_values_by_name(name, option):
    """Each option of each registered estimator, given a value of a wrong kind, a NaN, a
    negative number, text or a bool: ParameterError naming the option (never TypeError from a
    comparison, never a bool read as 1, never accepted silently) unless listed in ACCEPTED."""
    from sdcrisk.estimators import MODELS

    for value in (_Thing(), float("nan"), -1, "x", True):
        if (name, option, value) in ACCEPTED:
            MODELS[name](**{option: value})
            continue
        with pytest.raises(ParameterError) as info:
            MODELS[name](**{option: value})
        assert f"{option}=" in str(info.value), (option, value, str(info.value))


@pytest.mark.parametrize(("make", "words"), [
    # each was accepted: read by its truth value
    (lambda: sdcrisk.LogLinearRisk(terms="all-2-way", weighted=0), "weighted=0 must be True"),
    (lambda: sdcrisk.LogLinearRisk(terms="all-2-way", weighted="no"),
     "weighted='no' must be True or False"),
    (lambda: sdcrisk.HdpRisk(compat_bnpdr="yes"), "compat_bnpdr='yes' must be True or False"),
    (lambda: sdcrisk.MixedMembershipRisk(progress=1), "progress=1 must be True, False or None"),
    (lambda: sdcrisk.GraphicalRisk(prior_weight=True), "prior_weight=True must be a positive"),
    (lambda: sdcrisk.GraphicalRisk(window=True), "window=True must be a ratio"),
    (lambda: sdcrisk.GraphicalRisk(max_enumerated_cells=False), "max_enumerated_cells=False"),
    # TypeError 'cannot unpack non-iterable int object' / 'int object is not iterable' /
    # ValueError 'not enough values to unpack' in fit
    (lambda: sdcrisk.LogLinearRisk(partition=3), "partition=3 must be a string VAR:BANDS"),
    (lambda: sdcrisk.LogLinearRisk(partition=True), "partition=True"),
    (lambda: sdcrisk.LogLinearRisk(partition=("a",)), "partition=('a',)"),
    (lambda: sdcrisk.LogLinearRisk(partition=("a", 3)), "partition=('a', 3)"),
    (lambda: sdcrisk.LogLinearRisk(partition=("a", [1])), "partition=('a', [1])"),
    (lambda: sdcrisk.LogLinearRisk(partition=("a", [[[0]]])), "(variable, [[levels of band"),
    (lambda: sdcrisk.LogLinearRisk(partition={"a": 2}), "partition={'a': 2}"),
    # a slip of the exponent: MemoryError (14.6 TiB) / EM starts that never end
    (lambda: sdcrisk.PitmanYorRisk(draws=10**12), "draws=1000000000000 is too many"),
    (lambda: sdcrisk.GraphicalRisk(monte_carlo=10**8), "monte_carlo=100000000 draws is too many"),
    (lambda: sdcrisk.LatentClassRisk(starts=10**12), "starts=1000000000000 is too many"),
    # MCMC run lengths: ran (for years) without a word
    (lambda: sdcrisk.HdpRisk(iterations=10**12), "iterations=1000000000000 is too many"),
    (lambda: sdcrisk.HdpRisk(burn_in=10**8), "burn_in=100000000 is too many"),
    (lambda: sdcrisk.MixedMembershipRisk(max_iterations=10**8),
     "max_iterations=100000000 is too many"),
])
def test_options_refused_that_were_accepted(make, words):
    with pytest.raises(ParameterError) as info:
        make()
    assert words in str(info.value)


def test_option_bounds_are_inclusive():
    sdcrisk.PitmanYorRisk(draws=1_000_000)
    sdcrisk.PitmanYorRisk(draws=0)  # the predictive interval only
    sdcrisk.LatentClassRisk(starts=1_000)
    sdcrisk.HdpRisk(iterations=10_000_000, burn_in=10_000_000, max_iterations=10_000_000)
    sdcrisk.GraphicalRisk(prior_weight=np.float64(2.0), window=np.int64(5),
                          max_enumerated_cells=np.int64(0))
    sdcrisk.LogLinearRisk(terms="all-2-way", weighted=np.bool_(True),
                          partition=["a", [["x"], ["y"]]])


@pytest.fixture(scope="module")
def key_table():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 60), "b": rng.integers(0, 4, 60),
                          "c": rng.integers(0, 2, 60)})
    return tabulate(Microdata.from_source(frame, keys=["a", "b", "c"], population_size=3000))


@pytest.mark.parametrize(("make", "error", "words"), [
    (lambda: sdcrisk.LogLinearRisk(partition="x"), ParameterError, "partition='x'; use VAR"),
    (lambda: sdcrisk.LogLinearRisk(partition=("zz", [[0]])), ParameterError, "'zz' is not a key"),
    (lambda: sdcrisk.LogLinearRisk(terms="x"), ParameterError, "terms='x': cannot read model term"),
    (lambda: sdcrisk.LogLinearRisk(structural_zeros="x"), sdcrisk.InputError,
     "structural-zeros file not found: 'x'"),
    # TypeError: 'int' object is not iterable / unhashable type: 'dict'
    (lambda: sdcrisk.LogLinearRisk(terms="all-2-way", structural_zeros=[1]), sdcrisk.InputError,
     "structural-zero condition 1 is 1: give a mapping"),
    (lambda: sdcrisk.LogLinearRisk(terms="all-2-way", structural_zeros=["ab"]),
     sdcrisk.InputError, "structural-zero condition 1 is 'ab'"),
    (lambda: sdcrisk.LogLinearRisk(terms="all-2-way", structural_zeros=[{"a": {}}]),
     sdcrisk.InputError, "{} for 'a' is not a level label"),
])
def test_text_options_are_checked_against_the_table(key_table, make, error, words):
    with pytest.raises(error) as info:
        make().fit(key_table)
    assert words in str(info.value)


def test_pitman_yor_zero_draws_gives_the_predictive_interval(key_table):
    """draws=0 leaves out the parameter band: the same estimate, an interval no wider."""
    zero = sdcrisk.PitmanYorRisk(draws=0).fit(key_table).measures["tau1"]
    some = sdcrisk.PitmanYorRisk(draws=400).fit(key_table).measures["tau1"]
    assert zero.estimate == some.estimate
    assert zero.lower >= some.lower - 1e-12 and zero.upper <= some.upper + 1e-12


# --- degenerate tables through every registered estimator --------------------------------------

MCMC = dict(chains=2, iterations=20, burn_in=10, thin=1, mc_draws=20)


def _estimator(name):
    from sdcrisk.estimators import MODELS

    if name == "auto":
        return sdcrisk.AutoRisk()
    if name in ("hdp", "mixed-membership"):  # one tiny run each: invariants, not accuracy
        return MODELS[name](**MCMC)
    if name == "latent-class":
        return MODELS[name](bootstrap=4)
    return MODELS[name]()


def _fit(name, table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        return _estimator(name).fit(table)


def _model_names():
    from sdcrisk.estimators import MODELS

    return [m for m in MODELS if m != "skinner-elliot"]  # theta only: tested on its own


def _rng_frame(n=80, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                         "c": rng.integers(0, 5, n)})


def _tab(frame, **size):
    return tabulate(Microdata.from_source(frame, keys=list(frame.columns), **size))


DEGENERATE = {
    "one record": (pd.DataFrame({"a": [1], "b": [2]}), dict(population_size=1000)),
    "one record, census": (pd.DataFrame({"a": [1], "b": [2]}), dict(population_size=1)),
    "all in one cell": (pd.DataFrame({"a": [1] * 30, "b": [2] * 30}),
                        dict(population_size=3000)),
    "every record unique": (pd.DataFrame({"a": np.arange(12) % 4, "b": np.arange(12) // 4}),
                            dict(population_size=1200)),
    "a single-level key": (_rng_frame().assign(d=7), dict(population_size=4000)),
    "census": (_rng_frame(), dict(population_size=80)),
    "census, N not given": (_rng_frame(), dict()),
    "sampling fraction 0.999": (_rng_frame(), dict(sampling_fraction=0.999)),
}


def assert_invariants(res, table):
    """Finite measures; 0 <= tau1 <= tau2 <= SU; lower <= estimate <= upper; record risks
    in [0, 1]."""
    su = table.sample_uniques
    for m in res.measures.values():
        for v in (m.estimate, m.lower, m.upper):
            assert v is None or np.isfinite(v), (m.name, v)
        if m.lower is not None and m.upper is not None:
            assert m.lower - 1e-9 <= m.estimate <= m.upper + 1e-9, m
    t1, t2 = res.measures["tau1"].estimate, res.measures["tau2"].estimate
    assert -1e-12 <= t1 <= t2 + 1e-9 and t2 <= su + 1e-9, (t1, t2, su)
    risk = res.record_risk()
    assert risk.shape == (table.n,)
    assert np.all(np.isfinite(risk)) and risk.min() >= 0 and risk.max() <= 1 + 1e-12


@pytest.mark.parametrize("case", list(DEGENERATE))
@pytest.mark.parametrize("name", _model_names())
def test_degenerate_tables(name, case):
    frame, size = DEGENERATE[case]
    table = _tab(frame, **size)
    su, big_n = table.sample_uniques, table.population_size
    if name == "pitman-yor" and table.n_cells < 2 and big_n > table.n:
        # the EPPF has no information on (theta, alpha) from one cell: a named refusal
        # (a census needs no fit: tests/test_polish.py)
        with pytest.raises(sdcrisk.SdcRiskError, match="at least two sample cells"):
            _fit(name, table)
        return
    res = _fit(name, table)
    assert_invariants(res, table)
    t1, t2 = res.measures["tau1"].estimate, res.measures["tau2"].estimate
    if big_n == table.n:  # a census: every sample unique is population unique, F = f
        assert t1 == pytest.approx(su, abs=1e-9)
        assert t2 == pytest.approx(su, abs=1e-9)
    if case == "all in one cell":  # no sample unique
        assert t1 == 0 and t2 == 0
    if case == "sampling fraction 0.999":
        # N - n = 0.08 unseen people can spoil at most that many sample uniques on average
        assert su - (big_n - table.n) - 1e-9 <= t1 <= su
    if case == "one record" and name == "nb":
        # NB(f = 1, p = n/N): P(U = 0) = p, E[1/F] = p log(1/p) / (1 - p)
        assert t1 == pytest.approx(1e-3, rel=1e-9)
        assert t2 == pytest.approx(1e-3 * np.log(1e3) / 0.999, rel=1e-9)
    if case == "one record" and name not in ("nb", "poisson-gamma"):
        # the models that know the key space (K = 1) put the whole population in the cell
        assert t1 == pytest.approx(0, abs=1e-12)
        assert t2 == pytest.approx(1e-3, rel=2e-3)


DETERMINISTIC = ["nb", "poisson-gamma", "loglinear", "graphical", "pitman-yor", "latent-class",
                 "copula"]


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_a_single_level_key_changes_nothing(name):
    """A key every record shares multiplies K by 1 and splits no cell: the same tau1, tau2.
    The log-linear search took a term with it (a no-op: its margins are the lower ones) as
    its step and ended on another model (tau2 0.328 against 0.341)."""
    frame = _rng_frame()
    plain = _fit(name, _tab(frame, population_size=4000))
    for extra in (frame.assign(d=7), frame.assign(d=7)[["d", "a", "b", "c"]]):
        more = _fit(name, _tab(extra, population_size=4000))
        for m in ("tau1", "tau2"):  # the copula's too (tests/test_polish.py)
            assert more.measures[m].estimate == pytest.approx(plain.measures[m].estimate,
                                                              rel=1e-9, abs=1e-12), m


def test_loglinear_search_skips_terms_of_a_constant_key():
    frame = _rng_frame()
    res = _fit("loglinear", _tab(frame.assign(d=7), population_size=4000))
    assert res.fitted["model"] == "b + d + a:c"  # as without d: b + a:c
    steps = [row for row in res.diagnostics["search_path"] if row["step"] != "all-2-way"]
    assert len(steps) > 2 and not any(":d" in row["model"] for row in steps)


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_skinner_elliot_on_degenerate_tables(case):
    frame, size = DEGENERATE[case]
    table = _tab(frame, **size)
    res = _fit("skinner-elliot", table)
    for m in res.measures.values():
        assert m.estimate is None or np.isfinite(m.estimate), m


def test_cli_empty_structural_zeros_name(capsys, tmp_path):
    """Was "structural-zeros file '' is a directory" (the empty path is the current folder)."""
    from sdcrisk.cli import main

    path = tmp_path / "d.csv"
    _rng_frame().to_csv(path, index=False)
    code = main(["assess", str(path), "--keys", "a,b,c", "--population-size", "3000",
                 "--method", "loglinear", "--structural-zeros", ""])
    err = capsys.readouterr().err
    assert code == 2
    assert "the structural-zeros file name is empty" in err and "Traceback" not in err


def _warning_files(est, table):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        est.fit(table)
    return {w.filename for w in got if issubclass(w.category, sdcrisk.SdcRiskWarning)}


def test_warnings_of_degenerate_fits_point_at_the_callers_line():
    """STYLE: a warning points at the user's line. auto's pointed into estimators/_base.py;
    pitman-yor's and the copula's had a fixed stacklevel=4, right for this call depth only (a
    fit at a script's top level pointed at "sys:1"); all use user_stacklevel() now."""
    from pathlib import Path

    here = {str(Path(__file__))}
    unique = _tab(pd.DataFrame({"a": np.arange(40) % 8, "b": np.arange(40) // 8}),
                  population_size=4000)
    a = np.random.default_rng(0).integers(0, 5, 300)
    dependent = _tab(pd.DataFrame({"a": a, "b": a}), population_size=30_000)
    assert _warning_files(sdcrisk.PitmanYorRisk(), unique) == here
    assert _warning_files(sdcrisk.GaussianCopulaRisk(), dependent) == here
    assert _warning_files(sdcrisk.AutoRisk(), unique) == here


# --- invariants on random small tables (hypothesis) ---------------------------------------------
# tests/test_properties_inputs.py covers nb, poisson-gamma, loglinear and graphical given N;
# this adds pitman-yor, the copula and latent-class, sampling fractions up to 1, and the
# interval and N - n bounds. (1,500 examples ran clean when this was written.)

@st.composite
def _small_tables(draw):
    n = draw(st.integers(2, 40))
    data = {}
    for j in range(draw(st.integers(1, 3))):
        levels = draw(st.integers(1, 6))
        data[f"k{j}"] = draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n))
    if draw(st.booleans()):
        size = dict(population_size=n + draw(st.sampled_from([0, 1, 2, 10, 1000, 10**6])))
    else:
        size = dict(sampling_fraction=draw(st.sampled_from([0.001, 0.3, 0.9, 0.999, 1.0])))
    return pd.DataFrame(data), size


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_small_tables(), st.sampled_from(["pitman-yor", "copula", "latent-class", "nb",
                                         "loglinear", "auto"]))
def test_invariants_on_random_small_tables(frame_size, name):
    frame, size = frame_size
    table = _tab(frame, **size)
    try:
        res = _fit(name, table)
    except sdcrisk.SdcRiskError as exc:  # one cell: the EPPF has nothing to fit
        assert name == "pitman-yor" and "at least two sample cells" in str(exc)
        return
    assert_invariants(res, table)
    su, unseen = table.sample_uniques, table.population_size - table.n
    t1 = res.measures["tau1"].estimate
    if unseen == 0:
        assert t1 == pytest.approx(su, abs=1e-9)
        assert res.measures["tau2"].estimate == pytest.approx(su, abs=1e-9)
    if unseen == 0 or unseen >= 1:  # (fewer than one unseen person is no whole person)
        assert t1 >= su - unseen - 1e-9


# --- the file-path entry points given something that is not a path ------------------------------

@pytest.mark.parametrize("function", ["tabulate_file", "tabulate_frequencies", "tabulate_path",
                                      "tabulate_parts"])
@pytest.mark.parametrize("source", [pd.DataFrame({"a": [1, 2]}), None, 3, b"x.csv"],
                         ids=["DataFrame", "None", "int", "bytes"])
def test_path_entry_points_refuse_what_is_not_a_path(function, source):
    """Was TypeError from pathlib ("expected str, bytes or os.PathLike object, not
    DataFrame"); tabulate_parts read a DataFrame's column names as file names."""
    with pytest.raises(ParameterError) as info:
        getattr(sdcrisk, function)(source, ["a"])
    text = str(info.value)
    assert f"{function}() takes a file path" in text and "tabulate_source" in text
    assert "\n" not in text


# --- every per-method flag of the CLI with a bad number ------------------------------------------

def _flag_cases():
    from sdcrisk.analyses.methods import ESTIMATORS
    from sdcrisk.cli._common import METHOD_FLAGS
    from sdcrisk.estimators import options_of

    text = {"--terms", "--structural-zeros"}  # file names and formulas: tested above
    return [(flag, m) for flag, (_, names) in METHOD_FLAGS.items() if flag not in text
            for m in ESTIMATORS if m != "auto"
            and any(n in options_of(ESTIMATORS[m]) for n in names)]


@pytest.fixture(scope="module")
def flag_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("flags") / "d.csv"
    _rng_frame(60, seed=0).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("flag", "method"), _flag_cases(),
                         ids=[" ".join(c) for c in _flag_cases()])
def test_cli_bad_number_for_every_method_flag(capsys, flag_file, flag, method):
    """-1 and nan for each flag with each method that takes it: exit 2 and a one-line error
    naming the flag (probed with 0, -1, nan, inf, 1e300, text, '', 1.5, true, 10**14)."""
    from sdcrisk.cli import main

    for value in ("-1", "nan"):
        try:
            code = main(["assess", str(flag_file), "--keys", "a,b,c", "--population-size",
                         "3000", "--method", method, "--format", "json", flag, value])
        except SystemExit as exc:  # argparse: not a number / not a choice
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2, (flag, value, err)
        assert flag in err and "Traceback" not in err, (flag, value, err)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: sdcrisk.LatentClassRisk(classes=10**9), "classes=1000000000"),
    (lambda: sdcrisk.MixedMembershipRisk(profiles=10**9), "profiles=1000000000"),
])
def test_memory_refusal_names_the_option_that_asks_for_it(key_table, make, words):
    """The memory refusal named only the table and said to partition the file or use fewer
    keys, when an option (a slip of the exponent) asked for the memory."""
    with pytest.raises(sdcrisk.MemoryLimitError) as info:
        make().fit(key_table)
    text = str(info.value)
    assert f"with {words} on n=60" in text and f"lower {words}, or partition" in text


def test_chains_past_their_bound_are_refused_before_memory(key_table):
    """chains=10**9 was refused by the memory check; chains has a bound of its own now
    (10,000 chains ran for minutes under the memory limit)."""
    with pytest.raises(sdcrisk.ParameterError, match=r"chains=1000000000 is too many: at "
                       r"most 1,000"):
        sdcrisk.HdpRisk(chains=10**9).fit(key_table)


def test_memory_refusal_with_default_options_names_none(key_table):
    with pytest.raises(sdcrisk.MemoryLimitError) as info:
        sdcrisk.LogLinearRisk(terms="all-2-way").fit(key_table, memory_limit=1_000)
    assert "method 'loglinear' on n=60" in str(info.value)
    assert "lower" not in str(info.value)


def test_cli_memory_refusal_names_the_flag(capsys, flag_file):
    from sdcrisk.cli import main

    code = main(["assess", str(flag_file), "--keys", "a,b,c", "--population-size", "3000",
                 "--method", "latent-class", "--classes", "1000000000"])
    err = capsys.readouterr().err
    assert code == 2 and "lower --classes 1000000000, or" in err


@pytest.mark.parametrize("option", ["replicates", "fraction", "min_records", "max_fraction",
                                    "time_budget", "combine", "candidates"])
def test_auto_options_refuse_wrong_values_by_name(option):
    """auto is no MODELS entry, so the sweep above missed it: fraction='x' and the like were
    TypeError ("'<' not supported between instances of 'int' and 'str'"), candidates=3
    TypeError ("object of type 'int' has no len()"), min_records=True and fraction=True read
    as 1."""
    for value in (_Thing(), "x", True, [], -1):
        if (option, value) in (("candidates", -1), ("combine", True)):
            continue
        with pytest.raises(ParameterError) as info:
            sdcrisk.AutoRisk(**{option: value})
        assert f"{option}=" in str(info.value), (option, value, str(info.value))


def test_auto_replicates_bound():
    sdcrisk.AutoRisk(replicates=1_000, candidates=["nb"])
    with pytest.raises(ParameterError, match="replicates=1001 is too many: at most 1,000"):
        sdcrisk.AutoRisk(replicates=1_001, candidates=["nb"])


# --- the public functions of the measures ---------------------------------------------------------

NAN = float("nan")


@pytest.mark.parametrize(("call", "error", "words"), [
    # IndexError: boolean index did not match / ZeroDivisionError / silently 0 or NaN
    (lambda: sdcrisk.truth_measures([1, 2], [3], population_size=10, population_uniques=0),
     ParameterError, "must be 1-d and aligned over the same cells"),
    (lambda: sdcrisk.truth_measures([1], [0], population_size=10, population_uniques=0),
     ParameterError, "cell 0: big_f=0 < f=1"),
    (lambda: sdcrisk.truth_measures([3], [1], population_size=10, population_uniques=0),
     ParameterError, "cell 0: big_f=1 < f=3"),
    (lambda: sdcrisk.truth_measures([1], [NAN], population_size=10, population_uniques=0),
     ParameterError, "big_f holds nan"),
    (lambda: sdcrisk.truth_measures(["a"], [1], population_size=10, population_uniques=0),
     ParameterError, "f=['a'] and big_f=[1] must be counts"),
    # ValueError: shapes not aligned / NaN and risks above 1 gave a threshold of 0
    (lambda: sdcrisk.global_risk_threshold([0.2, 0.5], 0.01, counts=[1]), ParameterError,
     "counts (shape (1,)) must be >= 0, one per risk value (shape (2,))"),
    (lambda: sdcrisk.global_risk_threshold([NAN, 0.5], 0.01), ParameterError,
     "record risks must lie in [0, 1]; got values from nan"),
    (lambda: sdcrisk.global_risk_threshold([2.0, 0.5], 0.01), ParameterError,
     "from 0.5 to 2"),
    # ValueError / TypeError / UFuncTypeError from np.bincount
    (lambda: sdcrisk.household_risk([0.1, 0.2], [0]), ParameterError,
     "record_risk (shape (2,)) and household (shape (1,))"),
    (lambda: sdcrisk.household_risk([0.1, 0.2], [-1, 0]), ParameterError, "got -1"),
    (lambda: sdcrisk.household_risk([0.1, 0.2], [0.5, 1]), ParameterError,
     "got float64 values"),
    (lambda: sdcrisk.household_risk([0.1, 0.2], ["a", "b"]), ParameterError,
     "integers >= 0"),
    # ValueError (not the project's) / broadcast ValueError
    (lambda: sdcrisk.bf_risk([0], [0.5]), ParameterError, "f=0: sample counts must be >= 1"),
    (lambda: sdcrisk.bf_risk([NAN], [0.5]), ParameterError, "f=nan"),
    (lambda: sdcrisk.bf_risk([1], [0.0]), ParameterError, "p=0: p = f / F_hat must be > 0"),
    (lambda: sdcrisk.bf_risk([1, 2], [0.5, 0.5, 0.5]), ParameterError,
     "f=[1, 2] and p=[0.5, 0.5, 0.5] must be numbers, p of f's shape"),
    # ValueError: negative dimensions / int('x') / a hang on 10**6 keys
    (lambda: sdcrisk.suda_weights(-1), ParameterError, "n_keys=-1 must be an integer >= 0"),
    (lambda: sdcrisk.suda_weights("x"), ParameterError, "n_keys='x'"),
    (lambda: sdcrisk.suda_weights(10**6), ParameterError, "at most 62 keys"),
    (lambda: sdcrisk.suda_weights(3, max_size=0), ParameterError, "max_size=0"),
    # ValueError: invalid literal for int(); 1.5 was cut to 1
    (lambda: sdcrisk.FrequencyProfile.from_counts(["a"], 10), sdcrisk.InputError,
     "counts=['a']: cell counts must be whole numbers >= 1"),
    (lambda: sdcrisk.FrequencyProfile.from_counts([1.5, 2], 10), sdcrisk.InputError,
     "counts=[1.5, 2]"),
])
def test_measure_functions_refuse_bad_arguments(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_measure_functions_still_give_their_numbers():
    # two sample uniques, one population unique: tau1 = 1, tau2 = 1 + 1/4
    got = sdcrisk.truth_measures([1, 1, 3], [1, 4, 5], population_size=10, population_uniques=2)
    assert got["tau1"] == 1 and got["tau2"] == 1.25 and got["p_pu"] == 0.2
    assert got["theta"] == 2 / 5
    # household of two with risks 0.5 and 0.2: 1 - 0.5 * 0.8 = 0.6
    np.testing.assert_allclose(sdcrisk.household_risk([0.5, 0.2, 0.1], [0, 0, 1]),
                               [0.6, 0.6, 0.1])
    # p >= 1 gives 1/f; NB(1, 0.5): E[1/F] = p log(1/p) / (1 - p) = log 2
    np.testing.assert_allclose(sdcrisk.bf_risk([2, 1], [1.5, 0.5]), [0.5, np.log(2)])
    assert sdcrisk.suda_weights(0).tolist() == []
    assert sdcrisk.suda_weights(3).tolist() == [2.0, 1.0, 1.0]
    assert sdcrisk.global_risk_threshold([0.0, 0.0], 0.01) is None


@pytest.mark.parametrize("name", _model_names())
def test_census_by_weights_summing_to_n(name):
    """Weights summing to n make N = n: nothing is unseen, so tau1 = tau2 = n1 whatever the
    single weights. nb took p_k = f_k / (sum of weights) cell by cell: a sample unique of
    weight 1.5 got P(PU) = 2/3, and tau1 was 25 of 29."""
    frame = _rng_frame(80, seed=3)
    weights = np.r_[np.full(40, 0.5), np.full(40, 1.5)]
    table = tabulate(Microdata.from_source(frame.assign(w=weights), keys=["a", "b", "c"],
                                           weights="w"))
    assert table.population_size == table.n == 80
    estimator = (sdcrisk.LogLinearRisk(terms="all-2-way", weighted=True) if name == "loglinear"
                 else _estimator(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        res = estimator.fit(table)
    su = table.sample_uniques
    assert res.measures["tau1"].estimate == pytest.approx(su, abs=1e-9)
    assert res.measures["tau2"].estimate == pytest.approx(su, abs=1e-9)
    assert_invariants(res, table)


# --- auto (the CLI's default method) near and at a census -----------------------------------------

@pytest.mark.parametrize(("size", "floor"), [
    (dict(population_size=80), 19), (dict(population_size=81), 18),
    (dict(sampling_fraction=0.999), 18), (dict(population_size=83), 16)])
def test_auto_within_what_any_population_allows(size, floor):
    """auto's calibrated regression extrapolated to sampling fractions near 1: on a census it
    gave tau1 = 17.1 of n1 = 19, and with one unseen person 16.8 (one person can spoil at most
    one sample unique). A census is now answered exactly, and the calibrated tau1, tau2 and
    their intervals are held within [n1 - ceil(N - n), n1]."""
    table = _tab(_rng_frame(), **size)
    assert table.sample_uniques == 19
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sdcrisk.SdcRiskWarning)
        res = sdcrisk.AutoRisk().fit(table)
    for m in ("tau1", "tau2"):
        got = res.measures[m]
        assert floor - 1e-9 <= got.lower <= got.estimate <= got.upper <= 19 + 1e-9, got
    if table.population_size == table.n:
        assert res.measures["tau1"].estimate == res.measures["tau2"].estimate == 19
        assert "N = n: the file is the whole population" in res.fitted["reason"]


def test_cli_default_method_on_a_census(capsys, tmp_path):
    import json

    from sdcrisk.cli import main

    path = tmp_path / "c.csv"
    _rng_frame().to_csv(path, index=False)
    assert main(["assess", str(path), "--keys", "a,b,c", "--whole-population",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "auto" and out["sample_uniques"] == 19
    assert out["measures"]["tau1"]["estimate"] == out["measures"]["tau2"]["estimate"] == 19


def test_auto_tau1_never_above_tau2():
    """auto's two calibrated regressions crossed on this 12-record file (found by hypothesis):
    tau1 = 1.0 > tau2 = 0.978, though P(F = 1) <= E[1/F] in every cell."""
    frame = pd.DataFrame({"k0": [0, 0] + [1] * 9 + [2], "k1": [0] * 12})
    table = _tab(frame, population_size=14)
    res = _fit("auto", table)
    t1, t2 = res.measures["tau1"], res.measures["tau2"]
    assert t1.estimate <= t2.estimate
    assert t1.lower <= t1.estimate <= t1.upper and t2.lower <= t2.estimate <= t2.upper
    assert_invariants(res, table)
