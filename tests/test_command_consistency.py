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

from conftest import run_cli, shared_data
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


# --- real samples: every output of one fit -----------------------------------------------------
@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    """uci_adult's 3% Bernoulli sample (default_rng(0), 1,448 records) with a weight column
    ``w`` (N / n times U(0.5, 1.5), default_rng(1)): ``codes.csv`` as released (-1 a
    category), ``missing.csv`` with -1 read as missing; and ``pop.csv``, the population with
    -1 as missing, ``levels.json`` its categories of KS8."""
    pop = pd.read_csv(shared_data("uci_adult", "uci_adult.csv.gz"))
    folder = tmp_path_factory.mktemp("adult")
    sample = pop[np.random.default_rng(0).random(len(pop)) < 0.03].copy()
    sample["w"] = len(pop) / len(sample) * np.random.default_rng(1).uniform(0.5, 1.5,
                                                                            len(sample))
    sample.to_csv(folder / "codes.csv", index=False)
    sample.replace(-1, np.nan).to_csv(folder / "missing.csv", index=False)
    pop.replace(-1, np.nan).to_csv(folder / "pop.csv", index=False)
    (folder / "levels.json").write_text(json.dumps(
        {k: sorted(pop[k].unique().tolist()) for k in KS6.split(",")}))
    return folder


def _fit_api(path, keys, size, method, options, **read):
    from sdcrisk import Microdata, get_estimator, tabulate

    md = Microdata.from_source(str(path), keys.split(","), **size, **read)
    return get_estimator(method, **options).fit(tabulate(md)).to_dict()


def _six(x) -> str:
    """A figure as assess's table prints it (6 significant digits)."""
    return "-" if x is None else f"{x:.6g}"


METHODS = [("nb", ()), ("nb", ("--mode", "sdcmicro")), ("poisson-gamma", ()),
           ("pitman-yor", ()), ("graphical", ()), ("auto", ())]


@pytest.mark.parametrize("weighted", [False, True], ids=["N", "weights"])
@pytest.mark.parametrize(("method", "extra"), METHODS, ids=[" ".join((m, *e)) for m, e in METHODS])
def test_one_sample_gives_one_set_of_figures(adult, tmp_path, capsys, method, extra, weighted):
    data = adult / "codes.csv"
    size = ("--weights", "w") if weighted else ("--population-size", str(ADULT_N))
    opts = ("--keys", KS6, *size, *extra)
    d = _json(capsys, "assess", data, *opts, "--method", method)
    est = {k: m["estimate"] for k, m in d["measures"].items()}
    su, kav = d["sample_uniques"], d["k_anonymity_violations"]
    assert su == kav["2"]  # no missing values: f < 2 is f = 1
    # the Python API: the same result, to the last bit
    options = dict(zip(extra[::2], extra[1::2], strict=True))
    options = {k.lstrip("-"): v for k, v in options.items()}
    if method in ("pitman-yor", "graphical", "auto"):
        options["random_state"] = 0  # --seed's default
    api = _fit_api(data, KS6, {"weights": "w"} if weighted else {"population_size": ADULT_N},
                   method, options)
    assert api["measures"] == d["measures"]
    assert (api["sample_uniques"], api["k_anonymity_violations"]) == (su, kav)
    # assess's table: 6 significant digits of the same figures
    code, text, err = run_cli(capsys, "assess", data, *opts, "--method", method)
    assert code == 0, err
    for name, m in d["measures"].items():
        assert re.search(rf"^{name} +{re.escape(_six(m['estimate']))} +"
                         rf"{re.escape(_six(m['lower']))} +{re.escape(_six(m['upper']))}$",
                         text, re.M), name
    assert f"sample uniques {su:,}\n" in text
    assert f"k=2: {kav['2']:,}, k=3: {kav['3']:,}, k=5: {kav['5']:,}" in text
    # the report's cards: 4 significant digits of the same figures
    cards = _cards(_report(capsys, tmp_path, data, *opts, "--methods", method))
    for name in ("tau1", "tau2", "theta", "expected_reidentifications"):
        assert cards[name] == fmt(est[name]), name
    assert (cards["sample_uniques"], cards["k3_violations"]) == (fmt(su), fmt(kav["3"]))
    # recommend's figures before any change
    before = _json(capsys, "recommend", data, *opts, "--method", method, "--target", "1e9",
                   "--actions", "suppression")["measures_before"]
    assert before == {"objective": est["tau2"], "tau1": est["tau1"], "tau2": est["tau2"],
                      "expected_reidentifications": est["expected_reidentifications"],
                      "sample_uniques": su}
    # protect's "before" when nothing needs changing: the figures and intervals of assess
    # (protect counts missing values as wildcards, so nb --mode sdcmicro sums its cells one
    # by one, not grouped by count as assess does here: equal to the last few bits)
    prot = _json(capsys, "protect", data, *opts, "--method", method, "--target", "tau2=1e9",
                 "--out", tmp_path / "p.csv")["risk_before"]
    for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
        assert prot[name] == pytest.approx(est[name], rel=1e-13), name
        if d["measures"][name]["lower"] is not None:
            assert prot["intervals"][name] == pytest.approx(
                {k: d["measures"][name][k] for k in ("lower", "upper")}, rel=1e-13)
    assert prot["record_risk_threshold"] == pytest.approx(
        d["thresholds"]["record_risk_threshold"], rel=1e-13)
    # the gate: exit 3 exactly when the figure shown exceeds the limit
    for limit, want in ((su, 0), (su - 1, 3)):
        code, _, err = run_cli(capsys, "assess", data, *opts, "--method", method,
                               "--fail-above", f"sample_uniques={limit}")
        assert code == want, err


