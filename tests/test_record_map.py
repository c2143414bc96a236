"""Tables without the record -> cell map (issue 20: 4-8 bytes a record that a run of measures
only never reads; 120 MB at 3x10^7 records).

The measures of a fit on such a table equal those on the full table; record-level figures
refuse with a remedy; ``assess`` drops the map only when no output or method reads it.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from conftest import synthetic_frame
from sdcrisk import AutoRisk, Microdata, tabulate
from sdcrisk.analyses.methods import get_estimator
from sdcrisk.cli import assess, main
from sdcrisk.data.table import CellTable
from sdcrisk.exceptions import ParameterError


@pytest.fixture(scope="module")
def table():
    df = pd.DataFrame(synthetic_frame(3_000, seed=4))
    return tabulate(Microdata.from_source(df, keys=["sex", "age", "region", "tenure"],
                                        population_size=60_000))


def test_without_record_map_keeps_n_and_cells(table):
    lean = table.without_record_map()
    assert lean.record_cell is None
    assert lean.n == table.n == 3_000
    assert lean.n_cells == table.n_cells
    assert lean.sample_uniques == table.sample_uniques
    assert lean.fingerprint() == table.fingerprint()
    assert lean.without_record_map() is lean
    with pytest.raises(ParameterError, match="record -> cell map"):
        lean.record_map()
    np.testing.assert_array_equal(table.record_map(), table.record_cell)


@pytest.mark.parametrize("method", ["nb", "pitman-yor", "graphical", "loglinear"])
def test_measures_do_not_need_the_record_map(table, method):
    est = get_estimator(method)
    full, lean = est.fit(table), est.fit(table.without_record_map())
    for name, m in full.measures.items():
        assert lean.measures[name].estimate == m.estimate, name
    assert lean.thresholds == full.thresholds
    np.testing.assert_array_equal(lean.cell_risk(), full.cell_risk())
    with pytest.raises(ParameterError, match="record -> cell map"):
        lean.record_risk()


def test_household_tables_keep_their_map():
    df = pd.DataFrame(synthetic_frame(600, seed=1))
    t = tabulate(Microdata.from_source(df, keys=["sex", "region"], household="hh",
                                     population_size=6_000))
    assert t.without_record_map() is t
    with pytest.raises(ParameterError, match="records=n"):
        CellTable(keys=t.keys, levels=t.levels, cell_codes=t.cell_codes, counts=t.counts,
                  weight_sums=None, record_cell=None, household=None, population_size=6e3,
                  population_size_source="given")


def _args(**kw):
    base = {"format": "json", "missing": "category", "household": None, "household_size": None}
    return argparse.Namespace(**{**base, **kw})


def test_assess_drops_the_map_only_when_nothing_reads_it():
    calibrated, validated = AutoRisk(), AutoRisk(rule="validated")
    needs = assess._needs_record_map
    assert not needs(_args(), calibrated)
    assert not needs(_args(), get_estimator("graphical"))
    assert needs(_args(), validated)  # re-samples the records
    assert needs(_args(format="html"), calibrated)  # record-level charts
    assert needs(_args(household="hh"), calibrated)
    assert needs(_args(household_size="size"), calibrated)
    assert needs(_args(missing="wildcard"), calibrated)


def test_assess_output_is_the_same_without_the_map(tmp_path, capsys, table):
    df = pd.DataFrame(synthetic_frame(3_000, seed=4))
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    main(["assess", str(path), "--keys", "sex,age,region,tenure", "--population-size",
          "60000", "--method", "nb", "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    ref = get_estimator("nb").fit(table)
    assert got["measures"]["tau1"]["estimate"] == pytest.approx(ref.estimate("tau1"), rel=1e-12)
    assert got["thresholds"]["record_risk_threshold"] == pytest.approx(
        ref.thresholds["record_risk_threshold"], rel=1e-12)
    assert got["provenance"]["input_fingerprint"] == table.fingerprint()


def test_a_fit_that_resamples_records_refuses_a_table_without_the_map(table):
    with pytest.raises(ParameterError, match="record -> cell map"):
        AutoRisk(rule="validated").fit(table.without_record_map())
