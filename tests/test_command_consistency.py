"""The same sample, keys and options give the same figures whichever command, output format or
API entry reports them: assess (table, JSON, HTML), the Python result, report's page,
recommend's and protect's "before", evaluate with a given sample, the key-set scenarios and
the --fail-above gate. Rounding may differ where documented (assess and protect print 6
significant digits, the report 4); a value may not.

Real samples: 3% Bernoulli samples (numpy default_rng(0), as ../shared/data's ground truth
draws them) of uci_adult, skipped when ../shared/data is absent; small synthetic files for the
defects found, each named with its symptom."""

from __future__ import annotations

import html as html_text
import json
import re

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli
from sdcrisk.report.formats import fmt  # the page's 4 significant digits

KS6 = "age,sex,race,marital_status,education,native_country"
KS8 = KS6 + ",workclass,occupation"
ADULT_N = 48_842


def _json(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _cards(html: str) -> dict[str, str]:
    """The headline cards of a report page: figure -> text shown."""
    return dict(re.findall(r'data-figure="([^"]+)">([^<]*)<', html))


def _report(capsys, tmp_path, *argv, code: int = 0) -> str:
    page = tmp_path / "r.html"
    got, _, err = run_cli(capsys, "report", *argv, "--no-suda", "--no-uniqueness",
                          "--contributions", "none", "--out", page)
    assert got == code, err
    return page.read_text(encoding="utf-8")


# --- sample uniques with --wildcard-alpha below 1 ---------------------------------------------
# a, b: records 0-2 share (1, 1); record 3 (1, missing) matches them and record 5; record 4
# (2, 2) is alone; record 5 (1, 2) is matched only by record 3, which counts alpha = 0.5 for
# it: fk = 1.5. Record 5 violates 2-anonymity (fk < 2) but is no sample unique (another record
# matches it); the models' tau1 and tau2 sum over record 4 alone.
ALPHA = pd.DataFrame({"a": [1, 1, 1, 1, 2, 1], "b": [1, 1, 1, None, 2, 2]})
ALPHA_OPTS = ("--keys", "a,b", "--population-size", "60", "--missing", "wildcard",
              "--wildcard-alpha", "0.5")


def test_sample_uniques_below_alpha_one_are_the_records_tau_sums_over(tmp_path, capsys):
    # assess printed "sample uniques 2" (the k=2 violations) next to P(PU|SU) = tau1 / 1, on
    # uci_adult's 3% sample with KS8 "sample uniques 1,206" where P(PU|SU) = tau1 / 1,158
    from sdcrisk import Microdata, NegativeBinomialRisk, tabulate
    from sdcrisk.analyses.scenarios import assess_scenarios

    path = tmp_path / "s.csv"
    ALPHA.to_csv(path, index=False)
    nb = ("--method", "nb", "--mode", "sdcmicro")
    d = _json(capsys, "assess", path, *ALPHA_OPTS, *nb)
    m = d["measures"]
    assert d["sample_uniques"] == 1
    assert m["tau1"]["estimate"] / m["p_pu_given_su"]["estimate"] == pytest.approx(1)
    assert d["k_anonymity_violations"]["2"] == 2  # fk < 2, sdcMicro's count: unchanged
    code, out, err = run_cli(capsys, "assess", path, *ALPHA_OPTS, *nb)
    assert code == 0, err
    assert "sample uniques 1\n" in out and "k=2: 2," in out
    html = _report(capsys, tmp_path, path, *ALPHA_OPTS, "--methods", "nb", "--mode", "sdcmicro")
    assert _cards(html)["sample_uniques"] == "1"
    rec = _json(capsys, "recommend", path, *ALPHA_OPTS, *nb, "--target", "100")
    assert rec["measures_before"]["sample_uniques"] == 1
    code, _, err = run_cli(capsys, "assess", path, *ALPHA_OPTS, *nb, "--fail-above",
                           "sample_uniques=0")
    assert code == 3 and "sample_uniques = 1 exceeds" in err
    md = Microdata.from_source(path, ["a", "b"], population_size=60, missing="wildcard",
                               wildcard_alpha=0.5)
    rows = assess_scenarios(md, [["a", "b"]], options={"mode": "sdcmicro"}).rows
    assert rows[0]["sample_uniques"] == 1 and rows[0]["k2_violations"] == 2
    assert NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md)).sample_uniques == 1


