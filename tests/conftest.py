"""Shared test helpers.

Reference data live outside the repository, in ``../shared`` (``/work/shared`` when the
checkout is ``/work/main``). Tests that need them call :func:`shared_data`, which skips when
the file is absent so that a fresh clone without ``../shared`` still passes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARED_DATA = SHARED / "data"


def shared_data(*parts: str) -> Path:
    """Path of ``../shared/data/<parts>``; skip the calling test when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared/data not present: {path}")
    return path


@pytest.fixture(name="shared_data")
def shared_data_fixture():
    """The :func:`shared_data` helper as a fixture."""
    return shared_data


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of ``sdcrisk ARGV`` run in this process."""
    from sdcrisk.cli import main

    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_refused_clearly(code, err, expected, words):
    """Exit ``expected``, no traceback or internal error, and every one of ``words`` in the
    message (case-insensitive)."""
    assert code == expected, err
    assert "Traceback" not in err and "internal error" not in err
    for w in words:
        assert w.lower() in err.lower(), f"{w!r} not in {err!r}"


def high_risk_csv(path: Path) -> Path:
    """200 records of three keys (5 x 5 x 3 levels, seed 0): with N = 2,000 every record's
    risk is above 0.01 (nb: global risk 0.0587), so no record-risk threshold reaches a
    max global risk of 0.01."""
    import pandas as pd

    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(1, 6, 200), "b": rng.integers(1, 6, 200),
                  "c": rng.integers(1, 4, 200)}).to_csv(path, index=False)
    return path


def benchmark_module(name: str):
    """A script of ``benchmarks/`` imported as a module (its folder on sys.path while it is
    imported, as when it is run)."""
    import importlib
    import sys

    bench = str(Path(__file__).resolve().parent.parent / "benchmarks")
    sys.path.insert(0, bench)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(bench)


def records_from_counts(counts, *, start: int = 0) -> np.ndarray:
    """Integer cell labels so that cell ``start + i`` occurs ``counts[i]`` times."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.repeat(np.arange(start, start + len(counts)), counts)


def skewed_population(folder: Path):
    """5,000 records, keys x (30 levels), y (8), z (5) drawn from skewed Dirichlet shares (seed
    5) and two-person households ``hid``; returns the frame and its CSV under ``folder``."""
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 5000

    def skewed(k):
        return rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.5)))

    df = pd.DataFrame({"x": skewed(30), "y": skewed(8), "z": skewed(5),
                       "hid": np.repeat(np.arange(n // 2), 2)})
    path = Path(folder) / "pop.csv"
    df.to_csv(path, index=False)
    return df, path


def synthetic_frame(n: int, seed: int = 0) -> dict:
    """Columns of a synthetic file for the streaming tests: integer, float (2% NaN: its own
    level), string and negative-integer keys, weights and household ids."""
    rng = np.random.default_rng(seed)
    age = rng.integers(15, 90, n).astype(float)
    age[rng.random(n) < 0.02] = np.nan  # missing -> its own level
    return {
        "sex": rng.integers(1, 3, n),
        "age": age,
        "region": rng.choice(np.array(["north", "south", "east", "west"]), n),
        "tenure": rng.integers(-3, 4, n),
        "w": rng.uniform(1, 50, n),
        "hh": rng.integers(0, n // 3, n),
    }


def without_timings(obj):
    """``obj`` (a JSON-like result) without its timings (keys ending in "seconds"), at any
    depth, so that two runs of the same computation compare equal."""
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if not k.endswith("seconds")}
    if isinstance(obj, list | tuple):
        return [without_timings(v) for v in obj]
    return obj


def assert_same_tree(want, got, path="$", rel=1e-9):
    """Assert that two JSON-like results agree: keys, lengths, strings, counts and flags
    exactly, floats to ``rel`` relative (default 1e-9; 1e-12 absolute; NaN equals NaN),
    timings (keys ending in "seconds") skipped. Recorded outputs compared across library
    versions: another version's log-gamma, sum order or optimiser stop moves a float by an
    ulp to 1e-10."""
    if isinstance(want, dict):
        assert isinstance(got, dict), path
        keys = {k for k in want if not k.endswith("seconds")}
        assert keys == {k for k in got if not k.endswith("seconds")}, path
        for k in keys:
            assert_same_tree(want[k], got[k], f"{path}.{k}", rel)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            assert_same_tree(w, g, f"{path}[{i}]", rel)
    elif isinstance(want, float) and isinstance(got, float):
        if np.isnan(want):
            assert np.isnan(got), path
        else:
            assert got == pytest.approx(want, rel=rel, abs=1e-12), path
    else:
        assert got == want, path
