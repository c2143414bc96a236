"""The HTML risk report (sdcrisk.report) and the CLI's report, --format html, --fail-above.

Numbers are checked against independent computations: brute-force re-tabulation of the
records without a key, pandas group-bys over the records, the Mann-Whitney AUC, sdcMicro
5.8.1's printed counts (../shared/methods/sdcmicro-reference.md) and the shared ground truth
of the UK census extract.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from conftest import shared_data
from sdcrisk import Bernoulli, ConvergenceWarning, Microdata, ParameterError, draw_sample, tabulate
from sdcrisk.cli import main
from sdcrisk.report.collect import (
    _suda_section,
    build_report,
    calibration_table,
    riskiest_cells,
    roc_curve,
    sdcmicro_high_risk,
    write_report,
)
from sdcrisk.report.contributions import (
    _reduce_table,
    category_contributions,
    variable_contributions,
)
from sdcrisk.report.formats import fmt

# distinctive values that occur in fewer than 3 records (so in sample-unique or f = 2 cells);
# two of them contain HTML-special characters, so escaped forms are checked as well
SECRETS = ("ZZZ-UNIQUE-REGION", "Q&A-RARE-JOB", "<b>TAG-SU</b>")
KEYS = ["region", "job", "age", "tag"]


def _secret_frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 400
    region = rng.choice(np.array(["north", "south", "east", "west"]), n).astype(object)
    region[17] = SECRETS[0]
    job = rng.choice(np.array(["clerk", "farmer", "teacher"]), n).astype(object)
    job[[40, 41]] = SECRETS[1]
    tag = rng.choice(np.array(["plain", "other"]), n).astype(object)
    tag[99] = SECRETS[2]
    return pd.DataFrame({"region": region, "job": job, "age": rng.integers(0, 8, n),
                         "sex": rng.integers(1, 3, n), "tag": tag,
                         "hh": rng.integers(0, 150, n), "w": rng.uniform(10, 60, n)})


@pytest.fixture(scope="module")
def secret_table():
    md = Microdata.from_source(_secret_frame(), KEYS, household="hh", population_size=40_000)
    tab = tabulate(md)
    for row in (17, 40, 41, 99):  # the secrets sit in cells below the threshold
        assert tab.counts[tab.record_cell[row]] < 3
    return tab


def _fit_all(table):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {name: sdcrisk.get_estimator(name).fit(table) for name in sdcrisk.ESTIMATORS}


@pytest.fixture(scope="module")
def all_results(secret_table):
    return _fit_all(secret_table)


def _leaks(text: str) -> list[str]:
    found = []
    for s in SECRETS:
        for form in {s, html.escape(s), html.escape(s, quote=False)}:
            if form in text or form in html.unescape(text):
                found.append(form)
    return found


# --- item 2: the external report never shows the key values of small cells -----------------------
def test_external_report_never_contains_key_values_of_small_cells(secret_table, all_results):
    page = build_report(all_results, top=1000)  # every cell listed, by counts only
    assert _leaks(page) == []
    # common categories (>= 3 records) may be named; the page is about this file
    assert "north" in page and "teacher" in page
    # the cells are there, described by counts: one row per observed cell
    assert page.count("<tr>") >= secret_table.n_cells
    # no hidden payload: no scripts, no embedded (base64) data anywhere
    assert "<script" not in page.lower() and "base64" not in page


def test_internal_report_does_list_them(all_results):
    # the same check is sensitive: the internal report names every secret (escaped)
    page = build_report(all_results, kind="internal", top=1000)
    assert set(_leaks(page)) >= {html.escape(s) for s in SECRETS}
    assert "INTERNAL report" in page


def test_min_count_is_the_stated_threshold(secret_table):
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    f = secret_table.counts
    records = {}
    for j, key in enumerate(secret_table.keys):
        for level, c in zip(secret_table.levels[j], np.bincount(
                secret_table.cell_codes[:, j], weights=f,
                minlength=len(secret_table.levels[j])), strict=True):
            records[(key, level)] = int(c)
    # with min_count = 50 every category with fewer records disappears from the page
    page = build_report(res, min_count=50, top=1000)
    assert "fewer than 50 records" in page
    for (key, level), c in records.items():
        if isinstance(level, str) and c and level not in ("plain", "other"):
            shown = f"<td>{html.escape(level)}</td>" in page
            assert shown == (c >= 50), (key, level, c)


def test_external_report_with_the_truth_and_diagnostics_stays_clean(secret_table):
    data = _secret_frame()
    pop = Microdata.from_source(data, KEYS)
    # half the records, the secrets among them
    sample = pop.subset(np.union1d(np.arange(0, 400, 2), [17, 41, 99]), population_size=pop.n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = [sdcrisk.LogLinearRisk(terms="search").fit(tabulate(sample)),
                   sdcrisk.LogLinearRisk(partition="region:2").fit(tabulate(sample))]
    page = build_report(results, truth=pop, top=1000)
    assert _leaks(page) == []
    assert "Log-linear model search path" in page and "band 1" in page


def test_free_text_from_results_is_scrubbed_of_rare_categories(secret_table):
    # an estimator that echoes category labels in its assumptions or diagnostics
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    noisy = dataclasses.replace(
        res, assumptions=(*res.assumptions, f"cells such as {SECRETS[0]} were pooled"),
        diagnostics={**res.diagnostics, "note": f"sparse level {SECRETS[2]}",
                     "validation": [{"cell": SECRETS[1], "error": 0.5}]})
    page = build_report(noisy)
    assert _leaks(page) == []
    assert "cells such as [withheld] were pooled" in page
    assert "sparse level [withheld]" in page
    assert SECRETS[0] in build_report(noisy, kind="internal")


def test_cli_assess_html_is_the_external_report(tmp_path, capsys):
    path = tmp_path / "secret.csv"
    _secret_frame().to_csv(path, index=False)
    out = tmp_path / "r.html"
    code = main(["assess", str(path), "--keys", ",".join(KEYS), "--population-size", "40000",
                 "--format", "html", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and _leaks(page) == []
    code = main(["report", str(path), "--keys", ",".join(KEYS), "--population-size", "40000",
                 "--internal", "--top", "1000", "--out", str(out)])
    assert code == 0
    assert SECRETS[0] in out.read_text(encoding="utf-8")


# --- self-contained page ----------------------------------------------------------------------
def test_page_is_self_contained(all_results):
    page = build_report(all_results)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"(?i)(https?:|ftp:|file:|@import|url\s*\(|<script|<iframe|<object"
                         r"|<embed|<img)", page)
    for attr in re.findall(r'(?i)\b(?:href|src|xlink:href|action)\s*=\s*"([^"]*)"', page):
        assert attr.startswith("#") or attr == "data:,", attr
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # every internal link points at a section that exists
    for target in re.findall(r'href="#([^"]+)"', page):
        assert f'id="{target}"' in page


def test_report_works_without_matplotlib(monkeypatch, secret_table):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    page = build_report(sdcrisk.NegativeBinomialRisk().fit(secret_table))
    # the histogram, the key contributions and the SUDA contributions, as plain inline SVG
    assert page.count("<svg") == 3
    assert "Distribution of record risk" in page and "by dropping each key" in page
    assert "SUDA attribute contributions" in page


# --- the figures -------------------------------------------------------------------------------
def _records(table):
    """Record-level frame of level labels rebuilt from the table."""
    codes = table.cell_codes[table.record_cell]
    return pd.DataFrame({k: [table.levels[j][c] for c in codes[:, j]]
                         for j, k in enumerate(table.keys)})


def test_headline_figures_appear_with_their_method(secret_table):
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    page = build_report(res)
    er = res.estimate("expected_reidentifications")
    m = re.search(r'data-figure="expected_reidentifications">([^<]+)<', page)
    assert float(m.group(1).replace(",", "")) == pytest.approx(er, rel=5e-4)
    tau2 = res.measures["tau2"]
    m = re.search(r'data-figure="tau2">([^<]+)<', page)
    assert float(m.group(1)) == pytest.approx(tau2.estimate, rel=5e-4)
    assert re.search(r'data-figure="sample_uniques">([^<]+)<', page).group(1) == \
        f"{secret_table.sample_uniques:,}"
    k3 = int(secret_table.counts[secret_table.counts < 3].sum())
    assert re.search(r'data-figure="k3_violations">([^<]+)<', page).group(1) == f"{k3:,}"
    # every assumption of the method is printed
    for a in res.assumptions:
        assert html.escape(a) in page
    assert "sdcMicro global_risk_ER" in page and "Method: nb" in page


def test_leave_one_key_out_equals_retabulating_without_the_key(secret_table):
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    df = variable_contributions(res)
    assert pd.isna(df["dropped"].iloc[0]) and list(df["dropped"].iloc[1:]) == KEYS
    assert (df["method"] == "nb").all()
    frame = _records(secret_table)
    for key in KEYS:
        rest = [k for k in KEYS if k != key]
        md = Microdata.from_source(frame[rest], rest, household=None, population_size=40_000,
                                   levels={k: list(secret_table.levels[KEYS.index(k)])
                                           for k in rest})
        brute = sdcrisk.NegativeBinomialRisk().fit(tabulate(md))
        row = df[df["dropped"] == key].iloc[0]
        assert row["sample_uniques"] == brute.sample_uniques
        counts = brute.table.counts
        assert row["records_below_3"] == int(counts[counts < 3].sum())
        assert row["expected_reidentifications"] == pytest.approx(
            brute.estimate("expected_reidentifications"), rel=1e-12)
        assert row["tau2"] == pytest.approx(brute.estimate("tau2"), rel=1e-12)
    base = df.iloc[0]
    assert base["expected_reidentifications"] == pytest.approx(
        res.estimate("expected_reidentifications"), rel=1e-12)
    assert (df["er_reduction"] == base["expected_reidentifications"]
            - df["expected_reidentifications"]).all()


def test_leave_one_key_out_with_weights_sums_the_weights():
    data = _secret_frame()
    md = Microdata.from_source(data, KEYS[:3], weights="w")
    res = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    df = variable_contributions(res)
    brute = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(
        tabulate(Microdata.from_source(data, ["region", "age"], weights="w")))
    row = df[df["dropped"] == "job"].iloc[0]
    assert row["expected_reidentifications"] == pytest.approx(
        brute.estimate("expected_reidentifications"), rel=1e-12)


def test_leave_one_key_out_uses_the_headline_method(secret_table):
    # issue 18: "What drives the risk" is computed with the headline method, not nb
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = sdcrisk.LogLinearRisk().fit(secret_table)
        df = variable_contributions(res)
    assert (df["method"] == "loglinear").all()
    assert df["expected_reidentifications"].iloc[0] == pytest.approx(
        res.estimate("expected_reidentifications"), rel=1e-12)
    df = variable_contributions(res, estimator="poisson-gamma")
    assert (df["method"] == "poisson-gamma").all()
    nb = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    df = variable_contributions(res, estimator="nb")
    assert df["expected_reidentifications"].iloc[0] == pytest.approx(
        nb.estimate("expected_reidentifications"), rel=1e-12)


def test_category_contributions_against_group_by(secret_table):
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    rows, hidden = category_contributions(res, min_count=3)
    frame = _records(secret_table)
    frame["risk"] = res.record_risk()
    frame["su"] = secret_table.counts[secret_table.record_cell] == 1
    total = frame["risk"].sum()
    n_hidden = rec_hidden = su_hidden = 0
    risk_hidden = 0.0
    for key in KEYS:
        g = frame.groupby(key).agg(records=("risk", "size"), risk=("risk", "sum"),
                                   su=("su", "sum"))
        for level, r in g.iterrows():
            got = rows[(rows["key"] == key) & (rows["category"] == level)]
            if r["records"] < 3:
                assert got.empty
                n_hidden += 1
                rec_hidden += r["records"]
                su_hidden += r["su"]
                risk_hidden += r["risk"]
                continue
            got = got.iloc[0]
            assert got["records"] == r["records"] and got["sample_uniques"] == r["su"]
            assert got["risk"] == pytest.approx(r["risk"], rel=1e-12)
            assert got["risk_ratio"] == pytest.approx(
                (r["risk"] / total) / (r["records"] / len(frame)), rel=1e-12)
    assert hidden == {"categories": n_hidden, "records": rec_hidden,
                      "sample_uniques": su_hidden, "risk": pytest.approx(risk_hidden)}
    assert n_hidden == 3  # the three secrets
    assert list(rows["risk_ratio"]) == sorted(rows["risk_ratio"], reverse=True)
    # records above a risk threshold, per category
    t = float(np.quantile(frame["risk"], 0.6))
    rows, hidden = category_contributions(res, min_count=3, threshold=t)
    above = frame[frame["risk"] > t]
    assert hidden["above"] == sum(int((above[k] == s).sum()) for s in SECRETS for k in KEYS)
    for key in KEYS:
        counts = above.groupby(key).size()
        for _, r in rows[rows["key"] == key].iterrows():
            assert r["above"] == counts.get(r["category"], 0)
            assert r["above_share"] == pytest.approx(r["above"] / len(above), rel=1e-12)
    page = build_report(res, risk_threshold=t)
    assert f"records with risk &gt; {t:.4g}" in page


def test_riskiest_cells_are_the_highest_record_risks(secret_table):
    data = _secret_frame()
    md = Microdata.from_source(data, KEYS, weights="w")
    res = sdcrisk.NegativeBinomialRisk().fit(tabulate(md))
    top = riskiest_cells(res, top=7, internal=True)
    risk = res.cell_risk()
    assert list(top["risk"]) == sorted(risk, reverse=True)[:7]
    assert list(top["rank"]) == list(range(1, 8))
    cells = res.cells(internal=True)
    first = cells.loc[np.argmax(risk)]
    assert [top.iloc[0][k] for k in KEYS] == [first[k] for k in KEYS]
    assert top.iloc[0]["F_hat"] == pytest.approx(first["F_hat"])
    assert top["er_share"].iloc[0] == pytest.approx(
        top["expected_reidentifications"].iloc[0] / res.estimate(
            "expected_reidentifications"), rel=1e-12)
    external = riskiest_cells(res, top=7)
    assert not set(KEYS) & set(external.columns)


def test_sdcmicro_high_risk_hand_case():
    # median 0.2, |r - median| = [0.1, 0, 0, 0, 0.7] -> MAD = 1.4826 * 0 = 0: cut 0.2
    assert sdcmicro_high_risk(np.array([0.1, 0.2, 0.2, 0.2, 0.9])) == (1, 0.2)
    # median 0.275; |r - median| has median 0.125 -> MAD 0.185325, cut 0.830975: only 0.9
    r = np.array([0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.9])
    count, cut = sdcmicro_high_risk(r)
    assert cut == pytest.approx(0.830975, abs=1e-12) and count == 1
    # the 0.1 floor: median 0.01, MAD 0 -> 0.05 is above median + 3 MAD but not above 0.1
    assert sdcmicro_high_risk(np.r_[np.full(10, 0.01), 0.05, 0.2]) == (1, 0.1)


@pytest.mark.parametrize("keys, weighted, expected", [
    (["urbrur", "roof", "walls", "water", "sex"], False, 165),
    (["urbrur", "roof", "walls", "water", "sex"], True, 0),
    (["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"], False, 741),
])
def test_sdcmicro_high_risk_matches_sdcmicro_print(keys, weighted, expected):
    # sdcmicro-reference.md section 1: "N obs. with higher risk as the main part"
    md = Microdata.from_source(shared_data("sdcmicro", "testdata.csv"), keys,
                               weights="sampling_weight" if weighted else None)
    res = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    assert sdcmicro_high_risk(res.record_risk())[0] == expected
    page = build_report(res, contributions=False)
    assert re.search(r"risk &gt; median \+ 3 MAD and &gt; 0\.1\)</dt><dd>([^<]+)<",
                     page).group(1) == f"{expected:,}"


def test_roc_curve_area_is_the_mann_whitney_auc():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, 300) / 5.0  # many ties
    labels = rng.random(300) < 0.2 + 0.5 * scores
    fpr, tpr = roc_curve(scores, labels)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert np.trapezoid(tpr, fpr) == pytest.approx(sdcrisk.roc_auc(scores, labels), abs=1e-12)
    # hand case: scores 0.9(+), 0.8(-), 0.8(+), 0.1(-): points (0,0) (0,1/2) (1/2,1) (1,1)
    noisy = [0.3, 0.3 * (1 + 3e-16), 0.2, 0.3 * (1 - 2e-16)]  # float noise: one threshold
    fpr, tpr = roc_curve(noisy, [True, False, False, True])
    assert len(fpr) == 3 and np.trapezoid(tpr, fpr) == pytest.approx(
        sdcrisk.roc_auc(noisy, [True, False, False, True]), abs=1e-12)
    fpr, tpr = roc_curve([0.9, 0.8, 0.8, 0.1], [True, False, True, False])
    np.testing.assert_allclose(fpr, [0, 0, 0.5, 1])
    np.testing.assert_allclose(tpr, [0, 0.5, 1, 1])
    with pytest.raises(ParameterError):
        roc_curve([0.1, 0.2], [True, True])


def test_calibration_table_groups_and_sums():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    o = np.array([0.0, 1.0, 0.0, 1.0])
    w = np.array([1.0, 1.0, 1.0, 1.0])
    t = calibration_table(p, o, weights=w, bins=2)
    assert list(t["units"]) == [2, 2]
    np.testing.assert_allclose(t["predicted"], [0.15, 0.35])
    np.testing.assert_allclose(t["observed"], [0.5, 0.5])
    rng = np.random.default_rng(0)
    p, o, w = rng.random(500), rng.random(500), rng.integers(1, 5, 500).astype(float)
    t = calibration_table(p, o, weights=w, bins=10)
    assert len(t) == 10 and t["weight"].sum() == pytest.approx(w.sum())
    assert t["observed_sum"].sum() == pytest.approx(np.dot(w, o))
    assert t["predicted_sum"].sum() == pytest.approx(np.dot(w, p))
    assert np.all(np.diff(t["predicted"]) > 0)
    # groups of about equal weight: none more than one unit (weight <= 4) off the tenth
    assert np.all(np.abs(t["weight"] - w.sum() / 10) <= 4 + 1e-9)


def test_truth_section_reproduces_the_shared_ground_truth():
    pop = Microdata.from_source(
        shared_data("uk_census2011_nanodata", "uk_census2011_nanodata.csv.gz"),
        "region,sex,age_band,marital_status,ethnic_group,religion")
    rows = draw_sample(pop, Bernoulli(0.05), seed=0)
    sample = pop.subset(rows, population_size=pop.n)
    results = [sdcrisk.NegativeBinomialRisk().fit(tabulate(sample)),
               sdcrisk.PoissonGammaRisk().fit(tabulate(sample))]
    page = build_report(results, truth=pop)
    # ground_truth.csv, KS6 at 5%: n = 503, SU = 257, tau1 = 48, tau2 = 90.60906823734683
    assert "<dt>true tau1</dt><dd>48</dd>" in page
    assert "<dt>true tau2</dt><dd>90.61</dd>" in page
    # ground truth: 1,001 population uniques, shown beside the ARX estimates
    assert '<td>truth (population)</td><td class="num">1,001</td>' in page
    assert "<td>truth (population)</td>" in page
    assert "ROC: detecting population uniques" in page and "Calibration of record risk" in page
    # the AUC printed for poisson-gamma is the Mann-Whitney AUC of P(F=1|f) on the SU
    tab = tabulate(sample, population=pop)
    su = tab.counts == 1
    auc = sdcrisk.roc_auc(results[1].cell_risk("population_unique")[su],
                          tab.population.counts[su] == 1)
    assert f"poisson-gamma (AUC {auc:.3f})" in page
    # a table tabulated with its population gives the same truth section without truth=
    page2 = build_report(sdcrisk.NegativeBinomialRisk().fit(tab))
    assert "<dt>true tau1</dt><dd>48</dd>" in page2


def test_leave_one_key_out_tables_drop_the_record_map_when_the_fit_needs_none():
    """The reduced tables of variable_contributions carried an n-long int64 record map each
    (240 MB a key at 3x10^7 records) that nb and auto's calibrated rule never read; without
    it the fits give the same figures. Households keep it (their risks are record-level)."""
    md = Microdata.from_source("example:uk_census2011", "region,sex,age_band,marital_status",
                               population_size=560_759)
    table = tabulate(md)
    est = sdcrisk.NegativeBinomialRisk()
    for j in range(len(table.keys)):
        with_map = _reduce_table(table, j)
        without = _reduce_table(table, j, record_map=False)
        assert with_map.record_cell is not None and without.record_cell is None
        assert without.n == with_map.n == 10_000
        a, b = est.fit(with_map), est.fit(without)
        for m in ("tau1", "tau2", "expected_reidentifications"):
            assert a.measures[m].estimate == b.measures[m].estimate
    df = variable_contributions(est.fit(table))
    assert df["sample_uniques"].iloc[0] == table.sample_uniques


def test_suda_section_shows_suda2_figures():
    md = Microdata.from_source("example:uk_census2011",
                               "region,sex,age_band,marital_status,ethnic_group,religion",
                               population_size=56_075_912)
    table = tabulate(md)
    page = build_report(sdcrisk.NegativeBinomialRisk().fit(table), contributions=False)
    # DIS with the file's sampling fraction n/N
    suda = sdcrisk.suda2(table, dis_fraction=10_000 / 56_075_912)
    for key, value in suda.attribute_contributions.items():
        assert f'<td>{key}</td><td class="num">{value:.1f}%</td>' in page
    assert "sampling fraction 0.0001783 (the file&#39;s sampling fraction n/N)" in page
    bands = suda.dis_table()
    assert "".join(f'<td class="num">{v:,}</td>' for v in bands.values()) in page
    assert sum(bands.values()) == 10_000
    # the combinations of variables that single records out: names and counts only
    (keys, count), *_ = suda.msu_combinations()
    assert f"<td>{' × '.join(keys)}</td>" in page and f'<td class="num">{count:,}</td>' in page
    scored = int(np.count_nonzero(suda.score > 0))
    assert f"<dt>records with a SUDA score &gt; 0</dt><dd>{scored:,}</dd>" in page
    assert f"<dt>minimal sample uniques (MSUs)</dt><dd>{suda.n_msus:,}</dd>" in page
    # the section keeps the page's figures, not the result's per-cell arrays (0.9 GiB at
    # 3x10^7 records), which stayed alive through the sections after it
    notes: list[str] = []
    section = _suda_section(table, notes, kind="external", min_count=3, top=10)
    assert "result" not in section and not any(
        isinstance(v, np.ndarray) for v in section.values())
    assert section["scored_records"] == scored and section["dis"] == suda.dis
    # N unknown: DIS uses sdcMicro's default fraction 0.01
    md = Microdata.from_source("example:uk_census2011", "region,sex,age_band")
    page = build_report(sdcrisk.NegativeBinomialRisk().fit(tabulate(md)), contributions=False)
    assert "sampling fraction 0.01 (sdcMicro&#39;s default DisFraction" in page
    assert "SUDA2" not in build_report(sdcrisk.NegativeBinomialRisk().fit(tabulate(md)),
                                       suda=False)


def test_uniqueness_section_shows_the_arx_models():
    md = Microdata.from_source("example:uk_census2011",
                               "region,sex,age_band,marital_status,ethnic_group,religion",
                               population_size=56_075_912)
    table = tabulate(md)
    res = sdcrisk.PoissonGammaRisk().fit(table)
    page = build_report(res, contributions=False, suda=False)
    pu = sdcrisk.population_uniqueness(table)
    assert pu.dankar_model == "pitman"  # n/N = 0.00018 <= 0.1
    for name, est in pu.estimates.items():
        if est.available:
            assert (f'<td>{name}</td><td class="num">{fmt(est.uniques)}</td>') in page
    assert (f'<tr><td>Dankar&#39;s rule: pitman</td><td class="num">'
            f"{fmt(pu.uniques)}</td>") in page
    # the method's own estimate of the number of population uniques, highlighted as the one
    # to read (issue 18: the Dankar row was bold beside the headline's with no guidance)
    p_pu = res.estimate("p_pu")
    assert (f'<tr class="base"><td>poisson-gamma: P(PU) × N</td><td class="num">'
            f"{fmt(p_pu * 56_075_912)}</td>") in page
    assert page.count('<tr class="base">') == 1 + page.count("none (all keys)")
    assert "Which estimate to trust" in page
    assert "Population uniqueness" not in build_report(res, contributions=False,
                                                       uniqueness=False)


def test_a_failing_auxiliary_section_is_noted_not_fatal(monkeypatch, secret_table):
    import sdcrisk.analyses.uniqueness

    def broken(table):
        raise OverflowError("math range error")

    monkeypatch.setattr(sdcrisk.analyses.uniqueness, "population_uniqueness", broken)
    page = build_report(sdcrisk.NegativeBinomialRisk().fit(secret_table))
    assert "population-uniqueness estimators not computed: OverflowError: math range error" \
        in page
    assert 'id="uniqueness"' not in page and 'data-figure="tau2"' in page


def test_several_methods_give_a_comparison_table(all_results):
    page = build_report(all_results)
    assert "Comparison of methods" in page
    for name in all_results:
        assert f"<td>{name}</td>" in page
        assert f"<h3>{name}</h3>" in page or f"<summary>{name}:" in page
    assert build_report(all_results["nb"]).count("Comparison of methods") == 0


# --- diagnostics of other estimators (shapes documented in the issue) ---------------------------
def test_mcmc_graphical_and_validation_diagnostics_are_rendered(secret_table):
    res = sdcrisk.NegativeBinomialRisk().fit(secret_table)
    rng = np.random.default_rng(1)
    traces = {"tau1": rng.normal(5, 1, (4, 250)).tolist(), "tau2": rng.normal(9, 2, (4, 250))}
    models = [{"cliques": [["region", "job"], ["age"]], "edges": [["region", "job"]],
               "log_marginal_likelihood": -1234.5, "posterior_probability": 0.75,
               "tau1": 4.0, "tau2": 7.5},
              {"cliques": [["region"], ["job"], ["age"]], "edges": [],
               "log_marginal_likelihood": -1235.6, "posterior_probability": 0.25,
               "tau1": 3.0, "tau2": 6.5}]
    fake = dataclasses.replace(
        res, method="mcmc-test",
        fitted={**res.fitted, "traces": traces, "models": models},
        diagnostics={**res.diagnostics,
                     "mcmc": {"rhat": {"tau1": 1.004, "tau2": 1.2}, "ess_bulk": {
                         "tau1": 812.0, "tau2": 35.0}, "converged": False,
                              "multimodal": False},
                     "validation": [{"method": "nb", "score": 0.12},
                                    {"method": "graphical", "score": 0.08}]})
    page = build_report([res, fake])
    assert "MCMC convergence" in page and "R-hat (rank-normalised)" in page
    assert ("<td>tau2</td><td class=\"num\">1.2</td><td class=\"num\">35</td>"
            "<td>not converged</td>") in page
    assert "<td>tau1</td><td class=\"num\">1.004</td><td class=\"num\">812</td><td>ok</td>" \
        in page
    assert page.count("<polyline") >= 8  # 4 chains x 2 traces
    assert "Graphical models kept" in page and "{region, job}, {age}" in page
    assert "Method-choice validation" in page and "<td>graphical</td>" in page


def test_auto_report_lists_each_candidate_fitted_on_the_file(secret_table):
    """assess printed each candidate's tau1/tau2 under auto's table, the report did not: its
    diagnostics held only 'diagnostics of the chosen method' (a rule that chooses none),
    with graphical(prior_weight=50)'s timings. The candidates' own estimates are a table,
    equal to each estimator fitted alone, and the diagnostics say whose they are."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(sdcrisk.AutoRisk().fit(secret_table))
        alone = {m: sdcrisk.get_estimator(m).fit(secret_table) for m in ("nb", "pitman-yor")}
    assert "<h3>Candidates fitted on this file</h3>" in page
    for name, res in alone.items():
        row = (f"<tr><td>{name}</td><td>ok</td><td class=\"num\">{fmt(res.estimate('tau1'))}"
               f"</td><td class=\"num\">{fmt(res.estimate('tau2'))}</td>")
        assert row in page, name
    assert re.search(r'<tr class="base"><td>graphical\(prior_weight=50\)</td><td>ok</td>'
                     r'(<td class="num">[^<]+</td>){3}<td>yes</td></tr>', page)
    assert "diagnostics of graphical(prior_weight=50), whose record risks auto uses" in page
    assert "diagnostics of the chosen method" not in page


