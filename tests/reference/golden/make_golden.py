"""Record the golden outputs that tests/test_golden_outputs.py compares against.

Recorded on 2026-11-24 from main at 84d6d00 (the flat layout, before the move to layer
subpackages of issue 16; ``sdcrisk.report`` was then a module with the same functions), as

    PYTHONPATH=OLD/src python tests/reference/golden/make_golden.py tests/reference/golden

Re-record only for a deliberate change of results, and say so in the commit message.
Re-recorded (issue 17, 2026-11-24): ``assess_auto`` (auto's default is now the calibrated
combination) and ``evaluate`` (each method's ``interval_covers_truth``); then
``assess_loglinear`` and ``evaluate`` again when ``--method loglinear`` began to default to
the forward search (its path here stops at all-2-way, so the measures are unchanged); and
``assess_auto`` for the wording of its corpus assumption; ``assess_loglinear`` when the
log-linear model took the ``structural_zeros`` option (one new parameter, null; the
measures are unchanged); ``assess_auto`` when auto's interval scale took the predicted
log(tau / SU) as a feature (issue 17; the estimates are unchanged, the intervals move);
``assess_graphical`` and ``assess_auto`` when the graphical model took ``max_visited`` (one
new parameter and one diagnostic; the measures are unchanged); ``evaluate`` when roc_auc
began to count scores within float noise of each other as ties (2026-11-25: the log-linear
AUC, 0.85114 recorded, 0.85105 under numpy 2.4, is now 0.85089 under either);
``assess_graphical`` when the graphical model took the ``scope`` option (one new parameter,
"all"; the measures are unchanged).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

import sdcrisk
from sdcrisk.cli import main
from sdcrisk.report import (
    category_contributions,
    riskiest_cells,
    sdcmicro_high_risk,
    variable_contributions,
)

KEYS = "region,sex,age_band,marital_status,ethnic_group"
_UK = ["example:uk_census2011", "--keys", KEYS]
CASES = {
    "assess_nb": ["assess", *_UK, "--population-size", "56075912", "--method", "nb",
                  "--format", "json"],
    "assess_nb_sdcmicro": ["assess", *_UK, "--population-size", "56075912", "--method", "nb",
                           "--mode", "sdcmicro", "--format", "json"],
    "assess_pg": ["assess", *_UK, "--population-size", "560759", "--method", "poisson-gamma",
                  "--format", "json"],
    "assess_loglinear": ["assess", *_UK, "--population-size", "560759", "--method",
                         "loglinear", "--format", "json"],
    "assess_graphical": ["assess", *_UK, "--population-size", "560759", "--method",
                         "graphical", "--format", "json"],
    "assess_auto": ["assess", *_UK, "--population-size", "560759", "--format", "json"],
    "evaluate": ["evaluate", *_UK, "--fraction", "0.1", "--methods", "nb,poisson-gamma,loglinear",
                 "--format", "json"],
}


def cli_output(name: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(CASES[name])
    assert rc == 0, (name, rc)
    return buf.getvalue()


def report_tables() -> dict:
    """The numbers of the report's tables (public functions of sdcrisk.report) for nb."""
    md = sdcrisk.Microdata.from_source("example:uk_census2011", KEYS.split(","),
                                       population_size=560759)
    res = sdcrisk.get_estimator("nb").fit(sdcrisk.tabulate(md))
    return {
        "variable_contributions": variable_contributions(res).to_dict(orient="records"),
        "category_contributions": [x.to_dict(orient="records") if hasattr(x, "to_dict") else x
                                   for x in category_contributions(res, min_count=3)],
        "riskiest_cells": riskiest_cells(res, top=10).to_dict(orient="records"),
        "sdcmicro_high_risk": list(sdcmicro_high_risk(res.record_risk())),
    }


if __name__ == "__main__":
    out = sys.argv[1]
    for name in CASES:
        text = cli_output(name)
        with open(f"{out}/{name}.json", "w") as fh:
            fh.write(text)
        print(name, len(text))
    with open(f"{out}/report_tables.json", "w") as fh:
        fh.write(json.dumps(report_tables(), indent=1, default=float))
