"""Pseudo-population validation (issue 9 item 1): sub-samples of the file, exact truths, errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import sdcrisk
from sdcrisk import Bernoulli, HouseholdBernoulli, Microdata, ParameterError, draw_sample, tabulate
from sdcrisk.analyses.validation import Candidate, subsample_fraction, table_microdata, validate
from sdcrisk.core.measures import roc_auc


def _records(n=1500, seed=5, households=False):
    rng = np.random.default_rng(seed)

    def skewed(k):
        return rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.6)))

    data = {"a": skewed(30), "b": skewed(7), "c": skewed(5), "d": skewed(3)}
    if households:
        data["hh"] = np.repeat(np.arange(n // 3 + 1), 3)[:n]
    return data


@pytest.fixture(scope="module")
def table():
    md = Microdata.from_source(_records(), ["a", "b", "c", "d"], population_size=30_000)
    return tabulate(md)


@pytest.fixture(scope="module")
def hh_table():
    md = Microdata.from_source(_records(households=True), ["a", "b", "c", "d"],
                               household="hh", population_size=30_000)
    return tabulate(md)


def _keys_of(table, rows=None):
    """Each record's key tuple (level labels), by brute force from the table."""
    labels = table.cell_labels()
    rc = table.record_cell if rows is None else table.record_cell[rows]
    return [labels[c] for c in rc]


def test_table_microdata_gives_back_the_records(table, hh_table):
    md = table_microdata(table)
    assert md.n == table.n and md.population_size == table.n
    assert md.weights is None and md.levels == table.levels
    again = tabulate(md)
    np.testing.assert_array_equal(again.counts, table.counts)
    np.testing.assert_array_equal(again.cell_codes, table.cell_codes)
    np.testing.assert_array_equal(again.record_cell, table.record_cell)
    hh = table_microdata(hh_table)
    np.testing.assert_array_equal(hh.household, hh_table.household)


def test_replicate_truths_by_brute_force(table):
    """tau1 = sub-sample uniques unique in the file, tau2 = sum of 1/F over them."""
    vt = validate(table, ["nb"], replicates=3, fraction=0.2, random_state=4)
    file_counts = Counter(_keys_of(table))
    pseudo = table_microdata(table)
    for rep in vt.replicates:
        rows = draw_sample(pseudo, Bernoulli(0.2), seed=rep.seed)
        sub_counts = Counter(_keys_of(table, rows))
        uniques = [k for k, c in sub_counts.items() if c == 1]
        assert rep.n == len(rows)
        assert rep.sample_uniques == len(uniques)
        assert rep.tau1 == sum(1 for k in uniques if file_counts[k] == 1)
        assert rep.tau2 == pytest.approx(sum(1 / file_counts[k] for k in uniques), rel=1e-12)
        assert rep.population_uniques == sum(1 for c in file_counts.values() if c == 1)


def test_errors_are_those_of_the_estimator_on_each_sub_sample(table):
    vt = validate(table, ["poisson-gamma", "graphical"], replicates=2, fraction=0.25,
                  random_state=9)
    pseudo = table_microdata(table)
    for row in vt.rows:
        assert row.status == "ok" and row.usable
        for i, rep in enumerate(vt.replicates):
            rows = draw_sample(pseudo, Bernoulli(0.25), seed=rep.seed)
            sub = tabulate(pseudo.subset(rows, population_size=table.n), population=pseudo)
            assert sub.population_size == table.n  # N = the file's size
            res = row.candidate.estimator(random_state=9).fit(sub)
            assert row.tau1[i] == pytest.approx(res.estimate("tau1"), rel=1e-12)
            assert row.tau2[i] == pytest.approx(res.estimate("tau2"), rel=1e-12)
            su = sub.counts == 1
            auc = roc_auc(res.cell_risk("population_unique")[su], sub.population.counts[su] == 1)
            assert (auc is None and np.isnan(row.auc[i])) or row.auc[i] == pytest.approx(auc)
        err = vt.relative_errors(row.tau2, "tau2")
        np.testing.assert_allclose(err, np.array(row.tau2) / vt.truth("tau2") - 1)
    out = vt.to_rows()
    assert [r["candidate"] for r in out] == ["poisson-gamma", "graphical"]
    for r, row in zip(out, vt.rows, strict=True):
        e1 = np.abs(np.array(row.tau1) / vt.truth("tau1") - 1)
        assert r["median_abs_rel_err_tau1"] == pytest.approx(float(np.median(e1)))
        assert len(r["rel_err_tau2"]) == 2


def test_whole_file_sub_sample_is_exact_for_the_census_case():
    """fraction 1 with N = n: F = f, every sample unique is a population unique; the
    negative binomial with p = n/N = 1 puts no mass on unseen records, so errors are 0."""
    md = Microdata.from_source(_records(400), ["a", "b", "c"])
    tab = tabulate(md)
    vt = validate(tab, ["nb"], replicates=2, fraction=1.0)
    for rep in vt.replicates:
        assert rep.n == tab.n and rep.tau1 == tab.sample_uniques == rep.tau2
    np.testing.assert_allclose(vt.relative_errors(vt.rows[0].tau1, "tau1"), 0.0, atol=1e-12)
    np.testing.assert_allclose(vt.relative_errors(vt.rows[0].tau2, "tau2"), 0.0, atol=1e-12)