# --- the reading options every command takes: --wildcard-alpha, --levels --------------------
def _before_after(page: str) -> dict[str, tuple[str, str]]:
    """The report's before/after table: figure -> (original, protected) as shown."""
    part = page[page.index("Before and after protection"):]
    cell = r"<td[^>]*>([^<]*)</td>"
    return {html_text.unescape(m[0]): (m[1], m[2])
            for m in re.findall(r"<tr>" + cell * 4 + "</tr>", part)}


def test_key_sets_read_missing_values_with_the_wildcard_alpha_given(tmp_path, capsys):
    # --key-sets / --all-subsets-up-to dropped --wildcard-alpha: on uci_adult's 3% sample the
    # key set age+occupation (--wildcard-alpha 0.5) had 74 sample uniques and ER 19.97 in the
    # ranking, 116 and 22.57 when assessed alone
    path, sets = tmp_path / "s.csv", tmp_path / "sets.txt"
    ALPHA.to_csv(path, index=False)
    sets.write_text("both: a,b\n")
    opts = (*ALPHA_OPTS, "--method", "nb", "--mode", "sdcmicro")
    alone = _json(capsys, "assess", path, *opts)
    ranked = _json(capsys, "assess", path, *opts, "--key-sets", sets, "--workers", "1")
    row = ranked["scenarios"][0]
    assert row["measures"]["expected_reidentifications"]["estimate"] == pytest.approx(
        alone["measures"]["expected_reidentifications"]["estimate"], rel=1e-12)
    assert row["sample_uniques"] == alone["sample_uniques"]
    assert row["k3_violations"] == alone["k_anonymity_violations"]["3"]


def test_population_files_are_read_with_the_wildcard_alpha_given(tmp_path, capsys):
    # report --population and evaluate read the sample (and the population) with alpha 1
    # whatever --wildcard-alpha said: on uci_adult's 3% sample the page's ER was 130.9 with
    # --wildcard-alpha 0.5, where assess and report without --population said 132.5
    sample, pop = tmp_path / "s.csv", tmp_path / "pop.csv"
    ALPHA.to_csv(sample, index=False)
    pd.concat([ALPHA, ALPHA.assign(a=ALPHA["a"] + 2)] * 5).to_csv(pop, index=False)
    for alpha in ("0.5", "0"):  # 0: record 5 (fk = 1) becomes a sample unique
        opts = ("--keys", "a,b", "--missing", "wildcard", "--wildcard-alpha", alpha)
        nb = ("--mode", "sdcmicro")
        d = _json(capsys, "assess", sample, *opts, "--population-size", "60", "--method", "nb",
                  *nb)
        html = _report(capsys, tmp_path, sample, *opts, "--population", pop,
                       "--methods", "nb", *nb)
        cards = _cards(html)
        assert cards["expected_reidentifications"] == fmt(
            d["measures"]["expected_reidentifications"]["estimate"])
        assert cards["sample_uniques"] == str(d["sample_uniques"])
        ev = _json(capsys, "evaluate", pop, *opts, "--sample", sample, "--methods", "nb", *nb)
        assert ev["estimates"]["nb"]["tau1"] == pytest.approx(
            d["measures"]["tau1"]["estimate"], rel=1e-12)


def test_report_reads_the_protected_file_as_assess_does(tmp_path, capsys):
    # report --protected read the protected file without --levels (and --wildcard-alpha): on
    # uci_adult's 3% sample, KS8 with --levels (every category of the population) and
    # poisson-gamma, the page showed tau1 changed by -0.003123 after a protection that
    # changed no count (K 368,402,580 for the protected file, 1,041,012,000 declared)
    orig, prot, lev = tmp_path / "o.csv", tmp_path / "p.csv", tmp_path / "lev.json"
    rows = pd.DataFrame({"a": [1, 1, 2, 2, 3, 4, 5, 5], "b": [1, 2, 1, 1, 2, 1, 2, 2]})
    rows.to_csv(orig, index=False)
    rows.assign(a=[1, 1, 2, 2, 3, None, 5, 5]).to_csv(prot, index=False)  # 4 suppressed
    lev.write_text(json.dumps({"a": [1, 2, 3, 4, 5, 6, 7], "b": [1, 2, 3]}))
    opts = ("--keys", "a,b", "--population-size", "800", "--levels", lev)
    for method in ("poisson-gamma", "nb --mode sdcmicro --missing wildcard "
                                    "--wildcard-alpha 0.5"):
        name, *extra = method.split()
        want = [_json(capsys, "assess", f, *opts, "--method", name, *extra)
                for f in (orig, prot)]
        html = _report(capsys, tmp_path, orig, *opts, "--methods", name, *extra,
                       "--protected", prot)
        shown = _before_after(html)
        tau1 = shown["tau1: sample uniques that are population unique"]
        assert tau1 == tuple(fmt(w["measures"]["tau1"]["estimate"]) for w in want)
        er = shown["Expected re-identifications (sdcMicro global_risk_ER)"]
        assert er == tuple(fmt(w["measures"]["expected_reidentifications"]["estimate"])
                           for w in want)


