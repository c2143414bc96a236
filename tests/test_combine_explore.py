"""benchmarks/combine_explore.py (issue 17): its re-implementation of the shipped rule must
give calibrate_auto.py's leave-one-population-out figures, and no variant may read the truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import benchmark_module

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
CORPUS = BENCH / "corpus.csv"

pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason="benchmarks/corpus.csv absent")


@pytest.fixture(scope="module")
def ce():
    return benchmark_module("combine_explore")


@pytest.fixture(scope="module")
def full(ce):
    return ce.ca.usable(ce.ca.load(CORPUS), ce.FULL)


@pytest.mark.parametrize(("variant", "shrink"), [("shrink-g50", True), ("shipped", False)])
def test_variant_reproduces_calibrate_auto(ce, full, variant, shrink):
    """Same estimates and intervals, case by case, as calibrate_auto.lopo (to 1e-9) without
    the record map: the rule shipped 2026-11-24 (the variant `shrink-g50`, blended with
    graphical(prior_weight=50)'s own figure) and the one shipped before it (`shipped`,
    calibrate_auto without the blend). The rule shipped since 2026-11-25 adds the record map
    (tests/test_record_map.py)."""
    ref = ce.ca.lopo(full, ce.FULL, shrink_to_g50=shrink)
    res, _ = ce.lopo_variant(full, ce.by_name(variant), nested=False)
    for m in ("tau1", "tau2"):
        for i, suf in enumerate(("", "_lo", "_hi")):
            np.testing.assert_allclose(res[m][i], ref[f"auto:{m}{suf}"].to_numpy(float),
                                       rtol=1e-9)


def test_no_variant_feature_reads_the_truth(ce, full):
    """Every feature group is unchanged when the truth and population columns are scrambled."""
    groups = ("width", "diff", "ratios", "inter", "square", "cross", "fitted", "spread")
    scrambled = full.copy()
    rng = np.random.default_rng(0)
    for col in [c for c in full.columns if c.startswith(("true_", "pop_"))]:
        scrambled[col] = rng.permutation(scrambled[col].to_numpy())
    scrambled["population"] = "x"
    for m in ("tau1", "tau2"):
        a = ce.feature_frame(full, m, groups)
        b = ce.feature_frame(scrambled, m, groups)
        assert list(a.columns) == list(b.columns) and len(a.columns) > 30
        np.testing.assert_array_equal(a.to_numpy(float), b.to_numpy(float))


@pytest.mark.parametrize("grid", [(0.5,), (0.25,), (0.0, 0.25, 0.5, 0.75, 1.0)])
def test_blend_with_graphical50_ships_as_plain_coefficients(ce, monkeypatch, grid):
    """calibrate_auto.fit_model's blend a * model + (1 - a) * log(g50 / SU) is stored as one
    linear model in the standardised features (what the runtime applies): the stored
    coefficients must predict the blend itself, for weights strictly inside (0, 1) (the
    grid held to one value) and for the weight the shipped grid picks on hand-made data."""
    ca = ce.ca
    monkeypatch.setattr(ca, "SHRINK_GRID", grid)
    rng = np.random.default_rng(3)
    n = 240
    pops = np.repeat(np.array(["a", "b", "c"]), n // 3)
    g50 = rng.uniform(-3.0, -0.2, n)
    other = rng.normal(0.0, 1.0, n)
    y = np.minimum(g50 + 0.05 * rng.normal(size=n), 0.0)
    y[pops == "a"] -= 0.3   # the model learns a shift that the other populations do not share
    x = np.column_stack([other, g50])
    names = ["other", f"log_{ca.SHRINK_TOWARDS}"]
    sx = np.column_stack([np.log(rng.uniform(0.01, 0.1, n)), rng.uniform(3, 8, n)])
    blended = ca.fit_model(x, y, pops, sx, names, ca.SCALE_FEATURES)
    plain = ca.fit_model(x, y, pops, sx, names, ca.SCALE_FEATURES, shrink_to_g50=False)
    a = blended["shrink"]["alpha"]
    assert a in grid and "shrink" not in plain
    as_arrays = {k: np.asarray(v) for k, v in plain.items() if isinstance(v, list)}
    want = np.minimum(a * (np.column_stack([np.ones(n), np.clip(
        (x - as_arrays["mean"]) / as_arrays["sd"], -6, 6)]) @ as_arrays["coef"])
        + (1 - a) * g50, 0.0)
    got = ca.predict_lin({k: np.asarray(v) if isinstance(v, list) else v
                          for k, v in blended.items()}, x)
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_shipped_rule_is_blended_with_the_record_calibrated_graphical50():
    """The shipped parameters carry the blend weight chosen on the corpus (since 2026-11-25
    towards the record-calibrated graphical(prior_weight=50): 0.25 on the regression for
    tau1, 0 for tau2; benchmarks/record_rule.py), the full model has the record feature, and
    the exchangeable fallback, which has no graphical candidate, neither."""
    from sdcrisk.analyses._auto_calibrated import RECORD_FEATURE, load_params

    models = load_params()["models"]
    towards = "the sum of graphical(prior_weight=50)'s record risks after the corpus-learned map"
    for m, alpha in (("tau1", 0.25), ("tau2", 0.0)):
        assert models["full"][m]["shrink"] == {"towards": towards, "alpha": alpha}
        assert models["full"][m]["features"][-1] == RECORD_FEATURE
        assert "shrink" not in models["exchangeable"][m]
        assert RECORD_FEATURE not in models["exchangeable"][m]["features"]
