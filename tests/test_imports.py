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
