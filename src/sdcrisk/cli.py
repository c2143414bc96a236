"""Command-line interface: a thin shell over the public API.

``sdcrisk assess DATA --keys a,b,c ...``  estimate the disclosure risk of a sample file;
``sdcrisk evaluate POPULATION --keys ...``  draw samples, compare estimators with the truth
(``_cli_evaluate``: one sample, or a grid of fractions x seeds);
``sdcrisk report DATA --keys ... --out report.html``  the HTML risk report (``_cli_report``).

Errors of the input or options exit with code 2 and a one-line message (exit 1 for an
unexpected failure); ``--debug`` shows the traceback. ``--fail-above MEASURE=LIMIT`` (assess,
report) exits with code 3, after writing the output, when an estimate exceeds its limit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ._cli_decide import register
from ._cli_evaluate import register as register_evaluate
from ._cli_report import register as register_report
from ._cli_scenarios import add_scenario_arguments, run_scenarios
from ._version import __version__
from .datasets import EXAMPLES
from .estimators import ESTIMATORS, get_estimator
from .exceptions import ParameterError, SdcRiskError
from .table import DEFAULT_MAX_LEVELS, Microdata, tabulate

__all__ = ["main"]


def _keys(text: str | None) -> list[str] | None:
    if text is None:
        return None
    keys = [k.strip() for k in text.split(",") if k.strip()]
    if not keys:
        raise ParameterError("--keys is empty")
    return keys


def _methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    for m in names:
        if m not in ESTIMATORS:
            raise ParameterError(f"unknown method {m!r}; available: {', '.join(ESTIMATORS)}")
    return names


def _levels(path: str | None):
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ParameterError(f"--levels {path!r}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise ParameterError("--levels must be a JSON object {key: [levels...]}")
    return data


def _data_defaults(args) -> None:
    """For ``example:NAME`` fill in the example's documented keys and N when not given."""
    if args.data.startswith("example:"):
        spec = EXAMPLES.get(args.data.split(":", 1)[1])
        if spec is not None:
            if args.keys is None:
                args.keys = ",".join(spec["keys"])
            if (args.population_size is None and args.sampling_fraction is None
                    and args.weights is None):
                args.population_size = spec["population_size"]
    if args.keys is None:
        raise ParameterError("--keys is required (comma-separated key variable names)")


