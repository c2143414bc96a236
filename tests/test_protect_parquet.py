"""protect from Parquet to Parquet: the other columns as they were, whatever their type.
(And to CSV: an integer key with suppressed values is written 3, not 3.0.)

pandas wrote the protected frame before, and refused a file with a map column ("the data
cannot be written to a Parquet file (Expected bytes, got a 'int' object ...)", after the
whole computation), turned an integer column with nulls into decimals and wrote a
suppressed text key as "" (a category when the file is read again). Now the other columns
are copied from the input file by Arrow, row group by row group, and the keys are the CSV
route's protected keys, a suppressed value null.
"""

from __future__ import annotations

import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sdcrisk.analyses.protect import protect, write_frame
from sdcrisk.cli import main
from sdcrisk.exceptions import InputError, ParameterError

N = 40
#: keys: 'region' (text), 'age' (integers), 'sex' (dictionary-encoded text); 13 records
#: share no key combination with 2 others, so k = 3 suppresses values
REGION = ["north", "south", "east", "west", "x y"]


def _table() -> pa.Table:
    region = [REGION[i % 5] for i in range(N)]
    age = [(i * 7) % 6 for i in range(N)]
    sex = pa.array(["F" if i % 3 else "M" for i in range(N)]).dictionary_encode()
    return pa.table({
        "id": pa.array(range(N), pa.int32()),
        "region": region,
        "tags": pa.array([[("k", i), ("j", -i)] if i % 4 else None for i in range(N)],
                         pa.map_(pa.string(), pa.int64())),
        "age": pa.array(age, pa.int64()),
        "note": [None if i % 5 == 2 else f"n{i}é" for i in range(N)],
        "income": pa.array([None if i % 6 == 1 else 1000.5 * i for i in range(N)]),
        "children": pa.array([None if i % 7 == 3 else i % 4 for i in range(N)], pa.int64()),
        "sex": sex,
        "visits": pa.array([[i, i + 1] for i in range(N)]),
    })


def _run(out, src, *extra) -> dict:
    code = main(["protect", str(src), "--keys", "region,age,sex", "--k-anonymity", "3",
                 "--population-size", "1000", "--method", "nb", "--format", "json",
                 "--out", str(out), *extra])
    assert code == 0
    return out