def test_file_section_does_not_say_every_method_uses_the_weights():
    """With weights, the file section read 'survey weights: yes (F_hat = sum of weights)'
    above auto's assumption 'survey weights are not used' (free1.csv --weights WEIGHT)."""
    md = Microdata.from_source(_secret_frame(), KEYS, weights="w")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = build_report(sdcrisk.PitmanYorRisk().fit(tabulate(md)), suda=False,
                            uniqueness=False)
    assert "survey weights are not used" in html.unescape(page)
    row = re.search(r"<dt>survey weights</dt><dd>([^<]+)</dd>", page)
    assert row is not None and html.unescape(row.group(1)) == (
        "yes (nb's F_hat = sum of the weights in the cell; a method whose assumptions say "
        "'survey weights are not used' ignores them, beyond N when N is their sum)")


def test_method_without_record_risk(secret_table):
    res = sdcrisk.SkinnerElliotTheta().fit(secret_table)
    page = build_report(res)
    assert "no method gives record-level risk" in page
    assert "Distribution of record risk" not in page and 'id="cells"' not in page
    theta = float(re.search(r'data-figure="theta">([^<]+)<', page).group(1))
    n1 = secret_table.sample_uniques
    n2 = int(np.count_nonzero(secret_table.counts == 2))
    pi = 400 / 40_000
    assert theta == pytest.approx(pi * n1 / (pi * n1 + 2 * (1 - pi) * n2), rel=5e-4)
    assert _leaks(page) == []


