"""The estimator / result contract, checked for every registered estimator.

Parametrised over ``sdcrisk.ESTIMATORS`` so that a new estimator is picked up automatically.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import ConvergenceWarning, Microdata, ParameterError, RiskResult, tabulate

ESTIMATOR_CLASSES = list(sdcrisk.ESTIMATORS.values())
IDS = [cls.name for cls in ESTIMATOR_CLASSES]
SECRET = "ZZZ-UNIQUE"


def _data():
    rng = np.random.default_rng(11)
    n = 400
    region = rng.choice(np.array(["north", "south", "east", "west"]), n).astype(object)
    region[17] = SECRET  # a sample-unique record with a distinctive level
    return {
        "region": region,
        "age": rng.integers(0, 8, n),
        "sex": rng.integers(1, 3, n),
        "hh": rng.integers(0, 150, n),
        "w": rng.uniform(10, 60, n),
    }


@pytest.fixture(scope="module")
def table():
    md = Microdata.from_source(_data(), ["region", "age", "sex"], household="hh",
                               population_size=40_000)
    tab = tabulate(md)
    label = tab.cell_labels(tab.record_cell[[17]])[0]
    assert label[0] == SECRET and tab.counts[tab.record_cell[17]] == 1
    return tab


def _fit(est, tab):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(tab)


@pytest.fixture(scope="module")
def fitted(table):
    """One default fit per estimator class, shared by the read-only checks."""
    cache = {}

    def get(cls):
        if cls not in cache:
            cache[cls] = _fit(cls(), table)
        return cache[cls]

    return get


def _table_arrays(tab):
    out = {}
    for f in dataclasses.fields(tab):
        v = getattr(tab, f.name)
        if isinstance(v, np.ndarray):
            out[f.name] = v.copy()
    return out


def _drop_timings(obj):
    # convention: every wall-clock figure in a result is keyed "...seconds"
    if isinstance(obj, dict):
        return {k: _drop_timings(v) for k, v in obj.items() if not k.endswith("seconds")}
    if isinstance(obj, list):
        return [_drop_timings(v) for v in obj]
    return obj


def _comparable(result):
    return _drop_timings(result.to_dict())


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_fit_mutates_neither_table_nor_estimator(cls, table):
    est = cls()
    params = copy.deepcopy(est.get_params())
    before = _table_arrays(table)
    res = _fit(est, table)
    assert isinstance(res, RiskResult)
    assert res.method == cls.name
    after = _table_arrays(table)
    assert before.keys() == after.keys()
    for name, arr in before.items():
        np.testing.assert_array_equal(after[name], arr, err_msg=name)
    assert est.get_params() == params
    assert dict(res.parameters) == params


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_estimator_is_frozen_keyword_only(cls):
    est = cls()
    assert dataclasses.is_dataclass(est)
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.ci_level = 0.5
    with pytest.raises(TypeError):
        cls(0.9)  # settings are keyword-only
    assert est.get_params()["ci_level"] == 0.95
    assert est.get_params()["max_global_risk"] == 0.01


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_fit_is_deterministic(cls, table, fitted):
    first = fitted(cls)
    second = _fit(cls(), table)
    assert _comparable(first) == _comparable(second)
    for k, v in first.cell_risk_values.items():
        np.testing.assert_array_equal(v, second.cell_risk_values[k])


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
@pytest.mark.parametrize("bad", [{"ci_level": 1.5}, {"ci_level": 0.0}, {"max_global_risk": 0},
                                 {"max_global_risk": 1.0}])
def test_bad_parameters(cls, bad):
    with pytest.raises(ParameterError):
        cls(**bad)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_fit_rejects_non_tables(cls, table):
    with pytest.raises(ParameterError):
        cls().fit(table.counts)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_get_estimator_by_name(cls):
    est = sdcrisk.get_estimator(cls.name, ci_level=0.9)
    assert isinstance(est, cls) and est.ci_level == 0.9
    # an option the method does not take is refused, naming it (issue 16 item 3)
    with pytest.raises(ParameterError, match="does not take the option 'not_an_option'"):
        sdcrisk.get_estimator(cls.name, ci_level=0.9, not_an_option=3)
    with pytest.raises(ParameterError):
        sdcrisk.get_estimator("no-such-method")


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_json_round_trip(cls, table, fitted):
    res = fitted(cls)
    text = res.to_json()

    def no_constants(token):
        raise AssertionError(f"non-standard JSON constant {token}")

    data = json.loads(text, parse_constant=no_constants)
    for key in ("method", "n", "population_size", "sample_uniques", "measures"):
        assert key in data
    assert data["method"] == cls.name
    assert data["n"] == table.n == 400
    assert data["population_size"] == 40_000
    assert data["sample_uniques"] == table.sample_uniques
    assert set(data["measures"]) == set(res.measures)
    for name, m in data["measures"].items():
        assert m["estimate"] == pytest.approx(res.estimate(name)), name
    assert json.loads(json.dumps(res.to_dict())) == data


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_json_has_no_cell_key_values(cls, table, fitted):
    res = fitted(cls)
    text = res.to_json()
    assert SECRET not in text
    assert SECRET not in repr(res)
    assert SECRET not in res.summary().to_string()
    assert SECRET not in res.cells().to_string()
    # only with internal=True
    assert SECRET in res.cells(internal=True).to_string()


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_result_is_read_only(cls, table, fitted):
    res = fitted(cls)
    with pytest.raises(TypeError):
        res.measures["tau1"] = None
    with pytest.raises(TypeError):
        res.thresholds["x"] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.method = "other"
    for arr in res.cell_risk_values.values():
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 0.5
    for kind in res.cell_risk_values:
        rec = res.record_risk(kind)
        assert rec.shape == (table.n,)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_repr_and_summary(cls, table, fitted):
    res = fitted(cls)
    text = repr(res)
    assert "\n" not in text
    assert text.startswith("RiskResult(") and cls.name in text
    summary = res.summary()
    assert isinstance(summary, pd.DataFrame)
    assert list(summary.index) == list(res.measures)
    assert {"estimate", "lower", "upper"} <= set(summary.columns)
    for name in res.measures:
        est = res.estimate(name)
        got = summary.loc[name, "estimate"]
        if est is None:
            assert got is None or np.isnan(got)
        else:
            assert got == pytest.approx(est)


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_provenance_identifies_input_without_revealing_it(cls, table, fitted):
    res = fitted(cls)
    prov = res.provenance
    assert prov["package"] == "sdcrisk"
    assert prov["version"] == sdcrisk.__version__
    assert prov["input_fingerprint"] == table.fingerprint()
    other = tabulate(Microdata.from_source({"a": [1, 2, 2]}, ["a"], population_size=10))
    assert other.fingerprint() != table.fingerprint()


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES, ids=IDS)
def test_notebook_view_and_pickle(cls, table, fitted):
    # the result base (sdcrisk.core.base.ResultBase): a notebook view that shows no cell's
    # key values, and a pickle that rebuilds the same result (tests/test_results.py covers
    # every other result type)
    import html
    import pickle

    res = fitted(cls)
    page = res._repr_html_()
    assert SECRET not in page
    assert html.escape(repr(res)) in page
    assert all(f"<th>{name}</th>" in page for name in res.measures)
    back = pickle.loads(pickle.dumps(res))
    assert _comparable(back) == _comparable(res)
    for k, v in res.cell_risk_values.items():
        np.testing.assert_array_equal(back.cell_risk_values[k], v)
        assert not back.cell_risk_values[k].flags.writeable
