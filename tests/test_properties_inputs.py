"""Property-based checks (hypothesis) of the input boundary (issue 19): on random small tables
every estimator gives finite measures with 0 <= tau1 <= tau2 <= sample uniques and record risks
in [0, 1] and mutates nothing; random CSV and structural-zeros bytes give a result or one of
the project's own errors, never anything else."""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdcrisk import (
    GraphicalRisk,
    LogLinearRisk,
    Microdata,
    NegativeBinomialRisk,
    PoissonGammaRisk,
    SdcRiskError,
    SdcRiskWarning,
    tabulate,
)
from sdcrisk.cli import main
from sdcrisk.data.structural_zeros import StructuralZeros

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

ESTIMATORS = {
    "nb": NegativeBinomialRisk(),
    "poisson-gamma": PoissonGammaRisk(),
    "loglinear": LogLinearRisk(),
    "graphical": GraphicalRisk(),
}


@st.composite
def frames(draw):
    """A small frame of 1-3 categorical keys (some all-equal, some all-distinct) and N >= n."""
    n = draw(st.integers(1, 40))
    n_keys = draw(st.integers(1, 3))
    data = {}
    for j in range(n_keys):
        levels = draw(st.integers(1, 6))
        data[f"k{j}"] = draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n))
    extra = draw(st.sampled_from([0, 1, 2, 10, 1000, 10**6]))
    return pd.DataFrame(data), n + extra


@SETTINGS
@given(frames(), st.sampled_from(sorted(ESTIMATORS)))
def test_measures_are_finite_and_ordered(frame_n, name):
    frame, big_n = frame_n
    before = frame.copy()
    md = Microdata.from_source(frame, keys=list(frame.columns), population_size=big_n)
    table = tabulate(md)
    counts = table.counts.copy()
    est = ESTIMATORS[name]
    params = est.get_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SdcRiskWarning)
        res = est.fit(table)
    n1 = table.sample_uniques
    for m in res.measures.values():
        for v in (m.estimate, m.lower, m.upper):
            assert v is None or np.isfinite(v), (m.name, v)
    t1, t2 = res.measures["tau1"].estimate, res.measures["tau2"].estimate
    assert -1e-12 <= t1 <= t2 + 1e-9
    assert t2 <= n1 + 1e-9
    if big_n == len(frame):  # N = n: every sample unique is a population unique
        assert t1 == pytest.approx(n1, abs=1e-9)
    risk = res.record_risk()
    assert risk.shape == (len(frame),)
    assert np.all(np.isfinite(risk)) and np.all(risk >= 0) and np.all(risk <= 1 + 1e-12)
    # nothing mutated: the frame, the table, the estimator
    pd.testing.assert_frame_equal(frame, before)
    np.testing.assert_array_equal(table.counts, counts)
    assert est.get_params() == params


def _read_bytes(raw: bytes, suffix: str, keys=("a",)):
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        try:
            md = Microdata.from_source(path, keys=list(keys), population_size=10**6)
        except SdcRiskError as exc:
            assert str(exc)
            assert all(ch.isprintable() for ch in str(exc))
            return None
        return md
    finally:
        os.unlink(path)


@SETTINGS
@given(st.binary(max_size=400), st.sampled_from([".csv", ".csv.gz", ".parquet", ".dta",
                                                  ".sav", ".txt"]))
def test_random_bytes_give_a_result_or_a_named_error(raw, suffix):
    md = _read_bytes(raw, suffix)
    if md is not None:
        assert md.n >= 1


_cell = st.text(alphabet=st.sampled_from(list("ab1,\"\n\r;x\t é*|")), max_size=6)


@SETTINGS
@given(st.lists(st.lists(_cell, min_size=1, max_size=4), min_size=1, max_size=8))
def test_random_csv_text_gives_a_result_or_a_named_error(rows):
    text = "a,b\n" + "\n".join(",".join(r) for r in rows)
    md = _read_bytes(text.encode("utf-8"), ".csv", keys=("a", "b"))
    if md is not None:
        assert md.n >= 1
        assert tabulate(md).counts.sum() == md.n


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_through_the_cli_exit_cleanly(raw):
    fd, path = tempfile.mkstemp(suffix=".csv")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["assess", path, "--keys", "a", "--population-size", "1e6",
                         "--method", "nb"])
        assert code in (0, 2)
        assert "internal error" not in err.getvalue()
        assert "Traceback" not in err.getvalue()
    finally:
        os.unlink(path)


@SETTINGS
@given(st.one_of(st.binary(max_size=200),
                 st.lists(st.lists(_cell, min_size=1, max_size=3), min_size=0, max_size=5)
                 .map(lambda rows: ("k0,k1\n" + "\n".join(",".join(r) for r in rows))
                      .encode())))
def test_random_structural_zeros_files(raw):
    fd, path = tempfile.mkstemp(suffix=".csv")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        try:
            sz = StructuralZeros.from_csv(path, keys=["k0", "k1"],
                                          levels=[["a", "b"], ["1", "x"]])
        except SdcRiskError as exc:
            assert all(ch.isprintable() for ch in str(exc))
            return
        assert sz.conditions.shape[1] == 2
    finally:
        os.unlink(path)
