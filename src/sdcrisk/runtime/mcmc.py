"""The one MCMC driver shared by every MCMC estimator.

A model is a :class:`Kernel`: three pure functions ``init(rng, data, params) -> state``,
``step(rng, state, data, params) -> (state, info)`` and ``observe(rng, state, data, params)
-> Observation`` (what is recorded at a saved iteration). :func:`sample` owns everything
else: several chains with independent streams from ``SeedSequence(seed).spawn``, burn-in,
thinning, draws with leading ``(chain, draw)`` axes, a progress bar on terminals, and the
convergence checks of :mod:`sdcrisk.runtime.diagnostics` with explicit thresholds, including a
warning when chains settle in different modes.

Each chain gets two streams: one for the transitions and one for observations, so the path
of a chain does not depend on how often or how expensively it is observed.

A step may update its state in place and return it; the driver never shares a state
between chains.

Where the chains run: in threads of this process (``n_jobs``), or - inside
``Estimator.fit(..., executor=...)``, when :func:`.executors.current_executor` returns
an executor - as work units on that executor (local processes, a Dask cluster). A unit is
one chain advanced by a number of iterations: the chain travels pickled with its state, its
two generators and its records, and comes back advanced (:func:`advance_chain`). Both paths
give identical draws for a seed.
"""

from __future__ import annotations

import copy
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.sizes import check_number, check_range
from ..exceptions import ConvergenceWarning, ParameterError, user_stacklevel
from . import diagnostics as dg
from .executors import SerialExecutor, current_executor, describe_executor

__all__ = ["Kernel", "Observation", "Thresholds", "MCMCRun", "sample", "find_modes",
           "split_modes", "advance_chain"]


@dataclass(frozen=True)
class Observation:
    """What a model reports at one saved iteration.

    Attributes
    ----------
    scalars : mapping of str to float
        Quantities traced over draws (stored with shape (chains, draws)).
    sums : mapping of str to ndarray
        Arrays averaged over all saved draws of all chains (memory: one array each).
    bank : mapping of str to ndarray
        Arrays kept for a bounded number of evenly spaced draws (e.g. to sample from a
        posterior predictive later).
    """

    scalars: Mapping[str, float]
    sums: Mapping[str, np.ndarray] = field(default_factory=dict)
    bank: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Kernel:
    """A model for the driver: ``init``, ``step`` and ``observe`` (see module docstring)."""

    init: Callable[[np.random.Generator, Any, Any], Any]
    step: Callable[[np.random.Generator, Any, Any, Any], tuple[Any, Mapping[str, float]]]
    observe: Callable[[np.random.Generator, Any, Any, Any], Observation]
    name: str = "model"


#: largest ``rhat_max``: Gelman and Rubin's first rule of thumb was 1.2 and Vehtari et al. (2021)
#: ask 1.01; past 2 chains that have not mixed pass (rhat_max=1e6 passed every run)
MAX_RHAT = 2.0


@dataclass(frozen=True)
class Thresholds:
    """Convergence thresholds, printed with every result that used them.

    Parameters
    ----------
    rhat_max : float
        Largest acceptable rank-normalised split R-hat (Vehtari et al. 2021 recommend 1.01),
        in (1, 2].
    ess_per_chain : float
        Required bulk and tail ESS per chain (100 per chain, i.e. 400 for 4 chains, as
        Vehtari et al. 2021 recommend).
    mode_gap : float
        Chains are said to sit in different modes when their means (of the quantities in
        ``modes_of``) split into groups separated by more than ``mode_gap`` pooled
        within-chain standard deviations.
    tolerance : float
        Absolute precision, in the units of the monitored quantities, below which
        differences do not matter (default 0: none). A monitored quantity whose split-chain
        means all lie within ``tolerance`` of each other is *settled*: it is treated like a
        constant one (R-hat and ESS are not required of it; it still needs
        ``ess_per_chain`` draws per chain), and modes closer than ``tolerance`` are not
        reported. Rank-normalised R-hat and ESS are scale-free, so without it a quantity that
        is practically constant (a risk count of 1e-60 to 0.3 records in every draw) can fail
        them for ever.
    """

    rhat_max: float = 1.01
    ess_per_chain: float = 100.0
    mode_gap: float = 3.0
    tolerance: float = 0.0

    def __post_init__(self):
        for name in ("rhat_max", "ess_per_chain", "mode_gap", "tolerance"):
            check_number(name, getattr(self, name))
        check_range("rhat_max", self.rhat_max, 1.0, MAX_RHAT, low_open=True,
                    what="largest acceptable split R-hat; e.g. 1.01")
        if not self.ess_per_chain > 0:
            raise ParameterError(f"ess_per_chain={self.ess_per_chain} must be positive")
        if not self.mode_gap > 0:
            raise ParameterError(f"mode_gap={self.mode_gap} must be positive")
        tolerance = check_number("tolerance", self.tolerance)
        if not (tolerance >= 0 and math.isfinite(tolerance)):  # np.isfinite(10**30): TypeError
            raise ParameterError(f"tolerance={self.tolerance} must be a number >= 0")

    def as_dict(self, chains: int) -> dict[str, float]:
        return {"rhat_max": self.rhat_max, "ess_bulk_min": self.ess_per_chain * chains,
                "ess_tail_min": self.ess_per_chain * chains,
                "mode_gap_within_sd": self.mode_gap, "tolerance": self.tolerance}


