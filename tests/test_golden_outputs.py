"""The CLI's JSON outputs and the report's tables equal those recorded before a refactoring.

The goldens in tests/reference/golden were recorded from the flat layout (main at 84d6d00,
before issue 16 moved every module into layer subpackages) by make_golden.py there. Timings
are left out of the comparison; every other field must match to 1e-9.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "reference" / "golden"
_spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
make_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_golden)


def _same(a, b, path="$"):
    """Assert a == b, recursively, floats to 1e-9 relative, skipping timings."""
    if isinstance(a, dict):
        assert isinstance(b, dict), path
        keys = {k for k in a if not k.endswith("seconds")}
        assert keys == {k for k in b if not k.endswith("seconds")}, path
        for k in keys:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            assert math.isnan(b), path
        else:
            assert b == pytest.approx(a, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


@pytest.mark.parametrize("name", sorted(make_golden.CASES))
def test_cli_json_output_unchanged(name):
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    _same(golden, json.loads(make_golden.cli_output(name)))


def test_report_tables_unchanged():
    golden = json.loads((GOLDEN / "report_tables.json").read_text())
    now = json.loads(json.dumps(make_golden.report_tables(), default=float))
    _same(golden, now)
