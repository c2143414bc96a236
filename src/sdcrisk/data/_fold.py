"""Cell ids folded in key by key as the columns are read (:func:`~sdcrisk.data.table.
tabulate_source`), and replaced by ranks before a huge key space makes them wide."""

from __future__ import annotations

import math

import numpy as np

from . import _cells


class Fold:
    """Mixed-radix cell ids folded in as each key is coded (``ids = ids * d + code``), so
    the key codes are never all held: the one n-long array is the ids (int32 while K
    < 2^31). ``overflow`` is set when K reaches 2^62 (ids would need rank compression).

    From ``RANKS_FROM_RECORDS`` records, when the next key would take the ids past
    ``RANKS_FROM`` the ids are first replaced by the ranks of the combinations observed so
    far (``prefix`` keeps each rank's codes; ``since`` the levels of the keys folded after
    it), so the ids stay int32 and the table is counted densely: 10^8 records x 10 keys
    (K = 1.3x10^10) were sorted as int64 ids, and tabulating peaked at 5.4 GiB. Ranks keep
    the order of the combinations, so the cells come out in the same order as the ids.
    """

    RANKS_FROM = 1 << 25
    RANKS_FROM_RECORDS = _cells.COMPILED_FROM

    def __init__(self):
        self.n, self.ids, self.bound, self.overflow = 0, None, 1, False
        self.prefix: np.ndarray | None = None
        self.since: list[int] = []
        self.widest = 1  # the most levels of a key folded so far (the prefix's code type)

    def add(self, codes: np.ndarray, d: int) -> None:
        d = max(int(d), 1)
        if (self.ids is not None and self.n >= self.RANKS_FROM_RECORDS
                and self.bound * d > self.RANKS_FROM):
            self._to_ranks()
        bound = self.bound * d
        if bound >= _cells.ID_LIMIT:
            self.overflow = True
            return
        if self.ids is None:
            self.ids = codes.astype(np.int32 if bound < (1 << 31) else np.int64)
        else:
            if bound >= (1 << 31) and self.ids.dtype == np.int32:
                self.ids = self.ids.astype(np.int64)
            block = _cells.CODE_BLOCK
            for s in range(0, self.n, block):
                x = self.ids[s:s + block]
                x *= d
                x += codes[s:s + block]
        self.bound = bound
        self.since.append(d)
        self.widest = max(self.widest, d)

    def _to_ranks(self) -> None:
        """Replace the ids by the ranks of the observed combinations of the keys so far."""
        cells, _, ranks = _cells.observed_cells(self.ids, self.bound)
        self.ids = None
        self.prefix = self.codes(cells, _cells.code_dtype(self.widest))
        self.ids, self.bound, self.since = ranks, len(cells), []

    def codes(self, cells: np.ndarray, dtype) -> np.ndarray:
        """Level codes (cells, keys folded so far) of the ids ``cells``."""
        if self.prefix is None:
            return _cells.decode_cells(cells, self.since, dtype)
        width, k = math.prod(self.since), self.prefix.shape[1]
        out = np.empty((len(cells), k + len(self.since)), dtype)
        block = _cells.CODE_BLOCK  # block by block: no cell-long temporaries
        for s in range(0, len(cells), block):
            lead, rest = np.divmod(cells[s:s + block], width)
            out[s:s + block, :k] = self.prefix[lead]
            out[s:s + block, k:] = _cells.decode_cells(rest, self.since, dtype)
        return out
