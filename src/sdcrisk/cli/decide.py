"""CLI subcommands ``decide`` (Zaslavsky-Horton publish/suppress) and ``recommend``.

``sdcrisk decide --domain-types FILE --alpha A --beta B --l1 exp:S --l0 y``
    the ordered table of domain configurations (the paper's Table 2) and its curve;
``sdcrisk decide DATA --domain VAR --class VAR=VALUE[,VAR=VALUE] --l1 exp:S ...``
    publish/suppress the class cell of each domain of a microdata sample;
``sdcrisk recommend DATA --keys ... --target T``
    suppressions, recodings or both that bring the estimated risk to a target.

Registered by :func:`sdcrisk.cli.build_parser` through :func:`register`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ..data.text import printable
from ..exceptions import InputError, ParameterError
from ._output import atomic_path

__all__ = ["register"]


def register(sub) -> None:
    """Add the ``decide`` and ``recommend`` subparsers (handlers via ``set_defaults(run=)``)."""
    from ._common import (
        add_executor_arguments,
        add_input_arguments,
        add_sample_arguments,
        command_help,
        data_argument,
        number_argument,
    )

    d = sub.add_parser("decide", **command_help(
        "publish or suppress class cells by domain (Zaslavsky-Horton decision rule)",
        "Zaslavsky & Horton's decision rule for tables: for each domain (e.g. a region) of a "
        "sample, publish or suppress the count of a class (--class VAR=VALUE) by comparing "
        "the expected disclosure loss (--l1) with the loss of suppressing it (--l0) under a "
        "beta-binomial model of the class share across domains. With --domain-types and "
        "no data: the ordered table of domain configurations (n, N, share).",
        "sdcrisk decide example:uk_census2011 --domain region --class ethnic_group=4 "
        "--l1 exp:1 --population-size 56075912"))
    d.add_argument("data", nargs="?", type=data_argument,
                   help="the sample file (CSV, Parquet, Stata, SAS, SPSS or example:NAME); omit "
                   "with --domain-types")
    d.add_argument("--domain-types", metavar="FILE",
                   help="CSV of domain types with columns n, N, share: print the ordered "
                   "table of every (n, N, y)")
    d.add_argument("--alpha", type=float, help="beta-binomial alpha (default: ML over domains)")
    d.add_argument("--beta", type=float, help="beta-binomial beta (default: ML over domains)")
    d.add_argument("--l1", required=True, metavar="SPEC",
                   help="(required) disclosure loss of publishing a cell with sample count y "
                   "and population count Y: exp:S = y exp(-Y/S), gamma:A:S = y (1 + Y/(A S))"
                   "^-(A+1), or mixture:p1,p2,... = y sum p exp(-Y p)")
    d.add_argument("--l0", default="y", metavar="SPEC",
                   help="loss of suppressing it: y (its sample count; default), one, Y (its "
                   "population count), n or N (the domain's sample or population size)")
    d.add_argument("--decision-l1", metavar="SPEC",
                   help="order by this disclosure loss instead (sensitivity)")
    d.add_argument("--decision-l0", metavar="SPEC",
                   help="order by this suppression loss instead (sensitivity)")
    d.add_argument("--risk-fraction", type=float, default=None,
                   help="report the loss fraction needed to cut the risk to this fraction "
                   "(default 0.2)")
    d.add_argument("--domain", metavar="VAR", help="domain variable (e.g. geography)")
    d.add_argument("--class", dest="class_definition", metavar="VAR=VALUE[,VAR=VALUE]",
                   help="the class whose count per domain is published or suppressed")
    size = d.add_mutually_exclusive_group()
    size.add_argument("--population-size", type=number_argument, metavar="N",
                      help="population size N (domain sizes n_i N / n)")
    size.add_argument("--sampling-fraction", type=number_argument, metavar="F",
                      help="sampling fraction n/N")
    size.add_argument("--domain-sizes", metavar="FILE",
                      help="CSV with the domain labels (column 'domain' or the domain "
                      "variable) and their population sizes (column 'N')")
    size.add_argument("--population", metavar="FILE",
                      help="population file: exact domain sizes and true Y")
    d.add_argument("--weights", metavar="COLUMN",
                   help="survey weight column (domain sizes from their sums)")
    rule = d.add_mutually_exclusive_group()
    rule.add_argument("--ratio-threshold", type=float, metavar="C",
                      help="publish a cell iff its expected disclosure loss R1 < C x its "
                      "expected suppression loss R0 (default 1)")
    rule.add_argument("--target-risk-fraction", type=float,
                      help="publish in R1/R0 order up to this fraction of the full risk")
    d.add_argument("--max-enumeration", type=int, default=None,
                   help="cut-off: enumerate Y fully when N - n is below this (default 1e6)")
    d.add_argument("--csv", metavar="FILE",
                   help="write the per-domain decisions (or the table) as CSV")
    d.add_argument("--plot", metavar="FILE",
                   help="draw the trade-off curve to this .svg file (or .png, which needs "
                   "matplotlib)")
    d.add_argument("--internal", action="store_true",
                   help="include class counts and risks per domain (disclosive)")
    d.add_argument("--missing", choices=["category", "error"], default="category",
                   help="missing values of the domain and class variables: own category "
                   "(default) or error")
    d.add_argument("--max-levels", type=int, default=None,
                   help="refuse a domain or class variable with more distinct values "
                   "(default: no limit)")
    d.add_argument("--levels", help="JSON file {key: [levels...]} fixing the categories")
    d.add_argument("--format", choices=["table", "json"], default="table",
                   help="output format: table, json (default table)")
    d.add_argument("--out", help="write the output to this file instead of stdout")
    d.add_argument("--debug", action="store_true", help="show tracebacks")
    d.set_defaults(run=_decide)

    r = sub.add_parser("recommend", **command_help(
        "local suppressions or recodings that bring the estimated risk to a target",
        "Rank plans that bring the estimated risk of a sample to --target: local suppression "
        "of key values, merging categories of one key, or a few such merges followed by "
        "local suppression, each re-estimated after every change. Nothing is written; "
        "'sdcrisk protect --target' applies the best plan.",
        "sdcrisk recommend EXAMPLE --population-size 56075912 --method nb --target 0.3"))
    add_sample_arguments(r, method_help="estimator re-fitted after each change (default auto: "
                         "its calibrated combination of five candidates, re-fitted as a "
                         "whole; nb is faster)")
    r.add_argument("--objective", choices=["tau2", "records-above"],
                   help="what --target bounds: the estimated tau2 (default), or the number "
                   "of records whose risk exceeds --risk-threshold")
    r.add_argument("--target", required=True, metavar="[MEASURE=]VALUE",
                   help="the value the objective must reach or go below: a number, or "
                   "MEASURE=VALUE, which sets --objective (tau2=5, as protect --target takes "
                   "it; records-above=20, which protect does not take)")
    r.add_argument("--risk-threshold", type=float,
                   help="record risk threshold for --objective records-above")
    r.add_argument("--actions", default="suppression,recoding,recoding+suppression",
                   help="comma-separated plan kinds: suppression, recoding (one plan per "
                   "key), recoding+suppression (per key: the first merges of its recoding, "
                   "then suppression) (default suppression,recoding,recoding+suppression: "
                   "all three)")
    r.add_argument("--change-keys", help="comma-separated keys that may be changed (default "
                   "all)")
    r.add_argument("--pairs", choices=["auto", "adjacent", "all"], default="auto",
                   help="recoding candidates (default auto: adjacent for numeric levels)")
    r.add_argument("--refit-candidates", type=int, default=1,
                   help="recoding: how many of the best merges by the quick score are "
                   "re-fitted at each step, the lowest re-estimated objective winning "
                   "(default 1)")
    r.add_argument("--max-pattern-size", type=int, default=2,
                   help="suppression: most key values suppressed in one record per step "
                   "(default 2)")
    add_executor_arguments(
        r, workers="local worker processes, one plan each at a time (default: all CPUs from "
        "5,000 records, 1,000 re-fitting auto, else in this process; 1 = in this process)",
        scheduler="search the plans on a Dask cluster, e.g. tcp://host:8786 (needs "
        "sdcrisk[cluster])")
    r.add_argument("--plot", help="draw the objective along each plan to a .svg file (or .png, "
                   "which needs matplotlib)")
    r.add_argument("--internal", action="store_true",
                   help="list the suppressed record indices (disclosive)")
    add_input_arguments(r)
    r.set_defaults(run=_recommend)


# --- decide ---------------------------------------------------------------------------------
def _decide(args) -> str:
    from ..analyses import decision

    if (args.domain_types is None) == (args.data is None):
        raise ParameterError("give either DATA (with --domain and --class) or --domain-types")
    if args.domain_types is not None:
        return _decide_types(args, decision)
    return _decide_microdata(args, decision)


def _prior(args, decision, *, required: bool):
    if (args.alpha is None) != (args.beta is None):
        raise ParameterError("give both --alpha and --beta (or neither)")
    if args.alpha is None:
        if required:
            raise ParameterError("--domain-types needs --alpha and --beta")
        return None
    return decision.BetaBinomialPrior(args.alpha, args.beta)


def _cut_off(args, decision) -> dict:
    # 0 is checked (and refused) like any other value, not read as "the default"
    return {"max_enumeration": decision.DEFAULT_MAX_ENUMERATION
            if args.max_enumeration is None else args.max_enumeration}


def _decide_types(args, decision) -> str:

    from ..report.charts import plot_tradeoff

    for opt in ("domain", "class_definition", "population_size", "sampling_fraction",
                "domain_sizes", "population", "weights", "ratio_threshold",
                "target_risk_fraction"):
        if getattr(args, opt) is not None:
            raise ParameterError(f"--{opt.replace('_', '-')} applies to microdata, not to "
                                 "--domain-types")
    if args.risk_fraction is None:
        args.risk_fraction = 0.2
    types = _read_small_csv(args.domain_types, "--domain-types")
    table = decision.decision_table(
        types, _prior(args, decision, required=True), l1=args.l1, l0=args.l0,
        decision_l1=args.decision_l1, decision_l0=args.decision_l0, **_cut_off(args, decision))
    curve = table.curve
    if args.csv:
        with atomic_path(args.csv) as tmp:
            table.summary().to_csv(tmp, index=False)
    if args.plot:
        with atomic_path(args.plot) as tmp:
            plot_tradeoff(curve, tmp, risk_fraction=args.risk_fraction)
    at = {"risk_fraction": args.risk_fraction,
          "loss_fraction": curve.loss_fraction_at(args.risk_fraction, "linear"),
          "loss_fraction_cutoff": curve.loss_fraction_at(args.risk_fraction, "cutoff")}
    if args.format == "json":
        d = table.to_dict()
        d["at_risk_fraction"] = at
        return json.dumps(d, indent=2)
    return _types_text(table, at)


def _num(x) -> str:
    """Three decimals as in the paper's Table 2, four where three would show zero."""
    if x != x:  # NaN: the paper's dash
        return "-"
    text = f"{x:.3f}"
    if x != 0 and float(text) == 0:
        text = f"{x:.4f}"
    return text


