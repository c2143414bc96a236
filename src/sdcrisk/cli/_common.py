"""What the subcommands share: input arguments, key and level parsing, the sample's Microdata,
``--fail-above`` limits and number formatting."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..analyses.methods import ESTIMATORS
from ..data.datasets import EXAMPLES
from ..data.table import DEFAULT_MAX_LEVELS, Microdata
from ..data.text import utf8_text
from ..estimators import options_of
from ..exceptions import ParameterError


def parse_keys(text: str | None) -> list[str] | None:
    if text is None:
        return None
    keys = [k.strip() for k in text.split(",") if k.strip()]
    if not keys:
        raise ParameterError("--keys is empty")
    return keys


def parse_methods(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise ParameterError("--methods is empty: give one or more method names, e.g. "
                             f"--methods nb,loglinear (available: {', '.join(ESTIMATORS)})")
    for m in names:
        if m not in ESTIMATORS and m.partition(":")[0].strip() in ESTIMATORS:
            # evaluate's NAME:OPTION=VALUE spelling, read here as an unknown method name
            raise ParameterError(f"--methods item {m!r}: this command takes method names "
                                 "only; set a method's options with its flags (e.g. --terms "
                                 "for loglinear, --chains for hdp)")
        if m not in ESTIMATORS:
            raise ParameterError(f"unknown method {m!r}; available: {', '.join(ESTIMATORS)}")
    return names


def read_levels(path: str | None):
    if path is None:
        return None
    try:
        data = json.loads(utf8_text(Path(path).read_bytes(), f"--levels {path!r}"))
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise ParameterError(f"--levels {path!r}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise ParameterError("--levels must be a JSON object {key: [levels...]}")
    return data


NO_POPULATION_SIZE = (
    "the population size is unknown: give --population-size N, --sampling-fraction F, "
    "--weights COLUMN (N = their sum) or --population FILE; or --whole-population if this "
    "file is the whole population (every sample unique is then a population unique)")


def _population_options(args) -> tuple[bool, list[str]]:
    whole = getattr(args, "whole_population", False)
    given = [flag for flag, attr in (("--population-size", "population_size"),
                                     ("--sampling-fraction", "sampling_fraction"),
                                     ("--weights", "weights"), ("--population", "population"))
             if getattr(args, attr, None) is not None]
    if whole and given:
        raise ParameterError(f"--whole-population says N = n; {given[0]} gives another N: "
                             "drop one of them")
    return whole, given


def require_population_size(args) -> None:
    """Refuse (ParameterError) when nothing gives N and --whole-population is not set; the
    bundled examples carry their N. For paths that do not call :func:`data_defaults`."""
    whole, given = _population_options(args)
    if not whole and not given and not str(args.data).startswith("example:"):
        raise ParameterError(NO_POPULATION_SIZE)


def data_defaults(args) -> None:
    """For ``example:NAME`` fill in the example's documented keys and N when not given; then
    refuse when nothing says how large the population is (unless --whole-population).

    Raises
    ------
    ParameterError
        No --keys; no N, sampling fraction, weights or population and no
        --whole-population; --whole-population together with one of them.
    """
    whole, given = _population_options(args)
    if args.data.startswith("example:"):
        spec = EXAMPLES.get(args.data.split(":", 1)[1])
        if spec is not None:
            if args.keys is None:
                args.keys = ",".join(spec["keys"])
            if not given and not whole:
                args.population_size = spec["population_size"]
                given = ["--population-size"]
    declared = _muargus_defaults(args)
    if args.keys is None:
        raise ParameterError("--keys is required (comma-separated key variable names)")
    if not given and not whole:
        raise ParameterError(NO_POPULATION_SIZE + declared)


def _muargus_defaults(args) -> str:
    """mu-Argus data (``FILE.rda``): without --keys, the variables the .rda marks identifying
    (``<IDLEVEL>`` 1 or more) are the keys, said in a note on stderr. Returns a hint naming
    the weight variable the .rda declares (for the message when N is unknown), or ""."""
    import sys

    from ..data.io import named_file

    if named_file(args.data) != "muargus":
        return ""
    from ..data.muargus import read_metadata

    meta = read_metadata(args.data)
    if args.keys is None:
        if not meta.keys:
            raise ParameterError(f"--keys is required: {meta.path.name} marks no variable "
                                 "identifying (<IDLEVEL> 1 or more)")
        args.keys = ",".join(meta.keys)
        extra = meta.describe()
        print(f"sdcrisk: note: keys from {meta.path.name}: {', '.join(meta.keys)} (its "
              "variables with <IDLEVEL> 1 or more; --keys names others)"
              + (f"; it also declares {extra}" if extra else ""), file=sys.stderr)
    if meta.weight and getattr(args, "weights", None) is None:
        return f" ({meta.path.name} declares the weight variable {meta.weight}: --weights " \
               f"{meta.weight})"
    return ""


#: what a data argument may be, for the help texts
FILE_KINDS = ("CSV (also gzip/bz2/zstd), Parquet, Excel .xlsx[::SHEET], Stata .dta, SAS "
              ".sas7bdat/.xpt, SPSS .sav, mu-Argus .rda (with its .asc), "
              "duckdb:FILE.db::TABLE, or example:NAME")

#: the keys of the packaged example in the commands' help examples
EXAMPLE = "example:uk_census2011 --keys region,sex,age_band,marital_status,ethnic_group"


def command_help(summary: str, description: str, *examples: str) -> dict:
    """``add_parser`` keywords of a subcommand: ``summary`` for ``sdcrisk --help``, the
    ``description`` (wrapped) at the top of its own ``--help`` and ``examples`` (command lines,
    kept as written; ``EXAMPLE`` in them is the packaged sample and its keys) at the end."""
    import textwrap

    lines = ["examples:"]
    for ex in examples:  # long lines continue with a shell backslash before an option
        parts = ex.replace("EXAMPLE", EXAMPLE).split(" --")
        line = "  " + parts[0]
        for part in parts[1:]:
            if len(line) + len(part) + 3 > 76:
                lines.append(line + " \\")
                line = "      --" + part
            else:
                line += " --" + part
        lines.append(line)
    return {"help": summary, "formatter_class": argparse.RawDescriptionHelpFormatter,
            "description": "\n\n".join(textwrap.fill(p, 79) for p in description.split("\n\n")),
            "epilog": "\n".join(lines) if examples else None}


def add_executor_arguments(group, *, workers: str, scheduler: str) -> None:
    """``--workers N`` and ``--scheduler ADDRESS``: where a command's work units run (the
    help texts say which units and the default)."""
    group.add_argument("--workers", type=int, default=None, metavar="N", help=workers)
    group.add_argument("--scheduler", default=None, metavar="ADDRESS", help=scheduler)


def add_input_arguments(p: argparse.ArgumentParser, *, formats: Sequence[str] = ("table", "json"),
                        whole_population: bool = True, seed_help: str | None = None) -> None:
    k = p.add_argument_group("key variables, households and missing values")
    k.add_argument("--keys", help="comma-separated key variables (what an intruder can match on)")
    k.add_argument("--household", help="household id column")
    k.add_argument("--household-size", type=int, default=None, metavar="S",
                   help="household-level keys: one record per household of S members, keyed "
                   "on every member's --keys (needs --household; Longhurst & Vickers, section 4)")
    k.add_argument("--household-keys", default=None,
                   help="with --household-size: household variables (constant within a "
                   "household), e.g. region")
    k.add_argument("--member-order", default=None,
                   help="with --household-size: member variables that order the members "
                   "(default: --keys in order; Longhurst & Vickers recommend sex then age)")
    k.add_argument("--missing", choices=["category", "error", "wildcard"],
                   default="category",
                   help="missing key values: own category (default), error, or wildcard "
                   "(matches every category, as sdcMicro's freqCalc; only nb --mode sdcmicro "
                   "estimates with it)")
    k.add_argument("--wildcard-alpha", type=float, default=1.0, metavar="A",
                   help="--missing wildcard: how much a matching record with missing values "
                   "counts, in [0, 1] (sdcMicro's alpha; default 1)")
    k.add_argument("--max-levels", type=int, default=DEFAULT_MAX_LEVELS,
                   help=f"refuse keys with more distinct values (default {DEFAULT_MAX_LEVELS})")
    k.add_argument("--levels", metavar="FILE",
                   help="JSON file {key: [levels...]} fixing the categories")
    add_method_options(p)
    add_risk_settings(p)
    if whole_population:
        p.add_argument("--whole-population", action="store_true",
                       help="the file is the whole population (N = n): without this, "
                       "--population-size, --sampling-fraction or --weights is required")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar on stderr (it is also off when stderr is not a "
                   "terminal)")
    p.add_argument("--format", choices=list(formats), default=formats[0],
                   help=f"output format: {', '.join(formats)} (default {formats[0]})")
    p.add_argument("--out", help="write the output to this file instead of stdout")
    p.add_argument("--seed", type=int, default=0, help=seed_help or (
        "random seed of the methods that draw random numbers (MCMC, bootstrap, auto's "
        "validation; default 0): the same seed gives the same figures"))
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def add_risk_settings(p: argparse.ArgumentParser) -> None:
    """``--max-global-risk`` and ``--ci-level``: every method's ``max_global_risk`` and
    ``ci_level`` (through :data:`METHOD_FLAGS`), for the commands that print a method's
    intervals and record-risk threshold (assess, evaluate, report, protect)."""
    p.add_argument("--max-global-risk", type=float, default=None,
                   help="target global risk for the record-risk threshold (default 0.01)")
    p.add_argument("--ci-level", type=float, default=None, help="interval level (default 0.95)")


def add_method_options(p: argparse.ArgumentParser) -> None:
    """The per-method options (``METHOD_FLAGS``): each names the methods that take it, and
    one that no chosen method takes is refused (:func:`method_options`)."""
    m = p.add_argument_group("method options (each names its methods; refused when no "
                             "method chosen takes it)")
    m.add_argument("--mode", choices=["exact", "sdcmicro", "sdcmicro_legacy", "muargus"],
                   default=None, help="nb: how E[1/F|f] is evaluated (default exact); loglinear: "
                   "sdcmicro adds modRisk's gr1/gr2")
    m.add_argument("--terms", default=None,
                   help="loglinear: search (default), independence, all-2-way, all-3-way, or a "
                   "formula like 'all-2-way + a:b:c'")
    m.add_argument("--iterations", type=int, default=None,
                   help="loglinear: maximum IPF iterations (default 40); latent-class: maximum EM "
                   "iterations (default 300); MCMC: iterations per chain after burn-in "
                   "(default: adaptive, up to 10,000)")
    m.add_argument("--partition", default=None,
                   help="loglinear: fit within bands of a key, VAR:BANDS or auto:BANDS")
    m.add_argument("--bootstrap", type=int, default=None,
                   help="loglinear: parametric-bootstrap replicates for intervals (default 0); "
                   "latent-class: Bayesian-bootstrap replicates (default 16); at most 10,000")
    m.add_argument("--prior-weight", type=float, default=None,
                   help="graphical: total weight of the hyper-Dirichlet prior (default 1)")
    m.add_argument("--window", type=float, default=None,
                   help="graphical: Occam's window, keep models within this posterior ratio "
                   "of the best (default 20)")
    m.add_argument("--monte-carlo", type=int, default=None, metavar="DRAWS",
                   help="graphical: Monte Carlo draws instead of the closed forms")
    m.add_argument("--max-visited", type=int, default=None, metavar="MODELS",
                   help="graphical: stop Occam's window search after scoring this many models "
                   "(default 500,000; reached only when a small sample has many keys)")
    m.add_argument("--profiles", type=int, default=None,
                   help="mixed-membership: number of extreme profiles K (default 10)")
    m.add_argument("--structural-zeros", default=None, metavar="FILE",
                   help="hdp/mixed-membership/loglinear: CSV of impossible key "
                   "combinations (conditions; key names as columns, * = free)")
    m.add_argument("--chains", type=int, default=None, help="MCMC chains (default 4)")
    m.add_argument("--burn-in", type=int, default=None,
                   help="MCMC burn-in iterations (default 1000)")
    m.add_argument("--tau-mode", choices=["mc", "sampling"], default=None,
                   help="hdp/mixed-membership: tau by Monte Carlo formula (default mc) or "
                   "population sampling")
    m.add_argument("--dependence", default=None,
                   choices=["mutual_information_corrected", "mutual_information",
                            "independence"],
                   help="copula: how the pairwise correlations are matched (default "
                   "mutual_information_corrected)")
    m.add_argument("--order", default=None, choices=["mca", "levels", "frequency"],
                   help="copula: ordering of each key's categories on the latent axis "
                   "(default mca)")
    m.add_argument("--points", type=int, default=None,
                   help="copula: quasi-Monte-Carlo lattice points per cell (default 256, at "
                   "most 65,536)")
    m.add_argument("--classes", type=_int_or_rule, default=None,
                   help="latent-class: number of latent classes, or the rule choosing it: "
                   "heldout (default), bic, aic, average")


def data_argument(text: str) -> str:
    """The argparse ``type`` of a DATA (or POPULATION) argument: refuses an empty path and an
    unknown ``example:NAME`` before any work, so that neither reaches a reader (an empty
    path would be read as the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the path is empty; give a CSV, Parquet, Stata, SAS or SPSS file, or "
            f"example:NAME (examples: {', '.join(EXAMPLES)})")
    if text.startswith("example:") and text.split(":", 1)[1] not in EXAMPLES:
        raise argparse.ArgumentTypeError(
            f"unknown example {text.split(':', 1)[1]!r}; available: "
            f"{', '.join('example:' + name for name in EXAMPLES)}")
    return text


