"""Missing key values as wildcards: sdcMicro freqCalc parity, the CellTable hook, and which
estimators use or refuse wildcard counts.

Reference: sdcMicro 5.8.1 ``freqCalc(francdat, keyVars = c(2,4,5,6), w = 8, alpha)`` with the
``?freqCalc`` NA pattern (x[3,5], x[4,2], x[4,4], x[5,6], x[6,2] <- NA) and ``indivRisk``;
values in ../shared/data/sdcmicro/reference/francdat_freqCalc_indivRisk.csv (see
../shared/methods/sdcmicro-reference.md section 3).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data
from sdcrisk import Microdata, NegativeBinomialRisk, PoissonGammaRisk, tabulate
from sdcrisk.cli import main
from sdcrisk.data.wildcard import wildcard_cell_counts, wildcard_record_counts
from sdcrisk.exceptions import ParameterError

KEYS = ["Key1", "Key2", "Key3", "Key4"]
NA_CELLS = [(3, 5), (4, 2), (4, 4), (5, 6), (6, 2)]  # 1-based (row, column), as in ?freqCalc


def _francdat(with_na: bool):
    df = pd.read_csv(shared_data("sdcmicro", "francdat.csv"))
    ref = pd.read_csv(shared_data("sdcmicro", "reference", "francdat_freqCalc_indivRisk.csv"))
    if with_na:
        df = df.astype({k: float for k in KEYS})
        for r, c in NA_CELLS:
            df.iloc[r - 1, c - 1] = np.nan
    return df, ref


@pytest.mark.parametrize("with_na,alpha,fk_col,big_col", [
    (False, 1.0, "fk", "Fk"),
    (True, 1.0, "fk_na", "Fk_na"),
    (True, 0.5, "fk_na_alpha0.5", "Fk_na_alpha0.5"),
    (True, 0.1, "fk_na_alpha0.1", "Fk_na_alpha0.1"),
])
def test_freqcalc_parity_per_record(with_na, alpha, fk_col, big_col):
    df, ref = _francdat(with_na)
    md = Microdata.from_source(df, KEYS, weights="w", missing="wildcard", wildcard_alpha=alpha)
    fk, big = wildcard_record_counts(md.codes, md.levels, md.weights, alpha)
    np.testing.assert_allclose(fk, ref[fk_col], rtol=0, atol=1e-12)
    np.testing.assert_allclose(big, ref[big_col], rtol=1e-14, atol=1e-12)
    # the table hook: every record's cell carries its fk and Fk (weights differ only between
    # cells here, so the cell mean is the record's own Fk)
    t = tabulate(md)
    np.testing.assert_allclose(t.wildcard.counts[t.record_cell], ref[fk_col], atol=1e-12)
    np.testing.assert_allclose(t.wildcard.weight_sums[t.record_cell], ref[big_col],
                               rtol=1e-14, atol=1e-12)
    assert t.wildcard.n_missing_cells == (4 if with_na else 0)


@pytest.mark.parametrize("with_na,col", [(False, "rk"), (True, "rk_na")])
def test_indivrisk_parity_with_wildcards(with_na, col):
    df, ref = _francdat(with_na)
    md = Microdata.from_source(df, KEYS, weights="w", missing="wildcard")
    res = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    np.testing.assert_allclose(res.record_risk(), ref[col], rtol=1e-13)
    if with_na:  # sdcMicro: with NAs, n1 = 0 (no record has fk = 1)
        assert res.measures["tau2"].estimate == 0.0


def test_missing_as_category_differs_from_wildcard():
    df, ref = _francdat(True)
    md = Microdata.from_source(df, KEYS, weights="w", missing="category")
    t = tabulate(md)
    assert t.wildcard is None
    # record 3 (Key3 missing) is alone in its cell as a category, fk = 4 as a wildcard
    assert t.counts[t.record_cell[2]] == 1 and ref["fk_na"][2] == 4


def test_hand_worked_alpha_and_no_shared_key():
    # (a, x), (a, y), (NA, x), (NA, NA): record 4 shares no observed key with anyone
    codes = [np.array([0, 0, 1, 1]), np.array([0, 1, 0, 2])]
    levels = [("a", None), ("x", "y", None)]
    fk, _ = wildcard_record_counts(codes, levels, alpha=1.0)
    assert fk.tolist() == [3.0, 2.0, 3.0, 4.0]
    fk, big = wildcard_record_counts(codes, levels, np.array([1.0, 2.0, 3.0, 4.0]), alpha=0.5)
    # record 1: itself 1 + record 3 (alpha) + record 4 (alpha); record 3: itself, record 1
    # (complete: 1) and record 4 (alpha); record 4: itself, records 1 and 2, record 3 (alpha)
    assert fk.tolist() == [2.0, 1.5, 2.5, 3.5]
    assert big.tolist() == [1 + 0.5 * 3 + 0.5 * 4, 2 + 0.5 * 4, 3 + 1 + 0.5 * 4,
                            4 + 1 + 2 + 0.5 * 3]
    cells = wildcard_cell_counts(np.array([[0, 0], [0, 1], [1, 0], [1, 2]]), [2, 3],
                                 np.ones(4), None, levels, alpha=1.0)
    assert cells.counts.tolist() == [3.0, 2.0, 3.0, 4.0]


def test_model_based_estimators_refuse_wildcards():
    from sdcrisk.analyses.methods import get_estimator

    df, _ = _francdat(True)
    t = tabulate(Microdata.from_source(df, KEYS, weights="w", missing="wildcard"))
    for name in ("poisson-gamma", "loglinear", "auto"):
        with pytest.raises(ParameterError, match="cannot treat missing key values as wild"):
            get_estimator(name).fit(t)
    with pytest.raises(ParameterError, match="mode='sdcmicro'"):
        NegativeBinomialRisk(mode="exact").fit(t)


def test_wildcard_refusal_comes_before_the_cell_space_check():
    # every complete combination of a 2 x 2 key space is observed, and a pattern with a
    # missing value makes a fifth observed cell: poisson-gamma said "cell_space=4 is
    # smaller than the 5 observed cells" instead of the documented refusal of wildcards
    df = pd.DataFrame({"a": [1, 1, 2, 2, None], "b": [1, 2, 1, 2, 1]})
    t = tabulate(Microdata.from_source(df, ["a", "b"], population_size=1000,
                                       missing="wildcard"))
    assert t.cell_space == 4 and t.n_cells == 5
    with pytest.raises(ParameterError, match="cannot treat missing key values as wild"):
        PoissonGammaRisk().fit(t)


def test_wildcard_without_missing_values_is_accepted_everywhere():
    df, _ = _francdat(False)
    t = tabulate(Microdata.from_source(df, KEYS, weights="w", missing="wildcard"))
    a = NegativeBinomialRisk().fit(t).measures["tau2"].estimate
    b = NegativeBinomialRisk().fit(tabulate(Microdata.from_source(df, KEYS, weights="w"))
                                   ).measures["tau2"].estimate
    assert a == b


def test_bad_alpha_and_policy():
    df, _ = _francdat(True)
    with pytest.raises(ParameterError, match="wildcard_alpha"):
        Microdata.from_source(df, KEYS, missing="wildcard", wildcard_alpha=1.5)
    with pytest.raises(ParameterError, match="'wildcard'"):
        Microdata.from_source(df, KEYS, missing="ignore")
    with pytest.raises(ParameterError, match="applies to missing='wildcard' only"):
        Microdata.from_source(df, KEYS, wildcard_alpha=0.5)


def test_cli_missing_wildcard(tmp_path, capsys):
    df, _ = _francdat(True)
    path = tmp_path / "francdat_na.csv"
    df.to_csv(path, index=False)
    args = [str(path), "--keys", ",".join(KEYS), "--weights", "w", "--missing", "wildcard",
            "--format", "json"]
    assert main(["assess", *args, "--method", "nb", "--mode", "sdcmicro"]) == 0
    out = capsys.readouterr().out
    import json

    d = json.loads(out)
    ref = pd.read_csv(shared_data("sdcmicro", "reference", "francdat_freqCalc_indivRisk.csv"))
    assert d["measures"]["expected_reidentifications"]["estimate"] == pytest.approx(
        ref["rk_na"].sum(), rel=1e-12)
    assert main(["assess", *args, "--method", "poisson-gamma"]) == 2
    err = capsys.readouterr().err
    assert "cannot treat missing key values as wildcards" in err and "--method nb" in err


def test_k_anonymity_counts_use_wildcard_frequencies():
    # hand-worked: (1,1) x2 -> fk 2; (1,2) matches (NA,2) -> 2; (2,2) x2 + (NA,2) -> 3;
    # (NA,2) matches every b = 2 and (3,NA) -> 5; (3,NA) matches (NA,2) -> 2
    df = pd.DataFrame({"a": [1, 1, 1, 2, 2, None, 3], "b": [1, 1, 2, 2, 2, 2, None]})
    wild = tabulate(Microdata.from_source(df, keys=["a", "b"], missing="wildcard",
                                          population_size=100))
    own = tabulate(Microdata.from_source(df, keys=["a", "b"], population_size=100))
    assert wild.k_anonymity_violations((2, 3, 6)) == {2: 0, 3: 4, 6: 7}
    assert own.k_anonymity_violations((2, 3)) == {2: 3, 3: 7}  # missing as its own category


def test_leave_one_key_out_recomputes_wildcard_counts():
    # the report's "what drives the risk" re-fits without each key: with wildcards the
    # merged table's fk must be recomputed (it was an internal error: shapes differed)
    from sdcrisk.report import variable_contributions

    df = pd.DataFrame({"a": [1, 1, 1, 2, 2, None, 3, 3], "b": [1, 1, 2, 2, 2, 2, None, 1],
                       "c": [0, 1, 0, 1, 0, 1, 0, 1]})
    md = Microdata.from_source(df, keys=["a", "b", "c"], missing="wildcard",
                               population_size=100)
    res = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    rows = variable_contributions(res).set_index("dropped")
    for key in ("a", "b", "c"):
        rest = [k for k in ("a", "b", "c") if k != key]
        direct = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(Microdata.from_source(
            df, keys=rest, missing="wildcard", population_size=100)))
        assert rows.loc[key, "expected_reidentifications"] == pytest.approx(
            direct.measures["expected_reidentifications"].estimate, rel=1e-12)


def test_assess_passes_wildcard_alpha_and_refuses_out_of_core(tmp_path, capsys):
    import json

    path = tmp_path / "w.csv"
    pd.DataFrame({"a": [1, 1, 1, 2, 2, None, 3, 3], "b": [1, 1, 2, 2, 2, 2, None, 1]}).to_csv(
        path, index=False)
    base = ["assess", str(path), "--keys", "a,b", "--population-size", "100", "--method",
            "nb", "--mode", "sdcmicro", "--missing", "wildcard", "--format", "json"]
    er = {}
    for alpha in ("1", "0.1"):
        assert main(base + ["--wildcard-alpha", alpha]) == 0
        er[alpha] = json.loads(capsys.readouterr().out)["expected_reidentifications"]
        direct = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(Microdata.from_source(
            str(path), keys=["a", "b"], missing="wildcard", wildcard_alpha=float(alpha),
            population_size=100)))
        assert er[alpha] == pytest.approx(
            direct.measures["expected_reidentifications"].estimate, rel=1e-12)
    assert er["1"] != pytest.approx(er["0.1"])
    assert main(base + ["--out-of-core"]) == 2
    assert "--out-of-core does not count missing values as wildcards" in capsys.readouterr().err


def _scan_fk(i, codes, missing, skip=-1):
    """Record i's wildcard fk (alpha = 1) by scanning every record, as if key ``skip`` were
    suppressed: the definition, record by record."""
    match = np.ones(len(codes), bool)
    for j in range(codes.shape[1]):
        if j != skip and not missing[i, j]:
            match &= (codes[:, j] == codes[i, j]) | missing[:, j]
    return int(np.count_nonzero(match))


@pytest.mark.parametrize("seed", range(40))
def test_record_matcher_counts_as_the_scan_while_values_are_suppressed(seed):
    """RecordMatcher (tables of complete records, the others one by one) against the scan
    of every record, with suppressions interleaved; one in five files with key spaces past
    int64, where it scans. local_suppression asked the scan 125,000 times on 200,000
    records (195 s; 13 s with the matcher, the same 3,200 values suppressed)."""
    from sdcrisk.data.wildcard import RecordMatcher

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 80)), int(rng.integers(1, 5))
    levels = rng.integers(1, 5, k)
    codes = np.stack([rng.integers(0, v, n) for v in levels], axis=1).astype(np.int64)
    missing = rng.random((n, k)) < rng.choice([0.0, 0.1, 0.4])
    n_levels = levels + 1 if seed % 5 else np.full(k, 1 << 40)
    matcher = RecordMatcher(codes, missing.copy(), n_levels)
    truth = missing.copy()
    for _ in range(80):
        i, skip = int(rng.integers(0, n)), int(rng.integers(-1, k))
        assert matcher.count(i, skip) == _scan_fk(i, codes, truth, skip)
        j = int(rng.integers(0, k))
        if rng.random() < 0.4 and not truth[i, j]:
            matcher.suppress(i, j)
            truth[i, j] = True
    assert (matcher.missing == truth).all()


def test_a_file_without_missing_values_reads_alike_with_wildcards_to_the_bit(capsys, tmp_path):
    """Without a missing value the wildcard counts are the counts, so nb (sdcMicro mode)
    takes its by-count path either way and every figure is the same bits: protect (whose
    tables count suppressed values as wildcards) printed an ER "before" that differed from
    assess's in the last bit (0.7176016125350555 against ...556)."""
    keys = "region,sex,age_band,marital_status,ethnic_group"
    md = Microdata.from_source("example:uk_census2011", keys, population_size=56_075_912)
    est = NegativeBinomialRisk(mode="sdcmicro")
    plain = est.fit(tabulate(md))
    wild_table = tabulate(Microdata.from_source("example:uk_census2011", keys,
                                                population_size=56_075_912,
                                                missing="wildcard"))
    assert wild_table.wildcard is not None and wild_table.wildcard.n_missing_cells == 0
    wild = est.fit(wild_table)
    for name, m in plain.measures.items():
        assert wild.measures[name] == m, name
    np.testing.assert_array_equal(wild.cell_risk(), plain.cell_risk())
    assert main(["protect", "example:uk_census2011", "--keys", keys, "--population-size",
                 "56075912", "--method", "nb", "--mode", "sdcmicro", "--k-anonymity", "3",
                 "--out", str(tmp_path / "protected.csv"), "--format", "json"]) == 0
    before = json.loads(capsys.readouterr().out)["risk_before"]
    for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
        assert before[name] == plain.measures[name].estimate, name


def test_records_of_one_missing_pattern_are_each_sample_unique_at_alpha_0():
    """At alpha = 0 two records with the same missing pattern (b missing, a = 2, no other
    record with a = 2) each have f = 1: four sample-unique records in three cells. tau1
    counted the cell once (0.03 = 3 p, P(PU | SU) over 3) while the sample-unique count said
    4; every figure now counts records: tau1 = 4 p (P(U = 0) = p^f with p = n / N)."""
    data = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3], "b": [1, 2, None, None, 3, 3]})
    md = Microdata.from_source(data, ["a", "b"], population_size=600, missing="wildcard",
                               wildcard_alpha=0.0)
    res = NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    assert res.sample_uniques == 4
    p = 6 / 600
    assert res.estimate("tau1") == pytest.approx(4 * p, rel=1e-12)
    assert res.estimate("p_pu_given_su") == pytest.approx(p, rel=1e-12)
    record = res.record_risk()
    assert res.estimate("tau2") == pytest.approx(record[:4].sum(), rel=1e-12)
    assert res.estimate("expected_reidentifications") == pytest.approx(record.sum(), rel=1e-12)