def _types_text(table, at) -> str:
    heads = ["n", "N", "y", "P(n,N)", "P(y|n,N)", "R1", "L0", "R1/L0", "P.R1", "P.L0",
             "cum P.R1", "rem P.L0"]
    lines = [f"Zaslavsky-Horton decision table: alpha={table.prior.alpha:g}, "
             f"beta={table.prior.beta:g}, L1={table.losses['l1']}, L0={table.losses['l0']}"
             + (f"; ordered by {table.losses['decision_l1']} / {table.losses['decision_l0']}"
                if "decision_l1" in table.losses else ""),
             "".join(f"{h:>10}" for h in heads)]
    s = table.summary()
    for row in s.itertuples(index=False):
        vals = [str(row.n), str(row.N), str(row.y), _num(row.share), _num(row.p_y),
                _num(row.R1), f"{row.L0:g}" if float(row.L0).is_integer() else _num(row.L0),
                _num(row.ratio), _num(row.w_R1), _num(row.w_L0),
                _num(row.cum_risk), _num(row.remaining_loss)]
        lines.append("".join(f"{v:>10}" for v in vals))
    lines += ["", f"total risk (publish all) {table.total_risk:.6g}; total loss (suppress all) "
              f"{table.total_loss:.6g}",
              f"loss fraction needed for risk fraction {at['risk_fraction']:g}: "
              f"{at['loss_fraction']:.4f} (linear between cut-offs), "
              f"{at['loss_fraction_cutoff']:.4f} (last cut-off)",
              f"cut-off: {table.cut_off['rule']}"]
    return "\n".join(lines)