def number_argument(text: str) -> float:
    """The argparse ``type`` of --population-size and --sampling-fraction: a number as Python
    reads it; '1,000,000' and '5%' (argparse's bare 'invalid float value') refused with the
    way to write them."""
    try:
        return float(text)
    except ValueError:
        pass
    t = text.strip()
    if t.endswith("%"):
        hint = "write a fraction as a number without '%', e.g. 0.05 for 5%"
    elif "," in t or " " in t or "'" in t:
        hint = "write the number without separators, e.g. 1000000 or 1e6"
    else:
        hint = "give a number, e.g. 1000000, 1e6 or 0.05"
    raise argparse.ArgumentTypeError(f"invalid float value: {text!r}; {hint}")


def _int_or_rule(text: str) -> int | str:
    """An integer option value, or a rule name (``--classes 4`` or ``--classes bic``)."""
    return int(text) if text.strip().lstrip("-").isdigit() else text


def add_sample_arguments(p: argparse.ArgumentParser, *, method_help: str,
                         default_method: str = "auto") -> None:
    """DATA, N or the sampling fraction, weights and the estimator: read by sample_microdata."""
    p.add_argument("data", type=data_argument, help=f"the sample file: {FILE_KINDS} "
                   f"(examples: {', '.join(EXAMPLES)})")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--population-size", type=number_argument, metavar="N",
                      help="population size N (the file is a sample of N records)")
    size.add_argument("--sampling-fraction", type=number_argument, metavar="F",
                      help="sampling fraction n/N (N = n / F)")
    p.add_argument("--weights", metavar="COLUMN",
                   help="survey weight column (N defaults to its sum)")
    p.add_argument("--method", default=default_method, choices=list(ESTIMATORS),
                   help=method_help)


