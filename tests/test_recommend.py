"""Recommendations: greedy local suppression and global recoding, re-estimated after changes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import high_risk_csv
from sdcrisk import (
    GraphicalRisk,
    InputError,
    Microdata,
    NegativeBinomialRisk,
    ParameterError,
    PoissonGammaRisk,
    RiskTarget,
    recommend,
    tabulate,
)
from sdcrisk.analyses.sampling import truth_of
from sdcrisk.cli import main


def refit_tau2(md, est=None):
    return (est or NegativeBinomialRisk()).fit(tabulate(md)).estimate("tau2")


def ages():
    # cells (30,1) (31,1) (32,2) (33,2) are sample uniques; (40,1) and (41,2) hold two each
    data = {"age": [30, 31, 32, 33, 40, 40, 41, 41], "sex": [1, 1, 2, 2, 1, 1, 2, 2]}
    return Microdata.from_source(data, keys=["age", "sex"], population_size=80)


def test_recoding_merges_neighbours_and_reaches_zero():
    md = ages()
    rec = recommend(md, RiskTarget(value=0.0), actions=["recoding"], keys=["age"])
    plan = rec.best
    assert plan.key == "age" and plan.reached
    # 30 and 31 share sex 1, 32 and 33 share sex 2: two merges make every cell a pair
    assert plan.merges == ((30, 31), (32, 33))
    assert (plan.records_changed, plan.cells_changed, plan.objective_after) == (4, 4, 0.0)
    assert [s["records_changed"] for s in plan.path] == [0, 2, 4]
    out = plan.apply(md)
    assert out.levels[0] == ("30-31", "32-33", 40, 41)
    assert tabulate(out).sample_uniques == 0
    # before: 4 uniques, each E[1/F | f=1] at p = n/N = 0.1
    assert rec.objective_before == pytest.approx(4 * 0.1 / 0.9 * np.log(10), rel=1e-12)


def test_suppression_uses_the_missing_category():
    md = ages()
    rec = recommend(md, RiskTarget(value=0.0), actions=["suppression"])
    plan = rec.plans[0]
    assert plan.reached and plan.values_changed == 4 and plan.records_changed == 4
    # suppressing age puts (30,1),(31,1) into (NA,1) and (32,2),(33,2) into (NA,2)
    assert sorted(map(tuple, plan.suppressions.tolist())) == [(0, 0), (1, 0), (2, 0), (3, 0)]
    out = plan.apply(md)
    assert out.levels[0][-1] is None and out.levels[1] == md.levels[1]
    assert tabulate(out).sample_uniques == 0
    assert refit_tau2(out) == plan.objective_after == 0.0


def test_suppression_of_two_keys_when_one_is_not_enough():
    data = {"a": [1, 2, 3, 3], "b": [1, 2, 3, 3], "c": [1, 1, 2, 2]}
    md = Microdata.from_source(data, keys=["a", "b", "c"], population_size=40)
    one = recommend(md, RiskTarget(value=0.0), actions=["suppression"], max_pattern_size=1)
    assert not one.plans[0].reached and one.plans[0].values_changed == 0
    two = recommend(md, RiskTarget(value=0.0), actions=["suppression"], max_pattern_size=2)
    plan = two.plans[0]
    # only suppressing a and b in records 0 and 1 leaves them sharing c = 1
    assert plan.reached
    assert sorted(map(tuple, plan.suppressions.tolist())) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_suppressed_record_joins_existing_missing_values():
    data = {"a": [1, None, None, 7, 7], "b": [5, 5, 5, 6, 6]}
    md = Microdata.from_source(data, keys=["a", "b"], population_size=50)
    plan = recommend(md, RiskTarget(value=0.0), actions=["suppression"]).plans[0]
    assert plan.reached and plan.suppressions.tolist() == [[0, 0]]
    assert plan.cells_changed == 1 and plan.measures_after["sample_uniques"] == 0


def test_nominal_keys_merge_any_pair():
    data = {"job": ["x", "y", "z", "w", "w"], "area": [1, 2, 1, 3, 3]}
    md = Microdata.from_source(data, keys=["job", "area"], population_size=50)
    plan = recommend(md, RiskTarget(value=0.0), actions=["recoding"], keys=["job"]).best
    # x and z share area 1 and are not neighbours in level order (w, x, y, z); y stays unique
    assert plan is None  # y (area 2) cannot be helped by merging jobs
    rec = recommend(md, RiskTarget(value=0.3), actions=["recoding"], keys=["job"])
    plan = rec.best
    assert plan.merges == (("x", "z"),) and "x|z" in plan.apply(md).levels[0]
    adj = recommend(md, RiskTarget(value=0.3), actions=["recoding"], keys=["job"],
                    pairs="adjacent")
    assert adj.plans[0].records_changed > plan.records_changed


def test_a_key_is_not_recoded_when_every_record_is_alone_on_the_others(monkeypatch):
    """Every record unique on ``b`` alone: merging categories of ``a`` changes no cell count,
    so its plan takes no step (before, it merged and re-fitted up to max_steps times: 12
    keys of 1,000 levels on 1,000 records ran for hours with auto); ``b``'s own plan still
    merges, because records share values of ``a``."""
    data = {"a": [1, 1, 2, 2, 3, 3], "b": [10, 11, 12, 13, 14, 15]}
    md = Microdata.from_source(data, keys=["a", "b"], population_size=60)
    fits = []
    est = NegativeBinomialRisk()
    original = type(est).fit
    monkeypatch.setattr(type(est), "fit", lambda self, t: fits.append(1) or original(self, t))
    rec = recommend(md, RiskTarget(value=0.0), estimator=est, actions=["recoding"])
    by_key = {p.key: p for p in rec.plans}
    assert len(by_key["a"].path) == 1 and by_key["a"].merges == ()
    assert not by_key["a"].reached and by_key["a"].records_changed == 0
    assert by_key["b"].reached and by_key["b"].merges == ((10, 11), (12, 13), (14, 15))
    assert len(fits) == 1 + 3  # the file once, then b's three merges; none for a


def test_records_above_threshold_objective():
    md = ages()
    # NB at p = 0.1: f = 1 -> 0.2558, f = 2 -> 0.0827 (spec G.2); threshold 0.1 counts 4
    target = RiskTarget(objective="records_above", value=0, risk_threshold=0.1)
    rec = recommend(md, target, actions=["recoding"], keys=["age"])
    assert rec.objective_before == 4.0
    assert rec.best.objective_after == 0.0
    r = NegativeBinomialRisk().fit(tabulate(rec.best.apply(md))).record_risk()
    assert np.count_nonzero(r > 0.1) == 0
    with pytest.raises(ParameterError, match="risk_threshold"):
        RiskTarget(objective="records_above", value=0)


def test_errors():
    md = ages()
    with pytest.raises(ParameterError, match="no tau2"):
        recommend(md, RiskTarget(value=0.0), estimator="skinner-elliot")
    with pytest.raises(ParameterError, match="not among the keys"):
        recommend(md, RiskTarget(value=0.0), keys=["zz"])
    with pytest.raises(ParameterError, match="action"):
        recommend(md, RiskTarget(value=0.0), actions=["delete"])
    with pytest.raises(ParameterError):
        RiskTarget(value=-1)
    plan = recommend(md, RiskTarget(value=0.0), actions=["suppression"]).plans[0]
    other = Microdata.from_source({"x": [1, 2]}, keys=["x"])
    with pytest.raises(InputError, match="differ"):
        plan.apply(other)


def test_outputs(tmp_path):
    rec = recommend(ages(), RiskTarget(value=0.0))
    d = json.loads(rec.to_json())
    assert d["thresholds"] == {"target": 0.0, "risk_threshold": None}
    assert d["plans"][0]["reached"] and "suppressions" not in d["plans"][0]
    assert json.loads(rec.to_json(internal=True))["plans"][0]["suppressions"][0] == {
        "record": 0, "key": "age"}
    s = rec.summary()
    # suppression, recode age, recode age (one merge) then suppression, recode sex
    assert list(s["rank"]) == [1, 2, 3, 4]
    assert s["reached"].tolist() == [True, True, True, False]
    pytest.importorskip("matplotlib")
    # the one chart module draws it (SVG by sdcrisk, PNG through matplotlib)
    from sdcrisk.report import plot_recommendations

    assert plot_recommendations(rec, tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_recommend(capsys, tmp_path):
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    code = main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--target", "0", "--actions", "recoding", "--change-keys", "age",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    d = json.loads(out)
    assert d["plans"][0]["merges"] == [["30", "31"], ["32", "33"]]
    code = main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--target", "0", "--objective", "records-above"])
    assert code == 2 and "give that risk with --risk-threshold R" in capsys.readouterr().err
    code = main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--target", "0", "--method", "nb"])
    out = capsys.readouterr().out
    assert code == 0 and "recode age: merge {30, 31}; {32, 33}" in out


def test_cli_recommend_says_what_each_plan_changes_and_what_the_columns_are(capsys, tmp_path):
    """The text listed what every plan changes except local suppression, the plan that
    protect --target applies when it ranks first (testdata, 7 keys, --target 5: rank 1
    had no line, rank 2 'merge {6, 9}; then suppress 42 values (...)'); and nothing said
    what cells_changed or objective_after count."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    base = ["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
            "--target", "0", "--method", "nb"]
    assert main(base) == 0
    out = capsys.readouterr().out
    # the four sample uniques' ages are suppressed: (NA, 1) and (NA, 2) hold two records each
    assert "  1. local suppression: suppress 4 values (age 4)\n" in out
    assert "  3. recode age, then local suppression: merge {30, 31}; then suppress 2 values " \
           "(age 2)\n" in out
    assert ("cells_changed: key combinations of the sample holding a changed record; "
            "objective_after: tau2, re-estimated after the plan)") in out
    assert main(base + ["--objective", "records-above", "--risk-threshold", "0.05"]) == 0
    assert "objective_after: records with estimated risk > 0.05, re-estimated after the plan" \
        in capsys.readouterr().out


