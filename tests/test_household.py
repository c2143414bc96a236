"""Household-level keys (spec C.7): construction by hand, and truth on eusilcP checked by pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data
from sdcrisk import (
    HouseholdBernoulli,
    InputError,
    Microdata,
    ParameterError,
    draw_sample,
    evaluate,
    tabulate,
)
from sdcrisk.data.household import household_microdata, household_sizes

PERSONS = {
    "hid":    [1, 1, 2, 2, 3, 3, 4, 5, 5, 5],
    "sex":    [1, 0, 0, 1, 0, 0, 1, 0, 1, 1],
    "age":    [30, 32, 32, 30, 5, 40, 70, 8, 35, 9],
    "region": [0, 0, 0, 0, 1, 1, 2, 1, 1, 2],
}


def persons(**kw):
    return Microdata.from_source(PERSONS, ["sex", "age", "region"], household="hid", **kw)


def test_sizes():
    assert household_sizes(persons()) == {1: 1, 2: 3, 3: 1}


def test_canonical_order_makes_identical_households_equal():
    hh = household_microdata(persons(), ["sex", "age"], household_keys=["region"], size=2,
                             order=["sex", "age"])
    assert hh.keys == ("region", "sex_1", "age_1", "sex_2", "age_2")
    labels = [tuple(hh.levels[j][c[i]] for j, c in enumerate(hh.codes)) for i in range(hh.n)]
    # households 1 and 2 list the same people in different orders: one record each, equal
    assert labels == [(0, 0, 32, 1, 30), (0, 0, 32, 1, 30), (1, 0, 5, 0, 40)]
    tab = tabulate(hh)
    assert sorted(tab.counts.tolist()) == [1, 2]
    # age then sex puts the younger member first
    by_age = household_microdata(persons(), ["sex", "age"], size=2, order=["age", "sex"])
    first = [by_age.levels[1][c] for c in by_age.codes[1]]
    assert first == [30, 30, 5]


def test_population_size_of_households():
    # no N given: the file is its own population (households too)
    assert household_microdata(persons(), ["sex"], size=2).population_size == 3
    # person sampling fraction 1/10 carries over to households of each size
    hh = household_microdata(persons(population_size=100), ["sex"], size=3)
    assert hh.population_size == pytest.approx(10) and hh.n == 1
    w = Microdata.from_source({**PERSONS, "w": [10, 10, 20, 20, 5, 7, 1, 1, 1, 1]},
                              ["sex", "age"], household="hid", weights="w")
    assert household_microdata(w, ["sex"], size=2).population_size == pytest.approx(10 + 20 + 6)
    assert household_microdata(persons(), ["sex"], size=2,
                               population_households=50).population_size == 50


def test_errors():
    with pytest.raises(InputError, match="region"):
        household_microdata(persons(), ["sex"], household_keys=["region"], size=3)
    with pytest.raises(InputError, match="no household of size 4"):
        household_microdata(persons(), ["sex"], size=4)
    with pytest.raises(ParameterError, match="'income' is not a key"):
        household_microdata(persons(), ["income"], size=2)
    with pytest.raises(InputError, match="household ids"):
        household_microdata(Microdata.from_source(PERSONS, ["sex"]), ["sex"], size=2)
    with pytest.raises(InputError, match="smaller"):
        household_microdata(persons(), ["sex"], size=2, population_households=2)


def test_eusilcp_two_person_truth_matches_pandas():
    """Household-level truth from evaluate() equals a direct pandas computation."""
    path = shared_data("eusilcP", "eusilcP.csv.gz")
    pop = Microdata.from_source(path, ["gender", "age", "region"], household="hid",
                                max_levels=None)
    rows = draw_sample(pop, HouseholdBernoulli(0.05), seed=0)
    sample = pop.subset(rows, population_size=pop.n)
    pop_h = household_microdata(pop, ["gender", "age"], household_keys=["region"], size=2)
    smp_h = household_microdata(sample, ["gender", "age"], household_keys=["region"], size=2,
                                population_households=pop_h.n)
    ev = evaluate(pop_h, [], sample=smp_h)

    df = pd.read_csv(path, usecols=["hid", "gender", "age", "region"])
    df = df[df.groupby("hid")["hid"].transform("size") == 2]
    df = df.sort_values(["hid", "gender", "age"])
    pair = df.groupby("hid").agg(region=("region", "first"), g=("gender", list),
                                 a=("age", list))
    pair["key"] = [(r, g[0], a[0], g[1], a[1]) for r, g, a in
                   zip(pair.region, pair.g, pair.a, strict=True)]
    big_f = pair["key"].value_counts()
    # HouseholdBernoulli: u = default_rng(0).random(H) over household codes 0..H-1 (hid order)
    all_hids = np.sort(pd.read_csv(path, usecols=["hid"])["hid"].unique())
    taken = set(all_hids[np.random.default_rng(0).random(len(all_hids)) < 0.05])
    f = pair.loc[pair.index.isin(taken), "key"].value_counts()
    su = f[f == 1].index
    assert pop_h.n == 7064 and smp_h.n == int(f.sum())
    assert ev.truth["sample_uniques"] == len(su)
    assert ev.truth["tau1"] == sum(big_f[k] == 1 for k in su)
    assert ev.truth["tau2"] == pytest.approx(sum(1 / big_f[k] for k in su), rel=1e-12)


def test_cli_assess_and_evaluate_household_level(tmp_path, capsys):
    import json

    from sdcrisk.cli import main

    path = tmp_path / "persons.csv"
    pd.DataFrame(PERSONS).to_csv(path, index=False)
    code = main(["assess", str(path), "--keys", "sex,age", "--household", "hid",
                 "--household-size", "2", "--household-keys", "region",
                 "--member-order", "sex,age", "--population-size", "100", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    # 3 two-person households; N of households = 3 * 100 / 10 (person sampling fraction)
    assert d["n"] == 3 and d["population_size"] == pytest.approx(30)
    assert d["keys"] == ["region", "sex_1", "age_1", "sex_2", "age_2"]
    assert main(["assess", str(path), "--keys", "sex,age", "--household-size", "2",
                 "--population-size", "100"]) == 2
    assert "--household" in capsys.readouterr().err

    pop = tmp_path / "pop.csv"
    rng = np.random.default_rng(3)
    hid = np.repeat(np.arange(400), 2)
    pd.DataFrame({"hid": hid, "sex": rng.integers(0, 2, 800), "age": rng.integers(0, 9, 800),
                  "region": np.repeat(rng.integers(0, 3, 400), 2)}).to_csv(pop, index=False)
    code = main(["evaluate", str(pop), "--keys", "sex,age,region", "--household", "hid",
                 "--household-size", "2", "--household-keys", "region", "--fraction", "0.2",
                 "--methods", "nb", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    persons = Microdata.from_source(pop, ["sex", "age", "region"], household="hid")
    sample = persons.subset(draw_sample(persons, HouseholdBernoulli(0.2), seed=0),
                            population_size=persons.n)
    pop_h = household_microdata(persons, ["sex", "age"], household_keys=["region"], size=2)
    ev = evaluate(pop_h, ["nb"], sample=household_microdata(
        sample, ["sex", "age"], household_keys=["region"], size=2,
        population_households=pop_h.n))
    assert d["truth"]["population_size"] == 400
    assert d["truth"]["tau1"] == ev.truth["tau1"]
    assert d["truth"]["tau2"] == pytest.approx(ev.truth["tau2"])
    assert d["estimates"]["nb"]["tau2"] == pytest.approx(ev.methods["nb"].estimates["tau2"])