TABLE_FIGURES = {
    "sample_uniques": "records alone in their key combination (f = 1)",
    "k2_violations": "records in key combinations with f < 2",
    "k3_violations": "records in key combinations with f < 3",
    "k5_violations": "records in key combinations with f < 5",
}


def add_fail_above(p: argparse.ArgumentParser, *, verdict: bool = False) -> None:
    """The repeatable ``--fail-above MEASURE=LIMIT`` option (exit code 3 when exceeded);
    ``verdict``: the command's page has a verdict that checks the same limits."""
    p.add_argument("--fail-above", action="append", default=[], metavar="MEASURE=LIMIT",
                   help="exit with code 3 (after writing the output) when the estimate of "
                   "MEASURE exceeds LIMIT, e.g. global_risk=0.01 or tau2=5; MEASURE.upper "
                   "uses the interval's upper bound; also sample_uniques, k3_violations; "
                   "repeatable" + ("; the page's verdict checks the same limits (every "
                                   "method; with --protected, the protected file). Without "
                                   "it the verdict checks the default max global risk "
                                   "(--max-global-risk, 0.01) and the exit code is 0"
                                   if verdict else ""))


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
            hint = ("; give one limit per --fail-above, repeating the option (--fail-above "
                    "tau2=5 --fail-above global_risk=0.01)" if "=" in value else
                    "; write it with a decimal point, e.g. 0.01" if "," in value else "")
            raise ParameterError(f"--fail-above {spec!r}: the limit {value.strip()!r} is not "
                                 f"a number{hint}") from None
        from ..report.verdict import check_limit, split_limit_name  # lazy, as below

        check_limit(limit, f"--fail-above {spec!r}")
        out.append((*split_limit_name(name, f"--fail-above {spec!r}"), limit))
    return out