def test_parameters_are_checked(secret_table, all_results):
    res = all_results["nb"]
    with pytest.raises(ParameterError, match="kind='public'"):
        build_report(res, kind="public")
    with pytest.raises(ParameterError, match="min_count=1"):
        build_report(res, min_count=1)
    with pytest.raises(ParameterError, match="top=0"):
        build_report(res, top=0)
    with pytest.raises(ParameterError, match="risk_threshold=2"):
        build_report(res, risk_threshold=2)
    other = sdcrisk.NegativeBinomialRisk().fit(tabulate(Microdata.from_source(
        {"a": [1, 2, 2]}, ["a"], population_size=10)))
    with pytest.raises(ParameterError, match="different data"):
        build_report([res, other])
    with pytest.raises(ParameterError, match="truth must be the population"):
        build_report(res, truth=secret_table)
    with pytest.raises(ParameterError):
        build_report([])


def test_write_report(tmp_path, all_results):
    path = write_report(tmp_path / "r.html", all_results["nb"], title="Survey 2024 & co")
    text = path.read_text(encoding="utf-8")
    assert "<title>Survey 2024 &amp; co</title>" in text


# --- CLI: report subcommand and --fail-above ----------------------------------------------------
@pytest.fixture
def secret_csv(tmp_path):
    path = tmp_path / "s.csv"
    _secret_frame().to_csv(path, index=False)
    return path


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_report_with_population_and_methods(capsys, tmp_path, secret_csv):
    frame = _secret_frame()
    sample = tmp_path / "sample.csv"
    frame.iloc[::2].to_csv(sample, index=False)
    out = tmp_path / "r.html"
    code, _, err = _run(capsys, "report", str(sample), "--keys", "region,job,age",
                        "--population", str(secret_csv), "--methods", "nb,poisson-gamma",
                        "--out", str(out))
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    assert "Comparison of methods" in page and "Against the truth" in page
    # true tau2 by brute force over the records
    keys = ["region", "job", "age"]
    big_f = frame.groupby(keys).size().rename("F")
    f = frame.iloc[::2].groupby(keys).size().rename("f").to_frame().join(big_f)
    tau2 = float((1 / f[f.f == 1].F).sum())
    assert re.search(r"<dt>true tau2</dt><dd>([^<]+)<", page).group(1) == f"{tau2:.4g}"
    assert _leaks(page) == []


