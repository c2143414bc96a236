"""Bad input to the Python API ends in the project's own exception (docs/errors.md).

tests/test_bad_inputs.py covers the CLI and the main API arguments; the cases here are the
ones a probe of the public API (``sdcrisk.__all__``) found ending in someone else's exception
(a KeyError, numpy's ValueError, an AttributeError) or in a silent wrong answer. Each asserts
the exception class and the words naming the value and option.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcrisk import InputError, Microdata, ParameterError, SdcRiskError


def _frame(n=60, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                         "c": rng.integers(0, 5, n), "w": np.full(n, 40.0)})


# --- Microdata.from_source -----------------------------------------------------------------

SOURCE_CASES = [
    # a None among the keys passed the check (next(..., None) found None and took it for
    # "no bad key"), then failed as AttributeError: 'NoneType' object has no attribute 'lower'
    (lambda: Microdata.from_source(_frame(), keys=["a", None]), ParameterError,
     "keys: None is not a column name"),
    # a column of lists: numpy's "setting an array element with a sequence"
    (lambda: Microdata.from_source(_frame().assign(a=[[1], [2]] * 30), keys=["a"]),
     InputError, "column 'a' holds nested values (e.g. [1])"),
    # a column of dicts was counted by each dict's repr
    (lambda: Microdata.from_source(_frame().assign(a=[{1: 2}] * 60), keys=["a"]),
     InputError, "column 'a' holds nested values"),
    (lambda: Microdata.from_source(_frame().assign(h=[(1, 2)] * 60), keys=["a"],
                                   household="h"),
     InputError, "column 'h' holds nested values"),
    (lambda: Microdata.from_source({"a": [[1], [2, 3]]}, keys=["a"]),
     InputError, "column 'a' holds nested values"),
    # a polars LazyFrame: AttributeError 'LazyFrame' object has no attribute 'get_column'
    (lambda: Microdata.from_source(pytest.importorskip("polars").DataFrame({"a": [1, 2]})
                                   .lazy(), keys=["a"]),
     InputError, "LazyFrame; collect it first"),
]


@pytest.mark.parametrize(("call", "error", "words"), SOURCE_CASES,
                         ids=[c[2][:40] for c in SOURCE_CASES])
def test_microdata_bad_source(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words.lower() in str(info.value).lower()


def test_frame_with_number_labels_is_read_by_the_label_text():
    """pd.DataFrame(array) has columns 0, 1, ...: keys=["0"] was listed as present and then
    failed with pandas' KeyError: '0'."""
    df = pd.DataFrame(np.array([[1, 5], [2, 5], [2, 6]]))
    md = Microdata.from_source(df, keys=["0", "1"])
    assert md.n == 3
    assert md.levels == ((1, 2), (5, 6))
    assert md.n_levels == (2, 2)
    with pytest.raises(InputError, match="missing column '2'"):
        Microdata.from_source(df, keys=["2"])


def test_exceptions_are_the_projects():
    assert issubclass(InputError, SdcRiskError) and issubclass(ParameterError, SdcRiskError)
