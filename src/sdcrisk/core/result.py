"""RiskResult: the immutable, self-describing outcome of an estimator's fit."""

from __future__ import annotations

import platform
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._version import __version__
from ..data.frequencies import FrequencyTable
from ..data.table import CellTable
from ..data.wildcard import unique_records
from ..exceptions import ParameterError
from .base import ResultBase, jsonable
from .measures import Measure, household_risk

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RiskResult", "ResultBase", "jsonable", "provenance"]

RiskKind = Literal["reidentification", "population_unique"]


#: the read-only risk arrays that results made as their own copies, by id: a result built
#: from another's arrays (``dataclasses.replace``, auto's chosen candidate) shares them
#: instead of copying again (24 copies of 5.9 million cells were 0.4 s of auto at 3x10^7
#: records, issue 20); any other array, the caller's, is copied
_OWN_COPIES: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def handed_over(values: np.ndarray) -> np.ndarray:
    """``values``, a float64 array its caller made and keeps no other reference to, made
    read-only and handed to the RiskResult built from it without a copy (a fit's per-cell
    risks expanded from its count groups: two copies of 25 million cells were 0.4 GiB of
    the peak at 10^8 records, issue 20). Any other dtype is left to be copied."""
    if values.dtype == np.float64:
        values.setflags(write=False)
        _OWN_COPIES[id(values)] = values
    return values


def _owned_copy(values) -> np.ndarray:
    """``values`` as a read-only float array that no caller can write through."""
    own = _OWN_COPIES.get(id(values))
    if own is not None and own is values:
        return own
    return handed_over(np.array(values, dtype=float, copy=True))


#: what a result fitted on a FrequencyTable says in place of the cells' fingerprint
FREQUENCIES_NOTE = ("tabulated as frequencies of the cell counts (how many cells have each "
                    "count f): the cells themselves were not kept, so there is no input "
                    "fingerprint and no per-cell or record risk")


def provenance(table: CellTable | FrequencyTable, seed: int | None = None) -> dict:
    """Package version, seed and input fingerprint (never host or user names).

    A :class:`~sdcrisk.data.frequencies.FrequencyTable` has no cells to fingerprint: its
    ``input_fingerprint`` is None and ``tabulation`` says why.
    """
    out = {
        "package": "sdcrisk",
        "version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "seed": seed,
        "input_fingerprint": None if isinstance(table, FrequencyTable) else table.fingerprint(),
        "source": table.source,
    }
    if isinstance(table, FrequencyTable):
        out["tabulation"] = FREQUENCIES_NOTE
    return out


