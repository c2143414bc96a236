"""``sdcrisk evaluate POPULATION --keys ...``: draw samples, compare estimators with the truth.

One sample - ``--fraction F``, ``--n N`` or ``--sample FILE`` with ``--seed S`` - gives the
truth and each method's estimates. A grid - ``--fractions 0.01,0.05`` and/or
``--seeds 0-9`` - runs every (fraction, seed, method) as one work unit of
:func:`sdcrisk.analyses.grid.evaluate_grid`, in this process, on ``--workers`` local processes or
on a Dask cluster (``--scheduler``), and summarises the errors over the seeds.

Registered by :func:`sdcrisk.cli.build_parser` through :func:`register`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from ..core.result import jsonable
from ..data.table import Microdata
from ..exceptions import ParameterError

__all__ = ["register", "parse_seeds", "parse_fractions", "grid_summaries"]

#: measures a grid summarises (those :func:`sdcrisk.analyses.evaluate.evaluate` compares)
GRID_MEASURES = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta")
_INTEGER_TRUTH = ("n", "sample_uniques", "population_uniques", "tau1")


def register(sub) -> None:
    """Add the ``evaluate`` subcommand to the CLI's subparsers."""
    from ._common import (
        add_executor_arguments,
        add_input_arguments,
        command_help,
        data_argument,
    )

    e = sub.add_parser("evaluate", **command_help(
        "draw a sample from a population and compare estimators with the truth",
        "For a statistician choosing an estimator: draw a sample from a population file "
        "(or take a given one), compute the true measures from the population and compare "
        "each method's estimates, errors, interval coverage and seconds with them. One "
        "sample: --fraction F, --n N or --sample FILE, with --seed S. A grid: --fractions "
        "and/or --seeds, summarised over the seeds.",
        "sdcrisk evaluate EXAMPLE --fraction 0.05 --methods nb,loglinear",
        "sdcrisk evaluate EXAMPLE --fractions 0.01,0.05 --seeds 0-9 --methods nb,loglinear "
        "--format json"))
    e.add_argument("population", type=data_argument,
                   help="the population file, one row per person (CSV, Parquet, Stata, SAS, "
                   "SPSS or example:NAME)")
    how = e.add_mutually_exclusive_group()
    how.add_argument("--fraction", type=float, metavar="F",
                     help="draw a Bernoulli sample: each person in with probability F")
    how.add_argument("--n", type=int, metavar="N",
                     help="draw a simple random sample of N persons")
    how.add_argument("--sample", metavar="FILE",
                     help="use this sample file, whose records come from the population")
    e.add_argument("--methods", default="auto",
                   help="comma-separated estimators (default: auto, as in assess), each "
                   "with options as auto's candidates take them: "
                   "nb,loglinear:terms=search,graphical:prior_weight=50. A method that fails "
                   "on the sample (too small for it, over the memory limit) is shown as "
                   "failed with its reason; the others are still compared")
    g = e.add_argument_group("grids (several fractions and sampling seeds)")
    g.add_argument("--fractions", metavar="F1,F2,...",
                   help="several Bernoulli sampling fractions, e.g. 0.01,0.03,0.05")
    g.add_argument("--seeds", metavar="LIST",
                   help="several sampling seeds: 0,1,2 or a range 0-9, at most 1,000 (each "
                   "row: the sample and the estimators' random_state of 'evaluate --fraction "
                   "F --seed S')")
    add_executor_arguments(
        g, workers="grid: local worker processes (default: all CPUs; 1 = in this process)",
        scheduler="grid: run the units on a Dask cluster, e.g. tcp://host:8786 (the "
        "population file must be readable at the same path on the workers)")
    add_input_arguments(  # N is the population file's size
        e, whole_population=False,
        seed_help="seed of the sample drawn (--fraction, --n) and of the methods' random "
        "numbers (default 0); a grid takes --seeds instead")
    e.set_defaults(run=_evaluate, seed=None)  # None: tells an explicit --seed from --seeds


def _number_list(text: str, option: str) -> list[str]:
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(not p for p in parts):
        raise ParameterError(f"{option} {text!r}: give a comma-separated list without empty "
                             "entries")
    return parts


