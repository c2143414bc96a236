"""Parity with sdcMicro 5.8.1 measure_risk / freqCalc / indivRisk.

Every number is from ../shared/methods/sdcmicro-reference.md section 1 and 3 and the per-record
files in ../shared/data/sdcmicro/reference/ (see tests/reference/README.md). Skipped when the
shared data are absent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import shared_data
from sdcrisk import Microdata, NegativeBinomialRisk, tabulate

KEYS5 = ["urbrur", "roof", "walls", "water", "sex"]
KEYS7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
KEYS_SDCOBJ = ["urbrur", "roof", "walls", "water", "electcon"]
N_RECORDS = 4580

REL = 1e-9  # relative, for file-level sums
ABS = 1e-12  # absolute, per record


def fit(keys, *, weights=None, household=None, max_global_risk=0.01, mode="sdcmicro"):
    md = Microdata.from_source(shared_data("sdcmicro", "testdata.csv"), keys, weights=weights,
                               household=household)
    return NegativeBinomialRisk(mode=mode, max_global_risk=max_global_risk).fit(tabulate(md))


@pytest.fixture(scope="module")
def ref5():
    return pd.read_csv(shared_data("sdcmicro", "reference", "testdata_keys5_risk.csv"))


@pytest.fixture(scope="module")
def ref7():
    return pd.read_csv(shared_data("sdcmicro", "reference", "testdata_keys7_risk.csv"))


def record_fk(res):
    return res.table.counts[res.table.record_cell]


def record_big_fk(res):
    return res.table.weight_sums[res.table.record_cell]


def check_summary(res, *, er, global_risk, rmax, rmin, median, n1, n2_records, classes):
    rec = res.record_risk()
    assert res.n == N_RECORDS
    assert res.estimate("expected_reidentifications") == pytest.approx(er, rel=REL)
    assert res.estimate("global_risk") == pytest.approx(global_risk, rel=REL)
    assert rec.sum() == pytest.approx(er, rel=REL)
    assert rec.max() == pytest.approx(rmax, abs=ABS)
    assert rec.min() == pytest.approx(rmin, abs=ABS)
    assert np.median(rec) == pytest.approx(median, abs=ABS)
    assert res.sample_uniques == n1
    # sdcMicro's "records with fk == 2" counts records, not cells
    assert int(np.sum(record_fk(res) == 2)) == n2_records
    assert res.table.n_cells == classes


# --- keys5 -----------------------------------------------------------------------------------

def test_keys5_unweighted(ref5):
    res = fit(KEYS5)
    # no weights, no N: the file is the population, risk = 1/fk
    assert res.table.population_size_source == "assumed_population"
    check_summary(res, er=93, global_risk=0.020305676855895197, rmax=1,
                  rmin=0.0022271714922048997, median=0.005405405405405406, n1=12, n2_records=12,
                  classes=93)
    assert res.thresholds["record_risk_threshold"] == pytest.approx(0.03225806451612903,
                                                                    abs=ABS)
    assert res.thresholds["max_global_risk"] == 0.01
    np.testing.assert_array_equal(record_fk(res), ref5["fk"])
    np.testing.assert_allclose(res.record_risk(), ref5["risk_unweighted"], rtol=0, atol=ABS)
    np.testing.assert_allclose(res.record_risk()[:6],
                               [0.002785515320334262, 0.002849002849002849,
                                0.002785515320334262, 0.002785515320334262,
                                0.006211180124223602, 0.006666666666666667], rtol=0, atol=ABS)


def test_keys5_weighted(ref5):
    res = fit(KEYS5, weights="sampling_weight")
    assert res.population_size == 458_000
    check_summary(res, er=1.5272044885239107, global_risk=0.00033345076168644336,
                  rmax=0.046516870565536286, rmin=2.232093033637642e-05,
                  median=5.4344872561273845e-05, n1=12, n2_records=12, classes=93)
    assert res.thresholds["record_risk_threshold"] is None  # sdcMicro: NA
    np.testing.assert_array_equal(record_fk(res), ref5["fk"])
    np.testing.assert_allclose(record_big_fk(res), ref5["Fk"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.record_risk(), ref5["risk_weighted"], rtol=0, atol=ABS)
    assert "household_expected_reidentifications" not in res.measures


def test_keys5_weighted_household(ref5):
    res = fit(KEYS5, weights="sampling_weight", household="ori_hid")
    assert res.estimate("expected_reidentifications") == pytest.approx(1.5272044885239107,
                                                                       rel=REL)
    assert res.estimate("household_expected_reidentifications") == pytest.approx(
        7.177028571252839, rel=REL)
    assert res.estimate("household_global_risk") == pytest.approx(0.0015670368059504014,
                                                                  rel=REL)
    np.testing.assert_allclose(res.household_record_risk(), ref5["hier_risk_weighted"],
                               rtol=0, atol=ABS)
    np.testing.assert_allclose(res.household_record_risk()[:6],
                               [0.00011236241961420923] * 4 + [0.00039336607282236535] * 2,
                               rtol=0, atol=ABS)


def test_keys5_weighted_max_global_risk_1e4():
    res = fit(KEYS5, weights="sampling_weight", max_global_risk=1e-4)
    assert res.thresholds["max_global_risk"] == 1e-4
    assert res.thresholds["record_risk_threshold"] == pytest.approx(0.00027019724398811136,
                                                                    abs=ABS)


def test_keys5_exact_mode_differs_only_where_f_at_least_3(ref5):
    # sdcMicro's approximation is exact for f <= 2 and an overestimate for f >= 3
    res = fit(KEYS5, weights="sampling_weight", mode="exact")
    fk = record_fk(res)
    small = fk <= 2
    np.testing.assert_allclose(res.record_risk()[small], ref5["risk_weighted"][small],
                               rtol=0, atol=ABS)
    assert np.all(res.record_risk()[~small] < ref5["risk_weighted"].to_numpy()[~small])


# --- keys7 -----------------------------------------------------------------------------------

def test_keys7_unweighted(ref7):
    res = fit(KEYS7)
    check_summary(res, er=412, global_risk=0.08995633187772925, rmax=1,
                  rmin=0.005681818181818182, median=0.022222222222222223, n1=157, n2_records=124,
                  classes=412)
    assert res.thresholds["record_risk_threshold"] == pytest.approx(0.010638297872340425,
                                                                    abs=ABS)
    np.testing.assert_array_equal(record_fk(res), ref7["fk"])
    np.testing.assert_allclose(res.record_risk(), ref7["risk_unweighted"], rtol=0, atol=ABS)
    assert res.table.k_anonymity_violations() == {2: 157, 3: 281, 5: 458}


def test_keys7_weighted(ref7):
    res = fit(KEYS7, weights="sampling_weight")
    check_summary(res, er=10.778298918734835, global_risk=0.0023533403752696146,
                  rmax=0.046516870565536286, rmin=5.713959202331296e-05,
                  median=0.00022722108611679165, n1=157, n2_records=124, classes=412)
    assert res.thresholds["record_risk_threshold"] is None
    np.testing.assert_array_equal(record_fk(res), ref7["fk"])
    np.testing.assert_allclose(record_big_fk(res), ref7["Fk"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.record_risk(), ref7["risk_weighted"], rtol=0, atol=ABS)
    # sdcMicro: kAnon violations 157/281/458 unweighted, 0/0/0 weighted (Fk < k)
    assert res.to_dict()["k_anonymity_violations"] == {"2": 157, "3": 281, "5": 458}
    assert res.diagnostics["weighted_k_anonymity_violations"] == {"2": 0, "3": 0, "5": 0}


# --- createSdcObj example --------------------------------------------------------------------

def test_create_sdc_obj_example():
    res = fit(KEYS_SDCOBJ, weights="sampling_weight")
    assert res.estimate("expected_reidentifications") == pytest.approx(0.9106180882770883,
                                                                       rel=REL)
    assert res.estimate("global_risk") == pytest.approx(0.00019882491010416776, rel=REL)
    assert res.thresholds["record_risk_threshold"] is None
    assert res.table.k_anonymity_violations() == {2: 2, 3: 8, 5: 46}


# --- francdat: freqCalc / indivRisk ----------------------------------------------------------

@pytest.mark.parametrize("mode", ["sdcmicro", "exact"])
def test_francdat_freqcalc_indivrisk(mode):
    ref = pd.read_csv(shared_data("sdcmicro", "reference", "francdat_freqCalc_indivRisk.csv"))
    md = Microdata.from_source(shared_data("sdcmicro", "francdat.csv"),
                               ["Key1", "Key2", "Key3", "Key4"], weights="w")
    res = NegativeBinomialRisk(mode=mode).fit(tabulate(md))
    np.testing.assert_array_equal(record_fk(res), ref["fk"])
    np.testing.assert_allclose(record_big_fk(res), ref["Fk"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.record_risk(), ref["rk"], rtol=0, atol=ABS)
    # sdcMicro: n1 (fk == 1) = 4 and n2 (fk == 2) = 4 records
    assert int(np.sum(record_fk(res) == 1)) == 4
    assert int(np.sum(record_fk(res) == 2)) == 4


# --- modRisk (sdcmicro-reference.md section 2) -------------------------------------------------
INF = float("inf")
MODRISK = [
    # keys, terms, bound, gr1, gr2 (sdcMicro 5.8.1, keys as factors, method "default" = glm)
    (KEYS7, "independence", INF, 0.2249330480973577, 0.2804221662693053),
    (KEYS7, "all-2-way", INF, 0.21047570471119664, 0.28183482075445265),
    (KEYS7, "independence", 1, 0.5902701644338304, 0.7358849204009794),
    (KEYS5, "independence", 1, 0.1980424343999813, 0.39113067656225914),
    (KEYS5, "all-2-way", 1, 0.23433941551847112, 0.48781614492789155),
]


def _modrisk(path, keys, terms, bound):
    from sdcrisk import LogLinearRisk

    md = Microdata.from_source(path, keys, weights="sampling_weight")
    est = LogLinearRisk(terms=terms, mode="sdcmicro", sdcmicro_bound=bound, tol=1e-10,
                        max_iter=5000)
    return est.fit(tabulate(md))


@pytest.mark.parametrize(("keys", "terms", "bound", "gr1", "gr2"), MODRISK)
def test_modrisk_factor_coding(keys, terms, bound, gr1, gr2):
    res = _modrisk(shared_data("sdcmicro", "testdata.csv"), keys, terms, bound)
    # glm (sdcMicro) and IPF (ours) converge to the same MLE: agreement to ~1e-10 relative
    assert res.measures["sdcmicro_gr1"].estimate == pytest.approx(gr1, rel=1e-8)
    assert res.measures["sdcmicro_gr2"].estimate == pytest.approx(gr2, rel=1e-8)
    kept = {(True, INF): 412, (True, 1): 157, (False, 1): 12}[(keys is KEYS7, bound)]
    assert res.fitted["sdcmicro_kept_cells"] == kept  # sdcMicro's K (section 2b/2c)


def test_modrisk_ipf_method_testdata2():
    """?modRisk example: testdata2, ~ sex + water + roof, method "IPF" (loglm, factors)."""
    res = _modrisk(shared_data("sdcmicro", "testdata2.csv"), ["sex", "water", "roof"],
                   "independence", INF)
    assert res.measures["sdcmicro_gr1"].estimate == pytest.approx(0.27354338197561434, rel=1e-12)
    assert res.measures["sdcmicro_gr2"].estimate == pytest.approx(0.4103754063303325, rel=1e-12)


def test_modrisk_nan_like_sdcmicro():
    """keys5 main effects, factor coding: sdcMicro gives NA (cells with p = f/100 > 1 overflow)."""
    from sdcrisk import ApproximationWarning

    with pytest.warns(ApproximationWarning, match="NaN"):
        res = _modrisk(shared_data("sdcmicro", "testdata.csv"), KEYS5, "independence", INF)
    assert np.isnan(res.measures["sdcmicro_gr1"].estimate)
    assert np.isnan(res.measures["sdcmicro_gr2"].estimate)
    # the textbook measures are unaffected
    assert np.isfinite(res.measures["tau1"].estimate)