@dataclass(frozen=True, eq=False)
class MCMCRun:
    """Output of :func:`sample`.

    Attributes
    ----------
    draws : dict of str to ndarray (chains, draws)
        Traced scalars.
    means : dict of str to ndarray
        Posterior means of the arrays in ``Observation.sums``.
    bank : dict of str to ndarray (kept draws, ...)
        Arrays kept at evenly spaced draws (chain-major order).
    info : dict of str to ndarray (chains,)
        Per-chain averages of the step info over the post-burn-in iterations.
    settings : dict
        chains, burn_in, iterations, thin.
    diagnostics : dict
        R-hat, ESS, verdict, thresholds, chain means, modes (see :func:`sample`).
    seconds : float
        Wall time of the whole run.
    """

    draws: dict[str, np.ndarray]
    means: dict[str, np.ndarray]
    bank: dict[str, np.ndarray]
    info: dict[str, np.ndarray]
    settings: dict[str, int]
    diagnostics: dict[str, Any]
    seconds: float

    def traces(self, max_per_chain: int = 1000) -> dict[str, list[list[float]]]:
        """Traced scalars as nested lists, thinned evenly to at most ``max_per_chain``."""
        out = {}
        for name, arr in self.draws.items():
            step = max(1, int(np.ceil(arr.shape[1] / max_per_chain)))
            out[name] = arr[:, ::step].tolist()
        return out


def _progress_bar(total: int, desc: str, progress: bool | None):
    show = progress if progress is not None else bool(
        getattr(sys.stderr, "isatty", lambda: False)())
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="it", file=sys.stderr, leave=False,
                mininterval=0.5)


class _Chain:
    """One chain: its state, streams and what it has recorded so far.

    The state is created by the kernel's ``init`` at the start of the first :meth:`run`
    (with the transition stream, as every later step), so a chain can be built in one
    process and started in another. Banked arrays are keyed by their draw index, so the
    draws a unit banked can be merged with those kept before it (:func:`_merge_chain`).
    """

    def __init__(self, kernel: Kernel, data, params, streams, thin: int, bank_cap: int):
        self.kernel, self.data, self.params = kernel, data, params
        self.step_rng = np.random.Generator(np.random.PCG64(streams[0]))
        self.obs_rng = np.random.Generator(np.random.PCG64(streams[1]))
        self.state: Any = None
        self.started = False
        self.thin = thin
        self.kept = 0                      # post-burn-in iterations done
        self.scalars: dict[str, list[float]] = {}
        self.sums: dict[str, np.ndarray] = {}
        self.bank: dict[str, dict[int, np.ndarray]] = {}   # name -> {draw index: array}
        self.bank_index: list[int] = []    # draw indices kept in the bank
        self.bank_cap = bank_cap
        self.bank_stride = 1
        self.info_sum: dict[str, float] = {}

    @property
    def n_draws(self) -> int:
        return len(next(iter(self.scalars.values()))) if self.scalars else 0

    def run(self, n_iter: int, burn: bool, tick: Callable[[int], None] | None = None) -> None:
        k = self.kernel
        if not self.started:
            self.state = k.init(self.step_rng, self.data, self.params)
            self.started = True
        pending = 0
        for _ in range(n_iter):
            self.state, info = k.step(self.step_rng, self.state, self.data, self.params)
            if not burn:
                self.kept += 1
                for name, v in info.items():
                    self.info_sum[name] = self.info_sum.get(name, 0.0) + float(v)
                if self.kept % self.thin == 0:
                    self._observe()
            pending += 1
            if pending >= 10 and tick is not None:
                tick(pending)
                pending = 0
        if pending and tick is not None:
            tick(pending)

    def _observe(self) -> None:
        obs = self.kernel.observe(self.obs_rng, self.state, self.data, self.params)
        s = self.n_draws
        for name, v in obs.scalars.items():
            self.scalars.setdefault(name, []).append(float(v))
        for name, v in obs.sums.items():
            if name in self.sums:
                self.sums[name] += v
            else:
                self.sums[name] = np.array(v, dtype=float, copy=True)
        if self.bank_cap and obs.bank and s % self.bank_stride == 0:
            # keep draws s = 0, stride, 2 stride, ...; when full, keep every other one (the
            # multiples of twice the stride) and double the stride, so the kept draws stay
            # evenly spaced however long the run
            for name, v in obs.bank.items():
                self.bank.setdefault(name, {})[s] = np.array(v, copy=True)
            self.bank_index.append(s)
            if len(self.bank_index) > self.bank_cap:
                self.bank_stride *= 2
                self.bank_index = [i for i in self.bank_index if i % self.bank_stride == 0]
                for name, kept in self.bank.items():
                    self.bank[name] = {i: a for i, a in kept.items()
                                       if i % self.bank_stride == 0}


