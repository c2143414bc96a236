"""One small, real instance of every result type (shared by tests/test_results.py).

Each builder runs the public function that makes the result on a tiny data set whose labels
include an HTML ``<script>`` tag, so that the notebook view can be checked for escaping.
"""

from __future__ import annotations

import warnings

import numpy as np

import sdcrisk

#: a category label that must come out escaped wherever a label is shown
SCRIPT = "<script>alert(1)</script>"


def frame(n: int = 300, seed: int = 3, ages: int = 6) -> dict:
    rng = np.random.default_rng(seed)
    area = rng.choice(np.array(["north", "south", SCRIPT]), n, p=[0.45, 0.35, 0.2])
    return {
        "area": area.astype(object),
        "age": rng.integers(0, ages, n),
        "sex": rng.integers(1, 3, n),
        "job": rng.choice(np.array(["a", "b", "c"]), n, p=[0.6, 0.3, 0.1]),
    }


def microdata(population_size: float = 6000) -> sdcrisk.Microdata:
    return sdcrisk.Microdata.from_source(frame(), ["area", "age", "sex", "job"],
                                         population_size=population_size)


def build() -> dict[str, object]:
    """Name -> instance, one per result type."""
    from sdcrisk.analyses.scenarios import assess_scenarios

    md = microdata()
    table = sdcrisk.tabulate(md)
    out: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["RiskResult"] = sdcrisk.NegativeBinomialRisk().fit(table)
        pop = sdcrisk.Microdata.from_source(frame(3000, 7, ages=60), ["area", "age", "sex"],
                                            population_size=3000)
        ev = sdcrisk.evaluate(pop, ["nb", "poisson-gamma"], design=sdcrisk.Bernoulli(0.1), seed=1)
        out["Evaluation"] = ev
        out["MethodEvaluation"] = ev.methods["nb"]
        out["ValidationTable"] = sdcrisk.validate(table, ["nb", "poisson-gamma"], replicates=2)
        types = [(3, 8, 1), (5, 20, 3)]
        prior = sdcrisk.BetaBinomialPrior(1, 10)
        dt = sdcrisk.decision_table(types, prior, l1="exp:10")
        out["DecisionTable"] = dt
        out["TradeoffCurve"] = dt.curve
        out["LossSensitivity"] = sdcrisk.sensitivity(
            types, prior, l1="exp:10", alternatives={"L0=1": ("exp:10", "one")})
        domains = sdcrisk.DomainTable.from_microdata(md, domain="area",
                                                     class_definition="job=c")
        out["DomainTable"] = domains
        out["BetaBinomialFit"] = sdcrisk.fit_beta_binomial(
            [0, 1, 3, 0, 2, 5, 0, 1], [10, 10, 12, 8, 10, 15, 9, 10])
        out["DomainDecision"] = sdcrisk.decide(domains, l1="exp:10", prior=prior)
        rec = sdcrisk.recommend(md, sdcrisk.RiskTarget(value=0.5), keys=["age", "area"])
        out["Recommendations"] = rec
        out["Plan"] = rec.plans[0]
        out["SudaResult"] = sdcrisk.suda2(table)
        pu = sdcrisk.population_uniqueness(table)
        out["PopulationUniqueness"] = pu
        out["UniquenessEstimate"] = pu.estimates["zayatz"]
        out["ScenarioReport"] = assess_scenarios(
            md, [("area", "age"), ("age", "sex", "job")], method="nb", executor="serial")
    return out
