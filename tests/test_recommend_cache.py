"""The fit cache of ``recommend``'s searches (``analyses/_recommend_cache.py``): a table with
the same content is not fitted again, a changed one is, the cache is bounded, and plans are
the same with the cache as without it."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from sdcrisk import Microdata, NegativeBinomialRisk, RiskTarget, recommend, tabulate
from sdcrisk.analyses import _recommend_cache
from sdcrisk.analyses._recommend_cache import FitCache
from sdcrisk.analyses._recommend_edits import suppress_values
from sdcrisk.analyses._recommend_plan import SearchContext
from sdcrisk.estimators import _base

#: E[1/F | f = 1] of nb at p = n/N = 0.1 (the tau2 of one sample unique)
ONE_UNIQUE = 0.1 / 0.9 * np.log(10)


def small():
    """Ten records, four sample uniques (rows 0-3); N = 100, so n/N = 0.1."""
    data = {"a": [1, 2, 3, 4, 5, 5, 5, 6, 6, 6], "b": [1, 1, 2, 2, 1, 1, 1, 2, 2, 2]}
    return Microdata.from_source(data, keys=["a", "b"], population_size=100)


def context(**bounds) -> SearchContext:
    md = small()
    return SearchContext(NegativeBinomialRisk(), RiskTarget(value=0.0),
                         tabulate(md).record_map(), cache=FitCache(**bounds))


@pytest.fixture(name="fits")
def fits_fixture(monkeypatch):
    """Counts the estimator fits made (top-level ``Estimator.fit`` calls)."""
    made = []
    fit = _base.Estimator.fit

    def counting(self, *args, **kwargs):
        made.append(type(self).__name__)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(_base.Estimator, "fit", counting)
    return made


def test_same_table_gives_the_same_result_object_a_changed_one_a_new_fit(fits):
    ctx, md = context(), small()
    res, obj = ctx.fit(md)
    assert obj == pytest.approx(4 * ONE_UNIQUE, rel=1e-12)
    again, obj_again = ctx.fit(small())  # another Microdata and table, the same content
    assert again is res and obj_again == obj
    assert len(fits) == 1
    # one suppressed value: record 4 (5, 1) -> (NA, 1) is now unique too
    changed = suppress_values(md, np.array([4]), np.array([0]))
    res2, obj2 = ctx.fit(changed)
    assert res2 is not res and len(fits) == 2
    assert obj2 == pytest.approx(5 * ONE_UNIQUE, rel=1e-12)
    assert ctx.cache.hits == 1 and ctx.cache.misses == 2


def test_the_cache_is_bounded_an_evicted_entry_is_refitted(fits):
    ctx, md = context(max_entries=2), small()
    tables = [md] + [suppress_values(md, np.array([r]), np.array([0])) for r in (4, 7)]
    first = [ctx.fit(t)[0] for t in tables]  # three tables, room for two
    assert len(fits) == 3 and len(ctx.cache) == 2
    assert ctx.fit(tables[2])[0] is first[2]  # the newest kept
    refit = ctx.fit(tables[0])[0]  # the oldest evicted: fitted again, the same figures
    assert refit is not first[0] and len(fits) == 4
    assert refit.estimate("tau2") == first[0].estimate("tau2")
    # the byte bound: an entry larger than the bound is not kept
    tiny = context(max_bytes=FitCache.size_of(tabulate(md)) - 1)
    tiny.fit(md)
    assert len(tiny.cache) == 0


def test_pinned_fits_stay_and_travel_with_the_unit(fits):
    md = small()
    table = tabulate(md)
    base = NegativeBinomialRisk().fit(table)
    ctx = SearchContext(NegativeBinomialRisk(), RiskTarget(value=0.0), table.record_map(),
                        base=(table, base), cache=FitCache(max_entries=0))
    unit = pickle.loads(pickle.dumps(ctx.for_unit()))  # as a worker process receives it
    res, _ = unit.fit(md)
    assert len(fits) == 1  # the base fit above, none in the unit
    assert res.estimate("tau2") == base.estimate("tau2") and len(unit.cache) == 1


def _adult(shared_data):
    frame = pd.read_csv(shared_data("uci_adult", "uci_adult.csv.gz"))
    keep = np.random.default_rng(0).random(len(frame)) < 0.05
    keys = ["age", "sex", "race", "marital_status", "education", "native_country",
            "workclass", "occupation"]
    return Microdata.from_source(frame[keep], keys=keys, population_size=48_842)


def test_plans_with_the_cache_equal_those_without(shared_data, fits, monkeypatch):
    """uci_adult 5% (KS8, 2,443 records), nb, tau2 <= 150: every figure of every plan is the
    same. Without any cache 164 fits; the cache saves the file's own at the start of each
    of the 9 first plans (suppression, a recoding per key) and the 15 recoded files that the
    combined plans start from (each fitted by the key's recoding plan): 140 (counted when
    it was written)."""
    md = _adult(shared_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cached = recommend(md, RiskTarget(value=150.0), estimator="nb", workers=1)
        with_cache = len(fits)
        monkeypatch.setattr(FitCache, "get", lambda self, table: None)
        plain = recommend(md, RiskTarget(value=150.0), estimator="nb", workers=1)
    assert cached.to_dict(internal=True) == plain.to_dict(internal=True)
    assert [p.label() for p in cached.plans][:2] == [
        "local suppression", "recode native_country, then local suppression"]
    assert (with_cache, len(fits) - with_cache) == (140, 164)


def test_cache_bounds_do_not_change_plans(shared_data, monkeypatch):
    """No room for any unpinned fit: the same plans (the bounds cost fits, not results)."""
    md = _adult(shared_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cached = recommend(md, RiskTarget(value=150.0), estimator="nb", workers=1,
                           actions=["recoding+suppression"], keys=["age", "race"])
        monkeypatch.setattr(_recommend_cache, "FIT_CACHE_ENTRIES", 0)
        bare = recommend(md, RiskTarget(value=150.0), estimator="nb", workers=1,
                         actions=["recoding+suppression"], keys=["age", "race"])
    assert cached.to_dict(internal=True) == bare.to_dict(internal=True)


def test_cli_runs_auto_plans_in_processes_from_1000_records(tmp_path, capsys):
    """Re-fitting auto, the plans of a 1,200-record file run on every CPU (auto's fits
    make them cost minutes on a few thousand records); nb's below 5,000 records in this
    process. The plans are the same either way."""
    from sdcrisk.cli import main

    rng = np.random.default_rng(1)
    path = tmp_path / "s.csv"
    pd.DataFrame({"a": rng.integers(0, 30, 1200), "b": rng.integers(0, 2, 1200),
                  "c": rng.integers(0, 5, 1200)}).to_csv(path, index=False)
    args = ["recommend", str(path), "--keys", "a,b,c", "--population-size", "24000",
            "--target", "1e6", "--actions", "suppression,recoding", "--change-keys", "b",
            "--format", "json"]  # met already: two plans without a step
    ran = {}
    for method in ("auto", "nb"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main([*args, "--method", method]) == 0
        ran[method] = json.loads(capsys.readouterr().out)["settings"]["ran"]
    assert ran == {"auto": "local processes", "nb": "serial"}
