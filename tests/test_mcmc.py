"""The shared MCMC driver: streams, burn-in, thinning, axes, verdict, modes, progress."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sdcrisk import ConvergenceWarning, ParameterError
from sdcrisk.runtime.mcmc import Kernel, Observation, Thresholds, find_modes, sample, split_modes


# --- toy models ---------------------------------------------------------------------------
def _iid_init(rng, data, params):
    return {"x": 0.0, "t": 0}


def _iid_step(rng, state, data, params):
    state["x"] = rng.normal(params.get("mode", 0.0), 1.0)
    state["t"] += 1
    return state, {"one": 1.0}


def _iid_observe(rng, state, data, params):
    return Observation(scalars={"x": state["x"], "t": float(state["t"]),
                                "u": rng.random()},
                       sums={"vec": np.array([state["x"], 1.0])},
                       bank={"b": np.array([state["t"]], float)})


IID = Kernel(_iid_init, _iid_step, _iid_observe, name="iid")


def _walk_step(rng, state, data, params):
    state["x"] += rng.normal()
    state["t"] += 1
    return state, {}


WALK = Kernel(_iid_init, _walk_step, _iid_observe, name="walk")


def _modal_init(rng, data, params):
    # chains 0 and 1 start (and stay) at mode 0, chains 2 and 3 at mode 10
    c = params["count"]
    params["count"] = c + 1
    return {"x": 0.0, "t": 0, "mode": 0.0 if c < 2 else 10.0}


def _modal_step(rng, state, data, params):
    state["x"] = state["mode"] + rng.normal()
    state["t"] += 1
    return state, {}


MODAL = Kernel(_modal_init, _modal_step, _iid_observe, name="modal")


def _ar1_step(rng, state, data, params):
    state["x"] = 0.8 * state["x"] + rng.normal()
    state["t"] += 1
    return state, {}


AR1 = Kernel(_iid_init, _ar1_step, _iid_observe, name="ar1")


# --- tests --------------------------------------------------------------------------------
def test_axes_burn_in_and_thinning():
    run = sample(IID, None, {}, chains=3, burn_in=7, iterations=20, thin=3, seed=1,
                 monitor=("x",), warn=False)
    assert run.draws["x"].shape == (3, 6)
    # the t-th step counter at saved draws: burn-in 7, then every 3rd of 20 iterations
    np.testing.assert_array_equal(run.draws["t"], np.tile([10, 13, 16, 19, 22, 25], (3, 1)))
    assert run.settings == {"chains": 3, "burn_in": 7, "iterations": 20, "thin": 3,
                            "draws_per_chain": 6, "adaptive": False}
    np.testing.assert_allclose(run.info["one"], 1.0)
    # sums are posterior means over all saved draws of all chains
    np.testing.assert_allclose(run.means["vec"], [run.draws["x"].mean(), 1.0])


def test_streams_are_independent_and_reproducible():
    a = sample(IID, None, {}, chains=4, burn_in=5, iterations=50, seed=123, warn=False)
    b = sample(IID, None, {}, chains=4, burn_in=5, iterations=50, seed=123, warn=False)
    c = sample(IID, None, {}, chains=4, burn_in=5, iterations=50, seed=124, warn=False)
    np.testing.assert_array_equal(a.draws["x"], b.draws["x"])
    assert not np.array_equal(a.draws["x"], c.draws["x"])
    # no two chains share a stream
    x = a.draws["x"]
    assert len({tuple(row) for row in x.tolist()}) == 4
    # the chain path does not depend on the observation stream or its use
    thin = sample(IID, None, {}, chains=4, burn_in=5, iterations=50, thin=5, seed=123,
                  warn=False)
    np.testing.assert_array_equal(thin.draws["x"], a.draws["x"][:, 4::5])
    # threads give the same draws as a serial run
    par = sample(IID, None, {}, chains=4, burn_in=5, iterations=50, seed=123, n_jobs=2,
                 warn=False)
    np.testing.assert_array_equal(par.draws["x"], a.draws["x"])
    np.testing.assert_array_equal(par.draws["u"], a.draws["u"])


def test_independent_draws_pass_the_verdict():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sample(IID, None, {}, chains=4, burn_in=0, iterations=500, seed=2,
                     monitor=("x",))
    d = run.diagnostics
    assert d["converged"] and not d["multimodal"]
    assert d["rhat"]["x"] < 1.01
    assert d["ess_bulk"]["x"] > 1500  # 2000 independent draws
    assert d["thresholds"] == {"rhat_max": 1.01, "ess_bulk_min": 400.0,
                               "ess_tail_min": 400.0, "mode_gap_within_sd": 3.0,
                               "tolerance": 0.0}
    assert d["chain_means"]["x"] == pytest.approx(run.draws["x"].mean(axis=1).tolist())


def test_autocorrelated_draws_have_ess_near_theory():
    run = sample(AR1, None, {}, chains=4, burn_in=100, iterations=5000, seed=3,
                 monitor=("x",), warn=False)
    # ESS / S -> (1 - phi)/(1 + phi) = 1/9 for AR(1) with phi = 0.8
    assert run.diagnostics["ess_bulk"]["x"] == pytest.approx(20_000 / 9, rel=0.15)


def test_failed_verdict_warns_with_thresholds_and_values():
    with pytest.warns(ConvergenceWarning, match=r"R-hat\(x\) = .* > 1.01") as rec:
        run = sample(WALK, None, {}, chains=4, burn_in=0, iterations=300, seed=4,
                     monitor=("x",))
    assert not run.diagnostics["converged"]
    assert run.diagnostics["failures"]
    # the warning points at the caller of sample (this file)
    assert rec[0].filename == __file__
    # looser explicit thresholds change the verdict
    loose = sample(IID, None, {}, chains=2, burn_in=0, iterations=40, seed=4,
                   monitor=("x",), thresholds=Thresholds(rhat_max=1.5, ess_per_chain=5),
                   warn=False)
    assert loose.diagnostics["converged"]
    assert loose.diagnostics["thresholds"]["ess_bulk_min"] == 10


def test_chains_in_different_modes_are_reported():
    with pytest.warns(ConvergenceWarning, match="separate modes"):
        run = sample(MODAL, None, {"count": 0}, chains=4, burn_in=0, iterations=200, seed=5,
                     monitor=("x",), modes_of=("x",))
    d = run.diagnostics
    assert d["multimodal"]
    groups = d["modes"]["x"]
    assert [g["chains"] for g in groups] == [[0, 1], [2, 3]]
    assert groups[0]["mean"] == pytest.approx(0.0, abs=0.2)
    assert groups[1]["mean"] == pytest.approx(10.0, abs=0.2)


def _jump_step(rng, state, data, params):
    # every chain jumps between modes 0 and 12, staying about 50 iterations in each
    if rng.random() < 0.02:
        state["mode"] = 12.0 - state["mode"]
    state["x"] = state["mode"] + rng.normal()
    state["t"] += 1
    return state, {}


JUMP = Kernel(lambda rng, d, p: {"x": 0.0, "t": 0, "mode": 0.0}, _jump_step, _iid_observe,
              name="jump")


def test_modes_visited_by_every_chain_are_reported():
    with pytest.warns(ConvergenceWarning, match="x draws: .*% at"):
        run = sample(JUMP, None, {}, chains=4, burn_in=0, iterations=2000, seed=12,
                     monitor=("x",), modes_of=("x",))
    d = run.diagnostics
    assert d["multimodal"] and len(d["modes"]["x"]) == 1  # chain means agree
    groups = d["pooled_modes"]["x"]
    assert groups[0]["mean"] == pytest.approx(0.0, abs=0.3)
    assert groups[1]["mean"] == pytest.approx(12.0, abs=0.3)
    assert groups[0]["share"] + groups[1]["share"] == pytest.approx(1.0)


def test_split_modes_ignores_unimodal_laws():
    rng = np.random.default_rng(13)
    for x in (rng.normal(size=20_000), rng.uniform(size=20_000), rng.gamma(2.0, size=20_000),
              rng.standard_t(4, size=20_000)):
        assert split_modes(x, 4.0) == []
    two = np.concatenate([rng.normal(0, 1, 5000), rng.normal(10, 1, 1000)])
    g = split_modes(two, 4.0)
    assert g[1]["share"] == pytest.approx(1 / 6, abs=0.01)


def test_find_modes_gap_rule():
    x = np.array([[0.0, 1.0, -1.0, 0.5], [0.2, 1.1, -0.9, 0.4], [5.0, 6.0, 4.0, 5.5]])
    within = np.sqrt(np.mean(x.var(axis=1, ddof=1)))
    groups = find_modes(x, gap=3.0)
    assert [g["chains"] for g in groups] == [[0, 1], [2]]
    # the gap between the means (about 5) is below 10 within-sds: one group
    assert len(find_modes(x, gap=5.0 / within + 0.1)) == 1


def test_bank_is_bounded_and_evenly_spaced():
    run = sample(IID, None, {}, chains=2, burn_in=0, iterations=100, seed=6, bank_size=10,
                 warn=False)
    t = run.bank["b"][:, 0]
    assert 3 <= len(t) <= 10
    per_chain = t[: len(t) // 2]
    steps = np.diff(per_chain)
    assert per_chain[0] == 1 and np.all(steps == steps[0]) and per_chain[-1] > 50


def test_adaptive_run_stops_when_the_verdict_passes():
    run = sample(IID, None, {}, chains=4, burn_in=10, iterations=None, block=150,
                 max_iterations=3000, seed=9, monitor=("x",), warn=False)
    d = run.diagnostics
    assert d["converged"] and d["adaptive"]
    assert run.settings["iterations"] % 150 == 0 and run.settings["iterations"] < 3000
    assert run.draws["x"].shape == (4, run.settings["iterations"])
    # the same seed gives the same stopping point and draws
    again = sample(IID, None, {}, chains=4, burn_in=10, iterations=None, block=150,
                   max_iterations=3000, seed=9, monitor=("x",), warn=False)
    np.testing.assert_array_equal(again.draws["x"], run.draws["x"])
    # a chain that never converges runs to the cap and warns
    with pytest.warns(ConvergenceWarning):
        walk = sample(WALK, None, {}, chains=2, burn_in=0, iterations=None, block=100,
                      max_iterations=250, seed=9, monitor=("x",))
    assert walk.settings["iterations"] == 250 and not walk.diagnostics["converged"]


def _slow_small_step(rng, state, data, params):
    # AR(1) with phi = 0.999 at scale params["scale"]: mixes very slowly at any scale
    state["x"] = 0.999 * state["x"] + params["scale"] * rng.normal()
    state["t"] += 1
    return state, {}


SLOW = Kernel(_iid_init, _slow_small_step, _iid_observe, name="slow")


def test_tolerance_settles_quantities_that_do_not_matter():
    # rank-normalised R-hat and ESS are scale-free: a slowly mixing quantity fails them
    # whatever its scale, and the adaptive run goes to the cap
    opts = dict(chains=4, burn_in=0, iterations=None, block=200, max_iterations=1000,
                seed=4, monitor=("x",), warn=False)
    strict = sample(SLOW, None, {"scale": 1e-4}, **opts)
    assert not strict.diagnostics["converged"] and strict.settings["iterations"] == 1000
    assert strict.diagnostics["rhat"]["x"] > 1.01
    # with a tolerance of 0.01 the split-chain means (all within 0.01 here) settle it at
    # the first check where every chain has ess_per_chain (100) draws: the first block
    tol = Thresholds(tolerance=0.01)
    run = sample(SLOW, None, {"scale": 1e-4}, thresholds=tol, **opts)
    d = run.diagnostics
    x = run.draws["x"]
    assert x.shape == (4, 200) and run.settings["iterations"] == 200
    spread = np.ptp(np.concatenate([x[:, :100], x[:, 100:]]).mean(axis=1))
    assert d["spread"]["x"] == pytest.approx(spread) and spread <= 0.01
    assert d["converged"] and d["settled"] == ["x"] and d["failures"] == []
    assert d["thresholds"]["tolerance"] == 0.01
    # the same chains at a scale where the spread exceeds the tolerance: the usual rules
    big = sample(SLOW, None, {"scale": 1.0}, thresholds=tol, **opts)
    assert big.diagnostics["settled"] == [] and not big.diagnostics["converged"]
    assert big.diagnostics["spread"]["x"] > 0.01
    # too few draws per chain: never settled, even when constant to the tolerance
    few = sample(SLOW, None, {"scale": 1e-4}, thresholds=tol,
                 **{**opts, "iterations": 50, "max_iterations": 50})
    assert few.diagnostics["settled"] == []


def test_modes_closer_than_the_tolerance_do_not_count():
    params = {"count": 0}
    run = sample(MODAL, None, params, chains=4, burn_in=0, iterations=200, seed=5,
                 monitor=("x",), modes_of=("x",), warn=False,
                 thresholds=Thresholds(tolerance=20.0))
    assert not run.diagnostics["multimodal"]
    assert len(run.diagnostics["modes"]["x"]) == 2     # still reported


def test_traces_are_thinned_lists():
    run = sample(IID, None, {}, chains=2, burn_in=0, iterations=2500, seed=7, warn=False)
    tr = run.traces(max_per_chain=1000)
    assert len(tr["x"]) == 2 and len(tr["x"][0]) == 834
    assert isinstance(tr["x"][0][0], float)


def test_progress_bar_on_request(capsys):
    sample(IID, None, {}, chains=2, burn_in=5, iterations=30, seed=8, progress=True,
           warn=False)
    assert "iid" in capsys.readouterr().err
    sample(IID, None, {}, chains=2, burn_in=5, iterations=30, seed=8, progress=False,
           warn=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", [{"chains": 0}, {"iterations": 0}, {"thin": 0},
                                 {"burn_in": -1}, {"iterations": 3, "thin": 4},
                                 {"n_jobs": 0}, {"chains": 2.5}, {"iterations": None,
                                                                  "block": 0}])
def test_bad_settings(bad):
    opts = {"chains": 2, "burn_in": 1, "iterations": 10, "thin": 1, **bad}
    with pytest.raises(ParameterError):
        sample(IID, None, {}, **opts)


def test_bad_thresholds():
    for kw in ({"rhat_max": 1.0}, {"ess_per_chain": 0}, {"mode_gap": -1},
               {"tolerance": -0.1}, {"tolerance": float("nan")}):
        with pytest.raises(ParameterError):
            Thresholds(**kw)
