"""evaluate --methods with per-method options and interval coverage (issue 17 item 6)."""

from __future__ import annotations

import json

import pytest

from sdcrisk import Bernoulli, Microdata, ParameterError, evaluate
from sdcrisk.cli import main
from sdcrisk.cli.evaluate import split_method_specs


def test_split_method_specs():
    specs = split_method_specs("nb, loglinear:terms=search,max_added_terms=5 ,graphical:"
                               "prior_weight=50,auto")
    assert [c.label for c in specs] == ["nb", "loglinear(max_added_terms=5, terms=search)",
                                       "graphical(prior_weight=50)", "auto"]
    assert dict(specs[1].options) == {"terms": "search", "max_added_terms": 5}
    with pytest.raises(ParameterError, match="no option 'bogus'"):
        split_method_specs("nb:bogus=1")
    with pytest.raises(ParameterError, match="unknown method .nope.; available: .*, auto$"):
        split_method_specs("nope")


def test_cli_variants_of_one_method_and_coverage(capsys):
    assert main(["evaluate", "example:uk_census2011", "--keys", "region,sex,age_band,"
                 "marital_status", "--fraction", "0.1", "--methods",
                 "graphical,graphical:prior_weight=50,nb", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    est = out["estimates"]
    assert list(est) == ["graphical", "graphical(prior_weight=50)", "nb"]
    assert est["graphical"]["tau1"] != est["graphical(prior_weight=50)"]["tau1"]
    truth = out["truth"]
    md = Microdata.from_source("example:uk_census2011",
                               keys="region,sex,age_band,marital_status")
    ev = evaluate(md, ["nb"], design=Bernoulli(0.1), seed=0)
    m = ev.methods["nb"]
    for k in ("tau1", "tau2"):
        meas = m.result.measures[k]
        assert m.covered[k] == (meas.lower <= truth[k] <= meas.upper)
        assert est["nb"]["interval_covers_truth"][k] == m.covered[k]
    assert main(["evaluate", "example:uk_census2011", "--keys", "region,sex,age_band,"
                 "marital_status", "--fraction", "0.1", "--methods", "nb,pitman-yor"]) == 0
    text = capsys.readouterr().out
    assert "interval holds truth" in text and "pitman-yor" in text