def test_report_before_after_sample_uniques_are_the_cards(tmp_path, capsys):
    # the before/after table counted sample uniques as the 2-anonymity violations: with
    # --wildcard-alpha 0.5 it said 2 where the card above it (and assess) said 1
    orig, prot = tmp_path / "o.csv", tmp_path / "p.csv"
    ALPHA.to_csv(orig, index=False)
    ALPHA.assign(b=[1, 1, 1, None, None, 2]).to_csv(prot, index=False)
    html = _report(capsys, tmp_path, orig, *ALPHA_OPTS, "--methods", "nb", "--mode",
                   "sdcmicro", "--protected", prot)
    want = [_json(capsys, "assess", f, *ALPHA_OPTS, "--method", "nb", "--mode", "sdcmicro")
            for f in (orig, prot)]
    shown = _before_after(html)
    assert shown["sample uniques (f = 1)"] == tuple(str(w["sample_uniques"]) for w in want)
    assert shown["records violating 2-anonymity (f < 2)"] == tuple(
        str(w["k_anonymity_violations"]["2"]) for w in want)
    assert _cards(html)["sample_uniques"] == str(want[0]["sample_uniques"])


def test_fail_above_is_not_ignored_by_key_sets(tmp_path, capsys):
    # assess --all-subsets-up-to 2 --fail-above tau2=1 printed a ranking with tau2 4.08 and
    # exited 0: the limit was never checked
    path = tmp_path / "s.csv"
    pd.DataFrame({"a": range(40), "b": [i % 3 for i in range(40)]}).to_csv(path, index=False)
    for how in (("--all-subsets-up-to", "2"), ("--key-sets", tmp_path / "sets.txt")):
        (tmp_path / "sets.txt").write_text("a,b\n")
        code, out, err = run_cli(capsys, "assess", path, "--keys", "a,b", "--population-size",
                                 "400", "--method", "nb", *how, "--workers", "1",
                                 "--fail-above", "tau2=1")
        assert code == 2 and out == ""
        assert f"--fail-above checks the figures of one key set; {how[0]} ranks many" in err


# --- --fail-above: the figure printed and the limit read as the exit code judged --------------
def test_a_breach_prints_the_figure_above_its_limit(tmp_path, capsys):
    # with the limit typed as assess prints the figure (6 digits), the gate failed with
    # "tau2 = 80.6218 exceeds the limit 80.6218" and the page said "fails tau2 ≤ 80.62: 80.62"
    # (uci_adult's 3% sample, nb)
    path = tmp_path / "s.csv"
    rng = np.random.default_rng(1)
    pd.DataFrame({"a": rng.integers(0, 30, 300), "b": rng.integers(0, 4, 300)}).to_csv(
        path, index=False)
    opts = ("--keys", "a,b", "--population-size", "7000", "--method", "nb")
    d = _json(capsys, "assess", path, *opts)
    checked = 0
    for name in ("tau1", "tau2", "expected_reidentifications", "p_pu_given_su", "theta"):
        value = d["measures"][name]["estimate"]
        limit = float(f"{value:.6g}")  # the figure as assess prints it
        if not value > limit:
            continue
        checked += 1
        code, _, err = run_cli(capsys, "assess", path, *opts, "--fail-above", f"{name}={limit}")
        assert code == 3
        shown, given = re.search(rf"{name} = (\S+) exceeds the limit (\S+) ", err).groups()
        assert float(shown) > float(given) == limit
        page = _report(capsys, tmp_path, path, *[o if o != "--method" else "--methods"
                                                for o in opts], "--fail-above",
                       f"{name}={limit}", code=3)
        shown_limit, shown_value = re.search(
            rf"fails {name.replace('_', ' ')} ≤ ([\d.,e-]+): ([\d.,e-]+)", page).groups()
        assert float(shown_value.replace(",", "")) > float(shown_limit.replace(",", "")) == limit
        # a limit above the figure passes
        above = float(f"{value:.5g}") if float(f"{value:.5g}") > value else limit * 1.001
        code, _, err = run_cli(capsys, "assess", path, *opts, "--fail-above", f"{name}={above}")
        assert code == 0, err
    assert checked >= 2
