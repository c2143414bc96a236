"""Combined plans of ``recommend``: recode one key a little, then suppress (kind
``recoding+suppression``), and their application by ``Plan.apply`` and ``protect --target``."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from sdcrisk import Microdata, NegativeBinomialRisk, Plan, RiskTarget, recommend, tabulate
from sdcrisk.cli import main
from sdcrisk.exceptions import ParameterError

#: E[1/F | f = 1] of nb at p = n/N = 0.1 (the tau2 of one sample unique)
ONE_UNIQUE = 0.1 / 0.9 * np.log(10)


def refit_tau2(md):
    return NegativeBinomialRisk().fit(tabulate(md)).estimate("tau2")


def four_uniques():
    """Records 0 G (3,1,1), 1 H (4,1,1), 2 C (3,1,2), 3 E (4,2,2) are sample uniques; the
    others are two pairs, (1,1,1) and (2,2,1).

    * Suppression of one key per record (``max_pattern_size=1``) pairs G and H (age
      suppressed: (NA,1,1) twice) but not C and E, which differ in sex and z: it stops at
      2 uniques.
    * Recoding age merges 3 and 4 first (it pairs G and H), then 2, then 1 into it: C and E
      still differ in sex; recoding z pairs G and C, not H and E; recoding sex pairs none.
    * Ages 3 and 4 merged, C (3-4,1,2) and E (3-4,2,2) differ in sex only: suppressing sex
      in both pairs them. Four records changed (those of ages 3 and 4), six values.
    """
    data = {"age": [3, 4, 3, 4, 1, 1, 2, 2], "sex": [1, 1, 1, 2, 1, 1, 2, 2],
            "z": [1, 1, 2, 2, 1, 1, 1, 1]}
    return Microdata.from_source(data, keys=["age", "sex", "z"], population_size=80)


def test_combined_plan_reaches_where_neither_action_alone_does():
    md = four_uniques()
    rec = recommend(md, RiskTarget(value=0.0), max_pattern_size=1)
    assert rec.objective_before == pytest.approx(4 * ONE_UNIQUE, rel=1e-12)
    got = {p.label(): (p.reached, p.records_changed, p.values_changed) for p in rec.plans}
    assert got == {"recode age, then local suppression": (True, 4, 6),
                   "recode z, then local suppression": (True, 8, 10),
                   "local suppression": (False, 2, 2),
                   "recode age": (False, 8, 8), "recode z": (False, 8, 8),
                   "recode sex": (False, 8, 8)}  # sex pairs none: no combined plan
    best = rec.best
    assert rec.plans[0] is best and best.kind == "recoding+suppression" and best.key == "age"
    assert best.merges == ((3, 4),)
    assert best.suppressions.tolist() == [[2, 1], [3, 1]]  # sex of C and E
    assert best.cells_changed == 4 and best.objective_after == 0.0
    # the path: the start, one merge (G and H paired: 2 uniques left), one suppression round
    assert [(s["action"], s["records_changed"], s["values_changed"]) for s in best.path] == [
        ("start", 0, 0), ("recoding", 4, 4), ("suppression", 4, 6)]
    assert [s["objective"] for s in best.path] == pytest.approx(
        [4 * ONE_UNIQUE, 2 * ONE_UNIQUE, 0.0], rel=1e-12)
    assert best.path[1]["merged"] == [3, 4]
    # the single actions stop at two uniques
    for p in rec.plans[2:5]:
        assert p.objective_after == pytest.approx(2 * ONE_UNIQUE, rel=1e-12)


def test_apply_merges_then_suppresses_and_reproduces_the_objective():
    md = four_uniques()
    best = recommend(md, RiskTarget(value=0.0), max_pattern_size=1).best
    out = best.apply(md)
    # age: 3 and 4 merged into "3-4" (the third level); sex: C and E missing
    assert out.levels[0] == (1, 2, "3-4") and out.levels[1] == (1, 2, None)
    assert [out.levels[0][c] for c in out.codes[0]] == ["3-4"] * 4 + [1, 1, 2, 2]
    assert [out.levels[1][c] for c in out.codes[1]] == [1, 1, None, None, 1, 1, 2, 2]
    assert out.codes[2].tolist() == md.codes[2].tolist()
    assert tabulate(out).sample_uniques == 0
    assert refit_tau2(out) == best.objective_after == 0.0
    # the merges alone leave C and E unique: the recoding step's objective
    merged_only = Plan(kind="recoding", key="age", reached=False, objective_after=0.0,
                       records_changed=4, values_changed=4, cells_changed=4,
                       merges=best.merges, keys=md.keys).apply(md)
    assert tabulate(merged_only).sample_uniques == 2
    assert refit_tau2(merged_only) == pytest.approx(best.path[1]["objective"], rel=1e-12)


def test_suppressing_the_recoded_key_after_its_merge():
    """The suppressed record indices are the sample's (a merge does not reorder records) and
    a suppression of the recoded key lands on the merged levels plus the missing one."""
    md = four_uniques()
    plan = Plan(kind="recoding+suppression", key="age", reached=True, objective_after=0.0,
                records_changed=5, values_changed=5, cells_changed=4,
                merges=((1, 2),), suppressions=[[2, 0], [7, 0]], keys=md.keys)
    out = plan.apply(md)
    assert out.levels[0] == ("1-2", 3, 4, None)
    assert [out.levels[0][c] for c in out.codes[0]] == [3, 4, None, 4, "1-2", "1-2", "1-2",
                                                        None]
    # on a population, rows= maps the sample's records; the merge applies to every row
    pop = Microdata.from_source({"age": [4, 3, 4, 3, 1, 1, 2, 2, 2, 3],
                                 "sex": [1, 1, 1, 1, 1, 1, 2, 2, 2, 2],
                                 "z": [2, 1, 1, 2, 1, 1, 1, 1, 1, 2]},
                                keys=["age", "sex", "z"])
    rows = np.array([1, 2, 3, 0, 4, 5, 6, 7])  # sample record i is population row rows[i]
    new_pop = plan.apply(pop, rows=rows)
    assert [new_pop.levels[0][c] for c in new_pop.codes[0]] == [
        4, 3, 4, None, "1-2", "1-2", "1-2", None, "1-2", 3]


def test_json_round_trip_and_pickle():
    md = four_uniques()
    rec = recommend(md, RiskTarget(value=0.0), max_pattern_size=1)
    d = json.loads(rec.to_json())
    assert d == rec.to_dict()
    plan = d["plans"][0]
    assert plan["kind"] == "recoding+suppression"
    assert plan["label"] == "recode age, then local suppression"
    assert plan["merges"] == [["3", "4"]]
    assert plan["suppressed_values_per_key"] == {"age": 0, "sex": 2, "z": 0}
    assert (plan["records_changed"], plan["values_changed"], plan["steps"]) == (4, 6, 2)
    assert [s["action"] for s in plan["path"]] == ["start", "recoding", "suppression"]
    assert plan["path"][1]["merged"] == ["3", "4"]
    assert "suppressions" not in plan  # record indices only in the internal view
    internal = json.loads(rec.to_json(internal=True))["plans"][0]
    assert internal["suppressions"] == [{"record": 2, "key": "sex"},
                                        {"record": 3, "key": "sex"}]
    # a recoding plan's path names the category each step formed
    recode_age = next(p for p in d["plans"] if p["label"] == "recode age")
    assert [s.get("merged") for s in recode_age["path"]] == [
        None, ["3", "4"], ["2", "3", "4"], ["1", "2", "3", "4"]]
    # a plan crosses to a worker process and back unchanged
    again = pickle.loads(pickle.dumps(rec.plans[0]))
    assert again.to_dict() == rec.plans[0].to_dict()
    assert again.apply(md).codes[1].tolist() == rec.plans[0].apply(md).codes[1].tolist()


def test_actions_select_the_kinds_listed():
    md = four_uniques()
    target = RiskTarget(value=0.0)
    only = recommend(md, target, max_pattern_size=1, actions=["recoding+suppression"])
    both = recommend(md, target, max_pattern_size=1)
    assert [p.label() for p in only.plans] == ["recode age, then local suppression",
                                               "recode z, then local suppression"]
    assert [p.to_dict() for p in only.plans] == [
        p.to_dict() for p in both.plans if p.kind == "recoding+suppression"]
    assert {p.kind for p in recommend(md, target, actions=["suppression", "recoding"]).plans
            } == {"suppression", "recoding"}
    with pytest.raises(ParameterError, match=r"'combined' \(--actions"):
        recommend(md, target, actions=["combined"])


def test_cli_lists_and_validates_the_combined_plans(tmp_path, capsys):
    path = tmp_path / "s.csv"
    pd.DataFrame({"age": [3, 4, 3, 4, 1, 1, 2, 2], "sex": [1, 1, 1, 2, 1, 1, 2, 2],
                  "z": [1, 1, 2, 2, 1, 1, 1, 1]}).to_csv(path, index=False)
    args = ["recommend", str(path), "--keys", "age,sex,z", "--population-size", "80",
            "--method", "nb", "--target", "0", "--max-pattern-size", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "    1 recode age, then local suppression     True                4" in out
    assert "  1. recode age, then local suppression: merge {3, 4}; then suppress 2 values " \
           "(sex 2)" in out
    assert main([*args, "--actions", "recoding,combined"]) == 2
    err = capsys.readouterr().err
    assert "'combined' (--actions on the command line)" in err and "Traceback" not in err


def _adult_sample(shared_data, tmp_path):
    """uci_adult, 4 keys, a 5% Bernoulli sample (seed 0: 2,443 records) written as CSV."""
    src = shared_data("uci_adult", "uci_adult.csv.gz")
    frame = pd.read_csv(src)
    rows = np.flatnonzero(np.random.default_rng(0).random(len(frame)) < 0.05)
    path = tmp_path / "adult5.csv"
    frame.iloc[rows].to_csv(path, index=False)
    return path, len(frame)


KEYS4 = "age,sex,race,marital_status"


def test_cli_on_a_real_file_and_protect_applies_the_combined_plan(shared_data, tmp_path,
                                                                   capsys):
    """tau2 <= 0 on the sample: local suppression (two keys per record at most) leaves one
    unique; recoding race first, then suppressing, reaches it. protect --target applies
    that plan: the written file, assessed again, has no sample unique and tau2 0."""
    path, big_n = _adult_sample(shared_data, tmp_path)
    base = ["--keys", KEYS4, "--population-size", str(big_n), "--method", "nb"]
    assert main(["recommend", str(path), *base, "--target", "0", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    first = d["plans"][0]
    assert first["kind"] == "recoding+suppression" and first["reached"]
    by_label = {p["label"]: p for p in d["plans"]}
    assert not by_label["local suppression"]["reached"]
    assert not any(p["reached"] for p in d["plans"] if p["kind"] == "recoding")
    # the plan re-applied to the sample gives the objective it reports
    md = Microdata.from_source(str(path), keys=KEYS4.split(","), population_size=big_n)
    rec = recommend(md, RiskTarget(value=0.0))
    assert rec.best.to_dict() == first
    assert refit_tau2(rec.best.apply(md)) == pytest.approx(rec.best.objective_after,
                                                          abs=1e-12)
    out = tmp_path / "protected.csv"
    assert main(["protect", str(path), *base, "--target", "tau2=0", "--out", str(out),
                 "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith(f"recommended plan (nb): {first['label']}") for n in notes)
    assert main(["assess", str(out), *base, "--format", "json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["measures"]["tau2"]["estimate"] == 0.0
    written = pd.read_csv(out)
    assert len(written) == md.n
    key = first["key"]
    merged = set(map(int, first["merges"][0]))
    assert not set(written[key].dropna().astype(int)) & (merged - {min(merged)})
    assert int(written[KEYS4.split(",")].isna().sum().sum()) == sum(
        first["suppressed_values_per_key"].values())


def test_recommend_says_why_no_plan_reaches_and_what_to_change(capsys, tmp_path):
    """With one key suppressed per step, C and E of :func:`four_uniques` stay unique: the
    table showed ``reached False`` and nothing else. The CLI now names the closest plan,
    the limit the search ran under and the options that lift it; with two keys per step
    (the default) suppression reaches the target and no such line is printed."""
    from conftest import run_cli

    path = tmp_path / "four.csv"
    pd.DataFrame({"age": [3, 4, 3, 4, 1, 1, 2, 2], "sex": [1, 1, 1, 2, 1, 1, 2, 2],
                  "z": [1, 1, 2, 2, 1, 1, 1, 1]}).to_csv(path, index=False)
    common = ["recommend", path, "--keys", "age,sex,z", "--population-size", "80",
              "--target", "tau2=0", "--method", "nb"]
    code, out, _ = run_cli(capsys, *common, "--max-pattern-size", "1", "--actions",
                           "suppression")
    assert code == 0
    last = out.strip().splitlines()[-1]
    assert last.startswith("no plan reaches the target: the closest, local suppression, "
                           "ends at 0.511686.")
    assert "suppressing up to 1 key value of a record" in last
    assert ("Try a larger --max-pattern-size (now 1), more actions (--actions; not tried: "
            "recoding, recoding+suppression) or a higher target.") in last
    code, out, _ = run_cli(capsys, *common, "--actions", "suppression")
    assert code == 0 and "no plan reaches" not in out
    assert "local suppression     True" in out


def test_a_recoding_that_merges_every_category_says_the_key_is_dropped(capsys, tmp_path):
    """Recoding age of :func:`four_uniques` to the end merges all four ages: the plan read
    'merge {1, 2, 3, 4}' (on a real file, 65 ages listed), which is the key withheld. It now
    says so; a partial merge does not."""
    from conftest import run_cli

    path = tmp_path / "four.csv"
    pd.DataFrame({"age": [3, 4, 3, 4, 1, 1, 2, 2], "sex": [1, 1, 1, 2, 1, 1, 2, 2],
                  "z": [1, 1, 2, 2, 1, 1, 1, 1]}).to_csv(path, index=False)
    code, out, _ = run_cli(capsys, "recommend", path, "--keys", "age,sex,z",
                           "--population-size", "80", "--target", "tau2=0", "--method", "nb",
                           "--max-pattern-size", "1")
    assert code == 0
    lines = out.splitlines()
    assert ("  4. recode age: merge {1, 2, 3, 4} (every category of age in one: as if age "
            "were not released)") in lines
    assert ("  1. recode age, then local suppression: merge {3, 4}; then suppress 2 values "
            "(sex 2)") in lines
