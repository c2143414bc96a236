"""The same sample, keys and options give the same figures whichever command, output format or
API entry reports them: assess (table, JSON, HTML), the Python result, report's page,
recommend's and protect's "before", evaluate with a given sample, the key-set scenarios and
the --fail-above gate. Rounding may differ where documented (assess and protect print 6
significant digits, the report 4); a value may not.

Real samples: 3% Bernoulli samples (numpy default_rng(0), as ../shared/data's ground truth
draws them) of uci_adult, skipped when ../shared/data is absent; small synthetic files for the
defects found, each named with its symptom."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from conftest import run_cli

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


def _report(capsys, tmp_path, *argv) -> str:
    page = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", *argv, "--no-suda", "--no-uniqueness",
                           "--contributions", "none", "--out", page)
    assert code == 0, err
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
