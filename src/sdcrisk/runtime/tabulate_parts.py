"""Tabulation of a partitioned file on a cluster (issue 20 item 3).

A folder of Parquet parts (or one file on storage every worker reads at the same path) is
tabulated as :func:`sdcrisk.data.outofcore.tabulate_file` tabulates it on one machine, with
its two passes spread over an executor's workers, one unit per part:

1. each worker counts its part's distinct key combinations
   (:func:`~sdcrisk.data.outofcore.count_part`) and sends back one row per combination;
2. the caller merges them and codes the cells (:func:`~sdcrisk.data.outofcore.plan_cells`):
   the same levels, cell order and counts as a local run;
3. each worker maps its part's records to their cells
   (:func:`~sdcrisk.data.outofcore.part_record_cells`; it receives the cells and the raw
   value lookups) and the caller puts the parts' maps end to end, in the order the local
   run reads them.

Records never travel; what comes back is counts per combination and the record -> cell
map (4 bytes a record).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..data.io import parquet_parts
from ..data.outofcore import check_path, count_part, part_record_cells, plan_cells
from ..data.sizes import resolve_population_size
from ..data.table import DEFAULT_MAX_LEVELS, CellTable, check_keys
from ..exceptions import ParameterError
from .executors import map_units

__all__ = ["tabulate_parts"]


def _count_unit(unit) -> Any:
    path, keys, weights, missing, batch_rows = unit
    return count_part(path, keys, weights=weights, missing=missing, batch_rows=batch_rows)


def _map_unit(unit) -> np.ndarray:
    path, plan, n, batch_rows = unit
    return part_record_cells(path, plan, n, batch_rows)


def tabulate_parts(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    keys: Sequence[str] | str,
    *,
    executor: Any = None,
    workers: int | None = None,
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    levels: Mapping[str, Sequence] | None = None,
    missing: Literal["category", "error"] = "category",
    max_levels: int | None = DEFAULT_MAX_LEVELS,
    batch_rows: int = 1 << 20,
) -> CellTable:
    """Tabulate the parts of a dataset on an executor's workers, one unit per part.

    Parameters
    ----------
    source : path or sequence of paths
        A folder of Parquet files (all of them, recursively, in path order), one file, or
        the parts in the order their records count. Every worker must read them at the same
        paths (a shared filesystem or object store mount).
    keys, weights, population_size, sampling_fraction, levels, missing, max_levels
        As for :meth:`sdcrisk.Microdata.from_source`.
    executor, workers
        Where the units run (see :func:`sdcrisk.runtime.executors.map_units`): a Dask
        ``Client``, a scheduler address, any ``concurrent.futures.Executor``, ``"serial"``,
        or local processes.
    batch_rows : int
        Records per batch a worker reads.

    Returns
    -------
    CellTable
        Equal to ``tabulate_file(source, keys, ...)`` run locally (weight sums up to the
        order of floating-point summation).

    Examples
    --------
    On a cluster (``census/`` a folder of Parquet parts every worker can read)::

        from dask.distributed import Client
        with Client("tcp://head:8786") as client:
            table = tabulate_parts("census/", ["sex", "age", "region"],
                                   executor=client, population_size=59_597_542)
    """
    keys = check_keys(keys, weights)
    if missing not in ("category", "error"):
        raise ParameterError(f"missing={missing!r}; use 'category' or 'error'")
    if isinstance(source, str | os.PathLike):
        paths = parquet_parts(source)
        name = Path(source).name
    else:
        if not isinstance(source, list | tuple):
            check_path(source, "tabulate_parts")  # refuses it, naming the type
        paths = [p for s in source for p in parquet_parts(check_path(s, "tabulate_parts"))]
        name = f"{len(paths)} parts"
    if not paths:
        raise ParameterError("no parts to tabulate")
    units = [(str(p), keys, weights, missing, batch_rows) for p in paths]
    counted = map_units(_count_unit, units, executor=executor, workers=workers)
    plan = plan_cells(counted, keys, weighted=weights is not None, levels=levels,
                      missing=missing, max_levels=max_levels)
    n = sum(c.n for c in counted)
    mapper = plan.mapper()
    maps = map_units(_map_unit, [(str(p), mapper, c.n, batch_rows)
                                 for p, c in zip(paths, counted, strict=True) if c.n],
                     executor=executor, workers=workers)
    record = np.concatenate(maps)
    total = sum(c.weight_sum for c in counted)
    big_n, how = resolve_population_size(n, np.array([total]) if weights else None,
                                         population_size, sampling_fraction)
    return plan.table(record, None, big_n, how, name)