@pytest.mark.parametrize("weighted", [False, True], ids=["N", "weights"])
def test_missing_values_as_wildcards_in_every_output(adult, tmp_path, capsys, weighted):
    # KS8 with -1 read as missing (2,799 workclass, 2,809 occupation, 857 native_country in
    # the population): nb --mode sdcmicro on wildcard counts in assess, its table, the report,
    # recommend and protect; protect --k-anonymity 3 counts its violations as assess does
    data, out = adult / "missing.csv", tmp_path / "p.csv"
    size = ("--weights", "w") if weighted else ("--population-size", str(ADULT_N))
    opts = ("--keys", KS8, *size, "--mode", "sdcmicro", "--missing", "wildcard")
    d = _json(capsys, "assess", data, *opts, "--method", "nb")
    est = {k: m["estimate"] for k, m in d["measures"].items()}
    su, kav = d["sample_uniques"], d["k_anonymity_violations"]
    assert su == kav["2"] and d["patterns_with_missing_values"] > 0
    code, text, err = run_cli(capsys, "assess", data, *opts, "--method", "nb")
    assert code == 0, err
    assert (f"(and {d['patterns_with_missing_values']:,} patterns with missing values); "
            f"sample uniques {su:,}\n") in text
    assert f"k=2: {kav['2']:,}, k=3: {kav['3']:,}, k=5: {kav['5']:,}" in text
    cards = _cards(_report(capsys, tmp_path, data, *opts, "--methods", "nb"))
    assert [cards[k] for k in ("tau2", "expected_reidentifications", "sample_uniques",
                               "k3_violations")] == [fmt(est["tau2"]),
                                                     fmt(est["expected_reidentifications"]),
                                                     fmt(su), fmt(kav["3"])]
    before = _json(capsys, "recommend", data, *opts, "--method", "nb", "--target", "1e9",
                   "--actions", "suppression")["measures_before"]
    assert (before["tau2"], before["sample_uniques"]) == (est["tau2"], su)
    p = _json(capsys, "protect", data, *opts[:-2], "--method", "nb", "--k-anonymity", "3",
              "--out", out)
    assert p["k_violations_before"] == kav["3"] and p["k_violations_after"] == 0
    assert p["risk_before"]["tau2"] == pytest.approx(est["tau2"], rel=1e-13)
    after = _json(capsys, "assess", out, *opts, "--method", "nb")
    assert after["k_anonymity_violations"]["3"] == 0
    for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
        assert p["risk_after"][name] == pytest.approx(
            after["measures"][name]["estimate"], rel=1e-13, abs=1e-300), name


def test_protect_gives_each_methods_own_figures_as_assess_does(adult, tmp_path, capsys):
    # a method that cannot count suppressed values as wildcards: protect's own figures of it
    # (missing values as a category) are assess's, on the input and on the file written
    data, out = adult / "missing.csv", tmp_path / "p.csv"
    opts = ("--keys", KS8, "--population-size", str(ADULT_N), "--method", "pitman-yor")
    p = _json(capsys, "protect", data, *opts, "--k-anonymity", "2", "--out", out)
    own = p["risk_missing_as_category"]
    for side, path in (("before", data), ("after", out)):
        d = _json(capsys, "assess", path, *opts)
        for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
            assert own[side][name] == d["measures"][name]["estimate"], (side, name)
        assert own[side]["record_risk_threshold"] == d["thresholds"]["record_risk_threshold"]


