"""Where independent work units run: in this process, in local processes, or on Dask.

Every parallel entry point of sdcrisk (key-set scenarios, evaluation grids, and - for the
estimators that adopt it - MCMC chains and log-linear partitions) takes one ``executor``
argument and hands its work units to :func:`map_units`. The argument may be

* ``None`` - local processes (:class:`concurrent.futures.ProcessPoolExecutor`, ``spawn``
  start method, ``workers`` processes, default the number of CPUs); ``workers=1`` runs in
  this process;
* ``"serial"`` - in this process, one unit after the other;
* any :class:`concurrent.futures.Executor` (used as given and not shut down);
* a ``dask.distributed.Client`` (its ``client.get_executor(pure=False)`` is used: units carry
  their own seeds, so Dask need not hash them);
* a scheduler address such as ``"tcp://10.0.0.5:8786"`` - a Client is started for the call
  and closed after it.

Results come back in the order the units were given, whatever order they finish in, and a
unit's random seed is derived from the root seed and the unit's own *identity* (a string
tag) with :class:`numpy.random.SeedSequence` - never from the order in which units are
scheduled, the number of workers or the machine they ran on. So the same call gives the
same numbers on one core, on local processes and on a cluster.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

import numpy as np

from ..exceptions import ParameterError
from .progress import progress

__all__ = ["SerialExecutor", "executor_scope", "map_units", "unit_seed", "unit_seeds",
           "describe_executor", "chunked", "use_executor",
           "current_executor"]

# the Executor that estimators hand their internal work units (MCMC chains, log-linear
# partitions) to while ``Estimator.fit(..., executor=...)`` runs; None = their own default
_CURRENT: contextvars.ContextVar[Executor | None] = contextvars.ContextVar(
    "sdcrisk_executor", default=None)


class SerialExecutor(Executor):
    """An Executor that runs each unit at once in the calling process (no pickling)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


def _is_dask_client(obj: Any) -> bool:
    cls = type(obj)
    return cls.__name__ == "Client" and cls.__module__.split(".")[0] == "distributed"


def _dask_client(address: str):
    try:
        from dask.distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ParameterError(
            f"scheduler {address!r} given {_WHERE} but dask.distributed is not installed; "
            "install sdcrisk[cluster] (pip install 'dask[distributed]') or give none"
        ) from exc
    try:
        return Client(address, timeout="20s")
    except ValueError as exc:  # distributed's parse of the address: no port, bad protocol
        raise ParameterError(f"{address!r} is not a Dask scheduler address ({exc}) {_WHERE}; "
                             "write tcp://HOST:PORT, e.g. tcp://head:8786, or give none "
                             "(local processes)") from exc
    except OSError as exc:
        raise ParameterError(f"could not reach the Dask scheduler at {address!r} ({exc}) "
                             f"{_WHERE}; check the address (tcp://HOST:8786) or give none "
                             "(local processes)") from exc


#: where a scheduler address comes from, named in its errors (the CLI and the API spell the
#: option differently, and the error is raised below both)
_WHERE = "(--scheduler on the command line, executor= or scheduler= in Python)"


@contextlib.contextmanager
def executor_scope(executor: Any = None, *, workers: int | None = None,
                   scheduler: str | None = None) -> Iterator[Executor]:
    """The Executor to use for a call, closed afterwards only when it was started here.

    Parameters
    ----------
    executor : None, "serial", Executor, dask Client or scheduler address
        See the module documentation.
    workers : int, optional
        Number of local processes when ``executor`` is None (default: all CPUs; 1 = in
        this process).
    scheduler : str, optional
        Dask scheduler address; same as passing the address as ``executor``.

    Raises
    ------
    ParameterError
        Both ``executor`` and ``scheduler`` given, ``workers < 1``, an object that is not an
        executor, or an unreachable scheduler.
    """
    if scheduler is not None:
        if executor is not None:
            raise ParameterError("give executor= or scheduler=, not both")
        executor = scheduler
    if workers is not None and (isinstance(workers, bool) or int(workers) != workers
                                or workers < 1):
        raise ParameterError(f"workers={workers!r} must be an integer >= 1")
    most = max_local_workers()
    if executor is None and workers is not None and workers > most:
        raise ParameterError(
            f"workers={workers} local processes is more than this machine can use: at most "
            f"{most:,} ({LOCAL_WORKERS_PER_CPU} per CPU; each process loads its own Python "
            "and copy of the work); give fewer, or a Dask cluster for more (scheduler= in "
            "Python, --scheduler on the command line)")
    if executor is None:
        n = workers or os.cpu_count() or 1
        if n == 1:
            yield SerialExecutor()
            return
        import multiprocessing

        pool = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"))
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    if isinstance(executor, str):
        if executor == "serial":
            yield SerialExecutor()
            return
        client = _dask_client(executor)
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    if _is_dask_client(executor):
        yield executor.get_executor(pure=False)
        return
    if isinstance(executor, Executor):
        yield executor
        return
    raise ParameterError(f"executor={executor!r} is not a concurrent.futures.Executor, a Dask "
                         "Client, a scheduler address or 'serial'")