def _decide_microdata(args, decision) -> str:
    from ..data.table import Microdata
    from ..report.charts import plot_tradeoff
    from ._common import read_levels, sample_of_population

    if not args.domain or not args.class_definition:
        raise ParameterError("microdata mode needs --domain VAR and --class VAR=VALUE[,...]")
    # options of the decision table of domain types: silently dropped here before
    remedies = {"risk_fraction": "use --target-risk-fraction to publish up to a risk fraction",
                "decision_l1": "give the loss to decide by as --l1",
                "decision_l0": "give the loss to decide by as --l0"}
    for opt, remedy in remedies.items():
        if getattr(args, opt) is not None:
            flag = "--" + opt.replace("_", "-")
            raise ParameterError(f"{flag} {getattr(args, opt)} applies to --domain-types, not "
                                 f"to microdata (DATA with --domain and --class); drop it or "
                                 f"{remedy}")
    definition = decision._class_definition(args.class_definition)
    keys = [args.domain] + [k for k in definition if k != args.domain]
    opts = {"missing": args.missing, "max_levels": args.max_levels}
    population = None
    if args.population:
        population = Microdata.from_source(args.population, keys, levels=read_levels(args.levels),
                                           **opts)
        sample = sample_of_population(  # its messages name --population, not --levels
            args.data, keys, population, what=f"the sample {args.data!r}",
            population_path=args.population, weights=args.weights,
            population_size=population.n, missing=args.missing)
    else:
        sample = Microdata.from_source(
            args.data, keys, weights=args.weights, population_size=args.population_size,
            sampling_fraction=args.sampling_fraction, levels=read_levels(args.levels), **opts)
    if (population is None and args.domain_sizes is None and args.weights is None
            and sample.population_size_source == "assumed_population"):
        raise ParameterError("give the population: --population-size, --sampling-fraction, "
                             "--weights, --domain-sizes or --population")
    sizes = _domain_sizes(args.domain_sizes, args.domain) if args.domain_sizes else None
    table = decision.DomainTable.from_microdata(
        sample, domain=args.domain, class_definition=definition, domain_sizes=sizes,
        population=population)
    result = decision.decide(
        table, l1=args.l1, l0=args.l0, prior=_prior(args, decision, required=False),
        ratio_threshold=args.ratio_threshold, target_risk_fraction=args.target_risk_fraction,
        **_cut_off(args, decision))
    if args.csv:
        with atomic_path(args.csv) as tmp:
            result.to_csv(tmp, internal=args.internal)
    if args.plot:
        with atomic_path(args.plot) as tmp:
            plot_tradeoff(result.curve, tmp, risk_fraction=(
                args.target_risk_fraction if args.target_risk_fraction is not None else None))
    if args.format == "json":
        return result.to_json(internal=args.internal)
    return _decision_text(result, internal=args.internal)