def test_other_columns_kept_and_keys_as_the_csv_route(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    table = _table()
    pq.write_table(table, src, row_group_size=7)  # 6 row groups
    out = _run(tmp_path / "out.parquet", src)
    stats = json.loads(capsys.readouterr().out)
    assert stats["values_suppressed"] > 0
    got = pq.read_table(out)
    assert got.column_names == table.column_names
    others = [c for c in table.column_names if c not in ("region", "age", "sex")]
    for c in others:  # the same Arrow type, values and nulls
        assert got.schema.field(c).type == table.schema.field(c).type, c
        assert got.column(c).combine_chunks().equals(table.column(c).combine_chunks()), c
    assert got.column("children").null_count == table.column("children").null_count > 0
    # the keys keep their types; suppressed values are null
    assert got.schema.field("age").type == pa.int64()
    assert got.schema.field("sex").type == table.schema.field("sex").type
    suppressed = sum(got.column(k).null_count for k in ("region", "age", "sex"))
    assert suppressed == stats["values_suppressed"]
    assert pq.ParquetFile(out).num_row_groups == 6
    # the CSV route protects the same keys the same way (blank cells for the null values)
    _run(tmp_path / "out.csv", src)
    capsys.readouterr()
    csv = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    for k in ("region", "age", "sex"):
        values = got.column(k).to_pylist()
        assert ["" if v is None else str(v) for v in values] == csv[k].tolist(), k
    # and the protected Parquet file is 3-anonymous, read as assess reads it (nulls missing)
    from sdcrisk.analyses.protect import k_anonymity_violations, microdata_of

    assert k_anonymity_violations(microdata_of(pd.read_parquet(out),
                                               ["region", "age", "sex"]), 3) == 0


def test_recodes_to_text_and_the_api(tmp_path):
    src = tmp_path / "in.parquet"
    pq.write_table(_table(), src)
    recodes = {"age": {"0": "young", "1": "young"}, "region": {"x y": "west"}}
    prot = protect(str(src), ["region", "age", "sex"], recodes=recodes, k=3,
                   population_size=1000)
    out = write_frame(prot.frame, tmp_path / "out.parquet")
    got = pq.read_table(out)
    assert got.schema.field("age").type == pa.string()  # numbers recoded to text: text
    ages = set(got.column("age").to_pylist()) - {None}
    assert ages <= {"young", "2", "3", "4", "5"} and "young" in ages
    assert "x y" not in got.column("region").to_pylist()
    assert got.column("tags").equals(_table().column("tags"))
    # a frame of other columns than the input's is written by pandas, as it is
    sub = prot.frame[["id", "region"]]
    assert pq.read_table(write_frame(sub, tmp_path / "sub.parquet")).column_names == [
        "id", "region"]


def test_input_changed_before_the_write_and_the_output_checked_first(tmp_path, capsys):
    src = tmp_path / "in.parquet"
    pq.write_table(_table(), src)
    prot = protect(str(src), ["region", "age", "sex"], k=3, population_size=1000)
    pq.write_table(_table().slice(0, 20), src)
    os.utime(src, ns=(1, 1))
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="in.parquet: the input changed after it was read"):
        write_frame(prot.frame, out)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["in.parquet"]
    out.write_bytes(b"old")  # an existing output is refused before any work
    with pytest.raises(ParameterError, match="exists"):
        from sdcrisk.data.frames import check_output_path

        check_output_path(out, src)
    assert main(["protect", str(src), "--keys", "region", "--k-anonymity", "3",
                 "--population-size", "1000", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == b"old"


def test_uint64_codes_past_int64_kept_exact_or_refused(tmp_path, capsys):
    """Codes past int64 (a uint64 column): suppressed as nulls of the uint64 column in
    Parquet, written digit for digit in a CSV, and refused for Stata / SPSS, which hold
    numbers as doubles (2^63 + 5 and 2^63 + 7 would merge there)."""
    codes = [2**63 + 5, 2**63 + 7, 2**64 - 1]
    ids = [codes[i % 3] for i in range(30)] + [codes[0]]  # codes[0] 11 times, others 10
    sexes = ["a"] * 30 + ["b"]  # the last record is alone: k = 2 suppresses a value of it
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, type=pa.uint64()), "sex": sexes}), path)
    out = tmp_path / "out.parquet"
    assert main(["protect", str(path), "--keys", "id,sex", "--k-anonymity", "2",
                 "--whole-population", "--method", "nb", "--out", str(out)]) == 0
    assert "values suppressed: 1 (" in capsys.readouterr().out
    table = pq.read_table(out)
    assert table.schema.field("id").type == pa.uint64()
    got = table.column("id").to_pylist()
    assert [g for g in got if g is not None] == [i for i, g in zip(ids, got, strict=True)
                                                 if g is not None]
    assert set(got) - {None} <= set(codes)
    csv = tmp_path / "out.csv"
    assert main(["protect", str(path), "--keys", "id,sex", "--k-anonymity", "2",
                 "--whole-population", "--method", "nb", "--out", str(csv)]) == 0
    capsys.readouterr()
    assert csv.read_text().splitlines()[1:4] == [f"{c},a" for c in codes]
    for suffix in (".dta", ".sav"):
        if suffix == ".sav":
            pytest.importorskip("pyreadstat")
        bad = tmp_path / f"out{suffix}"
        assert main(["protect", str(path), "--keys", "id,sex", "--k-anonymity", "2",
                     "--whole-population", "--method", "nb", "--out", str(bad)]) == 2
        err = capsys.readouterr().err
        assert "holds integer codes past 2^53 (e.g. 9223372036854775813)" in err
        assert ".parquet or .csv" in err and not bad.exists()