def test_cli_recommend_target_as_protect_writes_it(capsys, tmp_path):
    """``--target tau2=V`` (protect's form) is ``--target V``; ``records-above=V`` sets the
    objective; a measure contradicting --objective, or an unknown one, is refused."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    base = ["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
            "--method", "nb", "--format", "json"]
    outs = []
    for target in (["--target", "0.5"], ["--target", "tau2=0.5"],
                   ["--target", "0.5", "--objective", "tau2"]):
        assert main(base + target) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["objective"] == "tau2" and outs[0]["thresholds"]["target"] == 0.5
    assert main(base + ["--target", "records-above=1", "--risk-threshold", "0.05"]) == 0
    above = json.loads(capsys.readouterr().out)
    assert above["objective"] == "records_above" and above["thresholds"]["target"] == 1
    for target, words in ((["--target", "tau1=3"], "the measure is tau2 or records-above"),
                          (["--target", "tau2=1", "--objective", "records-above"],
                           "names tau2 but --objective is records-above"),
                          (["--target", "tau2=x"], "--target tau2=x must be a non-negative")):
        assert main(base + target) == 2
        assert words in capsys.readouterr().err


def test_dev_population_target_reached_and_true_risk_falls(shared_data):
    # uci_adult KS6, 5% Bernoulli sample (seed 0), as in ../shared/data/uci_adult/ground_truth
    path = shared_data("uci_adult", "uci_adult.csv.gz")
    keys = ["age", "sex", "race", "marital_status", "education", "native_country"]
    pop = Microdata.from_source(str(path), keys=keys)
    rows = np.flatnonzero(np.random.default_rng(0).random(pop.n) < 0.05)
    sample = pop.subset(rows, population_size=pop.n)
    truth = truth_of(tabulate(sample, population=pop))
    gt = pd.read_csv(path.parent / "ground_truth.csv")
    gt = gt[(gt.keyset == "KS6") & (gt.fraction == 0.05)].iloc[0]
    assert truth["tau2"] == pytest.approx(gt.tau2, rel=1e-12)  # 505.70
    before = refit_tau2(sample)
    target = RiskTarget(objective="tau2", value=before / 2)
    rec = recommend(sample, target, keys=["age", "education"])
    assert rec.objective_before == pytest.approx(before)
    # suppression, the two recodings and the two combined plans
    assert [p.reached for p in rec.plans] == [True] * 5
    changed = [p.records_changed for p in rec.plans]
    assert changed == sorted(changed)  # ranked by information loss
    falls = {}
    for plan in rec.plans:
        new_sample = plan.apply(sample)
        # re-estimation: the plan's figure is the estimator's on the changed file
        assert refit_tau2(new_sample) == pytest.approx(plan.objective_after, rel=1e-12)
        assert plan.objective_after <= target.value
        new_pop = plan.apply(pop, rows=rows)  # merges every row, suppresses the sample's
        assert new_pop.levels == new_sample.levels and new_pop.n == pop.n
        falls[plan.label()] = truth_of(tabulate(new_sample, population=new_pop))["tau2"]
    # the true tau2 (known from the population) falls too: 505.7 -> 364.6 (suppression),
    # 239.4 (recode age), 230.3 (recode education)
    assert falls["local suppression"] < 0.8 * truth["tau2"]
    assert falls["recode age"] < 0.55 * truth["tau2"]
    assert falls["recode education"] < 0.55 * truth["tau2"]


def test_other_estimator_is_refitted(shared_data):
    path = shared_data("uci_adult", "uci_adult.csv.gz")
    pop = Microdata.from_source(str(path), keys=["age", "sex", "race", "education"])
    rows = np.flatnonzero(np.random.default_rng(1).random(pop.n) < 0.02)
    sample = pop.subset(rows, population_size=pop.n)
    est = PoissonGammaRisk(alpha=0.05)
    before = refit_tau2(sample, est)
    rec = recommend(sample, RiskTarget(value=0.7 * before), estimator=est,
                    actions=["suppression"])
    plan = rec.plans[0]
    assert rec.method == "poisson-gamma" and plan.reached
    assert refit_tau2(plan.apply(sample), est) == pytest.approx(plan.objective_after, rel=1e-12)


def _plans(rec):
    return [(p.label(), p.reached, p.records_changed, p.values_changed, p.objective_after,
             p.merges) for p in rec.plans]


def test_plans_on_worker_processes_equal_the_serial_ones():
    """Each plan is a work unit: searched on two local processes, the plans (and their
    ranking) are those of the serial search, which stays the library's default."""
    rng = np.random.default_rng(3)
    data = {"a": rng.integers(0, 6, 400), "b": rng.integers(0, 4, 400),
            "c": rng.integers(0, 5, 400)}
    md = Microdata.from_source(data, keys=["a", "b", "c"], population_size=8000)
    target = RiskTarget(objective="tau2", value=refit_tau2(md) / 3)
    serial = recommend(md, target)
    par = recommend(md, target, workers=2)
    assert serial.settings["ran"] == "serial" and par.settings["ran"] == "local processes"
    assert {p.kind for p in serial.plans} == {"suppression", "recoding", "recoding+suppression"}
    assert len(serial.plans) == 7 and any(p.reached for p in serial.plans)
    assert _plans(par) == _plans(serial)
    with pytest.raises(ParameterError, match="workers=0"):
        recommend(md, target, workers=0)