def _read_small_csv(path: str, flag: str, **options):
    """The CSV file of ``flag`` (``--domain-types``, ``--domain-sizes``) as a DataFrame.

    Raises
    ------
    InputError
        The file does not exist, is a directory, is empty or is not readable as CSV.
    """
    import pandas as pd

    file = Path(path)
    if not file.exists():
        raise InputError(f"{flag}: file not found: {path!r}")
    if file.is_dir():
        raise InputError(f"{flag} {path!r} is a directory; give a CSV file")
    try:
        return pd.read_csv(file, **options)
    except pd.errors.EmptyDataError as exc:
        raise InputError(f"{flag} {path!r}: the file is empty; give a CSV file with a header "
                         "line") from exc
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise InputError(f"{flag} {path!r}: not a readable CSV ({printable(str(exc))})"
                         ) from exc


def _domain_sizes(path: str, domain: str) -> dict:
    df = _read_small_csv(path, "--domain-sizes", dtype=str)
    label = "domain" if "domain" in df.columns else domain
    if label not in df.columns or "N" not in df.columns:
        raise InputError(f"{Path(path).name}: needs columns 'domain' (or {domain!r}) and 'N'")
    sizes: dict[str, int] = {}
    lines: dict[str, int] = {}
    for line, (k, v) in enumerate(zip(df[label], df["N"], strict=True), start=2):
        try:
            size = float(v)
        except (TypeError, ValueError):
            size = math.nan
        if not math.isfinite(size):  # 'inf' was an OverflowError (exit 1); 'x', NaN
            raise InputError(f"--domain-sizes {path!r}: line {line}: N={v!r} for domain {k!r} "
                             "is not a finite number; give each domain's population size")
        if str(k) in sizes:  # the last line won, silently
            raise InputError(f"--domain-sizes {path!r}: domain {k!r} is listed on lines "
                             f"{lines[str(k)]} and {line}; give each domain once")
        sizes[str(k)], lines[str(k)] = int(size), line
    return sizes