@dataclass(frozen=True)
class Outcome:
    """What a command prints (or writes to --out), and the --fail-above breaches that make
    it exit with status 3 once the output is written. Handlers return an Outcome or just
    the text."""

    text: str
    breaches: tuple[str, ...] = ()


def limit_breaches(results, limits: Sequence[tuple[str, str, float]], *,
                   where: str | None = None) -> list[str]:
    """Messages for every (method, measure) whose figure exceeds its limit (``where`` names
    the file checked, e.g. ``protected file 'p.csv'``).

    Raises
    ------
    ParameterError
        A measure that none of the results gives (naming those that exist).
    """
    from ..report.verdict import compared_digits, figure, passes

    out = []
    for name, bound, limit in limits:
        compared = 0
        for label, res in results.items():
            value = figure(res, name, bound)
            if value is None:
                continue
            compared += 1
            if not passes(value, limit):  # the report's verdict makes the same check
                what = name if bound == "estimate" else f"{name} ({bound} bound)"
                d = compared_digits(value, limit, 6)  # digits that tell them apart
                out.append(f"{what} = {value:.{d}g} exceeds the limit {limit:.{d}g} (method "
                           f"{label}"
                           + ("" if where is None else f", {where}") + ")")
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


#: estimator options set on the command line: flag -> (argparse attribute, the estimator
#: fields it sets). A flag is passed to a method only when the user gave it; a flag the
#: chosen method(s) do not take is an error (exit 2) naming the methods that take it.
METHOD_FLAGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "--mode": ("mode", ("mode",)),
    "--terms": ("terms", ("terms",)),
    "--iterations": ("iterations", ("max_iter", "iterations")),
    "--partition": ("partition", ("partition",)),
    "--bootstrap": ("bootstrap", ("bootstrap",)),
    "--prior-weight": ("prior_weight", ("prior_weight",)),
    "--window": ("window", ("window",)),
    "--monte-carlo": ("monte_carlo", ("monte_carlo",)),
    "--max-visited": ("max_visited", ("max_visited",)),
    "--profiles": ("profiles", ("profiles",)),
    "--structural-zeros": ("structural_zeros", ("structural_zeros",)),
    "--chains": ("chains", ("chains",)),
    "--burn-in": ("burn_in", ("burn_in",)),
    "--tau-mode": ("tau_mode", ("tau_mode",)),
    "--dependence": ("dependence", ("dependence",)),
    "--order": ("order", ("order",)),
    "--points": ("points", ("points",)),
    "--classes": ("classes", ("classes",)),
    "--max-global-risk": ("max_global_risk", ("max_global_risk",)),
    "--ci-level": ("ci_level", ("ci_level",)),
}