def test_same_seed_same_table_other_seed_other_sub_samples(table):
    a = validate(table, ["nb", "poisson-gamma"], replicates=2, fraction=0.3, random_state=1)
    b = validate(table, ["nb", "poisson-gamma"], replicates=2, fraction=0.3, random_state=1)
    c = validate(table, ["nb", "poisson-gamma"], replicates=2, fraction=0.3, random_state=2)
    assert a.replicates == b.replicates
    assert [r.tau2 for r in a.rows] == [r.tau2 for r in b.rows]
    assert [r.seed for r in a.replicates] != [r.seed for r in c.replicates]
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(1).spawn(2)]
    assert [r.seed for r in a.replicates] == seeds


def test_fraction_rule(table):
    # the file's own fraction when a sub-sample holds enough records
    frac, rule = subsample_fraction(table, None, min_records=0)
    assert frac == pytest.approx(1500 / 30_000) and "file's sampling fraction" in rule
    frac, _ = subsample_fraction(table, None, min_records=75)  # 1500 * 0.05 = 75
    assert frac == pytest.approx(0.05)
    # raised so that a sub-sample holds min_records records on average
    frac, rule = subsample_fraction(table, None, min_records=300)
    assert frac == pytest.approx(300 / 1500) and "raised" in rule
    frac, rule = subsample_fraction(table, 0.4, min_records=300)
    assert frac == 0.4 and rule == "given"
    with pytest.raises(ParameterError, match="fraction=1.5"):
        subsample_fraction(table, 1.5)
    # a small file: never fewer than 50 records where the file allows (up to half of it)
    small = tabulate(Microdata.from_source(_records(300), ["a", "b"], population_size=30_000))
    frac, rule = subsample_fraction(small, None, min_records=200, max_fraction=0.1)
    assert frac == pytest.approx(50 / 300) and "too small for its own fraction" in rule
    tiny = tabulate(Microdata.from_source(_records(60), ["a", "b"], population_size=6_000))
    assert subsample_fraction(tiny, None, min_records=200, max_fraction=0.1)[0] == 0.5
    vt = validate(table, ["nb"], replicates=4, min_records=300)
    assert vt.fraction == pytest.approx(0.2)
    # Bernoulli at 0.2 of 1500 records: mean 300, sd 15.5
    assert all(240 <= r.n <= 360 for r in vt.replicates)


def test_household_design_keeps_whole_households(hh_table):
    vt = validate(hh_table, ["nb"], replicates=2, fraction=0.3)
    assert "households" in vt.design
    pseudo = table_microdata(hh_table)
    for rep in vt.replicates:
        rows = draw_sample(pseudo, HouseholdBernoulli(0.3), seed=rep.seed)
        assert rep.n == len(rows)
        members = np.bincount(hh_table.household)
        taken = np.bincount(hh_table.household[rows], minlength=len(members))
        drawn = taken > 0
        np.testing.assert_array_equal(taken[drawn], members[drawn])
    vt = validate(hh_table, ["nb"], replicates=1, fraction=0.3, design="bernoulli")
    assert "records" in vt.design


def test_failed_and_skipped_candidates_are_reported_not_fatal(table):
    # weighted log-linear needs survey weights: the pseudo-population has none
    vt = validate(table, ["loglinear:weighted=true,terms=all-2-way", "nb"], replicates=2,
                  fraction=0.3)
    bad, good = vt.rows
    assert bad.status.startswith("failed: ParameterError") and "weights" in bad.status
    assert not bad.usable and good.usable
    vt = validate(table, ["nb", "poisson-gamma"], replicates=2, fraction=0.3,
                  time_budget=1e-9)
    assert all(r.status.startswith("skipped: time budget") for r in vt.rows)
    assert not any(r.usable for r in vt.rows)


def test_candidate_parsing():
    c = Candidate.parse("loglinear:terms=search,max_added_terms=3")
    assert c.method == "loglinear" and dict(c.options) == {"terms": "search",
                                                           "max_added_terms": 3}
    assert c.label == "loglinear(max_added_terms=3, terms=search)"
    c = Candidate.parse(("graphical", {"prior_weight": 50}))
    assert c.setting == "prior_weight=50" and Candidate.parse("nb").setting == "default"
    assert Candidate.parse(c) is c
    est = c.estimator(random_state=3, ci_level=0.9)
    assert isinstance(est, sdcrisk.GraphicalRisk) and est.prior_weight == 50
    assert est.random_state == 3 and est.ci_level == 0.9
    with pytest.raises(ParameterError, match="unknown candidate method 'nope'"):
        Candidate.parse("nope")
    with pytest.raises(ParameterError, match="no option 'terms'"):
        Candidate.parse("graphical:terms=search")
    with pytest.raises(ParameterError, match="prior_weight"):
        Candidate.parse("graphical:prior_weight=-1")
    with pytest.raises(ParameterError, match="key=value"):
        Candidate.parse("loglinear:search")
    with pytest.raises(ParameterError, match="own candidate"):
        Candidate.parse("auto")


def test_bad_arguments(table):
    with pytest.raises(ParameterError, match="replicates=0"):
        validate(table, ["nb"], replicates=0)
    with pytest.raises(ParameterError, match="repeat"):
        validate(table, ["nb", "nb"])
    with pytest.raises(ParameterError, match="at least one candidate"):
        validate(table, [])
    with pytest.raises(ParameterError, match="design='cluster'"):
        validate(table, ["nb"], design="cluster")
    with pytest.raises(ParameterError, match="household ids"):
        validate(table, ["nb"], design="household")
