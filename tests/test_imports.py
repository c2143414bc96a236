"""Start-up cost: the package and the CLI import their heavy dependencies only when used."""

from __future__ import annotations

import importlib
import subprocess
import sys

import sdcrisk


def test_every_public_name_resolves_and_is_listed():
    for name in sdcrisk.__all__:
        assert getattr(sdcrisk, name) is not None, name
    assert set(sdcrisk.__all__) <= set(dir(sdcrisk))
    # functions named like their modules stay functions once every module is loaded
    importlib.import_module("sdcrisk.analyses.evaluate")
    importlib.import_module("sdcrisk.analyses.recommend")
    assert callable(sdcrisk.evaluate) and callable(sdcrisk.recommend)
    assert sdcrisk.ESTIMATORS["loglinear"] is sdcrisk.LogLinearRisk
    assert sdcrisk.ESTIMATORS["loglinear"].name == "loglinear"
    assert sorted(sdcrisk.ESTIMATORS) == sorted(cls.name for cls in sdcrisk.ESTIMATORS.values())


def _modules_after(code: str) -> set[str]:
    code += "\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return set(out.split())


def test_cli_import_is_light():
    # `sdcrisk --help` and every command start without scipy, numba, pandas or the models
    mods = _modules_after("import sdcrisk.cli")
    heavy = {"scipy", "numba", "pandas", "matplotlib", "sdcrisk.estimators.loglinear",
             "sdcrisk.analyses.decision", "sdcrisk.estimators.mixed_membership"}
    assert not heavy & mods


def test_loglinear_on_parquet_does_not_import_pandas_or_scipy_stats(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"a": [0, 1, 1, 2] * 25, "b": [0, 0, 1, 1] * 25}), path)
    mods = _modules_after(
        "from sdcrisk.cli import main\n"
        f"main(['assess', {str(path)!r}, '--keys', 'a,b', '--population-size', '1000',"
        " '--method', 'loglinear', '--format', 'json', '--out', "
        f"{str(tmp_path / 'o.json')!r}])")
    assert "sdcrisk.estimators.loglinear" in mods
    assert not {"pandas", "scipy.stats", "scipy.special", "sdcrisk.analyses.decision"} & mods


def test_nb_on_a_csv_does_not_import_pandas(tmp_path):
    """The repeated-header check cast each numeric column's name to the column's type with
    Arrow; the failed cast ("region" as an integer) imports pandas: 0.23 s of the 1 s
    start-up budget (issue 20 item 6), on every CSV read. Names that cannot be numbers are
    now told apart without the cast."""
    path = tmp_path / "s.csv"
    path.write_text("region,sex\n" + "1,2\n2,1\n" * 20)
    mods = _modules_after(
        "from sdcrisk.cli import main\n"
        f"main(['assess', {str(path)!r}, '--keys', 'region,sex', '--population-size', "
        "'1000', '--method', 'nb', '--format', 'json', '--out', "
        f"{str(tmp_path / 'o.json')!r}])")
    assert "sdcrisk.data.repeated_header" in mods and "pandas" not in mods


def test_the_start_up_command_imports_neither_scipy_nor_pandas(tmp_path):
    """The command of issue 20 item 6 (benchmarks/bench_startup.py): nb at a sampling
    fraction of 1.8e-4 took its moments for f >= 3 from scipy's quad (scipy.integrate and
    scipy.special: 0.4 s to import) and read its CSV through a check that imported pandas
    (0.23 s). Now: recurrences in f, a dilogarithm series and a check without the cast."""
    mods = _modules_after(
        "from sdcrisk.cli import main\n"
        "main(['assess', 'example:uk_census2011', '--keys', 'region,sex,age_band', "
        "'--population-size', '56075912', '--method', 'nb', '--format', 'json', '--out', "
        f"{str(tmp_path / 'o.json')!r}])")
    assert "sdcrisk.core._nb" in mods
    assert not {m for m in mods if m.split(".")[0] in ("scipy", "pandas", "numba")}


def test_number_texts_cover_what_arrow_casts():
    """The check skips Arrow's cast for a name that cannot be a number; the patterns must
    accept every text Arrow's cast reads as a number, or a repeated header line of numeric
    names would go unseen."""
    import pyarrow as pa

    from sdcrisk.data.repeated_header import _AS_FLOAT, _AS_INTEGER

    texts = ["2020", "-3", "+4", "1e3", "1.5", ".5", "5.", "inf", "-Infinity", "nan", "NaN",
             "1_000", "0x10", "0X1f", "12a", "", "1,5", "1e", "e5", "-", "+.5e-3", "0b1",
             "1 000", "region", "007"]
    for typ in (pa.int64(), pa.int8(), pa.uint16(), pa.float64(), pa.float32()):
        pattern = _AS_INTEGER if pa.types.is_integer(typ) else _AS_FLOAT
        for text in texts:
            try:
                pa.scalar(text).cast(typ)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
            assert pattern.fullmatch(text), (text, typ)


def test_assess_warm_up_thread_loads_the_ipf_kernel():
    # `assess --method loglinear` starts numba and loads the fused IPF kernel in a background
    # thread while the file is read, joined when the read ends; in a fresh process, nothing
    # else has loaded it
    code = ("import threading\n"
            "from sdcrisk.cli import assess as cli\n"
            "from sdcrisk.estimators import _ipf\n"
            "before = _ipf._KERNELS is None\n"
            "with cli._warm_up_while(True):\n"
            "    pass\n"
            "alive = [t for t in threading.enumerate() if t.name == 'sdcrisk-warm-up']\n"
            "print(before, _ipf._KERNELS is not None, not alive)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True", "True"]