def method_options(args, methods: Sequence[str]) -> dict[str, dict]:
    """The estimator options of each method in ``methods`` from the flags the user gave.

    ``--seed`` (always set) goes to every method that takes ``random_state``. Any other flag
    must be taken by at least one of ``methods``.

    Raises
    ------
    ParameterError
        A flag none of ``methods`` takes, naming the methods that do.
    """
    out: dict[str, dict] = {m: {} for m in methods}
    for flag, (attr, names) in METHOD_FLAGS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        used = False
        for m in methods:
            fields = options_of(ESTIMATORS[m])
            for name in names:
                if name in fields:
                    out[m][name] = value
                    used = True
        if not used:
            takers = [m for m in ESTIMATORS
                      if any(n in options_of(ESTIMATORS[m]) for n in names)]
            chosen = ", ".join(methods)
            raise ParameterError(
                f"{flag} is not an option of --method {chosen}: it is taken by "
                f"{', '.join(takers)}; drop {flag} or choose one of those methods")
    seed = getattr(args, "seed", None)
    if seed is not None:
        for m in methods:
            if "random_state" in options_of(ESTIMATORS[m]):
                out[m]["random_state"] = seed
    return out


def options_for(args, method: str | None = None) -> dict:
    """The estimator options of ``method`` (default ``args.method``): see method_options."""
    method = args.method if method is None else method
    return method_options(args, [method])[method]


def check_household_flags(args) -> None:
    """``--household-keys`` and ``--member-order`` only with ``--household-size``, which is
    at least 1.

    Raises
    ------
    ParameterError
        Either flag without ``--household-size``; ``--household-size`` below 1.
    """
    size = getattr(args, "household_size", None)
    if size is not None:
        if size < 1:
            raise ParameterError(f"--household-size {size} must be an integer >= 1 (the "
                                 "number of members of the households analysed, e.g. 2)")
        return
    for opt, flag in (("household_keys", "--household-keys"), ("member_order", "--member-order")):
        if getattr(args, opt, None):
            raise ParameterError(f"{flag} needs --household-size")