def advance_chain(unit: tuple) -> _Chain:
    """Advance one chain: the work unit of :func:`sample` on an executor.

    Parameters
    ----------
    unit : tuple
        ``(chain, segments)``: a chain as sent by :func:`sample` and a sequence of
        ``(n_iter, burn)`` pairs, run in order (``burn`` True: iterations discarded).

    Returns
    -------
    _Chain
        The chain advanced, its state, generators and records updated. Its ``data`` is
        dropped (the caller holds it), and its bank holds only the draws banked in this
        unit (the caller merges them with those it kept).

    Notes
    -----
    A module-level function of one picklable argument, so that process pools and Dask
    workers can run it; the chain's generators travel with their state, so the draws do
    not depend on where or in how many units a chain is advanced.
    """
    chain, segments = unit
    for n_iter, burn in segments:
        chain.run(int(n_iter), bool(burn))
    chain.data = None
    return chain


def _outbound(chain: _Chain) -> _Chain:
    """What travels in a unit: the chain without the arrays it has banked (they stay here)."""
    out = copy.copy(chain)
    out.bank = {name: {} for name in chain.bank}
    return out


def _merge_chain(kept: _Chain, back: _Chain, data) -> _Chain:
    """The chain that came back from a unit, with its data and the bank merged back."""
    back.data = data
    for name, arrays in kept.bank.items():
        old = {i: a for i, a in arrays.items() if i % back.bank_stride == 0}
        back.bank[name] = {**old, **back.bank.get(name, {})}
    return back


def _run_units(executor: Executor, chains: list[_Chain], segments: tuple, data,
               tick: Callable[[int], None]) -> list[_Chain]:
    """Advance every chain as one unit on ``executor``; results in chain order."""
    steps = sum(int(n) for n, _ in segments)
    futures = [executor.submit(advance_chain, (_outbound(ch), segments)) for ch in chains]
    where = {f: i for i, f in enumerate(futures)}
    out: list[_Chain] = [None] * len(chains)  # type: ignore[list-item]
    try:
        for f in as_completed(futures):
            i = where[f]
            out[i] = _merge_chain(chains[i], f.result(), data)
            tick(steps)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    return out


