"""Typed use of the public API, checked by mypy (``[tool.mypy]`` in pyproject.toml), not run.

Were a public name invisible to type checkers (resolved only through the package's lazy
``__getattr__``), it and everything made from it would be ``Any``, and each ``assert_type``
below would fail ("Expression is of type Any"). pandas ships no types, so DataFrames are not
asserted.
"""

from __future__ import annotations

from typing import Any, assert_type

import numpy as np

import sdcrisk
from sdcrisk.analyses.evaluate import MethodEvaluation
from sdcrisk.core.base import ResultBase


def _usage() -> None:  # never called: mypy reads it
    md = sdcrisk.Microdata.from_source("example:uk_census2011", ["region", "sex"],
                                       population_size=56_075_912)
    assert_type(md, sdcrisk.Microdata)
    assert_type(md._repr_html_(), str)
    table = sdcrisk.tabulate(md)
    assert_type(table, sdcrisk.CellTable)
    n: int = table.n

    result = sdcrisk.NegativeBinomialRisk().fit(table)
    assert_type(result, sdcrisk.RiskResult)
    for cls in (sdcrisk.LogLinearRisk, sdcrisk.GraphicalRisk, sdcrisk.HdpRisk,
                sdcrisk.MixedMembershipRisk, sdcrisk.SkinnerElliotTheta):
        assert_type(cls().fit(table), sdcrisk.RiskResult)
    assert_type(sdcrisk.get_estimator("nb"), sdcrisk.Estimator)
    assert_type(sdcrisk.ESTIMATORS["nb"], type[sdcrisk.Estimator])
    assert_type(sdcrisk.PoissonGammaRisk(ci_level=0.9).fit(table), sdcrisk.RiskResult)
    assert_type(sdcrisk.AutoRisk().fit(table), sdcrisk.RiskResult)
    estimate: float | None = result.estimate("tau1")
    measure: sdcrisk.Measure = result.measures["tau2"]
    assert_type(result.to_json(indent=None), str)
    assert_type(result.to_dict(), dict[str, Any])
    assert_type(result._repr_html_(), str)
    assert_type(result.record_risk(), np.ndarray)
    base: ResultBase = result

    evaluation = sdcrisk.evaluate(md, ["nb"], design=sdcrisk.Bernoulli(0.1), seed=1)
    assert_type(evaluation, sdcrisk.Evaluation)
    assert_type(evaluation.methods["nb"], MethodEvaluation)

    vt = sdcrisk.validate(table, ["nb"])
    assert_type(vt, sdcrisk.ValidationTable)
    assert_type(vt.row_summary(vt.rows[0]), dict[str, Any])

    suda = sdcrisk.suda2(table)
    assert_type(suda, sdcrisk.SudaResult)
    pu = sdcrisk.population_uniqueness(table)
    assert_type(pu, sdcrisk.PopulationUniqueness)
    assert_type(pu.dankar, sdcrisk.UniquenessEstimate)

    rec = sdcrisk.recommend(md, sdcrisk.RiskTarget(value=1.0))
    assert_type(rec, sdcrisk.Recommendations)
    assert_type(rec.best, sdcrisk.Plan | None)

    domains = sdcrisk.DomainTable.from_microdata(md, domain="region",
                                                 class_definition="sex=1")
    decision = sdcrisk.decide(domains, l1="exp:10")
    assert_type(decision, sdcrisk.DomainDecision)
    assert_type(decision.curve, sdcrisk.TradeoffCurve)
    fit = sdcrisk.fit_beta_binomial([0, 1, 3], [10, 10, 12])
    assert_type(fit, sdcrisk.BetaBinomialFit)
    dt = sdcrisk.decision_table([(3, 8, 1)], sdcrisk.BetaBinomialPrior(1, 10), l1="exp:10")
    assert_type(dt, sdcrisk.DecisionTable)
    sens = sdcrisk.sensitivity([(3, 8, 1)], sdcrisk.BetaBinomialPrior(1, 10), l1="exp:10",
                               alternatives={})
    assert_type(sens, sdcrisk.LossSensitivity)

    assert_type(sdcrisk.tabulate_file("big.csv", ["region", "sex"]), sdcrisk.CellTable)
    del n, estimate, measure, base