def _decision_text(result, *, internal: bool) -> str:
    t, tot = result.totals, result.table
    cls = ",".join(f"{k}={v}" for k, v in tot.class_definition.items())
    lines = [
        f"Zaslavsky-Horton decision: domain {tot.domain}, class {cls}",
        f"model: Beta({result.prior.alpha:.6g}, {result.prior.beta:.6g}) "
        f"[{result.prior_source}]; L1 = {result.losses['l1']}, L0 = {result.losses['l0']}",
        f"domain sizes: {tot.sizes_source}",
        f"rule: {result.rule['rule']}",
        f"published {t['published']} of {t['domains']} domains; risk {t['published_risk']:.6g}"
        f" of {t['total_risk']:.6g} ({t['risk_fraction']:.1%}); suppression loss "
        f"{t['suppressed_loss']:.6g} of {t['total_loss']:.6g} ({t['loss_fraction']:.1%})",
        "",
        result.summary(internal=internal).to_string(index=False),
        "",
        f"cut-off: {result.cut_off['rule']}",
    ]
    return "\n".join(lines)


# --- recommend ------------------------------------------------------------------------------
def _recommend_target(spec: str, objective: str | None, risk_threshold: float | None):
    """``--target`` as a RiskTarget: a number (the objective is ``--objective``'s, tau2 by
    default) or MEASURE=VALUE as protect's ``--target`` (the measure is the objective), with
    ``--risk-threshold`` for a records-above target; checked before the file is read, in the
    flags the user typed.

    Raises
    ------
    ParameterError
        A measure other than tau2 or records-above, one that contradicts ``--objective``, a
        value that is not a non-negative finite number, a records-above target without
        ``--risk-threshold`` or a tau2 target with it.
    """
    from ..analyses.recommend import RiskTarget

    text = str(spec).strip()
    name, sep, value = text.partition("=")
    if sep:
        measure = name.strip().replace("_", "-")
        if measure not in ("tau2", "records-above"):
            raise ParameterError(f"--target {text!r}: the measure is tau2 or records-above "
                                 "(e.g. --target tau2=5), or give the value alone with "
                                 "--objective")
        if objective is not None and objective != measure:
            raise ParameterError(f"--target {text!r} names {measure} but --objective is "
                                 f"{objective}: give one of them")
        objective = measure
    else:
        value = text
    objective = objective or "tau2"
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (number >= 0 and math.isfinite(number)):
        raise ParameterError(f"--target {text} must be a non-negative number and finite "
                             f"(the {objective} to reach, e.g. --target 1 or --target "
                             f"{objective}=1)")
    if objective == "records-above" and risk_threshold is None:
        given = f"--target {text!r}" if sep else "--objective records-above"
        raise ParameterError(f"{given} counts records above a risk: give "
                             "that risk with --risk-threshold R (e.g. --risk-threshold 0.1: "
                             "records whose estimated re-identification risk exceeds 0.1)")
    if objective == "tau2" and risk_threshold is not None:
        raise ParameterError(f"--risk-threshold {risk_threshold:g} applies to a records-above "
                             "target (--objective records-above, or --target records-above=N); "
                             "drop it for a tau2 target")
    return RiskTarget(objective=objective.replace("-", "_"), value=number,
                      risk_threshold=risk_threshold)