def _common_input(p: argparse.ArgumentParser, *, formats: Sequence[str] = ("table", "json"),
                  ) -> None:
    p.add_argument("--keys", help="comma-separated key variables (what an intruder can match on)")
    p.add_argument("--household", help="household id column")
    p.add_argument("--household-size", type=int, default=None, metavar="S",
                   help="household-level keys: one record per household of S members, keyed "
                   "on every member's --keys (needs --household; spec C.7)")
    p.add_argument("--household-keys", default=None,
                   help="with --household-size: household variables (constant within a "
                   "household), e.g. region")
    p.add_argument("--member-order", default=None,
                   help="with --household-size: member variables that order the members "
                   "(default: --keys in order; LV recommend sex then age)")
    p.add_argument("--missing", choices=["category", "error"], default="category",
                   help="missing key values: own category (default) or error")
    p.add_argument("--max-levels", type=int, default=DEFAULT_MAX_LEVELS,
                   help=f"refuse keys with more distinct values (default {DEFAULT_MAX_LEVELS})")
    p.add_argument("--levels", help="JSON file {key: [levels...]} fixing the categories")
    p.add_argument("--mode", choices=["exact", "sdcmicro", "sdcmicro_legacy", "muargus"],
                   default=None, help="nb: how E[1/F|f] is evaluated (default exact); loglinear: "
                   "sdcmicro adds modRisk's gr1/gr2")
    p.add_argument("--terms", default=None,
                   help="loglinear: independence, all-2-way (default), all-3-way, search, or a "
                   "formula like 'all-2-way + a:b:c'")
    p.add_argument("--iterations", type=int, default=None,
                   help="loglinear: maximum IPF iterations (default 40); MCMC: iterations "
                   "per chain after burn-in")
    p.add_argument("--partition", default=None,
                   help="loglinear: fit within bands of a key, VAR:BANDS or auto:BANDS")
    p.add_argument("--bootstrap", type=int, default=None,
                   help="loglinear: parametric-bootstrap replicates for intervals (default 0)")
    p.add_argument("--prior-weight", type=float, default=None,
                   help="graphical: total weight of the hyper-Dirichlet prior (default 1)")
    p.add_argument("--window", type=float, default=None,
                   help="graphical: Occam's window, keep models within this posterior ratio "
                   "of the best (default 20)")
    p.add_argument("--monte-carlo", type=int, default=None, metavar="DRAWS",
                   help="graphical: Monte Carlo draws instead of the closed forms")
    p.add_argument("--profiles", type=int, default=None,
                   help="mixed-membership: number of extreme profiles K")
    p.add_argument("--structural-zeros", default=None, metavar="FILE",
                   help="hdp/mixed-membership: CSV of impossible key combinations")
    p.add_argument("--chains", type=int, default=None, help="MCMC chains (default 4)")
    p.add_argument("--burn-in", type=int, default=None, help="MCMC burn-in iterations")
    p.add_argument("--tau-mode", choices=["mc", "sampling"], default=None,
                   help="hdp/mixed-membership: tau by Monte Carlo formula or population sampling")
    p.add_argument("--max-global-risk", type=float, default=None,
                   help="target global risk for the record-risk threshold (default 0.01)")
    p.add_argument("--ci-level", type=float, default=None, help="interval level (default 0.95)")
    p.add_argument("--format", choices=list(formats), default=formats[0],
                   help=f"output format: {', '.join(formats)} (default {formats[0]})")
    p.add_argument("--out", help="write the output to this file instead of stdout")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def add_sample_arguments(p: argparse.ArgumentParser, *, method_help: str,
                         default_method: str = "nb") -> None:
    """DATA, N or the sampling fraction, weights and the estimator: read by sample_microdata."""
    p.add_argument("data", help="CSV/Parquet file or example:NAME "
                   f"(examples: {', '.join(EXAMPLES)})")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--population-size", type=float, help="population size N")
    size.add_argument("--sampling-fraction", type=float, help="sampling fraction n/N")
    p.add_argument("--weights", help="survey weight column (N defaults to its sum)")
    p.add_argument("--method", default=default_method, choices=list(ESTIMATORS),
                   help=method_help)


#: figures --fail-above accepts besides the measures of a result
TABLE_FIGURES = {
    "sample_uniques": "records alone in their key combination (f = 1)",
    "k2_violations": "records in key combinations with f < 2",
    "k3_violations": "records in key combinations with f < 3",
    "k5_violations": "records in key combinations with f < 5",
}


def add_fail_above(p: argparse.ArgumentParser) -> None:
    """The repeatable ``--fail-above MEASURE=LIMIT`` option (exit code 3 when exceeded)."""
    p.add_argument("--fail-above", action="append", default=[], metavar="MEASURE=LIMIT",
                   help="exit with code 3 (after writing the output) when the estimate of "
                   "MEASURE exceeds LIMIT, e.g. global_risk=0.01 or tau2=5; MEASURE.upper "
                   "uses the interval's upper bound; also sample_uniques, k3_violations; "
                   "repeatable")


