"""Edge cases, second pass (after tests/test_bad_inputs.py, test_api_bad_inputs.py and
test_properties*.py): bad arguments to the smaller public entry points end in the project's
own errors, and degenerate tables give the numbers that can be worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

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
    assert "K=4" in repr(table)
    # the wildcard counts: (x,1) alone; (x,2) with (None,2); (y,1) with (y,None);
    # (None,2) matches (x,2) and (y,None); (y,None) matches (y,1) and (None,2)
    assert table.wildcard.counts.tolist() == [1, 2, 2, 3, 3]
    assert res.sample_uniques == 1
    cat = Microdata.from_source(WILDCARD_FRAME, keys=["a", "b"], population_size=50)
    assert cat.cell_space == tabulate(cat).cell_space == 9
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
    assert "cell space K = 4;" in out


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
    (lambda: sdcrisk.LatentClassRisk(starts=10**12), "starts=1000000000000 is too many"),
])
def test_options_refused_that_were_accepted(make, words):
    with pytest.raises(ParameterError) as info:
        make()
    assert words in str(info.value)


def test_option_bounds_are_inclusive():
    sdcrisk.PitmanYorRisk(draws=1_000_000)
    sdcrisk.PitmanYorRisk(draws=0)  # the predictive interval only
    sdcrisk.LatentClassRisk(starts=1_000)
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
    (lambda: sdcrisk.LogLinearRisk(terms="x"), ParameterError, "cannot read model term 'x'"),
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
