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


def records_from_counts(counts, *, start: int = 0) -> np.ndarray:
    """Integer cell labels so that cell ``start + i`` occurs ``counts[i]`` times."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.repeat(np.arange(start, start + len(counts)), counts)