def test_cli_recommend_workers(capsys, tmp_path):
    """The CLI searches the plans in this process below 5,000 records, on --workers N
    processes when asked; --workers 0 is a one-line error naming the option."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    args = ["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
            "--target", "0", "--method", "nb", "--format", "json"]
    assert main(args) == 0
    serial = json.loads(capsys.readouterr().out)
    assert serial["settings"]["ran"] == "serial"
    assert main([*args, "--workers", "2"]) == 0
    par = json.loads(capsys.readouterr().out)
    assert par["settings"]["ran"] == "local processes"
    assert par["plans"] == serial["plans"]
    assert main([*args, "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "--workers" in err and "Traceback" not in err


class _WarningNB(NegativeBinomialRisk):
    """nb that warns at every fit, as auto does on a file outside its corpus."""

    def _fit(self, table):
        import warnings

        warnings.warn(f"fitted on {table.n} records, {table.n_cells} cells", UserWarning,
                      stacklevel=2)
        return super()._fit(table)


def test_each_warning_of_the_refits_is_told_once():
    """Tens of re-fits repeated the same warning (158 identical lines for auto on 50,000
    records); each distinct one is now issued once, the file's own first, those of the
    changed files after, marked as such."""
    import warnings

    md = ages()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        rec = recommend(md, RiskTarget(objective="tau2", value=0.0), estimator=_WarningNB(),
                        actions=["recoding"])
    texts = [str(w.message) for w in got]
    assert rec.best.merges == ((30, 31), (32, 33))
    assert texts[0] == "fitted on 8 records, 6 cells"  # the file itself
    assert len(texts) == len(set(texts)) >= 2
    assert all(t.startswith("on a changed file of the plan search: fitted on 8 records")
               for t in texts[1:])
    # the unit returns its distinct warnings, so a worker process's come back the same way
    from sdcrisk.analyses.recommend import SearchContext, _PlanUnit, _run_plan

    ctx = SearchContext(_WarningNB(), RiskTarget(objective="tau2", value=0.0),
                   tabulate(md).record_map())
    plan, raised, _ = _run_plan(_PlanUnit(md, ctx, "recoding", [0], "auto", 1, 2, 500))
    assert plan.merges == ((30, 31), (32, 33))
    assert len(raised) == len(set(raised)) >= 2 and raised[0][0] is UserWarning


def test_cli_recommend_auto_fits_the_file_once(capsys, tmp_path):
    """The CLI fitted the calibrated auto once to look for a validated choice, then recommend
    fitted it again: the out-of-corpus warning of the file (sampling fraction 0.5, above the
    corpus's 0.108) printed twice. Now once; the changed files' own are marked."""
    rng = np.random.default_rng(0)
    path = tmp_path / "s.csv"
    pd.DataFrame({"a": rng.integers(0, 8, 300), "b": rng.integers(0, 3, 300),
                  "c": rng.integers(0, 4, 300)}).to_csv(path, index=False)
    assert main(["recommend", str(path), "--keys", "a,b,c", "--population-size", "600",
                 "--target", "1", "--actions", "recoding", "--change-keys", "a",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if "outside the calibration corpus" in x]
    own = [x for x in lines if x.startswith("sdcrisk: warning: auto (calibrated)")]
    assert len(own) == 1 and "sampling fraction n/N" in own[0]
    assert all("on a changed file of the plan search: auto" in x for x in lines if x not in own)
    assert json.loads(out)["plans"][0]["key"] == "a"


def test_a_risk_threshold_with_a_tau2_target_is_refused(capsys, tmp_path):
    """risk_threshold only bounds records above it; with a tau2 target it was ignored without
    a word (a user who typed --risk-threshold 0.05 got a tau2 search)."""
    with pytest.raises(ParameterError, match=r"risk_threshold=0\.05 applies to "
                       r"objective='records_above' only"):
        RiskTarget(objective="tau2", value=1.0, risk_threshold=0.05)
    assert RiskTarget(objective="tau2", value=1.0).risk_threshold is None
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33, 40, 40, 41, 41],
                  "sex": [1, 1, 2, 2, 1, 1, 2, 2]}).to_csv(path, index=False)
    code = main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--target", "0", "--method", "nb", "--risk-threshold", "0.05"])
    err = capsys.readouterr().err
    assert code == 2 and "--objective records-above" in err and "Traceback" not in err


@pytest.mark.parametrize("given, named", [
    (("--target", "records-above=5"), "--target 'records-above=5'"),
    (("--target", "5", "--objective", "records-above"), "--objective records-above"),
])
def test_a_records_above_target_without_its_risk_is_refused_in_flags(capsys, tmp_path, given,
                                                                     named):
    """The refusal named the Python API ("risk_threshold=None ... objective='records_above'"),
    and came after the file was read."""
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [30, 31, 32, 33], "sex": [1, 1, 2, 2]}).to_csv(path, index=False)
    code = main(["recommend", str(path), "--keys", "age,sex", "--population-size", "80",
                 "--method", "nb", *given])
    err = capsys.readouterr().err
    assert code == 2 and f"{named} counts records above a risk" in err
    assert "--risk-threshold R" in err and "risk_threshold=" not in err


def test_plan_search_cautions_differing_only_in_figures_print_once(capsys, tmp_path):
    """auto warns that each changed file lies outside its corpus, with that file's figures:
    protect --target printed nine such lines around a one-line result. Each distinct warning
    once; those of the plan search's changed files that differ only in figures once, with a
    count."""
    path = high_risk_csv(tmp_path / "hr.csv")
    assert main(["protect", str(path), "--keys", "a,b,c", "--population-size", "2000",
                 "--target", "tau2=0.5", "--out", str(tmp_path / "p.csv")]) == 0
    lines = capsys.readouterr().err.splitlines()
    searched = [x for x in lines if "on a changed file of the plan search: auto" in x]
    assert len(searched) == 1
    assert searched[0].endswith("(and 3 more like it on other changed files, with other "
                                "figures) (ApproximationWarning)")
    assert len(lines) == len(set(lines)) == 4


def test_plan_search_cautions_are_grouped_for_api_users_too():
    """The grouping was the CLI printer's: a Python user of recommend got every changed
    file's caution. recommend itself now issues one per wording, with the count."""
    import warnings

    from sdcrisk.analyses.recommend import _alike

    raised = [(UserWarning, "fraction 0.5 above 0.108"), (UserWarning, "fraction 0.25 above "
              "0.108"), (RuntimeWarning, "fraction 0.5 above 0.108"),
              (UserWarning, "another caution")]
    assert _alike(raised) == [(UserWarning, "fraction 0.5 above 0.108", 1),
                              (RuntimeWarning, "fraction 0.5 above 0.108", 0),
                              (UserWarning, "another caution", 0)]
    md = ages()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        recommend(md, RiskTarget(objective="tau2", value=0.0), estimator=_WarningNB(),
                  actions=["recoding"])
    searched = [str(w.message) for w in got if "plan search" in str(w.message)]
    assert len(searched) == 1 and "more like it on other changed files" in searched[0]


def test_a_plan_is_judged_on_the_file_it_writes():
    """Suppression emptied four categories of a; the search fitted the changed file over the
    cell space of the file before the change (those categories kept, empty), while the
    written file, read back, knows only the categories it holds: a model over the cell
    space (graphical here, auto in the CLI) gave another figure there, and protect --target
    said a target was met that the re-assessed file missed (uci_adult 3%, auto: 18.96
    against 20.33 for a target of 20)."""
    from sdcrisk import GraphicalRisk
    from sdcrisk.data import _cells

    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 400)
    a[:6] = np.arange(10, 16)  # six categories held by one record each
    frame = pd.DataFrame({"a": a, "b": rng.integers(0, 4, 400), "c": rng.integers(0, 3, 400)})
    md = Microdata.from_source(frame, ["a", "b", "c"], population_size=8000)
    est = GraphicalRisk()
    plan = recommend(md, RiskTarget(value=0.3), estimator=est,
                     actions=["suppression"]).plans[0]
    after = plan.apply(md)
    emptied = [lv for lv, c in zip(after.levels[0], np.bincount(after.codes[0],
               minlength=len(after.levels[0])), strict=True) if c == 0]
    assert emptied == [10, 11, 12, 14]  # 13 and 15 kept: suppressed on b and c instead
    written = pd.DataFrame({k: [None if after.levels[j][c] == _cells.MISSING_LABEL
                                else after.levels[j][c] for c in after.codes[j]]
                            for j, k in enumerate(after.keys)})
    read_back = Microdata.from_source(written, ["a", "b", "c"], population_size=8000)
    assert read_back.n_levels[0] == 7  # 0-3, 13, 15 and missing
    refit = est.fit(tabulate(read_back)).measures["tau2"].estimate
    assert plan.objective_after == pytest.approx(refit, rel=1e-9)