def parse_limits(specs: Sequence[str] | None) -> list[tuple[str, str, float]]:
    """``["tau2=5", "tau1.upper=2"]`` -> ``[("tau2", "estimate", 5.0), ...]``.

    Raises
    ------
    ParameterError
        A spec without ``=``, a limit that is not a number, or a bound other than
        ``estimate``, ``upper`` or ``lower``.
    """
    out = []
    for spec in specs or ():
        name, sep, value = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"--fail-above {spec!r}: use MEASURE=LIMIT, e.g. "
                                 "global_risk=0.01")
        try:
            limit = float(value)
        except ValueError:
            raise ParameterError(f"--fail-above {spec!r}: the limit {value.strip()!r} is not "
                                 "a number") from None
        if limit != limit:
            raise ParameterError(f"--fail-above {spec!r}: the limit is not a number")
        bound = "estimate"
        if "." in name:
            name, bound = name.rsplit(".", 1)
            if bound not in ("estimate", "upper", "lower"):
                raise ParameterError(f"--fail-above {spec!r}: {bound!r} is not a bound; use "
                                     "MEASURE, MEASURE.upper or MEASURE.lower")
        out.append((name, bound, limit))
    return out


def _figure(result, name: str, bound: str):
    if name in TABLE_FIGURES:
        t = result.table
        return (t.sample_uniques if name == "sample_uniques"
                else t.k_anonymity_violations((int(name[1]),))[int(name[1])])
    m = result.measures.get(name)
    if m is None:
        return None
    return getattr(m, bound)