def _recommend(args) -> str:
    from ..analyses.methods import get_estimator
    from ..analyses.recommend import PARALLEL_FROM, PARALLEL_FROM_AUTO, recommend
    from ..report.charts import plot_recommendations
    from ._common import options_for, parse_keys, sample_microdata

    # the target is checked before the file is read
    target = _recommend_target(args.target, args.objective, args.risk_threshold)
    if not args.actions.replace(",", "").strip():
        raise ParameterError(f"--actions {args.actions!r} names no action; give any of "
                             "suppression, recoding, recoding+suppression (the default: "
                             "suppression,recoding,recoding+suppression)")
    if args.change_keys is not None and not args.change_keys.replace(",", "").strip():
        raise ParameterError(f"--change-keys {args.change_keys!r} names no key; leave it out "
                             "to let every key change")
    md = sample_microdata(args)
    actions = [a.strip() for a in args.actions.split(",") if a.strip()]
    est = get_estimator(args.method, **options_for(args))
    chose = ""
    if args.method == "auto":  # validated rule: validate once, then re-fit the chosen one
        from ..analyses.protect import concrete_estimator
        from ..data.table import tabulate

        auto_est = est
        est, auto_res = concrete_estimator(est, tabulate(md))
        if est is not auto_est:  # the calibrated combination is re-fitted as a whole
            chose = f"auto chose {auto_res.fitted['choice']['candidates'][0]}; "
    workers = args.workers
    if workers is None and args.scheduler is None:  # processes pay off on larger files
        start = PARALLEL_FROM_AUTO if est.name == "auto" else PARALLEL_FROM
        workers = (os.cpu_count() or 1) if md.n >= start else 1
    rec = recommend(md, target, estimator=est,
                    actions=actions,
                    keys=parse_keys(args.change_keys) if args.change_keys else None,
                    pairs=args.pairs, refit_candidates=args.refit_candidates,
                    max_pattern_size=args.max_pattern_size, executor=args.scheduler,
                    workers=workers)
    if args.plot:
        with atomic_path(args.plot) as tmp:
            plot_recommendations(rec, tmp)
    if args.format == "json":
        return rec.to_json(internal=args.internal)
    objective = ("tau2" if target.objective == "tau2" else
                 f"records with estimated risk > {target.risk_threshold:g}")
    lines = [f"recommendations ({chose}{rec.method}): target {target.describe()}; before: "
             f"{rec.objective_before:.6g}",
             "", rec.summary().to_string(index=False),
             "  (reached: the target is met after the plan; records_changed: records with any "
             "key value changed; values_changed: key values changed; cells_changed: key "
             "combinations of the sample holding a changed record; objective_after: "
             f"{objective}, re-estimated after the plan)"]
    for i, p in enumerate(rec.plans, 1):
        groups = "; ".join("{" + ", ".join(str(v) for v in g) + "}" for g in p.merges)
        if p.key is not None and _merges_all(p.merges, md.levels[md.keys.index(p.key)]):
            groups += f" (every category of {p.key} in one: as if {p.key} were not released)"
        suppress = ""
        if p.kind != "recoding":
            per_key = p.to_dict()["suppressed_values_per_key"]
            where = ", ".join(f"{k} {c}" for k, c in per_key.items() if c)
            suppress = (f"suppress {len(p.suppressions)} values"
                        + (f" ({where})" if where else ""))
        if p.kind == "recoding" and p.merges:
            lines.append(f"  {i}. {p.label()}: merge {groups}")
        elif p.kind == "recoding+suppression":
            lines.append(f"  {i}. {p.label()}: merge {groups}; then {suppress}")
        elif p.kind == "suppression":  # the plan protect --target applies when it ranks first
            lines.append(f"  {i}. {p.label()}: {suppress}")
    lines.append("  (greedy search; risk re-estimated after every change)")
    if rec.best is None and rec.plans:
        lines.append(_unreached(rec, args))
    return "\n".join(lines)


def _merges_all(merges, levels) -> bool:
    """Whether a recoding's merges put every category of the key (missing aside) in one."""
    present = [v for v in levels if v is not None]
    return len(merges) == 1 and len(present) > 1 and set(merges[0]) >= set(present)


def _unreached(rec, args) -> str:
    """What to change when no plan reaches the target: the closest plan, and the search's
    limits the user set (or can set)."""
    closest = min(rec.plans, key=lambda p: p.objective_after)
    size = args.max_pattern_size
    every = ["suppression", "recoding", "recoding+suppression"]
    ran = rec.settings.get("actions", every)
    why, tries = "", []
    if any(a.endswith("suppression") for a in ran):
        why = (f" Local suppression stops when suppressing up to {size} key "
               f"value{'s' if size != 1 else ''} of a record at risk in one step pairs it "
               "with no other record.")
        tries.append(f"a larger --max-pattern-size (now {size})")
    left = [a for a in every if a not in ran]
    if left:
        tries.append(f"more actions (--actions; not tried: {', '.join(left)})")
    if args.change_keys:
        tries.append("more keys to change (--change-keys)")
    tries.append("a higher target")
    options = ", ".join(tries[:-1]) + (" or " if len(tries) > 1 else "") + tries[-1]
    return (f"no plan reaches the target: the closest, {closest.label()}, ends at "
            f"{closest.objective_after:.6g}.{why} Try {options}.")