def person_keys(args, keys: list[str]) -> list[str]:
    """Columns to read: the keys plus, for household-level keys, the household variables."""
    check_household_flags(args)
    extra = parse_keys(args.household_keys) if getattr(args, "household_keys", None) else []
    return keys + [k for k in extra if k not in keys]


def to_households(args, md: Microdata, keys: list[str],
                   population_households: float | None = None) -> Microdata:
    """Household-level records when --household-size is given (spec C.7), else ``md``."""
    if getattr(args, "household_size", None) is None:
        return md
    from ..data.household import household_microdata

    if args.household is None:
        raise ParameterError("--household-size needs --household (the household id column)")
    check_household_flags(args)
    hh_keys = parse_keys(args.household_keys) if args.household_keys else []
    members = [k for k in keys if k not in hh_keys]
    if not members:
        raise ParameterError(f"--household-keys {args.household_keys!r} takes every key of "
                             "--keys: leave at least one member variable (a key of --keys "
                             "that is not a household variable)")
    order = parse_keys(args.member_order) if args.member_order else None
    for name in order or ():
        if name not in members:
            raise ParameterError(f"--member-order {args.member_order!r}: {name!r} is not a "
                                 "member variable; use keys of --keys that are not "
                                 f"--household-keys (here: {', '.join(members)})")
    return household_microdata(md, members, size=args.household_size,
                               household_keys=hh_keys, order=order,
                               population_households=population_households)


def reading_options(args) -> dict:
    """How the key columns are read, from --levels, --missing, --wildcard-alpha and
    --max-levels: the :meth:`Microdata.from_source` options of every file a command reads
    (the sample, a population, a protected file, each key set's). One place: commands that
    spelt them out dropped --wildcard-alpha (key sets, evaluate, report --population and
    --protected) and --levels (report --protected)."""
    return {"levels": read_levels(args.levels), "missing": args.missing,
            "max_levels": args.max_levels,
            "wildcard_alpha": getattr(args, "wildcard_alpha", 1.0)}


def sample_microdata(args) -> Microdata:
    """The validated sample of an assess-like subcommand (DATA, --keys, --weights, ...)."""
    data_defaults(args)
    keys = parse_keys(args.keys)
    md = Microdata.from_source(
        args.data, person_keys(args, keys), weights=args.weights, household=args.household,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        **reading_options(args))
    return to_households(args, md, keys)


def sample_of_population(source: str, keys: Sequence[str], population: Microdata, *,
                         what: str, population_path: str, **options) -> Microdata:
    """The sample file ``source`` read with the population's levels, missing values and
    wildcard alpha (``options`` as for :meth:`Microdata.from_source`); ``what`` names it in
    messages (``--sample 'x.csv'``).

    Raises
    ------
    InputError
        A key value of the sample that the population does not have, said as such (the
        population's levels are declared for the user, who never wrote them).
    """
    from ..exceptions import InputError

    size = options.pop("population_size", None)
    options.setdefault("missing", population.missing)
    options.setdefault("wildcard_alpha", population.wildcard_alpha)
    try:
        sample = Microdata.from_source(
            source, keys, levels=dict(zip(population.keys, population.levels, strict=True)),
            max_levels=None, **options)
        if sample.n > population.n:  # was "population_size=100 gives N=100", an API name
            raise InputError(f"{what} has {sample.n:,} records, more than the {population.n:,} "
                             f"of the population {population_path!r}; the sample must be "
                             "drawn from this population: give the whole population's file")
        for key, got, want in zip(sample.keys, sample.levels, population.levels, strict=True):
            if len(got) > len(want):  # only the missing level is added to declared levels
                # (a protected file's suppressions): "build the sample with
                # levels=population.levels" named the API, and nothing the user could do
                raise InputError(f"{what}: key {key!r} has missing values (blank, or a "
                                 f"missing code) where the population {population_path!r} "
                                 "has none, e.g. values suppressed by sdcrisk protect; a "
                                 "missing value has no count in the population: give the "
                                 "file as drawn, before protection")
        return sample if size is None else sample.with_population_size(size)
    except InputError as exc:
        if "declared levels" not in str(exc):
            raise
        detail = str(exc).split(" that is not among", 1)[0]
        raise InputError(f"{what}: {detail} that does not occur in the population "
                         f"{population_path!r}; the sample must be drawn from this population "
                         "(same key variables, same category codes)") from None


def fmt(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)