def parse_fractions(text: str) -> list[float]:
    """``"0.01,0.05"`` -> ``[0.01, 0.05]``; each in (0, 1], none repeated.

    Raises
    ------
    ParameterError
        A value that is not a number, outside (0, 1], or repeated.
    """
    out: list[float] = []
    for part in _number_list(text, "--fractions"):
        try:
            f = float(part)
        except ValueError:
            raise ParameterError(f"--fractions: {part!r} is not a number") from None
        if not 0 < f <= 1:
            raise ParameterError(f"--fractions: {part} must lie in (0, 1]")
        if f in out:
            raise ParameterError(f"--fractions: {part} appears twice")
        out.append(f)
    return out


#: most seeds in one ``--seeds`` grid: each seed is a sample and a fit of every method at
#: every fraction; a range such as 0-100000000 is a slip that would run for days (and was
#: expanded, slowly, before any check)
MAX_SEEDS = 1000


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"``, ``"0-9"`` or a mix such as ``"0-4,10"`` -> seeds in the order given.

    Raises
    ------
    ParameterError
        An entry that is neither a non-negative integer nor a range ``A-B`` with A <= B, a
        seed given twice, or more than :data:`MAX_SEEDS` seeds (counted before expanding).
    """
    spans: list[tuple[int, int]] = []
    for part in _number_list(text, "--seeds"):
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if m is None:
            raise ParameterError(f"--seeds: {part!r} is not a seed; use non-negative integers "
                                 "like 0,1,2 or a range like 0-9")
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else int(m.group(2))
        if hi < lo:
            raise ParameterError(f"--seeds: the range {part!r} is empty; write it low-high, "
                                 f"e.g. {hi}-{lo}")
        spans.append((lo, hi))
    total = sum(hi - lo + 1 for lo, hi in spans)
    if total > MAX_SEEDS:  # before expanding the ranges
        raise ParameterError(f"--seeds {text!r} gives {total:,} seeds: at most {MAX_SEEDS:,} "
                             "(each is a sample and a fit of every method at every fraction); "
                             "give fewer, e.g. 0-99")
    out: list[int] = []
    seen: set[int] = set()
    for lo, hi in spans:
        for s in range(lo, hi + 1):
            if s in seen:
                raise ParameterError(f"--seeds: seed {s} appears twice")
            seen.add(s)
            out.append(s)
    return out


def _grid_spec(args) -> tuple[list[float], list[int]] | None:
    """(fractions, seeds) of a grid, or None for one sample; bad combinations raise."""
    fractions = None if args.fractions is None else parse_fractions(args.fractions)
    seeds = None if args.seeds is None else parse_seeds(args.seeds)
    if fractions is None and seeds is None:
        for opt in ("workers", "scheduler"):
            if getattr(args, opt) is not None:
                raise ParameterError(f"--{opt} applies to grids; add --fractions LIST or "
                                     "--seeds LIST")
        if args.fraction is None and args.n is None and args.sample is None:
            raise ParameterError("give --fraction F, --n N or --sample FILE (one sample), or "
                                 "--fractions/--seeds (a grid)")
        return None
    grid = "--fractions" if fractions is not None else "--seeds"
    if args.sample is not None or args.n is not None:
        other = "--sample" if args.sample is not None else "--n"
        raise ParameterError(f"{grid} draws Bernoulli samples at fractions; {other} gives one "
                             f"fixed sample: drop {other} or {grid}")
    if fractions is not None and args.fraction is not None:
        raise ParameterError("give --fraction F or --fractions LIST, not both")
    if seeds is not None and args.seed is not None:
        raise ParameterError("give --seed S (one sample) or --seeds LIST (a grid), not both")
    if fractions is None:
        if args.fraction is None:
            raise ParameterError("--seeds needs --fraction F or --fractions LIST")
        if not 0 < args.fraction <= 1:
            raise ParameterError(f"--fraction {args.fraction:g} must lie in (0, 1]")
        fractions = [args.fraction]
    if args.household_size is not None:
        raise ParameterError(f"{grid} does not take household-level keys (--household-size); "
                             "evaluate them one --fraction and --seed at a time")
    if args.household is not None:
        raise ParameterError(f"{grid} draws Bernoulli samples of records, --household samples "
                             "whole households: drop --household or evaluate one --fraction "
                             "and --seed at a time")
    return fractions, seeds if seeds is not None else [args.seed or 0]


def _evaluate(args) -> str:
    grid = _grid_spec(args)
    if args.seed is None:
        args.seed = 0
    if grid is not None:
        return _evaluate_grid(args, *grid)
    return _evaluate_one(args)


def _evaluate_one(args) -> str:
    from ..analyses.evaluate import evaluate
    from ..analyses.methods import get_estimator
    from ..analyses.sampling import Bernoulli, HouseholdBernoulli, SimpleRandomSample, draw_sample
    from ._common import (
        method_options,
        parse_keys,
        parse_methods,
        person_keys,
        reading_options,
        sample_of_population,
        to_households,
    )

    keys = parse_keys(args.keys)
    if keys is None:
        raise ParameterError("--keys is required")
    read = person_keys(args, keys)
    specs = split_method_specs(args.methods)
    methods = parse_methods(",".join(dict.fromkeys(c.method for c in specs)))
    options = method_options(args, methods)
    # bad estimator options fail here, before the population is read
    estimators = [(c.label, get_estimator(c.method, **{**options[c.method], **dict(c.options)}))
                  for c in specs]
    pop = Microdata.from_source(args.population, read, household=args.household,
                                **reading_options(args))
    if args.sample is not None:
        sample = sample_of_population(args.sample, read, pop, what=f"--sample {args.sample!r}",
                                      population_path=args.population,
                                      household=args.household)
    elif args.household_size is not None:
        # household-level keys: sample whole households, then one record per household
        if args.fraction is None:
            raise ParameterError("--household-size in evaluate needs --fraction (whole "
                                 "households are sampled) or --sample")
        sample = pop.subset(draw_sample(pop, HouseholdBernoulli(args.fraction), seed=args.seed),
                            population_size=pop.n)
    if args.sample is not None or args.household_size is not None:
        pop_h = to_households(args, pop, keys)
        ev = evaluate(pop_h, estimators,
                      sample=to_households(args, sample, keys, population_households=pop_h.n))
    else:
        if args.fraction is not None:
            design = HouseholdBernoulli(args.fraction) if args.household else Bernoulli(
                args.fraction)
        else:
            design = SimpleRandomSample(args.n)
        ev = evaluate(pop, estimators, design=design, seed=args.seed)
    if args.format == "json":
        return json.dumps(ev.to_dict(), indent=2)
    return _evaluation_table(ev)


def split_method_specs(text: str) -> list:
    """``--methods`` as auto's candidates are written: ``nb,loglinear:terms=search,graphical``
    -> nb, loglinear(terms=search), graphical. An item with ``=`` and no ``:`` continues the
    previous method's options (``loglinear:terms=search,max_models=5``). ``auto`` is kept by
    name (it takes no option string)."""
    from ..analyses.validation import Candidate

    items: list[str] = []
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        if "=" in raw and ":" not in raw and items:
            items[-1] += "," + raw
        else:
            items.append(raw)
    if not items:
        raise ParameterError("--methods is empty; give e.g. nb,loglinear:terms=search")
    from ..analyses.methods import ESTIMATORS

    out = []
    for item in items:
        name = item.partition(":")[0].strip()
        if name not in ESTIMATORS:
            raise ParameterError(f"--methods item {item!r}: unknown method {name!r}; "
                                 f"available: {', '.join(ESTIMATORS)}")
        if name == "auto":
            if ":" in item:
                raise ParameterError("--methods auto takes no options here; run "
                                     "'assess --method auto' with its flags instead")
            out.append(Candidate("auto"))  # not checked: auto is no validation candidate
            continue
        try:
            out.append(Candidate.parse(item))
        except ParameterError as exc:  # name the item as the user wrote it
            raise ParameterError(f"--methods item {item!r}: {exc}") from exc
    return out


def _evaluate_grid(args, fractions: list[float], seeds: list[int]) -> str:
    from ..analyses.grid import evaluate_grid
    from ..analyses.methods import get_estimator
    from ..runtime.executors import describe_executor
    from ._common import method_options, parse_keys, parse_methods, person_keys, reading_options

    keys = parse_keys(args.keys)
    if keys is None:
        raise ParameterError("--keys is required")
    read = person_keys(args, keys)
    specs = split_method_specs(args.methods)
    names = parse_methods(",".join(dict.fromkeys(c.method for c in specs)))
    base = method_options(args, names)
    variants = {c.label: (c.method, {**base[c.method], **dict(c.options)}) for c in specs}
    methods = list(variants)
    for m, opts in variants.values():  # bad estimator options fail here, before any unit
        get_estimator(m, **opts)
    options = reading_options(args)
    name = Path(args.population).name
    in_process = args.scheduler is None and args.workers == 1
    if in_process:
        population = Microdata.from_source(args.population, read, **options)
    else:  # the file travels as its path: each worker process reads it once
        path = args.population
        if not str(path).startswith("example:"):
            path = str(Path(path).resolve())
        population = (path, tuple(read), options)

    # the estimators' random_state is the unit's sampling seed, as in one evaluate run;
    # rows come in grid order: fraction, seed, method
    rows = [_row(r) for r in evaluate_grid(
        {name: population}, fractions, variants, seeds=seeds,
        seed_estimators=True, workers=args.workers, scheduler=args.scheduler)]
    if args.scheduler is not None:
        where = describe_executor(args.scheduler)
    else:
        where = describe_executor("serial" if args.workers == 1 else None)
    out = {
        "population": name, "keys": list(keys), "design": "Bernoulli sampling of records",
        "fractions": fractions, "seeds": seeds, "methods": methods,
        "cell_space": rows[0]["K"] if rows else None,
        "executor": where, "workers": args.workers,
        "summaries": grid_summaries(rows), "rows": rows,
    }
    if args.format == "json":
        return json.dumps(jsonable(out), indent=2)
    return _grid_table(out)


def _row(r: dict) -> dict:
    truth = {k: int(v) if k in _INTEGER_TRUTH else v for k, v in r["truth"].items()}
    return jsonable({**r, "truth": truth})


def grid_summaries(rows: list[dict]) -> list[dict]:
    """Per (fraction, method) over the seeds: mean and median relative error and RMSE.

    For each measure: ``mean_relative_error`` and ``median_relative_error`` over the rows
    whose relative error exists (the truth is non-zero and the method gives the measure),
    ``relative_rmse`` = sqrt(mean(relative error^2)) over those rows, ``rmse`` =
    sqrt(mean((estimate - truth)^2)) over the rows with an estimate, and ``n`` the number of
    relative errors. Also the mean AUC (rows that have one), the mean seconds and
    ``failed``, the rows whose method failed (they have no estimates, so no errors).
    """
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["fraction"], r["method"]), []).append(r)
    out = []
    for (fraction, method), rs in groups.items():
        s: dict = {"fraction": fraction, "method": method, "seeds": len(rs),
                   "failed": sum(1 for r in rs if r.get("error") is not None)}
        for name in GRID_MEASURES:
            rel = np.array([r["relative_errors"][name] for r in rs
                            if r["relative_errors"].get(name) is not None], float)
            diff = np.array([r["estimates"][name] - r["truth"][name] for r in rs
                             if r["estimates"].get(name) is not None
                             and r["truth"].get(name) is not None], float)
            s[name] = {
                "mean_relative_error": float(rel.mean()) if rel.size else None,
                "median_relative_error": float(np.median(rel)) if rel.size else None,
                "relative_rmse": math.sqrt(float(np.mean(rel**2))) if rel.size else None,
                "rmse": math.sqrt(float(np.mean(diff**2))) if diff.size else None,
                "n": int(rel.size),
            }
        auc = [r["auc"] for r in rs if r["auc"] is not None]
        s["mean_auc"] = float(np.mean(auc)) if auc else None
        s["mean_seconds"] = float(np.mean([r["seconds"] for r in rs]))
        out.append(s)
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _seed_text(seeds: list[int]) -> str:
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def _grid_table(g: dict) -> str:
    from ._common import fmt

    k = g["cell_space"]
    lines = [
        f"{g['design']}: fractions {', '.join(f'{f:g}' for f in g['fractions'])} x seeds "
        f"{_seed_text(g['seeds'])}; keys {', '.join(g['keys'])}; "
        f"K = {'-' if k is None else f'{k:,}'}; units: {g['executor']}",
        "",
        "over the seeds: relative error mean / median, RMSE of the estimate",
        f"{'fraction':>9} {'method':<16}{'seeds':>6}{'tau1 mean':>11}{'median':>9}"
        f"{'RMSE':>10}{'tau2 mean':>11}{'median':>9}{'RMSE':>10}{'AUC':>7}{'seconds':>9}",
    ]
    for s in g["summaries"]:
        t1, t2 = s["tau1"], s["tau2"]
        auc = s["mean_auc"]
        lines.append(
            f"{s['fraction']:>9g} {s['method']:<16}{s['seeds']:>6}"
            f"{_pct(t1['mean_relative_error']):>11}{_pct(t1['median_relative_error']):>9}"
            f"{fmt(t1['rmse']):>10}{_pct(t2['mean_relative_error']):>11}"
            f"{_pct(t2['median_relative_error']):>9}{fmt(t2['rmse']):>10}"
            f"{'-' if auc is None else f'{auc:.3f}':>7}{s['mean_seconds']:>9.3f}"
            + (f"  failed on {s['failed']} seed(s)" if s.get("failed") else ""))
    lines += ["", "rows",
              f"{'fraction':>9}{'seed':>6} {'method':<16}{'n':>8}{'SU':>7}{'tau1':>8}"
              f"{'est':>10}{'err':>9}{'tau2':>10}{'est':>10}{'err':>9}{'AUC':>7}{'seconds':>9}"]
    for r in g["rows"]:
        t, e, err, auc = r["truth"], r["estimates"], r["relative_errors"], r["auc"]
        if r.get("error") is not None:
            lines.append(f"{r['fraction']:>9g}{r['seed']:>6} {r['method']:<16}{t['n']:>8,}"
                         f"{t['sample_uniques']:>7,}{t['tau1']:>8,}  failed: "
                         + " ".join(r["error"].split()))
            continue
        lines.append(
            f"{r['fraction']:>9g}{r['seed']:>6} {r['method']:<16}{t['n']:>8,}"
            f"{t['sample_uniques']:>7,}{t['tau1']:>8,}{fmt(e['tau1']):>10}"
            f"{_pct(err['tau1']):>9}{t['tau2']:>10.4g}{fmt(e['tau2']):>10}"
            f"{_pct(err['tau2']):>9}{'-' if auc is None else f'{auc:.3f}':>7}"
            f"{r['seconds']:>9.3f}")
    return "\n".join(lines)


def _evaluation_table(ev) -> str:
    from ._common import fmt

    t = ev.truth
    lines = [
        f"{ev.design}{'' if ev.seed is None else f', seed {ev.seed}'}; keys "
        f"{', '.join(ev.keys)}; K = {ev.cell_space:,}",
        f"truth: n = {int(t['n']):,}, N = {int(t['population_size']):,}, sample uniques "
        f"{int(t['sample_uniques']):,}, tau1 = {t['tau1']:.0f}, tau2 = {t['tau2']:.4g}, "
        f"P(PU|SU) = {t['p_pu_given_su']:.4g}, theta = {t['theta']:.4g}",
        "",
        f"{'method':<16}{'tau1':>10}{'err':>9}{'tau2':>10}{'err':>9}{'theta':>10}"
        f"{'AUC':>7}{'seconds':>9}  interval holds truth (tau1/tau2)",
    ]
    width = max([16, *(len(name) + 1 for name in ev.methods)])
    lines[-1] = f"{'method':<{width}}" + lines[-1][16:]
    for name, m in ev.methods.items():
        if m.error is not None:
            lines.append(f"{name:<{width}}failed: {' '.join(m.error.split())}")
            continue
        e, r = m.estimates, m.relative_errors
        cov = m.covered or {}
        lines.append(
            f"{name:<{width}}{fmt(e['tau1']):>10}{_pct(r['tau1']):>9}{fmt(e['tau2']):>10}"
            f"{_pct(r['tau2']):>9}{fmt(e['theta']):>10}"
            f"{'-' if m.auc is None else f'{m.auc:.3f}':>7}{m.seconds:>9.3f}  "
            + "/".join(_yes(cov.get(k)) for k in ("tau1", "tau2")))
    return "\n".join(lines)


def _yes(x) -> str:
    return "-" if x is None else ("yes" if x else "no")