def test_changed_files_are_fitted_without_p_pu(monkeypatch):
    """The search re-fits each changed file without P(PU) (no objective or plan figure uses
    it; its sum over the unobserved cells was half of auto's time): only the file's own fit
    sums over them, and the plans are those of a search that computes it everywhere."""
    import sdcrisk.analyses.recommend as rec_mod
    import sdcrisk.estimators.graphical as g

    rng = np.random.default_rng(4)
    data = {"a": rng.integers(0, 6, 300), "b": rng.integers(0, 4, 300),
            "c": rng.integers(0, 5, 300)}
    md = Microdata.from_source(data, keys=["a", "b", "c"], population_size=6000)
    est = GraphicalRisk()
    base = est.fit(tabulate(md))
    models = len(base.fitted["models"])
    target = RiskTarget(objective="tau2", value=base.measures["tau2"].estimate / 3)
    sums = []
    real = g.unobserved_enumerated
    monkeypatch.setattr(g, "unobserved_enumerated", lambda *a, **k: sums.append(1) or real(*a))
    lean = recommend(md, target, estimator=est, actions=["suppression", "recoding"])
    fits_of_the_file = len(sums)
    monkeypatch.setattr(rec_mod, "without_p_pu", lambda e: e)
    sums.clear()
    full = recommend(md, target, estimator=est, actions=["suppression", "recoding"])
    assert fits_of_the_file == models  # the file's own fit, once per model of its window
    assert len(sums) > 3 * models  # the full search summed on its changed files too
    assert _plans(lean) == _plans(full) and any(p.reached for p in lean.plans)
    assert lean.measures_before == full.measures_before
