"""The adversarial-input pass: inputs that ended in a traceback (exit 1, ``internal error``)
or in a message naming neither the value nor the remedy. Each test pins the exit code and
the words of the message (the value, the option typed, the remedy), or, where the input is
valid after all, the figures it gives."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pandas as pd
import pytest

from sdcrisk import Microdata, tabulate
from sdcrisk.cli import main


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def odd_parquet(tmp_path):
    """Six records whose columns are of the Parquet types that are not plain integers or
    text: boolean (with a null), dictionary-encoded text, timestamp, date, bytes that are not
    UTF-8."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "odd.parquet"
    pq.write_table(pa.table({
        "bo": pa.array([True, False, True, None, True, False]),
        "dic": pa.array(["a", "b", "a", "c", "a", "b"]).dictionary_encode(),
        "ts": pa.array([datetime.datetime(2020, 1, 1 + i % 2) for i in range(6)]),
        "bin": pa.array([b"a", b"b", b"a", b"\xff", b"a", b"b"]),
    }), path)
    return path


# --- a Parquet boolean key with nulls -------------------------------------------------------

def test_parquet_boolean_key_with_nulls_is_read(capsys, odd_parquet):
    """pyarrow refused fill_null(0) on a boolean column (ArrowInvalid, exit 1): True, False
    and the missing value are three categories of 3, 2 and 1 records."""
    code, out, err = _run(capsys, ["assess", odd_parquet, "--keys", "bo",
                                   "--population-size", 100, "--method", "nb",
                                   "--format", "json"])
    assert code == 0, err
    res = json.loads(out)
    assert res["n"] == 6 and res["observed_cells"] == 3 and res["sample_uniques"] == 1
    md = Microdata.from_source(odd_parquet, keys=["bo"], population_size=100)
    assert sorted(tabulate(md).counts.tolist()) == [1, 2, 3]