#: local worker processes allowed per CPU (``workers=``): more only queue for the CPUs
LOCAL_WORKERS_PER_CPU = 4


def max_local_workers() -> int:
    """The most local worker processes ``workers=`` may start on this machine."""
    return LOCAL_WORKERS_PER_CPU * (os.cpu_count() or 1)


@contextlib.contextmanager
def use_executor(executor: Any, *, workers: int | None = None) -> Iterator[Executor | None]:
    """Make ``executor`` the one :func:`current_executor` returns inside the block.

    ``executor`` takes the forms of :func:`executor_scope` except that ``None`` leaves the
    current setting alone (estimators then use their own default: MCMC chains in threads,
    log-linear partitions one after the other in this process). An executor started here
    (local processes, a Client for a scheduler address) is closed when the block ends.
    """
    if executor is None and workers is None:
        yield _CURRENT.get()
        return
    with executor_scope(executor, workers=workers) as ex:
        token = _CURRENT.set(ex)
        try:
            yield ex
        finally:
            _CURRENT.reset(token)


def current_executor() -> Executor | None:
    """The Executor set by :func:`use_executor` (``Estimator.fit(executor=...)``), or None."""
    return _CURRENT.get()


def describe_executor(executor: Any) -> str:
    """A short, non-identifying description of where units ran (for provenance)."""
    if executor is None:
        return "local processes"
    if isinstance(executor, str):
        return "serial" if executor == "serial" else "dask scheduler"
    if _is_dask_client(executor):
        return "dask client"
    return type(executor).__name__


def unit_seed(seed: int | None, tag: str) -> np.random.SeedSequence:
    """The SeedSequence of the work unit named ``tag`` under the root ``seed``.

    The unit's spawn key is taken from a SHA-256 of ``tag``, so a unit gets the same stream
    whether it runs alone or among others, first or last, here or on a cluster.
    """
    digest = hashlib.sha256(tag.encode("utf-8")).digest()
    key = tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))
    return np.random.SeedSequence(seed, spawn_key=key)


def unit_seeds(seed: int | None, n: int) -> list[np.random.SeedSequence]:
    """``SeedSequence(seed).spawn(n)``: seeds of units numbered 0..n-1 (e.g. MCMC chains).

    Unit ``i`` always gets child ``i`` however the units are scheduled.
    """
    return np.random.SeedSequence(seed).spawn(int(n))


def map_units(fn: Callable, units: Iterable[Any], *, executor: Any = None,
              workers: int | None = None, scheduler: str | None = None) -> list:
    """``[fn(unit) for unit in units]`` on an executor, results in the order of ``units``.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled for process and Dask executors).
    units : iterable
        The independent work units; each must be picklable and carry its own seed.
    executor, workers, scheduler
        Where to run: see :func:`executor_scope`.

    Returns
    -------
    list
        One result per unit, in input order.

    Notes
    -----
    A unit's failure is raised here (the first failing unit in input order) once all have
    finished or been cancelled.

    Examples
    --------
    >>> map_units(abs, [-1, 2, -3], executor="serial")
    [1, 2, 3]
    """
    units = list(units)
    if not units:
        return []
    with executor_scope(executor, workers=workers, scheduler=scheduler) as ex, \
            progress(total=len(units), desc="work units", unit="unit") as bar:
        futures = []
        for u in units:
            f = ex.submit(fn, u)
            f.add_done_callback(lambda _f: bar.update(1))
            futures.append(f)
        return [f.result() for f in futures]


def chunked(items: Sequence[Any], n_chunks: int) -> list[list[Any]]:
    """Split ``items`` into at most ``n_chunks`` contiguous, nearly equal lists."""
    n_chunks = max(1, min(int(n_chunks), len(items)))
    bounds = np.linspace(0, len(items), n_chunks + 1).round().astype(int)
    return [list(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