def test_cli_fail_above(capsys, secret_csv):
    args = ["assess", str(secret_csv), "--keys", "region,job,age", "--population-size",
            "40000", "--method", "nb", "--format", "json"]
    code, out, _ = _run(capsys, *args)
    d = json.loads(out)
    tau2 = d["measures"]["tau2"]["estimate"]
    upper = d["measures"]["tau2"]["upper"]
    n1 = d["sample_uniques"]
    # below every limit: exit 0
    code, out, err = _run(capsys, *args, "--fail-above", f"tau2={tau2 * 1.01}",
                          "--fail-above", f"sample_uniques={n1}")
    assert code == 0 and err == "" and json.loads(out)["method"] == "nb"
    # above: exit 3, output still written, one line per breach naming measure and limit
    code, out, err = _run(capsys, *args, "--fail-above", f"tau2={tau2 * 0.99}",
                          "--fail-above", f"sample_uniques={n1 - 1}",
                          "--fail-above", "global_risk=0.99")
    assert code == 3 and json.loads(out)["method"] == "nb"
    lines = err.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"sdcrisk: fail-above: tau2 = {tau2:.6g} exceeds the limit")
    assert lines[1] == (f"sdcrisk: fail-above: sample_uniques = {n1} exceeds the limit "
                        f"{n1 - 1:g} (method nb)")
    # the upper bound of the interval
    code, _, err = _run(capsys, *args, "--fail-above", f"tau2.upper={tau2}")
    assert code == 3 and f"tau2 (upper bound) = {upper:.6g}" in err
    code, _, err = _run(capsys, *args, "--fail-above", f"tau2.upper={upper * 1.001}")
    assert code == 0


@pytest.mark.parametrize("spec, fragment", [
    ("tau2", "use MEASURE=LIMIT"),
    ("tau2=high", "is not a number"),
    ("tau2.middle=1", "is not a bound"),
    ("tau9=1", "no result gives 'tau9'"),
])
def test_cli_fail_above_bad_specs(capsys, secret_csv, spec, fragment):
    code, _, err = _run(capsys, "assess", str(secret_csv), "--keys", "region,job",
                        "--population-size", "40000", "--fail-above", spec)
    # one error line (warnings of the fit before it are lines of their own)
    errors = [line for line in err.splitlines() if not line.startswith("sdcrisk: warning:")]
    assert code == 2 and fragment in err and len(errors) == 1


def test_cli_report_fail_above_checks_every_method(capsys, secret_csv, tmp_path):
    out = tmp_path / "r.html"
    code, _, err = _run(capsys, "report", str(secret_csv), "--keys", "region,job,age",
                        "--population-size", "40000", "--methods", "nb,skinner-elliot",
                        "--fail-above", "theta=0", "--out", str(out))
    assert code == 3 and out.exists()
    assert "(method nb)" in err and "(method skinner-elliot)" in err