def test_a_given_sample_against_its_population(adult, tmp_path, capsys):
    # evaluate --sample S --population P and report S --population P read S with P's levels
    # (documented): their estimates are assess's with those levels (--levels), and N = |P|
    data, pop = adult / "codes.csv", shared_data("uci_adult", "uci_adult.csv.gz")
    for method in ("nb", "poisson-gamma", "graphical", "auto"):
        d = _json(capsys, "assess", data, "--keys", KS6, "--population-size", str(ADULT_N),
                  "--levels", adult / "levels.json", "--method", method)
        ev = _json(capsys, "evaluate", pop, "--keys", KS6, "--sample", data, "--methods",
                   method)
        assert ev["truth"]["n"] == d["n"] and ev["cell_space"] == d["cell_space"]
        for name in ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta"):
            assert ev["estimates"][method][name] == d["measures"][name]["estimate"], name
        cards = _cards(_report(capsys, tmp_path, data, "--keys", KS6, "--population", pop,
                               "--methods", method))
        assert [cards[k] for k in ("tau1", "tau2", "sample_uniques")] == [
            fmt(d["measures"]["tau1"]["estimate"]), fmt(d["measures"]["tau2"]["estimate"]),
            fmt(d["sample_uniques"])]
    # the truth of the ground-truth table (../shared/data/uci_adult/ground_truth.md)
    assert (ev["truth"]["sample_uniques"], ev["truth"]["tau1"]) == (750, 212)
    assert ev["truth"]["tau2"] == pytest.approx(308.5, abs=0.05)


@pytest.mark.parametrize("extra", [("--population-size", str(ADULT_N), "--method", "auto"),
                                   ("--weights", "w", "--method", "pitman-yor"),
                                   ("--population-size", str(ADULT_N), "--method", "nb",
                                    "--mode", "sdcmicro", "--missing", "wildcard",
                                    "--wildcard-alpha", "0.5")],
                         ids=["auto", "pitman-yor weights", "nb wildcard alpha"])
def test_each_key_set_of_a_ranking_is_its_own_assessment(adult, capsys, extra):
    data = adult / "missing.csv"
    keys = "age,sex,workclass,occupation"
    ranked = _json(capsys, "assess", data, "--keys", keys, *extra, "--all-subsets-up-to", "2",
                   "--workers", "1")["scenarios"]
    assert len(ranked) == 10
    for row in ranked[:4]:
        d = _json(capsys, "assess", data, "--keys", ",".join(row["keys"]), *extra,
                  "--seed", str(row["seed"]) if row["seed"] is not None else "0")
        for name in ("tau1", "tau2", "expected_reidentifications"):
            assert row["measures"][name]["estimate"] == pytest.approx(
                d["measures"][name]["estimate"], rel=1e-12), (row["keys"], name)
        assert row["sample_uniques"] == d["sample_uniques"]
        assert [row[f"k{k}_violations"] for k in (2, 3, 5)] == [
            d["k_anonymity_violations"][k] for k in "235"]


def test_streamed_and_html_assessments_are_the_in_memory_ones(adult, capsys):
    data = adult / "codes.csv"
    for method in ("nb", "auto"):
        opts = ("--keys", KS6, "--population-size", str(ADULT_N), "--method", method)
        d = _json(capsys, "assess", data, *opts)
        streamed = _json(capsys, "assess", data, *opts, "--out-of-core")
        assert streamed["measures"] == d["measures"]
        assert (streamed["sample_uniques"], streamed["k_anonymity_violations"]) == (
            d["sample_uniques"], d["k_anonymity_violations"])
        code, page, err = run_cli(capsys, "assess", data, *opts, "--format", "html")
        assert code == 0, err
        cards = _cards(page)
        assert [cards[k] for k in ("tau2", "tau1", "sample_uniques")] == [
            fmt(d["measures"]["tau2"]["estimate"]), fmt(d["measures"]["tau1"]["estimate"]),
            fmt(d["sample_uniques"])]


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


