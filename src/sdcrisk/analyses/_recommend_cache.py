"""The fits a plan search keeps: a small cache of estimator results keyed on the fitted
table's content, so that a table met again is not fitted again.

Where tables repeat (cProfile and a fingerprint count over whole runs, uci_adult 5%, KS8,
tau2 <= 150): every plan starts from the file itself (fitted once, by ``recommend``), and
each combined plan starts its suppression from a recoded file that its key's recoding plan
fitted already (26 of auto's 265 fits there). No greedy step of one plan met a table of
another otherwise. Fits are deterministic (same table, same estimator: the same result), so
a cached result is the one a re-fit would give.

The cache lives in a :class:`~._recommend_plan.SearchContext`, one per plan unit: it is
pickled with the unit to a worker process (its entries travel with it), and bounded in
entries and in an estimate of their memory; the least recently used entry goes first.
Pinned entries (the file's own fit, the recoding fits handed to a combined plan) are kept
whatever the bounds: at most about log2(levels) + 1 per key, each about the size of its
table (an auto result of 50,000 records x 8 keys pickles to 0.84 MB; ``size_of`` estimates
0.84 MB).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..core.result import RiskResult

__all__ = ["FitCache", "FIT_CACHE_ENTRIES", "FIT_CACHE_BYTES"]

#: most unpinned fits a plan unit keeps (0: no cache but the pinned entries)
FIT_CACHE_ENTRIES = 8
#: and at most about this many bytes of them (:meth:`FitCache.size_of`)
FIT_CACHE_BYTES = 256 * 2**20


class FitCache:
    """Results by table content: keys, levels, cells, counts, N (``table.fingerprint()``)
    and the record -> cell map, checked array by array on a hit.

    Parameters
    ----------
    max_entries, max_bytes : int
        Bounds on the unpinned entries (default :data:`FIT_CACHE_ENTRIES`,
        :data:`FIT_CACHE_BYTES`, read when the cache is made).
    """

    def __init__(self, max_entries: int | None = None, max_bytes: int | None = None) -> None:
        self.max_entries = FIT_CACHE_ENTRIES if max_entries is None else max_entries
        self.max_bytes = FIT_CACHE_BYTES if max_bytes is None else max_bytes
        self._pinned: dict[tuple[str, str], tuple[Any, RiskResult]] = {}
        self._lru: OrderedDict[tuple[str, str], tuple[Any, RiskResult, int]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(table) -> tuple[str, str]:
        record_map = np.ascontiguousarray(table.record_map())
        return table.fingerprint(), hashlib.sha256(record_map.data).hexdigest()

    @staticmethod
    def size_of(table) -> int:
        """Bytes an entry holds, estimated: the table's record map, cell codes and counts,
        and as much again per cell for the result's per-cell arrays."""
        per_cell = np.asarray(table.counts).nbytes + np.asarray(table.cell_codes).nbytes
        return int(np.asarray(table.record_map()).nbytes + 2 * per_cell)

    def get(self, table) -> RiskResult | None:
        """The result fitted on a table with ``table``'s content, else None."""
        key = self.key(table)
        got = self._pinned.get(key)
        if got is None and key in self._lru:
            self._lru.move_to_end(key)
            got = self._lru[key][:2]
        if got is None or not _same_table(got[0], table):
            self.misses += 1
            return None
        self.hits += 1
        return got[1]

    def put(self, table, result: RiskResult, *, pin: bool = False) -> None:
        key = self.key(table)
        if pin:
            self._pinned[key] = (table, result)
            return
        if key in self._pinned or self.max_entries <= 0:
            return
        size = self.size_of(table)
        if key in self._lru:
            self._bytes -= self._lru.pop(key)[2]
        self._lru[key] = (table, result, size)
        self._bytes += size
        while self._lru and (len(self._lru) > self.max_entries or self._bytes > self.max_bytes):
            self._bytes -= self._lru.popitem(last=False)[1][2]

    def pinned(self) -> list[tuple[Any, RiskResult]]:
        return list(self._pinned.values())

    def __len__(self) -> int:
        return len(self._pinned) + len(self._lru)


def _same_table(a, b) -> bool:
    """Whether two tables have the same content, field by field (the key is a digest); a
    field that cannot be compared counts as different (a miss costs a fit, nothing more)."""
    if a is b:
        return True
    if type(a) is not type(b) or not np.array_equal(a.record_map(), b.record_map()):
        return False
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is y:
            continue
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and np.array_equal(x, y)):
                return False
            continue
        try:
            if not bool(x == y):
                return False
        except (TypeError, ValueError):
            return False
    return True