@dataclass(frozen=True, eq=False, repr=False)
class RiskResult(ResultBase):
    """Measures, record-level risk on demand, diagnostics and provenance of one fit.

    The result keeps the cell table (cell codes, counts and the record -> cell map) so that
    record-level risk can be computed on demand; it never holds the microdata themselves.
    A result fitted on a :class:`~sdcrisk.data.frequencies.FrequencyTable` (an exchangeable
    method on the frequencies of the cell counts) has the same measures but no per-cell or
    record risks: :meth:`cell_risk`, :meth:`record_risk` and :meth:`cells` refuse.

    Attributes
    ----------
    method : str
        Estimator name (e.g. ``"nb"``).
    measures : mapping of str to Measure
        Named measures with estimate and, where the method gives one, an interval.
    parameters : mapping
        The estimator's settings.
    fitted : mapping
        Fitted model parameters (e.g. alpha, beta of the Poisson-gamma model).
    thresholds : mapping
        Every threshold the result used (printed with it).
    assumptions : tuple of str
        What the method assumes, in words.
    diagnostics : mapping
        Fit diagnostics (iterations, boundary hits, timing...).
    provenance : mapping
        Package version, seed, input fingerprint.
    """

    method: str
    measures: Mapping[str, Measure]
    table: CellTable | FrequencyTable
    parameters: Mapping[str, Any] = field(default_factory=dict)
    fitted: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    cell_risk_values: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the result owns read-only copies of its risk arrays
        object.__setattr__(self, "cell_risk_values", {
            k: _owned_copy(v) for k, v in self.cell_risk_values.items()})
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        super().__post_init__()

    # --- sizes -----------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.table.n

    @property
    def population_size(self) -> float:
        return self.table.population_size

    @property
    def sample_uniques(self) -> int:
        """Records that no other record matches (f = 1); with ``missing="wildcard"`` a missing
        key value matches every category, as in the k-anonymity counts, so with alpha = 1
        this is ``k_anonymity_violations()[2]`` (with alpha < 1 it leaves out the records
        with 1 < fk < 2, as tau1 and tau2 do: :func:`~sdcrisk.data.wildcard.unique_records`).
        (``table.sample_uniques`` is the models' n1: cells with exact count 1.)"""
        return unique_records(self.table)

    def estimate(self, name: str) -> float | None:
        """The point estimate of a measure by name.

        Raises
        ------
        ParameterError
            A name the result has no measure of, listing those it has.
        """
        if not isinstance(name, str) or name not in self.measures:  # was a bare KeyError
            raise ParameterError(f"{self.method} gives no measure {name!r}; its measures: "
                                 f"{', '.join(self.measures)}")
        return self.measures[name].estimate

    # --- record level ------------------------------------------------------------------------
    def cell_risk(self, kind: RiskKind = "reidentification") -> np.ndarray:
        """Risk of each observed cell.

        ``"reidentification"``: E[1/F_k | f] (or the package approximation the method was
        asked to reproduce); ``"population_unique"``: P(F_k = 1 | f), zero unless f_k = 1.
        """
        self._need_cells(f"cell_risk({kind!r})")
        if not self.cell_risk_values:  # read 'available: []', with no way out
            raise ParameterError(
                f"{self.method} gives no per-cell or record risk (its measures are for the "
                f"file as a whole: {', '.join(self.measures)}); fit a method that does, "
                "e.g. nb, for record risks")
        if not isinstance(kind, str) or kind not in self.cell_risk_values:
            raise ParameterError(
                f"{self.method} gives no {kind!r} risk; available: {sorted(self.cell_risk_values)}"
            )
        return self.cell_risk_values[kind]

    def record_risk(self, kind: RiskKind = "reidentification") -> np.ndarray:
        """Risk of each record (aligned with the input rows), computed on demand."""
        table = self._need_cells(f"record_risk({kind!r})")
        return self.cell_risk(kind)[table.record_map()]

    def household_record_risk(self) -> np.ndarray:
        """Household risk 1 - prod(1 - r) over each record's household (needs household ids)."""
        if self.table.household is None:
            raise ValueError("the data have no household column")
        return household_risk(self.record_risk("reidentification"), self.table.household)

    def cells(self, *, internal: bool = False):
        """Observed cells with f, F_hat and risks as a DataFrame.

        Key values of cells are disclosive; they are only included with ``internal=True``.
        """
        import pandas as pd

        table = self._need_cells("cells()")
        data: dict[str, Any] = {}
        if internal:
            for j, key in enumerate(table.keys):
                levels = table.levels[j]
                data[key] = [levels[c] for c in table.cell_codes[:, j]]
        data["f"] = table.counts
        if table.weight_sums is not None:
            data["F_hat"] = table.weight_sums
        for k, v in self.cell_risk_values.items():
            data[f"risk_{k}"] = v
        return pd.DataFrame(data)

    def _need_cells(self, what: str) -> CellTable:
        """The result's CellTable; a FrequencyTable has no cells to give ``what``."""
        if isinstance(self.table, FrequencyTable):
            raise ParameterError(
                f"{what}: this {self.method} result was fitted on the frequencies of the cell "
                "counts (a FrequencyTable), which do not say which record is in which cell; "
                "fit the method on a CellTable (sdcrisk.tabulate, tabulate_file) for per-cell "
                "and record risks")
        return self.table

    # --- summaries ---------------------------------------------------------------------------
    def summary(self) -> pd.DataFrame:
        """Measures as a DataFrame (estimate, lower, upper, level, interval)."""
        import pandas as pd

        rows = [{"measure": k, **{c: v for c, v in m.to_dict().items() if c != "description"}}
                for k, m in self.measures.items()]
        return pd.DataFrame(rows).set_index("measure")

    def _payload(self) -> dict[str, Any]:
        """No record-level data and no cell key values."""
        return {
            "method": self.method,
            "n": self.n,
            "population_size": self.population_size,
            "population_size_source": self.table.population_size_source,
            "sampling_fraction": self.n / self.population_size,
            "keys": list(self.table.keys),
            "cell_space": self.table.cell_space,
            "observed_cells": self.table.key_cells,
            **({"patterns_with_missing_values": self.table.missing_patterns}
               if self.table.wildcard is not None else {}),
            "sample_uniques": self.sample_uniques,
            "k_anonymity_violations": {
                str(k): v for k, v in self.table.k_anonymity_violations().items()},
            "measures": {k: m.to_dict() for k, m in self.measures.items()},
            "parameters": self.parameters,
            "fitted": self.fitted,
            "thresholds": self.thresholds,
            "assumptions": list(self.assumptions),
            "diagnostics": self.diagnostics,
            "provenance": self.provenance,
        }

    def _repr_parts(self) -> list[str]:
        parts = [f"method={self.method!r}", f"n={self.n}", f"N={self.population_size:g}",
                 f"sample_uniques={self.sample_uniques}"]
        for name in ("tau1", "tau2", "theta", "expected_reidentifications"):
            m = self.measures.get(name)
            if m is not None and m.estimate is not None:
                parts.append(f"{name}={m.estimate:.4g}")
        return parts
