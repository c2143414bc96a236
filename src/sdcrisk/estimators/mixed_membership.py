"""Mixed-membership risk: MVR (2012) grade of membership and the HDP of Battiston & Rimella.

Spec section E. Both estimators run the shared MCMC driver (:mod:`sdcrisk.runtime.mcmc`) with
several chains and report the posterior of tau1 = E[# sample uniques that are population
unique | parameters] and tau2 (its E[1/F] analogue) over the saved iterations, the record-level
posterior P(F = 1 | f) and E[1/F | f], and the convergence diagnostics. Structural zeros
(impossible key combinations) are handled by data augmentation (spec E.4).
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from ..core.measures import DESCRIPTIONS, Measure
from ..core.result import RiskResult
from ..data.sizes import check_number, check_range
from ..data.structural_zeros import (
    StructuralZeros,
    structural_zeros_of_table,
    structural_zeros_option,
    structural_zeros_param,
)
from ..data.table import CellTable
from ..exceptions import ConvergenceWarning, ParameterError, user_stacklevel
from ..runtime import diagnostics as dg
from ..runtime.mcmc import MCMCRun, Thresholds, sample
from . import _mvr
from ._base import Estimator, check_bool, check_int
from ._mm_model import HDP, HdpParams, MMData
from ._mm_tau import PosteriorMixturePredictive

__all__ = ["HdpRisk", "MixedMembershipRisk"]

_BANK = 200
_TRACE = 1000
#: augmented records per observed one above which a chain is said to have run away
#: (omega > 0.99; only possible with sz_cap above it, the default cap is 100 as BR's code)
RUNAWAY_RATIO = 100.0


def runaway_chains(n_augmented: np.ndarray, n: int, ratio: float = RUNAWAY_RATIO
                   ) -> list[int]:
    """Chains whose number of augmented records N_0 ever exceeded ``ratio`` times n.

    With structural zeros the model's mass omega on them is weakly identified and drifts
    upwards (see :class:`HdpRisk` Notes); N_0 ~ NegBin(n, 1 - omega) grows with it (on NY
    with structural zeros, n = 10,000, without a cap both the ``sequential`` and the
    ``marginal`` samplers went from omega = 0.90 to 1 - 1e-12 and N_0 = 1e16 within
    3,500-4,000 iterations). ``n_augmented`` is the (chains, draws) trace of N_0. With
    ``ratio`` just below ``sz_cap`` it lists the chains that reached the cap.
    """
    a = np.asarray(n_augmented, dtype=float)
    return [int(c) for c in np.flatnonzero((a > ratio * n).any(axis=1))]


def _check_choice(name: str, value, options: Sequence[str]) -> None:
    if value not in options:
        raise ParameterError(f"{name}={value!r}; use one of {list(options)}")


def _check_prior(name: str, value) -> None:
    ok = (isinstance(value, tuple | list) and len(value) == 2
          and all(isinstance(v, int | float) and v > 0 and np.isfinite(v) for v in value))
    if not ok:
        raise ParameterError(f"{name}={value!r} must be a pair (shape, rate) of positive numbers")


#: most MCMC iterations per chain (``iterations``, ``burn_in``, ``max_iterations``): more is
#: a slip that would run for months
MAX_ITERATIONS = 10_000_000
#: chains at most: each runs the whole sampler (10,000 chains of 10 iterations ran for
#: minutes); four give R-hat
MAX_CHAINS = 1_000
#: largest ``tolerance`` (records): split-chain means of tau1 or tau2 that differ by more
#: than one person are not "practically equal" (tolerance=1e6 turned every check off)
MAX_TOLERANCE = 1.0


@dataclasses.dataclass(frozen=True, kw_only=True)
class _MixedMembershipBase(Estimator):
    """Settings shared by the mixed-membership estimators (MCMC run, tau, structural zeros)."""

    chains: int = 4
    iterations: int | None = None
    burn_in: int = 1000
    thin: int = 10
    block: int = 500
    max_iterations: int = 10_000
    tau_mode: Literal["mc", "sampling"] = "mc"
    mc_draws: int = 500
    random_state: int = 0
    structural_zeros: Any = None
    sz_method: Literal["approximate", "augment", "exact"] = "approximate"
    sz_free_counts: Literal["uniform", "indicator", "joint"] = "uniform"
    sz_memberships: Literal["prior", "conditional"] = "prior"
    sz_cap: float = 100.0
    compat_bnpdr: bool = False
    rhat_max: float = 1.01
    ess_per_chain: float = 100.0
    mode_gap: float = 3.0
    tolerance: float = 0.1
    n_jobs: int | None = None
    progress: bool | None = None

    def _validate(self) -> None:
        check_int("chains", self.chains, 1)
        if self.chains > MAX_CHAINS:
            raise ParameterError(f"chains={self.chains} is too many: at most {MAX_CHAINS:,} "
                                 "(each chain runs the whole sampler; 4 give R-hat); give e.g. "
                                 "4 or 8")
        if self.iterations is not None:
            check_int("iterations", self.iterations, 1)
        check_int("burn_in", self.burn_in, 0)
        check_int("thin", self.thin, 1)
        check_int("block", self.block, 1)
        check_int("max_iterations", self.max_iterations, 1)
        for name in ("iterations", "burn_in", "max_iterations"):
            value = getattr(self, name)
            if value is not None and value > MAX_ITERATIONS:
                raise ParameterError(
                    f"{name}={value} is too many: at most {MAX_ITERATIONS:,} iterations per "
                    "chain (a slip of the exponent would run for months; these models mix "
                    "in thousands); give e.g. 20,000")
        check_int("mc_draws", self.mc_draws, 1)
        check_int("random_state", self.random_state, 0)
        check_bool("compat_bnpdr", self.compat_bnpdr)
        check_bool("progress", self.progress, optional=True)
        if self.n_jobs is not None:
            check_int("n_jobs", self.n_jobs, 1)
        first = self.block if self.iterations is None else self.iterations
        if first < self.thin:
            raise ParameterError(f"{'block' if self.iterations is None else 'iterations'}="
                                 f"{first} with thin={self.thin} keeps no draw (one draw is "
                                 f"kept every {self.thin} iterations); use at least "
                                 f"{self.thin} iterations")
        _check_choice("tau_mode", self.tau_mode, ("mc", "sampling"))
        _check_choice("sz_method", self.sz_method, ("approximate", "augment", "exact"))
        _check_choice("sz_free_counts", self.sz_free_counts, ("uniform", "indicator", "joint"))
        _check_choice("sz_memberships", self.sz_memberships, ("prior", "conditional"))
        cap = self.sz_cap
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not cap > 0:
            raise ParameterError(f"sz_cap={cap!r} must be a positive number of augmented "
                                 "records per observed one (BR: 100; float('inf'): no cap)")
        Thresholds(self.rhat_max, self.ess_per_chain, self.mode_gap,
                   self.tolerance)  # validates them
        check_range("tolerance", self.tolerance, 0, MAX_TOLERANCE,
                    what="records: tau1 or tau2 whose split-chain means agree to within it "
                    "pass without R-hat and ESS; e.g. 0.1, 0 turns the rule off")
        object.__setattr__(self, "structural_zeros",
                           structural_zeros_option(self.structural_zeros))

    def get_params(self) -> dict[str, Any]:
        out = super().get_params()
        out["structural_zeros"] = structural_zeros_param(out["structural_zeros"])
        return out

    def memory_estimate(self, table: CellTable) -> int:
        """Bytes of the chains' states, the Monte Carlo draws and the per-cell sums.

        Per chain: allocations, memberships (n x (components + spare capacity)) and the
        concentrations; per saved draw nothing is kept beyond per-cell running sums and a
        bank of 200 draws of the cells' predictive means.
        """
        n, cells = int(table.n), int(table.n_cells)
        J = len(table.keys)
        D = sum(len(lv) for lv in table.levels)
        comps = getattr(self, "profiles", getattr(self, "k_init", 10)) + 64
        per_chain = 8 * (n * (2 * J + comps + 4) + comps * D * 3)
        draws = 8 * self.mc_draws * comps * D * (3 if self.structural_zeros is not None else 1)
        cell = 8 * cells * (_BANK + 24)
        return self.chains * per_chain + min(self.chains, os.cpu_count() or 1) * draws + cell

    def check_table(self, table: CellTable) -> None:
        structural_zeros_of_table(self.structural_zeros, table)  # records in a zero

    # --- shared machinery -----------------------------------------------------------------
    def _prepare(self, table: CellTable) -> tuple[MMData, StructuralZeros | None]:
        sz = structural_zeros_of_table(self.structural_zeros, table)
        if self.tau_mode == "sampling" and table.population_size - table.n > 5e7:
            raise ParameterError(
                f"tau_mode='sampling' would generate {table.population_size - table.n:,.0f} "
                "records per saved draw; use tau_mode='mc'")
        return MMData.from_table(table, sz), sz

    def _run(self, kernel, data: MMData, params, monitor: tuple[str, ...]) -> MCMCRun:
        return sample(kernel, data, params, chains=self.chains, burn_in=self.burn_in,
                      iterations=self.iterations, thin=self.thin, seed=self.random_state,
                      monitor=monitor, modes_of=("tau1",),
                      thresholds=Thresholds(self.rhat_max, self.ess_per_chain, self.mode_gap,
                                            self.tolerance),
                      bank_size=_BANK, progress=self.progress, n_jobs=self.n_jobs,
                      block=self.block, max_iterations=self.max_iterations, stacklevel=4)

    def _result(self, table: CellTable, data: MMData, run: MCMCRun, sz,
                fitted: dict, assumptions: tuple[str, ...], law: str) -> RiskResult:
        m = run.means
        pred = PosteriorMixturePredictive(
            data.f, p0=m["p0"], inv=m["inv"], inv2=m["inv2"], mean_=m["mean"],
            second=m["second"], bank=run.bank["bank"],
            bank_kind="counts" if self.tau_mode == "sampling" else "poisson",
            unobserved_prob_one=None, law_name=law)
        posterior = {k: dg.summarize(run.draws[k], level=self.ci_level)
                     for k in run.draws}
        d = run.diagnostics
        mcmc = {"chains": self.chains, "iterations": run.settings["iterations"],
                "burn_in": self.burn_in, "thin": self.thin,
                "draws_per_chain": run.settings["draws_per_chain"],
                "adaptive": self.iterations is None,
                "max_iterations": self.max_iterations if self.iterations is None else None,
                "rhat": d["rhat"], "ess_bulk": d["ess_bulk"], "ess_tail": d["ess_tail"],
                "converged": d["converged"], "failures": d["failures"],
                "thresholds": d["thresholds"], "monitored": d["monitored"],
                "spread": d["spread"], "settled": d["settled"],
                "multimodal": d["multimodal"], "modes": d["modes"],
                "pooled_modes": d["pooled_modes"],
                "chain_means": d["chain_means"],
                "step_info": {k: v.tolist() for k, v in run.info.items()},
                "sampling_seconds": d["seconds"]}
        fitted = {**fitted, "posterior": posterior,
                  "traces": run.traces(_TRACE)}
        if sz is not None:
            fitted["structural_zeros"] = sz.to_dict()
            aug = run.draws.get("n_augmented")
            ran = runaway_chains(aug, table.n) if aug is not None else []
            mcmc["runaway_chains"] = ran
            # chains whose N_0 reached the cap: their omega is held by sz_cap, not the data
            mcmc["capped_chains"] = ([] if aug is None or not np.isfinite(self.sz_cap) else
                                     runaway_chains(aug, table.n, self.sz_cap * (1 - 1e-12)))
            if ran:
                warnings.warn(
                    f"structural zeros: in chains {ran} the augmented records exceeded "
                    f"{RUNAWAY_RATIO:g} x n (largest N_0 = {float(aug.max()):.3g} for n = "
                    f"{table.n:,}): the model's mass on the structural zeros ran away "
                    "towards 1 and the tau estimates of these chains are not usable; treat "
                    "the result as unconverged (a known limitation of the augmentation, see "
                    "HdpRisk Notes)", ConvergenceWarning, stacklevel=user_stacklevel())
        res = self._predictive_result(table, pred, fitted=fitted, assumptions=assumptions,
                                      diagnostics={"mcmc": mcmc}, seed=self.random_state)
        measures = dict(res.measures)
        kind = (f"posterior {self.ci_level:.0%} equal-tailed interval of E[tau | parameters] "
                f"over {self.chains} x {run.settings['draws_per_chain']} MCMC draws")
        n1 = table.sample_uniques
        for name in ("tau1", "tau2"):
            s = posterior[name]
            measures[name] = Measure(name, s["mean"], s["lower"], s["upper"], self.ci_level,
                                     kind, DESCRIPTIONS[name] + f" (posterior sd {s['sd']:.4g})")
        if n1:
            s = posterior["tau1"]
            measures["p_pu_given_su"] = Measure(
                "p_pu_given_su", s["mean"] / n1, s["lower"] / n1, s["upper"] / n1,
                self.ci_level, kind, DESCRIPTIONS["p_pu_given_su"])
        thresholds = {**res.thresholds, "mcmc_convergence": d["thresholds"]}
        return dataclasses.replace(res, measures=measures, thresholds=thresholds)

    def _tau_assumptions(self, sz) -> tuple[str, ...]:
        out = ["equal-probability sampling: given the parameters the N - n non-sampled "
               "records are i.i.d. from the model; survey weights are not used"]
        if self.tau_mode == "mc":
            out.append(f"tau by the Monte Carlo formula (BR App. B) with M = {self.mc_draws} "
                       "membership draws per saved iteration; f >= 2 cells use the Poisson "
                       "law with the same P(U = 0)")
        else:
            out.append("tau by generating the N - n non-sampled records at each saved "
                       "iteration (population sampling, MVR 2012)")
        if sz is not None:
            members = ("drawn given their cell" if self.sz_method == "exact"
                       or self.sz_memberships == "conditional"
                       else "drawn from their prior (BR, spec H.1.7)")
            out.append(f"{len(sz)} disjoint structural-zero conditions ({sz.covered_cells():,} "
                       f"cells) by data augmentation ({self.sz_method}); P(U = 0) = "
                       "(1 - p)^((N - n)/(1 - omega)) (BR eq 11); augmented memberships "
                       f"{members}; at most {self.sz_cap:g} n augmented records")
        return tuple(out)


@dataclasses.dataclass(frozen=True, kw_only=True)
class HdpRisk(_MixedMembershipBase):
    """Hierarchical-Dirichlet-process mixed-membership risk (Battiston & Rimella 2024).

    A tuning-free version of the grade-of-membership model: the number of extreme profiles
    is unbounded and estimated with the other parameters by MCMC (spec E.2).

    Parameters
    ----------
    chains : int
        MCMC chains (default 4), each from its own random initialisation.
    iterations : int, optional
        Iterations per chain after burn-in. Default ``None``: run in blocks of ``block``
        iterations until tau1 and tau2 pass the convergence checks (R-hat <= ``rhat_max``,
        bulk and tail ESS >= ``ess_per_chain`` x chains, chains in one mode; or settled to
        ``tolerance``), at most ``max_iterations``; the run length is then set by the
        diagnostics.
    burn_in, thin : int
        Iterations discarded at the start of each chain (default 1000); every ``thin``-th
        later iteration (default 10) is saved and used for tau.
    block, max_iterations : int
        Block length and cap of the adaptive run (defaults 500 and 10,000). ``iterations``,
        ``burn_in`` and ``max_iterations`` are at most 10,000,000.
    tau_mode : {"mc", "sampling"}
        tau by BR's Monte Carlo formula (App. B, default) or by generating the non-sampled
        population at each saved draw (slow: N - n records per draw).
    mc_draws : int
        Membership draws M per Monte Carlo expectation (BR: 500).
    random_state : int
        Seed of the chains (``SeedSequence(random_state).spawn``).
    structural_zeros : path, StructuralZeros or sequence, optional
        Impossible key combinations: a CSV of marginal conditions (key names as columns,
        ``*`` or empty = free), a :class:`~sdcrisk.data.structural_zeros.StructuralZeros`, or
        conditions as in :meth:`StructuralZeros.from_tuples`. Made disjoint automatically.
    sz_method : {"approximate", "augment", "exact"}
        Augmented statistics by BR App. C's Monte Carlo expectations (default), by
        simulating the augmented records (BR section 4.1 step 9; slower), or ``exact``:
        records drawn from the unrestricted model until n are admissible, the others being
        the augmented records (N_0 ~ NegBin(n, 1 - omega) and the records' memberships
        drawn given their cell, not from the prior; cost proportional to n + N_0, about
        2.5 microseconds per record, 0.1-0.3 s per sweep on NY n = 5,000). For the HDP
        ``exact`` is an exact Gibbs step for the augmented records given beta, theta and
        alpha_0: their concentrations come from the prior Gamma(a, b) (not the
        moment-matched law used for tau), an allocation to the remainder instantiates a
        component as the allocation sweeps do (BR's App. C folds it into beta_0 with a
        uniform profile), and with the default ``sz_tables`` their table counts use
        alpha beta_k. The other steps are then ordinary HDP steps on the observed plus
        augmented records, so the chain targets the posterior given the truncated sample
        and block moves are on (``block_moves``). The cost: omega is weakly identified
        there and wanders up towards 1 (NY n = 1,000: 0.90 to 0.986 in 4,000 iterations,
        tau1 unchanged at 9-14), and N_0 ~ n omega / (1 - omega) with it, up to ``sz_cap``.
        It mixes far better per CPU second (NY n = 5,000, ``sz_cap=20``: R-hat of tau1 /
        tau2 1.010 / 1.011, bulk ESS 553 / 601 after 4 x 2,000 iterations, 209 CPU s), but
        the exact posterior puts tau1 above BR's figures and the truth: 12.5 +- 1.7 and
        71 +- 9 at n = 1,000 / 5,000 (truth 11 / 55; the default gives 11.6 and 55.3), and at
        n = 10,000 (truth 88; default 96) it does not settle: with the other defaults the four
        chains climbed together for 4 x 3,500 iterations (running means of omega 0.89 to
        0.95, of tau1 134 to 155), each block costing more as N_0 grew (1,760 CPU s in all;
        repeated with the corrected block moves: the same climb; benchmarks/RESULTS.md, HDP
        section). So it is not the default.
    sz_free_counts : {"uniform", "indicator", "joint"}
        App. C weights of a free variable's categories (spec H.1.4): 1/d_j as BR's code
        (default), 1 as the paper's text, or the model's joint expectation.
    sz_memberships : {"prior", "conditional"}
        App. C expectations over the memberships of an augmented record drawn from their
        prior (BR, spec H.1.7; default) or given that its cell is in the condition
        (``conditional``: the M draws reweighted by P(x in c | pi), self-normalised
        importance sampling). With ``sz_free_counts="joint"`` the expected counts are then
        the model's E[counts | x in c].
    sz_cap : float
        At most ``sz_cap`` x n augmented records per iteration (default 100, as BR's code;
        ``float('inf')``: no cap). The truncated likelihood hardly constrains the model's
        mass omega on the structural zeros; the cap bounds any drift of omega (see Notes).
    sz_tables : {"top", "individual"}, optional
        CRP concentration of the augmented records' table counts (BR App. C eq 12, or the
        simulated records' tables): alpha_0 beta_k (``top``, BR's code) or the record's own
        alpha beta_k (``individual``, as TJBB06 for every group, the model's). Default
        ``None``: ``individual`` with ``sz_method="exact"``, ``top`` otherwise. The observed
        records' tables use alpha_i beta_k either way (unless ``compat_bnpdr``). With
        ``individual`` the model's mass omega on the structural zeros drifts upwards (see
        Notes); with ``top`` it stays put, at the price of a target that is not the
        model's posterior.
    concentration : {"multiple", "single"}
        One concentration alpha_i per individual (BR) or a common one.
    prior_alpha0, prior_alpha : (shape, rate)
        Gamma priors of alpha_0 and of the alpha_i (BR: (2, 1) both).
    k_init : int
        Components at initialisation (default 10; BR's code: 100, or 50 with structural
        zeros).
    init : {"partition", "bnpdr"}
        ``partition`` (default): every record is put wholly in one of ``k_init`` random
        groups and theta, beta, pi are drawn from their conditionals given that allocation,
        so the remainder beta_0 starts near its equilibrium size. ``bnpdr``: beta and every
        pi_i from Dir(1) over ``k_init`` + 1 entries and theta from its prior (BR's code);
        then the remainder starts at 1/(k_init + 1) and the first sweeps create hundreds of
        components (461 at n = 10,000 with structural zeros and k_init = 10).
    new_alpha : {"moment", "prior"}
        Law of the concentration of a new individual (spec H.1.5): Gamma moment-matched to the
        current alpha_i (BR's code, default) or the prior.
    allocation : {"marginal", "collapsed", "sequential", "fast"}
        Step 1 of the sampler. ``marginal`` (default): z_ij from its conditional with both
        pi_i and theta integrated out, P(z_ij = k) proportional to
        (n_ik^-ij + alpha_i beta_k) (c_k(x_ij)^-ij + 1) / (c_kj.^-ij + d_j) and P(new) to
        alpha_i beta_0 / d_j (TJBB06 section 5.3; theta is then drawn given z in step 5);
        ``collapsed``: pi_i integrated out, theta kept; ``sequential``: BR's allocations
        given pi_i (spec E.2 step 1, exact version), followed by step 4 (pi); ``fast``: BR's
        vectorised rounds that ignore the likelihood when reassigning new components (spec
        H.1.6; an approximation). The first three leave the same posterior invariant; the
        two integrated ones have no pi step (a sweep costs 35-40% of a ``sequential`` one)
        and move between configurations of the profiles far more readily (see Notes).
    block_moves : bool, optional
        After each ``marginal`` allocation sweep, a Gibbs step for the component of every
        block of a record's items that share one (blocks of two or more), among that
        component and those the record's other items do not use: a record moves between
        profiles in one step instead of item by item through mixed allocations of low
        probability. Keeps the posterior (each record's partition of its items into blocks
        is unchanged). Default ``None``: on with ``allocation="marginal"`` and either no
        structural zeros or the exact augmentation (``sz_method="exact"`` with its
        ``individual`` tables); it needs that allocation. A block move is a Gibbs step for
        the observed allocations given the augmented records, the same conditional as the
        allocation sweep, so it is as valid as the sweep under any augmentation; with BR's
        approximate App. C the chain as a whole has no exact target, and better mixing
        shows that target's bias (below). A block may also open a new component (its weight
        from the remainder's stick-breaking split) or leave one empty, as single items do in
        the sweep; the first version of the move could not open one and biased the
        posterior towards fewer components (fixed 2026-11-24; Geweke's joint-distribution
        test in tests/test_hdp_geweke.py). Costs about 70% of a sweep; on NY clean
        n = 10,000 the default run (seed 11) converged after 4 x 2,000 iterations in 68 s
        (R-hat of tau1 1.003, bulk ESS 533; tau1 50.6, truth 53) where it had not without
        them (1.055 and 50 after 4 x 10,000). The figures for block moves with structural
        zeros below predate the fix. With
        structural zeros the augmentation (BR App. C) is an approximation, so the chain has
        no exact target, and block moves shift it: NY n = 5,000 gave tau1 65.3 +- 6.0 with
        them against 55.3 +- 2.7 without (truth 55) at twice the run time, and NY n = 10,000
        chain means 107.6-114.4 after 4 x (1,000 + 3,000) iterations, still rising, against
        95.4-97.0 without (truth 88; R-hat of tau1 / tau2 1.20 / 1.16), omega's chain
        means 0.953-0.977 against 0.903-0.906 (they speed up omega's upward drift, see
        Notes): they are off there
        unless asked for. Each move is valid given the augmentation, but the App. C chain is
        a composition of conditionals that belong to no joint law, so its limit depends on
        how fast the other steps move: faster allocations let App. C's feedback pull the
        profiles further towards its own fixed point.
    compat_bnpdr : bool
        Reproduce BR's code where it departs from the HDP (spec H.1.1): table counts with
        concentration alpha_0 beta_k and the step order 1-2-3-4-5-6. For the code's full
        behaviour also set ``allocation="fast"`` (BR's step 1).
    rhat_max, ess_per_chain, mode_gap : float
        Convergence thresholds (see :class:`sdcrisk.runtime.mcmc.Thresholds`).
    tolerance : float
        Records (default 0.1): tau1 or tau2 whose split-chain means all agree to within
        ``tolerance`` is *settled* and passes without R-hat and ESS (it still needs
        ``ess_per_chain`` draws per chain). Rank-normalised R-hat and ESS are scale-free: a
        risk that is practically 0 in every draw (1e-60 to 0.5 records) mixes slowly at
        that scale and would fail them up to ``max_iterations``. 0 turns the rule off; at
        most 1 (one person).
    n_jobs : int, optional
        Chains run in this many threads (default: one per chain, up to the number of CPUs);
        results do not depend on it.
    progress : bool, optional
        Progress bar (default: when stderr is a terminal).
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    beta ~ GEM(alpha_0); pi_i | beta ~ DP(alpha_i, beta); z_ij ~ pi_i;
    x_ij | z_ij = k ~ Cat(theta_kj); theta_kj ~ Dir(1); alpha_0 ~ Gamma(a_0, b_0),
    alpha_i ~ Gamma(a, b). Sampler: the direct-assignment Gibbs steps of spec E.2 (by
    default with pi_i integrated out of step 1, see ``allocation``) in compiled code. At
    each saved iteration, with p(x) the predictive probability of a
    new record's cell (BR eq 10, by Monte Carlo), tau1 = sum over sample uniques of
    (1 - p(x))^(N - n) (BR eq 9; exponent (N - n)/(1 - omega) with structural zeros,
    eq 11) and tau2 = sum of (1 - (1 - p)^(E+1)) / ((E + 1) p). Reported: their posterior
    mean and equal-tailed interval, record-level P(F = 1 | f) and E[1/F | f], R-hat and
    ESS for tau1, tau2 (which decide the verdict) and the number of components, and a
    warning when chains settle in different modes. No sdcMicro/mu-Argus equivalent.

    Structural zeros: the observed records are a truncated sample, and their likelihood
    prod p(x_i) / (1 - omega) hardly constrains the model's mass omega on the structural
    zeros. The augmented records (N_0 ~ NegBin(n, 1 - omega), about n omega / (1 - omega),
    9 n at omega = 0.9) outnumber the observed ones, and their table counts outnumber the
    observed tables in the update of beta. With the augmented tables counted with each
    record's own concentration (``sz_tables="individual"``) omega drifts upwards (with
    App. C every profile moves mass onto the structural zeros together, not one "ghost"
    component): on NY with structural zeros (n = 5,000, one chain, seed 3) from 0.90 to 0.986 in
    4,000 iterations with BR's App. C, to 1 - 1e-12 (N_0 = 1e16) by 3,500 with the
    ``fast`` allocation, to 0.994 in 1,500 with ``sz_memberships="conditional"`` and
    joint counts, from 0.90 to 0.955 in 2,100 with ``sz_method="exact"``; tau1 rises
    with it (55 to 72 at n = 5,000; 90 to 140-640 at n = 10,000). With alpha_0 beta_k
    (``top``, BR's code) omega stayed at 0.900-0.908 for 4,000 iterations with every
    allocation sampler and tau1 at 50-60 (truth 55); the default run (4 chains x 10,000
    iterations) gave 55.3 +- 2.7, R-hat 1.005, omega 0.908. With ``sz_method="exact"``
    omega still wanders (0.915 to 0.948 and back to 0.930 in 2,500 iterations, ``top``)
    through components whose profiles lie almost only in the structural zeros, which
    leaves the admissible cells and tau1 (50-65) nearly unchanged. ``sz_cap`` (BR's code: 100 n)
    bounds N_0 in any case; chains that reach it are listed in
    ``diagnostics["mcmc"]["capped_chains"]``, chains above ``RUNAWAY_RATIO`` x n (only
    possible with a larger cap) in ``runaway_chains`` with a ConvergenceWarning.

    Convergence with structural zeros: the default (App. C) run on NY n = 10,000 does not
    pass its verdict by the 10,000-iteration cap, and the slow quantity is omega itself.
    omega moves in a random walk with a weak pull (one chain: integrated autocorrelation
    time about 1,000 iterations; the four chains of the default run sit at 0.902-0.907 for
    thousands of iterations, R-hat of omega 1.17-1.51, bulk ESS 8-17), and tau2 follows it
    (about 750 records per unit of omega, correlation 0.45 over the draws), so tau2's
    R-hat stays at 1.04-1.11 while tau1's reaches 1.01-1.02. Discarding the first half of the
    draws does not help (the chains keep their omega levels); neither do block moves (above),
    four App. C refreshes with a profile draw per sweep (omega's spread grows with its
    speed: tau2 R-hat 1.37 after 4 x (1,000 + 1,000) iterations at 2.2 times the cost) or
    ten times as many membership draws in App. C (omega's step-to-step sd unchanged).
    Nor does a longer run: continued to 25,000 iterations, two of the four chains' omega
    climbed from 14,000 iterations on (one averaged about 0.96 over its last 7,500; the
    pooled 95% interval reached 0.989, the ``sz_cap`` of 100 n is 0.990), tau1 and tau2
    with it (R-hat 1.18 / 1.28 at 25,000): ``sz_tables="top"`` slows the
    upward drift of omega but does not stop it, and the default's tau1 (about 96) is a
    metastable state that the 10,000-iteration cap does not leave.
    ``diagnostics["mcmc"]`` reports omega's R-hat, ESS and chain means with those of tau1
    and tau2 (benchmarks/RESULTS.md, HDP section, issue 20 item 4).

    Mixing: tau1 depends on the profiles of small components, which the ``sequential``
    sampler reorganises only every few thousand iterations (on NY clean n = 1,000 its tau1
    trace moved between levels 3.4 and 4.2 with an autocorrelation time of about 4,000
    iterations). On NY clean (4 chains, the same seed and length) ``marginal`` and
    ``collapsed`` gave a bulk ESS of tau1 of 98 and 184 against 20 for ``sequential``
    (n = 1,000, 20,000 iterations) and 95 and 42 against 17 (n = 10,000, 4,000
    iterations), at 38-45% of its CPU time per sweep (benchmarks/RESULTS.md). What still
    held ``marginal`` back at n = 10,000 (R-hat 1.03-1.10 after 4 x 10,000 iterations, one
    chain 2.6 records above the others for 30,000) was a handful of sample uniques whose
    records sat wholly in one small profile in one chain and were spread over several in
    another (P(F = 1) 0.57 against 0.06 for one cell); the block moves (``block_moves``)
    move such records between profiles in one step. A split-merge move (Dahl's sequential
    allocation, beta integrated out) was tried and accepted none of 4,000 proposals at
    n = 10,000: a split of 20,000-30,000 items, each a single categorical value, is almost
    never a good one.

    References
    ----------
    Battiston, M. & Rimella, L. (2024). Disclosure risk assessment with Bayesian
    non-parametric hierarchical modelling. arXiv:2408.12521.
    Teh, Y. W., Jordan, M. I., Beal, M. J. & Blei, D. M. (2006). Hierarchical Dirichlet
    processes. JASA 101, 1566-1581.
    Manrique-Vallier, D. & Reiter, J. P. (2014). Bayesian estimation of discrete multivariate
    latent structure models with structural zeros. JCGS 23, 1061-1079.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, HdpRisk
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex",
    ...                            population_size=56_075_912)
    >>> small = md.subset(range(500), population_size=56_075_912)
    >>> est = HdpRisk(chains=2, iterations=20, burn_in=10, thin=2, mc_draws=50)
    >>> res = est.fit(tabulate(small))  # doctest: +SKIP
    >>> sorted(res.diagnostics["mcmc"]["rhat"])  # doctest: +SKIP
    ['alpha0', 'components', 'tau1', 'tau2']
    """

    name: ClassVar[str] = "hdp"
    memory_options: ClassVar[tuple[str, ...]] = ("chains", "mc_draws", "k_init")
    concentration: Literal["multiple", "single"] = "multiple"
    prior_alpha0: tuple[float, float] = (2.0, 1.0)
    prior_alpha: tuple[float, float] = (2.0, 1.0)
    k_init: int = 10
    init: Literal["partition", "bnpdr"] = "partition"
    new_alpha: Literal["moment", "prior"] = "moment"
    allocation: Literal["marginal", "collapsed", "sequential", "fast"] = "marginal"
    sz_tables: Literal["top", "individual"] | None = None
    block_moves: bool | None = None

    def _validate(self) -> None:
        super()._validate()
        if self.sz_tables is not None:
            _check_choice("sz_tables", self.sz_tables, ("top", "individual"))
        if self.block_moves is not None and not isinstance(self.block_moves, bool):
            raise ParameterError(f"block_moves={self.block_moves!r}; use True, False or None")
        if self.block_moves and self.allocation != "marginal":
            raise ParameterError("block_moves needs allocation='marginal'")
        _check_choice("concentration", self.concentration, ("multiple", "single"))
        _check_choice("new_alpha", self.new_alpha, ("moment", "prior"))
        _check_choice("init", self.init, ("partition", "bnpdr"))
        _check_choice("allocation", self.allocation,
                      ("marginal", "collapsed", "sequential", "fast"))
        _check_prior("prior_alpha0", self.prior_alpha0)
        _check_prior("prior_alpha", self.prior_alpha)
        check_int("k_init", self.k_init, 1)

    def _fit(self, table: CellTable) -> RiskResult:
        data, sz = self._prepare(table)
        tables = self.sz_tables or ("individual" if self.sz_method == "exact" else "top")
        exact = sz is None or (self.sz_method == "exact" and tables == "individual"
                               and not self.compat_bnpdr)
        params = HdpParams(a0=float(self.prior_alpha0[0]), b0=float(self.prior_alpha0[1]),
                           a=float(self.prior_alpha[0]), b=float(self.prior_alpha[1]),
                           concentration=self.concentration, compat=self.compat_bnpdr,
                           allocation=self.allocation, k_init=self.k_init, init=self.init,
                           new_alpha=self.new_alpha, mc_draws=self.mc_draws,
                           tau_mode=self.tau_mode, sz_method=self.sz_method,
                           sz_free=self.sz_free_counts, sz_memberships=self.sz_memberships,
                           sz_cap=float(self.sz_cap), sz_tables=tables,
                           block_moves=(self.allocation == "marginal" and exact
                                        if self.block_moves is None else self.block_moves))
        run = self._run(HDP, data, params, ("tau1", "tau2"))
        comp = run.draws["components"]
        fitted = {"components_mean": float(comp.mean()),
                  "components_range": [int(comp.min()), int(comp.max())],
                  "alpha0_mean": float(run.draws["alpha0"].mean())}
        assumptions = (
            "HDP mixed-membership model (Battiston & Rimella 2024): every record has its own "
            "mixture of an unbounded number of extreme profiles; records are exchangeable "
            "given the parameters",
            f"priors alpha_0 ~ Gamma{tuple(self.prior_alpha0)}, alpha_i ~ "
            f"Gamma{tuple(self.prior_alpha)} (shape, rate); theta_kj ~ Dir(1)",
            *self._tau_assumptions(sz),
        )
        if self.compat_bnpdr:
            assumptions += ("compat_bnpdr: table counts with concentration alpha_0 beta_k and "
                            "BR's step order (reproduces their code, not the standard HDP)",)
        return self._result(table, data, run, sz, fitted, assumptions,
                            "posterior mixture over MCMC draws of Bin(N - n, p(x)) [HDP]")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MixedMembershipRisk(_MixedMembershipBase):
    """Parametric mixed-membership (grade of membership) risk (Manrique-Vallier & Reiter 2012).

    Parameters
    ----------
    profiles : int
        Number K of extreme profiles (default 10). Risk estimates depend on K; BR's
        :class:`HdpRisk` removes the choice.
    prior_alpha0 : (shape, rate)
        Gamma prior of alpha_0 (BR's code: (2, 1)).
    mh_step : float, optional
        Step size sigma of the log-normal random walk on gamma = alpha_0 xi (default: BR's
        value for K, spec E.1).
    compat_bnpdr : bool
        Use BR's acceptance ratio without the Jacobian alpha_0^-(K-1) (spec H.1.2).
    chains, iterations, burn_in, thin, tau_mode, mc_draws, random_state, structural_zeros,
    sz_method, sz_free_counts, sz_memberships, sz_cap, rhat_max, ess_per_chain, mode_gap,
    tolerance, n_jobs, progress, ci_level, max_global_risk : as in :class:`HdpRisk`.

    Notes
    -----
    x_ij | z_ij = k ~ Cat(lambda_kj), z_ij ~ Cat(g_i), g_i ~ Dir(alpha_0 xi), xi ~ Dir(1_K),
    alpha_0 ~ Gamma(a_0, b_0), lambda_kj ~ Dir(1) (BR eq 7). Gibbs steps for z, lambda, g and
    a Metropolis-Hastings step for gamma; tau1 and tau2 as in :class:`HdpRisk` with
    p(x) = E_g[prod_j sum_k g_k lambda_kj(x_j)]. With structural zeros the augmented records
    update lambda only. No sdcMicro/mu-Argus equivalent.

    References
    ----------
    Manrique-Vallier, D. & Reiter, J. P. (2012). Estimating identification disclosure risk
    using mixed membership models. JASA 107, 1385-1394.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, MixedMembershipRisk
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex,age_band",
    ...                            population_size=56_075_912)
    >>> est = MixedMembershipRisk(profiles=3, chains=2, iterations=20, burn_in=10, thin=2)
    >>> est.profiles, est.get_params()["chains"]
    (3, 2)
    >>> res = est.fit(tabulate(md))  # doctest: +SKIP
    """

    name: ClassVar[str] = "mixed-membership"
    memory_options: ClassVar[tuple[str, ...]] = ("chains", "mc_draws", "profiles")
    profiles: int = 10
    prior_alpha0: tuple[float, float] = (2.0, 1.0)
    mh_step: float | None = None

    def _validate(self) -> None:
        super()._validate()
        check_int("profiles", self.profiles, 1)
        _check_prior("prior_alpha0", self.prior_alpha0)
        step = None if self.mh_step is None else check_number("mh_step", self.mh_step)
        if step is not None and not (step > 0 and math.isfinite(step)):  # 10**30: TypeError
            raise ParameterError(f"mh_step={self.mh_step} must be a positive number")

    def _fit(self, table: CellTable) -> RiskResult:
        data, sz = self._prepare(table)
        step = self.mh_step if self.mh_step is not None else _mvr.default_step(self.profiles)
        params = _mvr.MvrParams(profiles=self.profiles, a0=float(self.prior_alpha0[0]),
                                b0=float(self.prior_alpha0[1]), step=step,
                                jacobian=not self.compat_bnpdr, mc_draws=self.mc_draws,
                                tau_mode=self.tau_mode, sz_method=self.sz_method,
                                sz_free=self.sz_free_counts,
                                sz_memberships=self.sz_memberships,
                                sz_cap=float(self.sz_cap))
        run = self._run(_mvr.MVR, data, params, ("tau1", "tau2"))
        acc = run.info.get("accepted", np.array([np.nan]))
        fitted = {"profiles": self.profiles, "mh_step": step,
                  "mh_acceptance": float(np.mean(acc)),
                  "alpha0_mean": float(run.draws["alpha0"].mean())}
        assumptions = (
            f"grade-of-membership model with K = {self.profiles} extreme profiles "
            "(Manrique-Vallier & Reiter 2012); records exchangeable given the parameters",
            f"priors alpha_0 ~ Gamma{tuple(self.prior_alpha0)} (shape, rate), xi ~ Dir(1), "
            "lambda_kj ~ Dir(1)",
            *self._tau_assumptions(sz),
        )
        if self.compat_bnpdr:
            assumptions += ("compat_bnpdr: MH ratio without the Jacobian alpha_0^-(K-1), as "
                            "BR's code",)
        return self._result(table, data, run, sz, fitted, assumptions,
                            f"posterior mixture over MCMC draws of Bin(N - n, p(x)) "
                            f"[grade of membership, K={self.profiles}]")