def sample(kernel: Kernel, data: Any, params: Any, *, chains: int = 4, burn_in: int = 1000,
           iterations: int | None = 1000, thin: int = 1,
           seed: int | np.random.SeedSequence = 0, monitor: Sequence[str] = ("tau1",),
           modes_of: Sequence[str] = ("tau1",), thresholds: Thresholds | None = None,
           bank_size: int = 0, progress: bool | None = None, n_jobs: int | None = 1,
           block: int = 500, max_iterations: int = 20_000, warn: bool = True,
           stacklevel: int = 1) -> MCMCRun:
    """Run ``chains`` chains of a kernel and check their convergence.

    Parameters
    ----------
    kernel : Kernel
        The model.
    data, params
        Passed unchanged to the kernel's functions.
    chains : int
        Number of chains (each from its own ``init``).
    burn_in : int
        Iterations discarded at the start of each chain.
    iterations : int or None
        Iterations per chain after burn-in; every ``thin``-th is observed, so each chain
        gives ``iterations // thin`` draws. ``None``: run in blocks of ``block`` iterations
        until the verdict passes (see Notes) or ``max_iterations`` is reached.
    thin : int
        Keep every ``thin``-th post-burn-in iteration.
    seed : int or SeedSequence
        Root of the chains' streams (``SeedSequence(seed).spawn(chains)``, two streams each).
    monitor : sequence of str
        Traced scalars whose R-hat and ESS decide the verdict.
    modes_of : sequence of str
        Traced scalars checked for chains sitting in different modes.
    thresholds : Thresholds, optional
        Verdict thresholds (default :class:`Thresholds()`).
    bank_size : int
        About how many draws (over all chains) keep ``Observation.bank``, evenly spaced.
    progress : bool, optional
        Show a tqdm progress bar (default: only when stderr is a terminal).
    n_jobs : int or None
        Chains run in this many threads (the kernels release the GIL in compiled code);
        ``None``: one per chain up to the number of CPUs. Ignored when an executor is set
        (see Notes).
    block, max_iterations : int
        Block size and cap of the adaptive run (``iterations=None``).
    warn : bool
        Emit a :class:`ConvergenceWarning` when the verdict fails or chains disagree.
    stacklevel : int
        ``stacklevel`` of those warnings, counted from the caller of :func:`sample`
        (1 = the caller itself).

    Returns
    -------
    MCMCRun

    Notes
    -----
    Verdict: converged when, for every monitored quantity, the rank-normalised split R-hat
    is at most ``rhat_max`` and the bulk and tail ESS are at least ``ess_per_chain * chains``
    (Vehtari et al. 2021); chains in different modes (:func:`find_modes`) never pass. An
    adaptive run stops at the first block end where the verdict passes, so its length is
    set by the diagnostics; it is deterministic for a seed.

    Inside ``Estimator.fit(..., executor=...)`` (:func:`sdcrisk.runtime.executors.use_executor`) the
    chains run as work units on that executor instead of threads: one unit per chain for
    burn-in and the first ``iterations`` (or block), then one per chain and block of an
    adaptive run (:func:`advance_chain`). Each unit carries the chain (state, generators,
    running sums, traced scalars) and the kernel's ``data`` and ``params``; the progress bar
    advances as units finish. The draws are identical to the threaded path's.
    """
    adaptive = iterations is None
    for name, v, low in (("chains", chains, 1), ("thin", thin, 1), ("burn_in", burn_in, 0),
                         ("block", block, 1), ("max_iterations", max_iterations, 1),
                         *((("iterations", iterations, 1),) if not adaptive else ())):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < low:
            raise ParameterError(f"{name}={v!r} must be an integer >= {low}")
    if n_jobs is not None and (not isinstance(n_jobs, int | np.integer) or n_jobs < 1):
        raise ParameterError(f"n_jobs={n_jobs!r} must be an integer >= 1 or None")
    # the first block is held to max_iterations as the later ones are (block=10**30 ran
    # 10**30 iterations, past any max_iterations)
    first = min(block, max_iterations) if adaptive else iterations
    if first // thin < 1 or (adaptive and max_iterations < thin):
        raise ParameterError(f"{'block' if adaptive else 'iterations'}={first} with "
                             f"thin={thin} keeps no draw; use at least thin iterations")
    jobs = min(chains, n_jobs if n_jobs is not None else (os.cpu_count() or 1))
    thresholds = thresholds or Thresholds()
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    streams = [s.spawn(2) for s in root.spawn(chains)]
    bank_cap = -(-bank_size // chains) if bank_size else 0
    planned = burn_in + (max_iterations if adaptive else iterations)
    bar = _progress_bar(chains * planned, kernel.name, progress)
    lock = threading.Lock()

    def tick(k: int) -> None:
        if bar is not None:
            with lock:
                bar.update(k)

    def run_all(fn) -> None:
        if jobs > 1:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                list(pool.map(fn, range(chains)))
        else:
            for c in range(chains):
                fn(c)

    executor = current_executor()
    if executor is not None:
        jobs = 1 if isinstance(executor, SerialExecutor) else min(
            chains, getattr(executor, "_max_workers", chains))
    start = time.perf_counter()
    pool_chains: list[_Chain] = [
        _Chain(kernel, data, params, streams[c], thin, bank_cap) for c in range(chains)]
    try:
        if executor is None:
            run_all(lambda c: pool_chains[c].run(burn_in, True, tick))
        done = 0
        while True:
            n = first if done == 0 else min(block, max_iterations - done)
            if executor is None:
                run_all(lambda c, n=n: pool_chains[c].run(n, False, tick))
            else:  # burn-in and the first block in one unit per chain
                segments = ((burn_in, True), (n, False)) if done == 0 else ((n, False),)
                pool_chains[:] = _run_units(executor, pool_chains, segments, data, tick)
            done += n
            if not adaptive or done >= max_iterations:
                break
            diag = assess(_collect(pool_chains), monitor=monitor, modes_of=modes_of,
                          thresholds=thresholds)
            if diag["converged"] and not diag["multimodal"]:
                break
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - start

    draws = _collect(pool_chains)
    n_draws = pool_chains[0].n_draws
    total = chains * n_draws
    means = {k: sum(ch.sums[k] for ch in pool_chains) / total for k in pool_chains[0].sums}
    bank = {k: np.stack([a for ch in pool_chains for a in ch.bank.get(k, {}).values()])
            for k in pool_chains[0].bank}
    info = {k: np.array([ch.info_sum.get(k, np.nan) / done for ch in pool_chains])
            for k in pool_chains[0].info_sum}
    settings = {"chains": chains, "burn_in": burn_in, "iterations": done, "thin": thin,
                "draws_per_chain": n_draws, "adaptive": adaptive}
    if adaptive:
        settings.update(block=block, max_iterations=max_iterations)
    diag = assess(draws, monitor=monitor, modes_of=modes_of, thresholds=thresholds)
    diag.update(settings)
    diag["seconds"] = seconds
    diag["executor"] = (f"threads ({jobs})" if executor is None
                        else describe_executor(executor))
    diag["seconds_per_sweep"] = seconds * jobs / max(1, chains * (burn_in + done))
    if warn:
        _warn(diag, stacklevel)
    return MCMCRun(draws=draws, means=means, bank=bank, info=info, settings=settings,
                   diagnostics=diag, seconds=seconds)


def _collect(chains: Sequence[_Chain]) -> dict[str, np.ndarray]:
    names = list(chains[0].scalars)
    return {k: np.array([ch.scalars[k] for ch in chains], dtype=float) for k in names}


def find_modes(draws: np.ndarray, gap: float) -> list[dict[str, Any]]:
    """Group chains whose means lie within ``gap`` pooled within-chain sds of each other.

    Chain means are sorted; a new group starts wherever two neighbouring means differ by
    more than ``gap * sqrt(mean within-chain variance)``. One group means the chains agree.
    """
    a = np.asarray(draws, dtype=float)
    m = a.mean(axis=1)
    within = float(np.sqrt(np.mean(a.var(axis=1, ddof=1)))) if a.shape[1] > 1 else 0.0
    order = np.argsort(m, kind="stable")
    groups = [[int(order[0])]]
    for prev, cur in zip(order[:-1], order[1:], strict=True):
        if m[cur] - m[prev] > gap * within:
            groups.append([])
        groups[-1].append(int(cur))
    out = []
    for g in groups:
        vals = a[g]
        out.append({"chains": sorted(g), "mean": float(vals.mean()),
                    "sd": float(vals.std(ddof=1)) if vals.size > 1 else 0.0})
    return out


def split_modes(draws: np.ndarray, gap: float, min_share: float = 0.05
                ) -> list[dict[str, Any]]:
    """Two modes in the pooled draws (1-d 2-means), when they are well separated.

    The sorted pooled draws are cut where the within-group sum of squares is smallest; two
    modes are reported when each holds at least ``min_share`` of the draws and their means
    differ by more than ``gap`` pooled within-group sds (a normal law gives 2.65, a uniform
    3.46, so ``gap`` should be 4 or more). This catches chains that jump between modes,
    which the chain-mean rule of :func:`find_modes` cannot see.
    """
    x = np.sort(np.asarray(draws, dtype=float).ravel())
    n = len(x)
    lo = max(1, int(np.ceil(min_share * n)))
    if n < 2 * lo + 2:
        return []
    c1 = np.cumsum(x)
    c2 = np.cumsum(x * x)
    k = np.arange(lo, n - lo + 1)
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    best = int(np.argmin(left + right))
    cut = int(k[best])
    a, b = x[:cut], x[cut:]
    within = np.sqrt((left[best] + right[best]) / max(n - 2, 1))
    if within <= 0 or (b.mean() - a.mean()) <= gap * within:
        return []
    return [{"share": len(g) / n, "mean": float(g.mean()),
             "sd": float(g.std(ddof=1)) if len(g) > 1 else 0.0} for g in (a, b)]


def assess(draws: Mapping[str, np.ndarray], *, monitor: Sequence[str],
           modes_of: Sequence[str], thresholds: Thresholds) -> dict[str, Any]:
    """R-hat, bulk/tail ESS, verdict, chain means and modes of traced draws."""
    chains = next(iter(draws.values())).shape[0] if draws else 0
    limits = thresholds.as_dict(chains)
    rhat, ess_b, ess_t = {}, {}, {}
    for k, a in draws.items():
        rhat[k] = dg.rhat(a)
        ess_b[k] = dg.ess_bulk(a)
        ess_t[k] = dg.ess_tail(a)
    tol = thresholds.tolerance
    # spread of the split-chain means: within ``tolerance``, the quantity is settled
    spread = {k: float(np.ptp(dg.split_chains(draws[k]).mean(axis=1)))
              for k in monitor if k in draws and draws[k].shape[1] >= 2}
    settled = [k for k, v in spread.items()
               if tol > 0 and v <= tol and draws[k].shape[1] >= thresholds.ess_per_chain]
    modes = {k: find_modes(draws[k], thresholds.mode_gap)
             for k in modes_of if k in draws and chains > 1}
    pooled = {k: split_modes(draws[k], thresholds.mode_gap + 1.0)
              for k in modes_of if k in draws}
    # modes whose means differ by no more than ``tolerance`` do not count
    pooled = {k: v for k, v in pooled.items() if v and v[-1]["mean"] - v[0]["mean"] > tol}
    multimodal = (any(len(v) > 1 and v[-1]["mean"] - v[0]["mean"] > tol
                      for v in modes.values()) or bool(pooled))
    failures = []
    if multimodal:
        failures.append("the draws sit in separate modes")
    for k in monitor:
        if k not in draws or k in settled:
            continue
        n_chains, n_draws = draws[k].shape[:2]
        if n_draws < 4 or not np.isfinite(rhat[k]):
            # too few draws for split R-hat/ESS (nan): say so instead of "R-hat = nan > 1.01"
            failures.append(f"R-hat and ESS of {k} cannot be computed from {n_draws} kept "
                            f"draw(s) in each of {n_chains} chain(s) (at least 4 per chain "
                            "are needed)")
            continue
        if not rhat[k] <= limits["rhat_max"]:
            failures.append(f"R-hat({k}) = {rhat[k]:.3f} > {limits['rhat_max']}")
        for what, value, low in (("bulk", ess_b[k], limits["ess_bulk_min"]),
                                  ("tail", ess_t[k], limits["ess_tail_min"])):
            if not np.isfinite(value):
                failures.append(f"{what} ESS({k}) cannot be computed from these draws")
            elif not value >= low:
                failures.append(f"{what} ESS({k}) = {value:.0f} < {low:.0f}")
    return {
        "rhat": rhat,
        "ess_bulk": ess_b,
        "ess_tail": ess_t,
        "converged": not failures,
        "failures": failures,
        "thresholds": limits,
        "monitored": [k for k in monitor if k in draws],
        "spread": spread,
        "settled": settled,
        "multimodal": multimodal,
        "modes": modes,
        "pooled_modes": pooled,
        "chain_means": {k: a.mean(axis=1).tolist() for k, a in draws.items()},
    }


def _warn(diag: Mapping[str, Any], stacklevel: int) -> None:
    if diag["multimodal"]:
        parts = []
        for k, groups in diag["modes"].items():
            if len(groups) > 1:
                parts.append(f"{k}: " + "; ".join(
                    f"chains {g['chains']} at {g['mean']:.4g} (sd {g['sd']:.3g})"
                    for g in groups))
        for k, groups in diag.get("pooled_modes", {}).items():
            parts.append(f"{k} draws: " + "; ".join(
                f"{g['share']:.0%} at {g['mean']:.4g} (sd {g['sd']:.3g})" for g in groups))
        warnings.warn(
            "MCMC draws sit in separate modes (" + " | ".join(parts) + "); the "
            "posterior is multimodal or the chains have not mixed: run longer or with more "
            "chains and report each mode", ConvergenceWarning, stacklevel=user_stacklevel())
    elif not diag["converged"]:
        warnings.warn(
            "MCMC convergence checks failed: " + "; ".join(diag["failures"]) + " (thresholds "
            f"R-hat <= {diag['thresholds']['rhat_max']}, ESS >= "
            f"{diag['thresholds']['ess_bulk_min']:.0f}); increase the iterations and burn-in "
            "(--iterations, --burn-in)",
            ConvergenceWarning, stacklevel=user_stacklevel())
