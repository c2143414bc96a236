"""SUDA2 and DIS-SUDA: minimal sample uniques, special-uniques scores, contributions.

:func:`suda2` finds every minimal sample unique (MSU) of the key variables, scores each
sample-unique record by the sizes of its MSUs, calibrates the scores into DIS-SUDA scores
and attributes the risk to variables and categories. It reproduces sdcMicro's ``suda2``
(per-record ``score`` and ``disScore``, ``attribute_contributions``,
``attribute_level_contributions``) and runs on cells, not records, so 10+ keys on tens of
thousands of records take seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._version import __version__
from ..core.base import ResultBase
from ..data.sizes import check_number
from ..data.table import CellTable, Microdata, tabulate
from ..estimators._base import check_int
from ..exceptions import InputError, ParameterError
from . import _suda

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["suda2", "SudaResult", "suda_weights", "DIS_INTERVALS"]

MissingPolicy = Literal["ignore", "category"]
DisRounding = Literal["sdcmicro", "double"]

#: the score bands of sdcMicro's ``print.suda2`` (upper bounds; "== 0" first, "> 0.7" last)
DIS_INTERVALS = ("== 0", "(0.0, 0.1]", "(0.1, 0.2]", "(0.2, 0.3]", "(0.3, 0.4]", "(0.4, 0.5]",
                 "(0.5, 0.6]", "(0.6, 0.7]", "> 0.7")

_MAX_KEYS = 62  # MSUs are int64 bit masks


def suda_weights(n_keys: int, *, max_size: int | None = None,
                 original_scores: bool = True) -> np.ndarray:
    """Score of one MSU of each size 1..``n_keys``.

    Parameters
    ----------
    n_keys : int
        M, the number of key variables.
    max_size : int, optional
        Largest MSU size searched (default M).
    original_scores : bool
        ``True``: Elliot et al. (2002), an MSU of size k scores
        prod_{i=k}^{m} (M - i) with m = min(max_size, M - 1), so (M - k)! when all sizes are
        searched (sdcMicro's default since 5.0.2). ``False``: the legacy IHSN scoring,
        (2^(M-k) - 1) k! (M - k)! / M! = (2^(M-k) - 1) / C(M, k).

    Returns
    -------
    ndarray (M,)
        Weight of sizes 1..M (exactly rounded from the rational value).

    Notes
    -----
    sdcMicro computes both in long double (``Suda2.h``); with every size searched its
    Elliot weight of size k is prod_{j=k}^{M-1} (M - j) = (M - k)!, 1 for k = M. The upper
    limit m < M - 1 is the "maximum MSU size" of SUDA (Elliot et al. 2002); sdcMicro always
    searches every size.

    References
    ----------
    Elliot, M. J., Manning, A. M. & Ford, R. W. (2002). A computational algorithm for
    handling the special uniques problem. *Int. J. Uncertainty, Fuzziness and
    Knowledge-Based Systems* 10(5), 493-509.

    Examples
    --------
    >>> suda_weights(7).tolist()[:3]
    [720.0, 120.0, 24.0]
    """
    check_int("n_keys", n_keys, 0)
    if max_size is not None:
        check_int("max_size", max_size, 1)
    if n_keys > _MAX_KEYS:
        raise ParameterError(f"n_keys={n_keys}: SUDA handles at most {_MAX_KEYS} keys")
    m_keys = int(n_keys)
    top = m_keys if max_size is None else int(max_size)
    out = np.empty(m_keys)
    for k in range(1, m_keys + 1):
        if original_scores:
            upper = min(top, m_keys - 1)
            out[k - 1] = float(math.prod(range(m_keys - upper, m_keys - k + 1)))
        else:
            out[k - 1] = float(Fraction(2 ** (m_keys - k) - 1, math.comb(m_keys, k)))
    return out


@dataclass(frozen=True, eq=False, repr=False)
class SudaResult(ResultBase):
    """MSUs, SUDA and DIS-SUDA scores of one file; record values on demand.

    Cell arrays are aligned with ``table.counts``; record-level values are read through
    ``table.record_cell`` (only sample-unique cells, f = 1, can have MSUs, so every record of
    a cell with f >= 2 scores 0). The result keeps the cell table, never the microdata.

    Attributes
    ----------
    table : CellTable
        The tabulated keys.
    msu_cell, msu_mask : ndarray of int64
        One entry per MSU: its cell and its variables as a bit mask (bit j = ``keys[j]``).
    cell_score, cell_dis_score : ndarray (n_cells,)
        SUDA and DIS-SUDA score of each cell.
    cell_msu_counts : ndarray (n_cells, M)
        Number of MSUs of size 1..M of each cell (the smallest unsigned integer type that
        holds C(M, M // 2), the most a cell can have of one size: uint8 up to 8 keys).
    cell_contributions : ndarray (n_cells, M)
        Sum of the scores of the cell's MSUs that contain each variable.
    weights : ndarray (M,)
        Score of one MSU of each size (:func:`suda_weights`).
    dis : float
        File-level probability that a unique match is correct (Skinner & Elliot 2002),
        dis_fraction·U / (dis_fraction·U + (1 - dis_fraction)·P), U sample uniques, P
        records in cells of size 2.
    q : float
        Exponent of the DIS-SUDA calibration, 1 + (8 - M)/20.
    max_size : int
        Largest MSU size searched (M when every size was; with ``max_size="auto"``, the
        size the work budget allowed, or M when the search proved complete).
    complete : bool
        True when no set larger than ``max_size`` can be an MSU: the MSUs are those of the
        search over every size. False: larger MSUs may exist and were not searched
        (:meth:`bound_note` says what that means for the scores).
    """

    table: CellTable
    msu_cell: np.ndarray
    msu_mask: np.ndarray
    cell_score: np.ndarray
    cell_dis_score: np.ndarray
    cell_msu_counts: np.ndarray
    cell_contributions: np.ndarray
    weights: np.ndarray
    max_size: int
    dis_fraction: float
    original_scores: bool
    missing: str
    dis_rounding: str
    dis: float
    q: float
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    complete: bool = True

    # --- the size bound ----------------------------------------------------------------------
    def bound_note(self) -> str | None:
        """What a size bound means for these figures, in words (None: every size searched).

        One text for every caller (the report's SUDA section, the JSON payload).
        """
        if self.complete:
            return None
        m, big_m = self.max_size, len(self.keys)
        why = (f"the search over every size passes SUDA's work budget "
               f"({self.diagnostics['work_budget']:,} units)"
               if self.diagnostics.get("max_size_rule") == "auto"
               else f"max_size={m} was given")
        unscored = int(np.count_nonzero((self.table.counts == 1) & (self.cell_score == 0)))
        scale = ("sdcMicro's weight (M - k)! divided by (M - m - 1)! = "
                 f"{math.factorial(big_m - m - 1):.4g}" if m < big_m - 1
                 else "sdcMicro's weight (M - k)!")
        return (
            f"MSUs searched up to size {m} of {big_m} keys ({why}); larger MSUs are not "
            f"counted. Scores are Elliot et al. (2002)'s with maximum MSU size {m}: an MSU of "
            f"size k scores prod_(i=k..{m}) (M - i), {scale}. So every record's score is a "
            "lower bound of its sdcMicro suda2 score (every size searched), on a smaller "
            f"scale, and a sample unique with no MSU of size {m} or less scores 0 "
            f"({unscored:,} sample uniques score 0 here). DIS-SUDA scores and attribute "
            "contributions come from the MSUs found: the scale does not change them, the "
            "missing MSUs can move them either way; the file-level DIS does not depend on "
            f"the MSUs. The same figures: sdcrisk.suda2(data, max_size={m}); every size: "
            "sdcrisk.suda2(data, max_size=None) or `sdcrisk report --suda-max-size all` "
            "(its time grows steeply with the number of keys).")

    # --- sizes -------------------------------------------------------------------------------
    @property
    def keys(self) -> tuple[str, ...]:
        """The key variables."""
        return self.table.keys

    @property
    def n(self) -> int:
        """Number of records."""
        return self.table.n

    @property
    def n_msus(self) -> int:
        """Number of MSUs found (over all records)."""
        return int(self.msu_cell.shape[0])

    @property
    def msu_sizes(self) -> np.ndarray:
        """Size of each MSU."""
        return _popcount(self.msu_mask)

    # --- record level ------------------------------------------------------------------------
    @property
    def score(self) -> np.ndarray:
        """SUDA score of each record (sdcMicro ``score``)."""
        return self.cell_score[self.table.record_map()]

    @property
    def dis_score(self) -> np.ndarray:
        """DIS-SUDA score of each record (sdcMicro ``disScore``)."""
        return self.cell_dis_score[self.table.record_map()]

    @property
    def msu_counts(self) -> np.ndarray:
        """(n, M): number of MSUs of size 1..M of each record."""
        return self.cell_msu_counts[self.table.record_map()]

    @property
    def contributions(self) -> np.ndarray:
        """(n, M): share of each record's score carried by each variable.

        sdcMicro's ``contributionPercent``: the scores of the record's MSUs containing the
        variable, divided by the record's score (a fraction; rows may sum to more than 1
        because an MSU of size k counts for each of its k variables). 0 where the score is 0.
        """
        return self._cell_shares()[self.table.record_map()]

    def _cell_shares(self) -> np.ndarray:
        s = self.cell_score[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s > 0, self.cell_contributions / np.where(s > 0, s, 1.0), 0.0)

    # --- file level --------------------------------------------------------------------------
    @property
    def total_score(self) -> float:
        """Sum of the record scores."""
        return float(np.sum(self.cell_score))

    @property
    def attribute_contributions(self) -> dict[str, float]:
        """Percent of the total score carried by each variable (sdcMicro
        ``attribute_contributions``; the percentages sum to more than 100 when MSUs have more
        than one variable). NaN when no record has a positive score."""
        total = self.total_score
        sums = self.cell_contributions.sum(axis=0)
        return {k: (100.0 * float(v) / total if total > 0 else math.nan)
                for k, v in zip(self.keys, sums, strict=True)}

    def level_contributions(self):
        """Percent of each variable's contribution carried by each of its categories.

        sdcMicro's ``attribute_level_contributions``: for variable j and category x,
        100 · sum over records with x of their contribution to j / total contribution of j.
        Categories are listed in level order; categories without records are left out.

        Returns
        -------
        pandas.DataFrame
            Columns ``variable``, ``level``, ``contribution``.
        """
        import pandas as pd

        rows = []
        counts = np.asarray(self.table.counts)
        for j, key in enumerate(self.keys):
            n_lv = len(self.table.levels[j])
            codes = self.table.cell_codes[:, j]
            present = np.bincount(codes, weights=counts, minlength=n_lv) > 0
            by_level = np.bincount(codes, weights=self.cell_contributions[:, j], minlength=n_lv)
            total = by_level.sum()
            for code in np.flatnonzero(present):
                value = 100.0 * by_level[code] / total if total > 0 else math.nan
                rows.append({"variable": key, "level": self.table.levels[j][code],
                             "contribution": value})
        return pd.DataFrame(rows, columns=["variable", "level", "contribution"])

    def msu_size_totals(self) -> dict[int, int]:
        """Number of MSUs of each size (over all records)."""
        sizes = self.msu_sizes
        return {k: int(np.count_nonzero(sizes == k)) for k in range(1, len(self.keys) + 1)}

    def msu_combinations(self, *, top: int | None = None) -> list[tuple[tuple[str, ...], int]]:
        """Variable combinations that are MSUs, with how many records have each.

        Counts only (no key values), largest first: which combinations of variables single
        records out. ``top`` keeps the first ``top`` combinations.
        """
        masks, counts = np.unique(self.msu_mask, return_counts=True)
        order = np.lexsort((_popcount(masks), -counts))
        out = [(tuple(k for j, k in enumerate(self.keys) if (int(masks[i]) >> j) & 1),
                int(counts[i])) for i in order]
        return out if top is None else out[:top]

    def dis_table(self) -> dict[str, int]:
        """Records per DIS-SUDA band, as sdcMicro's ``print.suda2`` shows them.

        Bands are half-open (a, b] with the breaks shifted up by machine epsilon, as in
        sdcMicro: ``== 0`` holds scores <= 2.2e-16.
        """
        eps = np.finfo(float).eps
        breaks = np.concatenate(([-1.0], np.arange(0, 0.8, 0.1)[:8] + eps, [np.inf]))
        bands = np.searchsorted(breaks, self.cell_dis_score, side="left") - 1
        counts = np.bincount(bands, weights=self.table.counts, minlength=len(DIS_INTERVALS))
        return {label: int(c) for label, c in zip(DIS_INTERVALS, counts, strict=True)}

    def summary(self) -> pd.DataFrame:
        """Variables with their contribution, MSU count and MSUs by size, as a DataFrame."""
        import pandas as pd

        sizes = self.msu_sizes
        rows = []
        contrib = self.attribute_contributions
        for j, key in enumerate(self.keys):
            has = ((self.msu_mask >> j) & 1).astype(bool)
            row = {"variable": key, "contribution": contrib[key], "msus": int(has.sum())}
            for k in range(1, len(self.keys) + 1):
                row[f"msus_size_{k}"] = int(np.count_nonzero(has & (sizes == k)))
            rows.append(row)
        return pd.DataFrame(rows).set_index("variable")

    def _payload(self) -> dict[str, Any]:
        """No record-level data and no key values of cells."""
        score = self.cell_score[self.table.record_map()]
        dis = self.cell_dis_score[self.table.record_map()]
        return {
            "method": "suda2",
            "keys": list(self.keys),
            "n": self.n,
            "parameters": {
                "max_size": self.max_size,
                "max_size_rule": self.diagnostics.get("max_size_rule", "all"),
                "dis_fraction": self.dis_fraction,
                "original_scores": self.original_scores,
                "missing": self.missing,
                "dis_rounding": self.dis_rounding,
            },
            "complete": self.complete,
            "bound_note": self.bound_note(),
            "weights": self.weights.tolist(),
            "dis": _finite(self.dis),
            "q": self.q,
            "sample_uniques": int(np.count_nonzero(self.table.counts == 1)),
            "records_with_score": int(np.count_nonzero(score > 0)),
            "msus": self.n_msus,
            "msus_by_size": {str(k): v for k, v in self.msu_size_totals().items()},
            "score": _stats(score),
            "dis_score": _stats(dis),
            "dis_table": self.dis_table(),
            "attribute_contributions": {k: _finite(v)
                                        for k, v in self.attribute_contributions.items()},
            "diagnostics": {k: _finite(v) if isinstance(v, float) else v
                            for k, v in self.diagnostics.items()},
        }

    def _repr_parts(self) -> list[str]:
        return [f"n={self.n}", f"keys={len(self.keys)}", f"msus={self.n_msus}",
                f"records_with_score={int(np.count_nonzero(self.cell_score > 0))}",
                f"score_sum={self.total_score:.6g}", f"dis={self.dis:.4g}"]


def suda2(
    data: CellTable | Microdata,
    *,
    max_size: int | Literal["auto"] | None = None,
    dis_fraction: float = 0.01,
    original_scores: bool = True,
    missing: MissingPolicy = "ignore",
    dis_rounding: DisRounding = "sdcmicro",
) -> SudaResult:
    """Minimal sample uniques, SUDA and DIS-SUDA scores (sdcMicro ``suda2``).

    Parameters
    ----------
    data : CellTable or Microdata
        The key variables (a Microdata is tabulated first).
    max_size : int, "auto" or None
        Largest MSU size searched; default all sizes (M, as sdcMicro). ``"auto"``: all sizes
        when that search fits in a work budget (always with at most 10 keys, below census
        scale: ``_suda.FULL_SEARCH_WORK``), else the
        largest size whose search does (:func:`sdcrisk.analyses._suda.bounded_msus`; the
        report's default): bounded time on wide key sets, with ``complete`` False and
        :meth:`SudaResult.bound_note` saying what the bound means for the scores.
    dis_fraction : float
        Sampling fraction used by DIS, in (0, 1] (sdcMicro ``DisFraction``, default 0.01).
    original_scores : bool
        ``True`` (default): Elliot et al. (2002) scores, (M - k)! for an MSU of size k.
        ``False``: the legacy IHSN scoring of sdcMicro before 5.0.2 (see
        :func:`suda_weights`).
    missing : {"ignore", "category"}
        ``"ignore"`` (sdcMicro): a missing key value (the ``None`` level) never forms part
        of an MSU, though it still distinguishes records. ``"category"``: missing is an
        ordinary category.
    dis_rounding : {"sdcmicro", "double"}
        ``"sdcmicro"`` evaluates DIS, its constant and the exponent q in single precision as
        sdcMicro's C++ does, so DIS-SUDA scores match sdcMicro to the last bits;
        ``"double"`` uses double precision throughout (differences ~1e-7 relative).

    Returns
    -------
    SudaResult
        Per-record ``score``, ``dis_score``, ``msu_counts``, ``contributions``; file-level
        ``attribute_contributions``, :meth:`~SudaResult.level_contributions`,
        :meth:`~SudaResult.dis_table`, :meth:`~SudaResult.msu_combinations`.

    Raises
    ------
    ParameterError
        ``max_size`` outside 1..M, ``dis_fraction`` outside (0, 1], more than 62 keys,
        unknown ``missing`` or ``dis_rounding``.
    InputError
        ``data`` is neither a CellTable nor a Microdata.

    Notes
    -----
    A set S of keys is an MSU of record r when r is unique on S and on no proper subset of
    S. Only records unique on all keys have MSUs, so the search runs on the observed cells
    (:mod:`sdcrisk.analyses._suda`). With M keys the score of r is sum over its MSUs of w(|S|),
    w(k) = prod_{i=k}^{M-1} (M - i) = (M - k)!.

    DIS-SUDA (Elliot, Skinner & Dale; sdcMicro's implementation): with U sample uniques,
    P records in cells of size 2 and p = ``dis_fraction``,
    DIS = pU / (pU + (1 - p)P), C = U/DIS - U, q = 1 + (8 - M)/20,
    A = sum over records with score s > 0 of s^-q, and

        dis_score = 1 / (1 + C / (s^q A))    (0 when s = 0).

    As we read sdcMicro's C++ (``Suda2.h``), its U counts the records that sit alone in
    their bucket of a 16-bit record hash, missing uniques that share a bucket (40 of the 157
    on testdata with 7 keys). C equals P(1 - p)/p whatever U is, so only single-precision
    rounding could differ (on testdata the scores agree to <= 5e-16), unless no unique is
    alone in its bucket, when sdcMicro's C is 0/0. Here U is the true count. sdcMicro adds
    constant dummy columns when fewer than 3 keys are given (changing M in the weights and
    q); that is not reproduced.

    Per-variable contributions follow sdcMicro: each MSU adds its score to every variable
    it contains; the attribute contribution of a variable is 100 · (its total) / (total
    score).

    sdcMicro equivalent: ``suda2(obj, variables, DisFraction, original_scores)``; mu-Argus
    has no SUDA.

    References
    ----------
    Elliot, M. J., Manning, A. M. & Ford, R. W. (2002). A computational algorithm for
    handling the special uniques problem. *Int. J. Uncertainty, Fuzziness and
    Knowledge-Based Systems* 10(5), 493-509.

    Manning, A. M., Haglin, D. J. & Keane, J. A. (2008). A recursive search algorithm for
    statistical disclosure assessment. *Data Min. Knowl. Disc.* 16, 165-196.

    Skinner, C. J. & Elliot, M. J. (2002). A measure of disclosure risk for microdata.
    *JRSS B* 64(4), 855-867.

    Elliot, M. J., Skinner, C. J. & Dale, A. (1998). Special uniques, random uniques and
    sticky populations. *Int. Stat. Rev.* 66(3), 291-307.

    Examples
    --------
    >>> import sdcrisk
    >>> md = sdcrisk.Microdata.from_source({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]},
    ...                                    keys=["a", "b", "c"])
    >>> res = sdcrisk.suda2(md)
    >>> res.score.tolist()
    [2.0, 4.0, 2.0]
    >>> res.attribute_contributions
    {'a': 50.0, 'b': 37.5, 'c': 37.5}
    """
    start = time.perf_counter()
    if isinstance(data, Microdata):
        table = tabulate(data)
    elif isinstance(data, CellTable):
        table = data
    else:
        raise InputError(
            f"suda2 needs a CellTable or Microdata, not {type(data).__name__}; build one with "
            "Microdata.from_source(data, keys=[...])"
        )
    m_keys = len(table.keys)
    if m_keys > _MAX_KEYS:
        raise ParameterError(f"suda2 handles at most {_MAX_KEYS} keys, got {m_keys}")
    rule = ("all" if max_size is None else
            "auto" if isinstance(max_size, str) and max_size == "auto" else "given")
    if rule != "given":
        size = m_keys
    else:
        if isinstance(max_size, bool) or not isinstance(max_size, int | np.integer):
            raise ParameterError(f"max_size={max_size!r} must be an integer in 1..{m_keys}, "
                                 "'auto' (bounded work) or None (every size)")
        size = int(max_size)
        if not 1 <= size <= m_keys:
            raise ParameterError(
                f"max_size={max_size} must lie in 1..{m_keys} (the number of keys)")
    p = check_number("dis_fraction", dis_fraction)  # 'x' was a ValueError, True read as 1
    if not (math.isfinite(p) and 0 < p <= 1):
        raise ParameterError(f"dis_fraction={dis_fraction} must lie in (0, 1], e.g. 0.01")
    if not isinstance(original_scores, bool | np.bool_):
        raise ParameterError(f"original_scores={original_scores!r} must be True or False")
    if missing not in ("ignore", "category"):
        raise ParameterError(f"missing={missing!r}; use 'ignore' or 'category'")
    if dis_rounding not in ("sdcmicro", "double"):
        raise ParameterError(f"dis_rounding={dis_rounding!r}; use 'sdcmicro' or 'double'")

    n_levels = [len(lv) for lv in table.levels]
    miss = [(lv.index(None) if (missing == "ignore" and None in lv) else -1)
            for lv in table.levels]
    counts = np.asarray(table.counts, dtype=np.int64)
    budget = _suda.WORK_BUDGET
    if not m_keys:
        found = _suda.MsuSearch(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0, 0, True)
    elif rule == "auto":
        found = _suda.bounded_msus(table.cell_codes, counts, n_levels, miss,
                                   work_budget=budget)
    else:
        found = _suda.msus_up_to(table.cell_codes, counts, n_levels, miss, size)
    cells, masks, nodes = found.cells, found.masks, found.nodes
    # a bound that proved to leave nothing out is no bound: the figures of every size
    size = found.max_size if rule == "auto" else size
    search_s = time.perf_counter() - start

    weights = suda_weights(m_keys, max_size=size, original_scores=bool(original_scores))
    n_cells = table.n_cells
    sizes = _popcount(masks)
    # a cell has at most C(M, k) MSUs of size k: the smallest unsigned type that holds
    # C(M, M // 2) (uint8 up to 8 keys: 45 instead of 361 MiB at 5.9 million cells)
    most = math.comb(m_keys, m_keys // 2)
    msu_counts = np.zeros((n_cells, m_keys), dtype=np.min_scalar_type(most))
    np.add.at(msu_counts, (cells, sizes - 1), 1)
    score = np.zeros(n_cells)
    for k in range(m_keys):  # in size order, as sdcMicro sums
        score = score + msu_counts[:, k] * weights[k]
    contrib = np.zeros((n_cells, m_keys))
    w_msu = weights[sizes - 1] if len(sizes) else np.zeros(0)
    for j in range(m_keys):
        has = ((masks >> j) & 1).astype(bool)
        contrib[:, j] = np.bincount(cells[has], weights=w_msu[has], minlength=n_cells)

    n_unique = int(np.count_nonzero(counts == 1))
    n_pair_records = 2 * int(np.count_nonzero(counts == 2))
    dis, c_const, q = _dis_constants(n_unique, n_pair_records, p, m_keys, dis_rounding)
    scored = score > 0
    dis_score = np.zeros(n_cells)
    if scored.any():
        sq = np.power(score[scored], q)
        if dis_rounding == "sdcmicro":
            # sdcMicro adds 1/s^q record by record in file order (the scored records only:
            # no n-long array of scores, 240 MB at 3x10^7 records)
            record_cell = table.record_map()
            rec = score[record_cell[np.flatnonzero(scored[record_cell])]]
            adj = float(np.cumsum(1.0 / np.power(rec, q))[-1])
        else:
            adj = math.fsum((1.0 / sq).tolist())
        dis_score[scored] = 1.0 / (1.0 + c_const / (sq * adj))

    return SudaResult(
        table=table,
        msu_cell=cells,
        msu_mask=masks,
        cell_score=score,
        cell_dis_score=dis_score,
        cell_msu_counts=msu_counts,
        cell_contributions=contrib,
        weights=weights,
        max_size=size,
        dis_fraction=p,
        original_scores=bool(original_scores),
        missing=missing,
        dis_rounding=dis_rounding,
        dis=dis,
        q=q,
        complete=bool(found.complete),
        diagnostics={
            "max_size_rule": rule,
            "search_work": int(found.work),
            **({"work_budget": int(budget)} if rule == "auto" else {}),
            "subsets_visited": int(nodes),
            "search_seconds": search_s,
            "seconds": time.perf_counter() - start,
            "sample_uniques": n_unique,
            "records_in_pairs": n_pair_records,
            "version": __version__,
        },
    )


def _dis_constants(n_unique: int, n_pairs: int, p: float, m_keys: int,
                   rounding: str) -> tuple[float, float, float]:
    """DIS, the constant C = U/DIS - U and the exponent q (sdcMicro's arithmetic)."""
    if rounding == "sdcmicro":
        f32 = np.float32
        pf, u, pr = f32(p), f32(n_unique), f32(n_pairs)
        with np.errstate(invalid="ignore", divide="ignore"):
            dis = f32(u * pf / (u * pf + pr * (f32(1.0) - pf)))
            c_const = f32(f32(u / dis) - u)
        q = f32(f32(1.0) + (f32(8.0) - f32(m_keys)) / f32(20.0))
        return float(dis), float(c_const), float(q)
    with np.errstate(invalid="ignore", divide="ignore"):
        dis = np.float64(n_unique * p) / (n_unique * p + n_pairs * (1 - p))
    c_const = n_pairs * (1 - p) / p
    return float(dis), float(c_const), 1.0 + (8.0 - m_keys) / 20.0


def _popcount(masks: np.ndarray) -> np.ndarray:
    m = np.asarray(masks, dtype=np.uint64)
    out = np.zeros(m.shape, dtype=np.int64)
    for shift in range(0, 64, 8):
        out += _BYTE_BITS[((m >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.intp)]
    return out


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def _stats(x: np.ndarray) -> dict:
    if x.size == 0:
        return {"sum": 0.0, "max": None, "mean": None, "median": None}
    return {"sum": float(np.sum(x)), "max": float(np.max(x)), "mean": float(np.mean(x)),
            "median": float(np.median(x))}


def _finite(v):
    if isinstance(v, float | np.floating):
        return float(v) if math.isfinite(v) else None
    return v