def limit_breaches(results, limits: Sequence[tuple[str, str, float]]) -> list[str]:
    """Messages for every (method, measure) whose figure exceeds its limit.

    Raises
    ------
    ParameterError
        A measure that none of the results gives (naming those that exist).
    """
    out = []
    for name, bound, limit in limits:
        compared = 0
        for label, res in results.items():
            value = _figure(res, name, bound)
            if value is None:
                continue
            compared += 1
            if value > limit:
                what = name if bound == "estimate" else f"{name} ({bound} bound)"
                out.append(f"{what} = {value:.6g} exceeds the limit {limit:g} (method {label})")
        if compared:
            continue
        if any(name in r.measures for r in results.values()):
            raise ParameterError(f"--fail-above {name}: no {bound} of {name} to compare (the "
                                 f"method{'s' if len(results) > 1 else ''} "
                                 f"{', '.join(results)} gave none); choose another measure")
        known = sorted({k for r in results.values() for k in r.measures} | set(TABLE_FIGURES))
        raise ParameterError(f"--fail-above: no result gives {name!r}; available: "
                             f"{', '.join(known)}")
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdcrisk", description="Disclosure risk for categorical microdata.")
    parser.add_argument("--version", action="version", version=f"sdcrisk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser("assess", help="estimate the re-identification risk of a sample")
    add_sample_arguments(a, default_method="auto",
                         method_help="estimator (default auto: the one that validates best "
                         "on sub-samples of the file itself, see docs/auto.md)")
    _common_input(a, formats=("table", "json", "html"))
    add_fail_above(a)
    add_scenario_arguments(a)
    a.add_argument("--out-of-core", action="store_true",
                   help="tabulate the file in two streaming passes without loading it "
                   "(CSV/Parquet larger than memory; see docs/scale.md); the result is the "
                   "in-memory one")
    a.set_defaults(run=_assess)

    register_evaluate(sub)  # evaluate: one sample or a grid (_cli_evaluate)
    # further subcommands register themselves here: each adds a parser with
    # set_defaults(run=handler), handler(args) -> str (the text to print or write)
    register(sub)
    register_report(sub)
    return parser


def _options(args) -> dict:
    return {"mode": args.mode, "max_global_risk": args.max_global_risk,
            "ci_level": args.ci_level, "terms": args.terms, "max_iter": args.iterations,
            "bootstrap": args.bootstrap, "random_state": args.seed,
            "partition": args.partition, "iterations": args.iterations,
            "prior_weight": args.prior_weight, "window": args.window,
            "monte_carlo": args.monte_carlo, "profiles": args.profiles,
            "structural_zeros": args.structural_zeros, "chains": args.chains,
            "burn_in": args.burn_in, "tau_mode": args.tau_mode}


def _person_keys(args, keys: list[str]) -> list[str]:
    """Columns to read: the keys plus, for household-level keys, the household variables."""
    extra = _keys(args.household_keys) if getattr(args, "household_keys", None) else []
    if extra and getattr(args, "household_size", None) is None:
        raise ParameterError("--household-keys needs --household-size")
    return keys + [k for k in extra if k not in keys]


def _to_households(args, md: Microdata, keys: list[str],
                   population_households: float | None = None) -> Microdata:
    """Household-level records when --household-size is given (spec C.7), else ``md``."""
    if getattr(args, "household_size", None) is None:
        return md
    from .household import household_microdata

    if args.household is None:
        raise ParameterError("--household-size needs --household (the household id column)")
    hh_keys = _keys(args.household_keys) if args.household_keys else []
    members = [k for k in keys if k not in hh_keys]
    order = _keys(args.member_order) if args.member_order else None
    return household_microdata(md, members, size=args.household_size,
                               household_keys=hh_keys, order=order,
                               population_households=population_households)


def sample_microdata(args) -> Microdata:
    """The validated sample of an assess-like subcommand (DATA, --keys, --weights, ...)."""
    _data_defaults(args)
    keys = _keys(args.keys)
    md = Microdata.from_source(
        args.data, _person_keys(args, keys), weights=args.weights, household=args.household,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        levels=_levels(args.levels), missing=args.missing, max_levels=args.max_levels)
    return _to_households(args, md, keys)


def _out_of_core_table(args):
    """The CellTable of ``assess --out-of-core``: :func:`sdcrisk._outofcore.tabulate_file`."""
    import dataclasses

    from ._outofcore import tabulate_file

    for opt in ("household_size", "household_keys", "member_order"):
        if getattr(args, opt, None) is not None:
            flag = "--" + opt.replace("_", "-")
            raise ParameterError(f"--out-of-core does not build household-level keys ({flag}): "
                                 "they need each household's members together; drop "
                                 f"--out-of-core or {flag}")
    _data_defaults(args)
    path, source = args.data, None
    if str(path).startswith("example:"):
        from .datasets import example_path

        source, path = path, example_path(path.split(":", 1)[1])
    table = tabulate_file(
        path, _keys(args.keys), weights=args.weights, household=args.household,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        levels=_levels(args.levels), missing=args.missing, max_levels=args.max_levels)
    return table if source is None else dataclasses.replace(table, source=source)


def _where(args) -> str | None:
    """Where the method's units run, when --workers or --scheduler was given (else None)."""
    from .backend import describe_executor

    if args.scheduler is not None:
        return describe_executor(args.scheduler)
    if args.workers is not None:
        return describe_executor("serial" if args.workers == 1 else None)
    return None


def _warm_up_in_background() -> None:
    """Start numba and load the IPF kernel while the file is read (about 1 s of start-up
    that would otherwise come after it). A failure here is ignored: the fit itself reports
    it."""
    import threading

    def run():
        try:
            from .estimators._ipf import warm_up

            warm_up()
        except Exception:  # noqa: BLE001 - the real fit raises it with context
            pass

    threading.Thread(target=run, name="sdcrisk-warm-up", daemon=True).start()


def _assess(args) -> str:
    out_of_core = getattr(args, "out_of_core", False)
    if out_of_core and (args.key_sets is not None or args.all_subsets_up_to is not None):
        raise ParameterError("--out-of-core tabulates one key set; --key-sets and "
                             "--all-subsets-up-to read the file in memory: drop one of them")
    text = run_scenarios(args, _options(args))
    if text is not None:  # --key-sets / --all-subsets-up-to
        return text
    if args.method == "loglinear":
        _warm_up_in_background()
    table = _out_of_core_table(args) if out_of_core else tabulate(sample_microdata(args))
    est = get_estimator(args.method, **_options(args))
    limits = parse_limits(args.fail_above)
    where = _where(args)
    if where is None:  # the method's own default
        result = est.fit(table)
    else:  # MCMC chains, log-linear partitions on these workers / this cluster
        result = est.fit(table, executor=args.scheduler, workers=args.workers)
    args.breaches = limit_breaches({result.method: result}, limits)
    if args.format == "html":
        from .report import build_report

        return build_report(result)
    if args.format == "json":
        d = result.to_dict()
        d["provenance"]["seed"] = args.seed
        if where is not None:
            d["provenance"]["executor"] = where
            if args.workers is not None:
                d["provenance"]["workers"] = args.workers
        er = result.measures.get("expected_reidentifications")
        if er is not None:
            d["expected_reidentifications"] = er.estimate
        return json.dumps(d, indent=2)
    return _result_table(result)


def _fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _result_table(result) -> str:
    t = result.table
    lines = [
        f"sdcrisk {__version__} - method: {result.method}",
        f"records n = {t.n:,}; population N = {t.population_size:,.0f} "
        f"({t.population_size_source}); sampling fraction {t.n / t.population_size:.4g}",
        f"keys: {', '.join(t.keys)}; cell space K = {t.cell_space:,}; observed cells "
        f"{t.n_cells:,}; sample uniques {t.sample_uniques:,}",
        "k-anonymity violations (records in cells with f < k): " + ", ".join(
            f"k={k}: {v:,}" for k, v in t.k_anonymity_violations().items()),
        "",
        f"{'measure':<38}{'estimate':>14}{'lower':>14}{'upper':>14}",
    ]
    for name, m in result.measures.items():
        lines.append(f"{name:<38}{_fmt(m.estimate):>14}{_fmt(m.lower):>14}{_fmt(m.upper):>14}")
    intervals: dict[str, list[str]] = {}
    for name, m in result.measures.items():
        if m.interval:
            intervals.setdefault(m.interval, []).append(name)
    level = f"{result.thresholds.get('ci_level', 0.95):.0%}"
    for kind, names in intervals.items():
        lines.append(f"  intervals ({', '.join(names)}): {level} {kind}")
    lines += _choice_lines(result)
    thr = result.thresholds
    if "record_risk_threshold" in thr:
        value = thr["record_risk_threshold"]
        lines += ["", f"record risk threshold for max global risk {thr['max_global_risk']:g}: "
                  + ("none needed (target already met)" if value is None else f"{value:.6g}")]
    lines += ["", "assumptions:"] + [f"  - {a}" for a in result.assumptions]
    return "\n".join(lines)


def _choice_lines(result) -> list[str]:
    """The validation table and the reason, for a result that chose its method (auto)."""
    reason = result.fitted.get("reason")
    rows = result.diagnostics.get("validation")
    if not reason or not isinstance(rows, list):
        return []
    lines = ["", "method choice (validated on sub-samples of this file; median relative error):",
             f"  {'candidate':<30}{'tau1':>9}{'tau2':>9}{'AUC':>7}{'seconds':>9}"]

    def pct(x):
        return "-" if x is None else f"{100 * x:+.1f}%"

    for r in rows:
        if r.get("status") != "ok":
            lines.append(f"  {r['candidate']:<30} {r.get('status')}")
            continue
        auc = r.get("median_auc")
        lines.append(f"  {r['candidate']:<30}{pct(r.get('median_rel_err_tau1')):>9}"
                     f"{pct(r.get('median_rel_err_tau2')):>9}"
                     f"{'-' if auc is None else f'{auc:.3f}':>7}{r.get('seconds', 0):>9.2f}")
    lines.append("  " + reason)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        text = args.run(args)
        if args.out:
            Path(args.out).write_text(text + "\n", encoding="utf-8")
        else:
            sys.stdout.write(text + "\n")
        breaches = getattr(args, "breaches", None)
        if breaches:
            for line in breaches:
                print(f"sdcrisk: fail-above: {line}", file=sys.stderr)
            return 3
        return 0
    except SdcRiskError as exc:
        if args.debug:
            raise
        print(f"sdcrisk: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line unless --debug
        if args.debug:
            raise
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"sdcrisk: internal error: {type(exc).__name__}: {msg} (rerun with --debug)",
              file=sys.stderr)
        return 1
