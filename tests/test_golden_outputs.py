"""The CLI's JSON outputs and the report's tables equal those recorded before a refactoring.

The goldens in tests/reference/golden were recorded from the flat layout (main at 84d6d00,
before issue 16 moved every module into layer subpackages) by make_golden.py there. Timings
are left out of the comparison; every other field must match to 1e-9.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from conftest import assert_same_tree

GOLDEN = Path(__file__).parent / "reference" / "golden"
_spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)


@pytest.mark.parametrize("name", sorted(make_golden.CASES))
def test_cli_json_output_unchanged(name):
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert_same_tree(golden, json.loads(make_golden.cli_output(name)))


def test_report_tables_unchanged():
    golden = json.loads((GOLDEN / "report_tables.json").read_text())
    now = json.loads(json.dumps(make_golden.report_tables(), default=float))
    assert_same_tree(golden, now)
