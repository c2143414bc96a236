"""CSV files separated by semicolons, tabs or pipes are read as such, by every reader.

Statistical offices where the comma is the decimal mark export semicolon-separated files; a
tab-separated file is often named ``.csv``. Each reader (in-memory assess, ``--out-of-core``
streaming, protect's whole-file reader) must give the same table as the comma-separated
version of the same records, and protect must write the file back with the separator it read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdcrisk.cli import main
from sdcrisk.data.text import csv_delimiter

RNG = np.random.default_rng(3)
N_RECORDS = 400
FRAME = pd.DataFrame({
    "age": RNG.integers(0, 12, N_RECORDS),
    "sex": RNG.choice(["female", "male"], N_RECORDS),
    "region": RNG.integers(0, 9, N_RECORDS),
    "income": RNG.normal(3000, 500, N_RECORDS).round(1),
})


def _assess_json(capsys, path: Path, *extra: str) -> dict:
    size = () if "--weights" in extra else ("--population-size", "40000")
    code = main(["assess", str(path), "--keys", "age,sex,region", *size,
                 "--method", "nb", "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(("sep", "name"), [(";", "semi.csv"), ("\t", "tabs.csv"),
                                           ("|", "pipes.txt"), ("\t", "named.tsv")])
@pytest.mark.parametrize("extra", [(), ("--out-of-core",)], ids=["memory", "out-of-core"])
def test_assess_reads_other_separators(capsys, tmp_path, sep, name, extra):
    comma = tmp_path / "comma.csv"
    FRAME.to_csv(comma, index=False)
    other = tmp_path / name
    FRAME.to_csv(other, index=False, sep=sep)
    want = _assess_json(capsys, comma, *extra)
    got = _assess_json(capsys, other, *extra)
    assert got["sample_uniques"] == want["sample_uniques"] > 0
    assert got["observed_cells"] == want["observed_cells"]
    for m in ("tau1", "tau2"):
        assert got["measures"][m]["estimate"] == want["measures"][m]["estimate"]


def test_protect_keeps_the_separator(capsys, tmp_path):
    semi = tmp_path / "semi.csv"
    FRAME.to_csv(semi, index=False, sep=";", decimal=",")  # a comma-decimal export
    comma = tmp_path / "comma.csv"
    FRAME.to_csv(comma, index=False)
    outs = {}
    for src, out in ((semi, tmp_path / "semi_p.csv"), (comma, tmp_path / "comma_p.csv"),
                     (semi, tmp_path / "semi_p.tsv")):
        code = main(["protect", str(src), "--keys", "age,sex,region", "--whole-population",
                     "--k-anonymity", "3", "--out", str(out)])
        _, err = capsys.readouterr()
        assert code == 0, err
        outs[out.name] = out.read_text()
    semi_lines = outs["semi_p.csv"].splitlines()
    assert semi_lines[0] == "age;sex;region;income"
    # the decimal commas of the untouched column come back as they were read
    assert semi_lines[1:] != [] and all("." not in line for line in semi_lines[1:])
    assert [line.split(";")[:3] for line in semi_lines] == [
        line.split(",")[:3] for line in outs["comma_p.csv"].splitlines()]
    assert outs["semi_p.tsv"].splitlines()[0] == "age\tsex\tregion\tincome"
    # suppression happened: some key value is now missing
    assert any(";;" in line or line.startswith(";") for line in semi_lines[1:])


@pytest.mark.parametrize(("text", "sep"), [
    ("a,b\n1,2\n", ","),
    ("a;b;c\n1;2;3\n", ";"),
    ("a\tb\n1\t2\n", "\t"),
    ("a|b\n1|2\n", "|"),
    ('"x;y",z\n1,2\n', ","),        # a semicolon inside a quoted name
    ('"x,y";z\n1;2\n', ";"),        # a comma inside a quoted name
    ("a;b|c\n", ";"),               # no comma: the most frequent other separator
    ("a;b|c|d\n", "|"),
    ("age\n1\n", ","),              # one column
    ("\ufeffa;b\n1;2\n", ";"),      # byte-order mark
])
def test_csv_delimiter(tmp_path, text, sep):
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    assert csv_delimiter(path) == sep


@pytest.mark.parametrize("extra", [(), ("--out-of-core",)], ids=["memory", "out-of-core"])
def test_weights_with_a_decimal_comma(capsys, tmp_path, extra):
    frame = FRAME.assign(w=np.linspace(80.25, 120.75, N_RECORDS))
    comma = tmp_path / "comma.csv"
    frame.to_csv(comma, index=False)
    semi = tmp_path / "semi.csv"
    frame.to_csv(semi, index=False, sep=";", decimal=",")
    assert "80,25" in semi.read_text()
    point = tmp_path / "point.csv"
    frame.to_csv(point, index=False, sep=";")  # semicolons with a decimal point
    runs = [_assess_json(capsys, p, "--weights", "w", *extra) for p in (comma, semi, point)]
    assert runs[0]["population_size"] == pytest.approx(float(frame.w.sum()))
    for got in runs[1:]:
        assert got["population_size"] == pytest.approx(runs[0]["population_size"], rel=1e-12)
        assert got["measures"]["tau1"]["estimate"] == pytest.approx(
            runs[0]["measures"]["tau1"]["estimate"], rel=1e-12)


@pytest.mark.parametrize("extra", [(), ("--out-of-core",)], ids=["memory", "out-of-core"])
def test_weights_with_a_thousands_point_are_refused(capsys, tmp_path, extra):
    semi = tmp_path / "semi.csv"
    semi.write_text("age;sex;w\n1;a;1.234,5\n2;b;80,5\n")
    code = main(["assess", str(semi), "--keys", "age,sex", "--weights", "w", "--method", "nb",
                 *extra])
    _, err = capsys.readouterr()
    assert code == 2
    assert "weights column 'w' is not numeric: value '1.234,5'" in err


@pytest.mark.parametrize("extra", [(), ("--out-of-core",)], ids=["memory", "out-of-core"])
def test_weights_mixing_points_and_commas_are_refused(capsys, tmp_path, extra):
    semi = tmp_path / "semi.csv"
    semi.write_text("age;sex;w\n1;a;80,5\n2;b;80.5\n")
    code = main(["assess", str(semi), "--keys", "age,sex", "--weights", "w", "--method", "nb",
                 *extra])
    _, err = capsys.readouterr()
    assert code == 2
    assert "weights column 'w' mixes decimal points and decimal commas" in err