def test_provenance_names_the_seed_the_method_used(tmp_path, capsys):
    # assess --format json wrote provenance seed 0 for nb, which draws no random numbers,
    # where the Python result and the report's provenance say none (None, "–")
    from sdcrisk import Microdata, get_estimator, tabulate

    path = tmp_path / "s.csv"
    pd.DataFrame({"a": [i % 7 for i in range(60)], "b": [i % 5 for i in range(60)]}).to_csv(
        path, index=False)
    md = Microdata.from_source(str(path), ["a", "b"], population_size=600)
    for method, seed in (("nb", None), ("graphical", 3)):
        opts = ("--keys", "a,b", "--population-size", "600", "--seed", "3")
        d = _json(capsys, "assess", path, *opts, "--method", method)
        options = {} if seed is None else {"random_state": seed}
        api = get_estimator(method, **options).fit(tabulate(md)).to_dict()
        assert d["provenance"]["seed"] == api["provenance"]["seed"] == seed
        page = _report(capsys, tmp_path, path, *opts, "--methods", method)
        assert f"<dt>seed</dt><dd>{'–' if seed is None else seed}</dd>" in page


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_per_category_sample_uniques_are_the_cards(adult, alpha):
    # under --missing wildcard the report's "Per category" table counted sample-unique records
    # on the exact cells (a pattern with a missing value alone in its pattern counted unique):
    # on uci_adult's 3% sample (KS8) the categories of sex held 433 + 802 = 1,235 of them
    # beside the card's 1,158; on the 6-record file 3 beside 1
    from sdcrisk import Microdata, NegativeBinomialRisk, tabulate
    from sdcrisk.report.contributions import category_contributions

    for data, keys, n1 in ((ALPHA, ["a", "b"], 1),
                           (str(adult / "missing.csv"), KS8.split(","), None)):
        md = Microdata.from_source(data, keys, population_size=ADULT_N, missing="wildcard",
                                   wildcard_alpha=alpha)
        res = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
        assert n1 is None or res.sample_uniques == n1
        rows, _ = category_contributions(res, min_count=1)
        for key in keys:
            assert rows.loc[rows["key"] == key, "sample_uniques"].sum() == res.sample_uniques
        assert rows["su_share"].max() <= 1


def test_report_codes_the_protected_file_on_the_populations_categories(tmp_path, capsys):
    # with --population the sample is coded on the population's categories and the
    # protected file was coded on its own: a copy of uci_adult's 3% sample showed
    # poisson-gamma's tau1 40.75 before and 40.72 after a "protection" that changed nothing
    sample, copy, pop = tmp_path / "s.csv", tmp_path / "copy.csv", tmp_path / "pop.csv"
    rows = pd.DataFrame({"a": [1, 1, 2, 2, 3, 4, 5, 5], "b": [1, 2, 1, 1, 2, 1, 2, 2]})
    rows.to_csv(sample, index=False)
    rows.to_csv(copy, index=False)
    pd.concat([rows.assign(a=rows["a"] + 3 * i, b=rows["b"] + i) for i in range(4)]).to_csv(
        pop, index=False)
    opts = ("--keys", "a,b", "--population", pop, "--methods", "poisson-gamma")
    shown = _before_after(_report(capsys, tmp_path, sample, *opts, "--protected", copy))
    for figure in ("tau1: sample uniques that are population unique",
                   "tau2: expected correct matches of sample uniques",
                   "Expected re-identifications (sdcMicro global_risk_ER)"):
        before, after = shown[figure]
        assert before == after, figure
    ev = _json(capsys, "evaluate", pop, "--keys", "a,b", "--sample", copy, "--methods",
               "poisson-gamma")
    assert shown["tau1: sample uniques that are population unique"][1] == fmt(
        ev["estimates"]["poisson-gamma"]["tau1"])
    # a protected file with a category the population lacks (a recode's new label) and
    # suppressed values is still read: its own categories come after the population's
    rows.assign(a=["1-2", "1-2", "1-2", "1-2", 3, 4, None, 5]).to_csv(copy, index=False)
    _report(capsys, tmp_path, sample, *opts, "--protected", copy)


def test_a_sample_with_suppressions_against_its_population_says_why(tmp_path, capsys):
    """evaluate, report and decide against a population refuse a sample holding missing
    values the population lacks (a protected file's suppressions) in the command line's
    words: they said "build the sample with levels=population.levels", an API remedy."""
    pop = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 1, 2], "b": [1, 2, 1, 2, 1, 2, 2, 1]})
    pop.to_csv(tmp_path / "pop.csv", index=False)
    sample = pop.iloc[:4].astype(float)
    sample.loc[1, "a"] = np.nan  # suppressed
    sample.to_csv(tmp_path / "prot.csv", index=False)
    for argv in (("evaluate", tmp_path / "pop.csv", "--sample", tmp_path / "prot.csv",
                  "--keys", "a,b", "--methods", "nb"),
                 ("report", tmp_path / "prot.csv", "--population", tmp_path / "pop.csv",
                  "--keys", "a,b", "--method", "nb", "--out", tmp_path / "r.html"),
                 ("decide", tmp_path / "prot.csv", "--population", tmp_path / "pop.csv",
                  "--domain", "a", "--class", "b=1", "--l1", "exp:1")):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2, argv[0]
        assert "key 'a' has missing values" in err and "pop.csv' has none" in err, err
        assert "levels=population.levels" not in err
