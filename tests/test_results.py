"""The result contract, checked for every result type (issue 16 item 4, issue 18 item 7).

Every class that inherits :class:`sdcrisk.core.base.ResultBase` gets a small real instance in
``tests/_result_instances.py``; a new result type without one fails
:func:`test_every_result_type_is_covered`. For each: ``to_dict`` is strict JSON and
``to_json`` says the same, ``summary()`` is a narrow DataFrame, ``repr`` is one line, the
notebook view escapes every text, the result is immutable and survives pickling.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import inspect
import json
import pickle
import pkgutil
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from _result_instances import SCRIPT, build, frame
from sdcrisk.core.base import ResultBase, jsonable, read_only

#: the one result whose summary is wide on purpose: Zaslavsky & Horton's Table 2, whose
#: 13 columns are the content (tests/test_decision.py reads them)
WIDE = {"DecisionTable"}
MAX_COLUMNS = 8


def _all_result_types() -> set[type]:
    for mod in pkgutil.walk_packages(sdcrisk.__path__, "sdcrisk."):
        if mod.name.startswith("sdcrisk.cli") or mod.name == "sdcrisk.__main__":
            continue
        importlib.import_module(mod.name)
    out, todo = set(), [ResultBase]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("sdcrisk."):
                out.add(sub)
            todo.append(sub)
    return out


@pytest.fixture(scope="module")
def results():
    return build()


NAMES = [
    "RiskResult", "Evaluation", "MethodEvaluation", "ValidationTable", "DecisionTable",
    "TradeoffCurve", "LossSensitivity", "DomainTable", "BetaBinomialFit", "DomainDecision",
    "Recommendations", "Plan", "SudaResult", "PopulationUniqueness", "UniquenessEstimate",
    "ScenarioReport"]


def test_every_result_type_is_covered(results):
    types = _all_result_types()
    assert {t.__name__ for t in types} == set(NAMES) == set(results)
    for name, obj in results.items():
        assert type(obj).__name__ == name
        assert isinstance(obj, ResultBase)
        # the public ones are reachable from the package
        if name in sdcrisk.__all__:
            assert getattr(sdcrisk, name) is type(obj)


def _takes_internal(obj) -> bool:
    return "internal" in inspect.signature(obj._payload).parameters


def _no_constants(token):
    raise AssertionError(f"non-standard JSON constant {token}")


@pytest.mark.parametrize("name", NAMES)
def test_to_dict_is_strict_json_and_to_json_says_the_same(results, name):
    obj = results[name]
    views = [{}] + ([{"internal": True}] if _takes_internal(obj) else [])
    for view in views:
        data = obj.to_dict(**view)
        assert isinstance(data, dict) and data
        text = json.dumps(data, allow_nan=False)  # no NaN/inf, no numpy scalars
        assert json.loads(text) == data  # only JSON types: nothing changes in a round trip
        assert json.loads(obj.to_json(**view), parse_constant=_no_constants) == data
        assert obj.to_json(indent=None, **view) == json.dumps(data)
    if not _takes_internal(obj):
        with pytest.raises(TypeError):
            obj.to_dict(internal=True)


def test_internal_view_adds_only_disclosive_detail(results):
    # the class count per domain is left out of the default view of a domain table / decision
    for name, part in (("DomainTable", "rows"), ("DomainDecision", "decisions")):
        obj = results[name]
        default, internal = obj.to_dict()[part], obj.to_dict(internal=True)[part]
        assert len(default) == len(internal) == 3
        assert "y" not in default[0] and internal[0]["y"] >= 0
        assert set(default[0]) < set(internal[0])
    plan = results["Plan"]
    assert "suppressions" not in plan.to_dict() and plan.kind == "suppression"
    assert len(plan.to_dict(internal=True)["suppressions"]) == plan.values_changed


@pytest.mark.parametrize("name", NAMES)
def test_summary_is_a_narrow_dataframe(results, name):
    summary = results[name].summary()
    assert isinstance(summary, pd.DataFrame)
    assert len(summary) >= 1
    if name not in WIDE:
        assert summary.shape[1] <= MAX_COLUMNS, list(summary.columns)


@pytest.mark.parametrize("name", NAMES)
def test_repr_is_one_line(results, name):
    text = repr(results[name])
    assert "\n" not in text
    assert text.startswith(f"{name}(") and text.endswith(")")
    assert len(text) < 300
    assert "object at 0x" not in text and "array(" not in text


@pytest.mark.parametrize("name", NAMES)
def test_notebook_view_is_escaped(results, name):
    obj = results[name]
    page = obj._repr_html_()
    assert page.startswith('<div class="sdcrisk-result">') and page.endswith("</div>")
    assert html.escape(repr(obj)) in page
    assert "<script" not in page
    if SCRIPT in obj.summary().to_string():
        assert html.escape(SCRIPT) in page


def test_a_label_is_shown_escaped(results):
    # the domain labels hold "<script>...": the decision's notebook view shows them as text
    for name in ("DomainTable", "DomainDecision"):
        page = results[name]._repr_html_()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.parametrize("name", NAMES)
def test_result_is_immutable(results, name):
    obj = results[name]
    fields = dataclasses.fields(obj)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, fields[0].name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.something_new = 1
    for f in fields:
        value = getattr(obj, f.name)
        assert not isinstance(value, list | dict), f.name
        if isinstance(value, np.ndarray):
            assert not value.flags.writeable, f.name
            with pytest.raises(ValueError):
                value.flat[0] = 0
        if isinstance(value, Mapping):
            with pytest.raises(TypeError):
                value["new"] = 1  # type: ignore[index]
            for v in value.values():
                if isinstance(v, np.ndarray):
                    assert not v.flags.writeable, f.name


@pytest.mark.parametrize("name", NAMES)
def test_pickle_round_trip(results, name):
    obj = results[name]
    back = pickle.loads(pickle.dumps(obj))
    assert type(back) is type(obj)
    assert back.to_dict() == obj.to_dict()
    assert repr(back) == repr(obj)


def test_read_only_does_not_touch_the_callers_array():
    arr = np.arange(3.0)
    view = read_only(arr)
    assert arr.flags.writeable and not view.flags.writeable
    assert np.shares_memory(arr, view)
    frozen = read_only({"a": arr})
    assert not frozen["a"].flags.writeable and arr.flags.writeable
    assert read_only([1, 2]) == (1, 2)


def test_jsonable():
    assert jsonable({1: (np.int64(2), np.float64(np.nan)), "x": np.array([1.5, np.inf])}) == {
        "1": [2, None], "x": [1.5, None]}


# --- Evaluation and the scoreboard as DataFrames ---------------------------------------------
def test_evaluation_frames_hold_the_figures(results):
    ev = results["Evaluation"]
    frame = ev.to_frame()
    assert list(frame.columns) == ["method", "measure", "estimate", "truth", "relative_error",
                                   "auc", "seconds"]
    assert len(frame) == sum(len(m.estimates) for m in ev.methods.values())
    row = frame[(frame.method == "nb") & (frame.measure == "tau2")].iloc[0]
    nb = ev.methods["nb"]
    assert row.estimate == nb.estimates["tau2"]
    assert row.truth == ev.truth["tau2"] > 0
    assert row.relative_error == pytest.approx((row.estimate - row.truth) / row.truth,
                                               rel=1e-12)
    summary = ev.summary()
    assert list(summary.index) == ["truth", "nb", "poisson-gamma"]
    assert summary.loc["truth", "tau2"] == ev.truth["tau2"]
    assert summary.loc["poisson-gamma", "tau1"] == ev.methods["poisson-gamma"].estimates["tau1"]


def test_scoreboard_rows_as_a_dataframe_equal_one_evaluation():
    from sdcrisk.analyses.grid import evaluate_grid

    pop = sdcrisk.Microdata.from_source(frame(3000, 7, ages=60), ["area", "age", "sex"],
                                        population_size=3000)
    rows = evaluate_grid({"p": pop}, [0.1], ["nb"], seeds=[1], executor="serial")
    grid = sdcrisk.Evaluation.grid_frame(rows)
    one = sdcrisk.evaluate(pop, ["nb"], design=sdcrisk.Bernoulli(0.1), seed=1).to_frame()
    assert list(grid.columns[:3]) == ["population", "fraction", "seed"]
    assert (grid.population == "p").all() and (grid.seed == 1).all()
    cols = ["method", "measure", "estimate", "truth", "relative_error", "auc"]
    pd.testing.assert_frame_equal(grid[cols].reset_index(drop=True),
                                  one[cols].reset_index(drop=True))


def test_validation_summary_is_its_rows_medians(results):
    vt = results["ValidationTable"]
    summary = vt.summary()
    for row in vt.rows:
        medians = vt.row_summary(row)
        assert vt.summary(row) == medians  # the per-row form auto uses
        got = summary.loc[row.candidate.label]
        assert got["median_abs_rel_err_tau2"] == pytest.approx(
            medians["median_abs_rel_err_tau2"])
        errs = vt.relative_errors(row.tau2, "tau2")
        assert got["median_abs_rel_err_tau2"] == pytest.approx(float(np.median(np.abs(errs))))


# --- the data types' notebook views ------------------------------------------------------------
def test_microdata_and_cell_table_notebook_views_are_escaped():
    md = sdcrisk.Microdata.from_source({"<b>k</b>": ["<script>", "x", "x"], "b": [1, 2, 2]},
                                       ["<b>k</b>", "b"], population_size=30)
    table = sdcrisk.tabulate(md)
    for obj in (md, table):
        page = obj._repr_html_()
        assert "<b>k" not in page and "<script" not in page
        assert "&lt;b&gt;k&lt;/b&gt;" in page
        assert html.escape(repr(obj)) in page
        assert "<td>2</td>" in page  # each key's number of levels
    # the cell table's view shows no key value of any cell
    assert "script" not in table._repr_html_()


def test_risk_result_copies_the_callers_arrays_and_shares_its_own():
    """A RiskResult copies the risk arrays it is given (the caller's array changing later
    changes nothing in it), and a result built from another's (``dataclasses.replace``)
    shares those copies, which nobody can write, instead of copying them again."""
    table = sdcrisk.tabulate(sdcrisk.Microdata.from_source(
        {"a": [1, 2, 2, 3]}, ["a"], population_size=40))
    res = sdcrisk.NegativeBinomialRisk().fit(table)
    mine = np.array([0.5, 0.25, 0.125])
    built = dataclasses.replace(res, cell_risk_values={"reidentification": mine})
    kept = built.cell_risk_values["reidentification"]
    mine[0] = 9.0
    assert kept[0] == 0.5 and not np.shares_memory(kept, mine)
    assert not kept.flags.writeable
    with pytest.raises(ValueError):
        kept[0] = 1.0
    again = dataclasses.replace(built, measures=dict(built.measures))
    assert again.cell_risk_values["reidentification"] is kept
    # a read-only view of the caller's array is the caller's still: copied
    view = mine.view()
    view.setflags(write=False)
    other = dataclasses.replace(res, cell_risk_values={"reidentification": view})
    assert not np.shares_memory(other.cell_risk_values["reidentification"], mine)


def test_arrays_handed_over_are_kept_without_a_copy():
    """A float64 array a fit made and hands over (core.result.handed_over) is kept by the
    RiskResult as it is, read-only, where any other array is copied; an integer array is
    not handed over (the result keeps float64 risks) and is copied as before."""
    from sdcrisk.core.result import handed_over

    table = sdcrisk.tabulate(sdcrisk.Microdata.from_source(
        {"a": [1, 2, 2, 3]}, ["a"], population_size=40))
    res = sdcrisk.NegativeBinomialRisk().fit(table)
    fresh = handed_over(np.array([0.5, 0.25, 0.125]))
    assert not fresh.flags.writeable
    built = dataclasses.replace(res, cell_risk_values={"reidentification": fresh})
    assert built.cell_risk_values["reidentification"] is fresh
    ints = handed_over(np.array([1, 0, 1]))
    assert ints.flags.writeable
    other = dataclasses.replace(res, cell_risk_values={"reidentification": ints})
    kept = other.cell_risk_values["reidentification"]
    assert kept is not ints and kept.dtype == np.float64 and not np.shares_memory(kept, ints)
