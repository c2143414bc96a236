"""``sdcrisk assess DATA --keys a,b,c ...``: estimate the disclosure risk of a sample file."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from .._version import __version__
from ..analyses.methods import get_estimator
from ..data.table import CellTable, tabulate, tabulate_source
from ..exceptions import ParameterError
from ._common import (
    Outcome,
    add_fail_above,
    add_input_arguments,
    add_sample_arguments,
    check_household_flags,
    command_help,
    data_defaults,
    fmt,
    limit_breaches,
    options_for,
    parse_keys,
    parse_limits,
    read_levels,
    require_population_size,
    sample_microdata,
)
from .scenarios import add_scenario_arguments, run_scenarios


def register(sub) -> None:
    a = sub.add_parser("assess", **command_help(
        "estimate the re-identification risk of a sample",
        "Estimate the re-identification risk of a sample file for the key variables an "
        "intruder could match on: tau1 (sample uniques that are population unique), tau2 "
        "(expected correct matches of sample uniques), record risks and k-anonymity counts, "
        "with intervals. The population size N is needed: --population-size, "
        "--sampling-fraction or --weights (N = their sum), or --whole-population when the "
        "file is the population. The default method, auto, combines five models; --method "
        "chooses one.",
        "sdcrisk assess EXAMPLE --population-size 56075912",
        "sdcrisk assess EXAMPLE --population-size 56075912 --method nb --format json",
        "sdcrisk assess EXAMPLE --population-size 56075912 --all-subsets-up-to 3"))
    add_sample_arguments(a, default_method="auto",
                         method_help="estimator (default auto: five models fitted on the file, "
                         "combined by a rule learned on real populations; see docs/auto.md)")
    add_input_arguments(a, formats=("table", "json", "html"))
    add_fail_above(a)
    add_scenario_arguments(a)
    a.add_argument("--out-of-core", action="store_true",
                   help="tabulate the file in two streaming passes without loading it "
                   "(CSV/Parquet larger than memory; see docs/scale.md); the result is the "
                   "in-memory one. Chosen automatically when the file would not fit the "
                   "memory limit (SDCRISK_MEMORY_LIMIT). For nb, poisson-gamma, pitman-yor "
                   "and skinner-elliot without weights or households (and not --format "
                   "html) only the frequencies of the cell counts are streamed: the same "
                   "measures, no input fingerprint")
    a.set_defaults(run=_assess)


#: ``assess`` streams the frequencies of the counts (see :func:`counts_only`) when reading the
#: file in memory would need more than this fraction of the memory limit
COUNTS_ONLY_SHARE = 4


def counts_only(args, est) -> bool:
    """Whether a streamed ``assess`` needs only the frequencies of the cell counts (a
    :class:`~sdcrisk.data.frequencies.FrequencyTable`): a method whose law depends on a cell
    only through its count (``supports_frequencies``), no weights, no households, missing
    values as their own category, and an output made of measures only (not the HTML report,
    which shows cells and keys)."""
    return (est is not None and est.supports_frequencies() and args.weights is None
            and args.household is None
            and getattr(args, "household_size", None) is None
            and args.missing in ("category", "error") and args.format != "html")


def _needs_record_map(args, est) -> bool:
    """Whether this run reads the record -> cell map after tabulation: the HTML report
    (record-level charts), households, wildcard counts, or a method whose fit re-samples
    records. The other outputs are measures and thresholds of the cells."""
    return (args.format == "html" or args.missing == "wildcard" or est.uses_record_map()
            or args.household is not None
            or getattr(args, "household_size", None) is not None)


def _out_of_core_table(args, est=None):
    """The table of ``assess --out-of-core`` (or of a file too large for memory):
    :func:`sdcrisk.data.frequencies.tabulate_frequencies` when :func:`counts_only`, else
    :func:`sdcrisk.data.outofcore.tabulate_file`."""
    import dataclasses

    from ..data.frequencies import tabulate_frequencies
    from ..data.outofcore import tabulate_file

    for opt in ("household_size", "household_keys", "member_order"):
        if getattr(args, opt, None) is not None:
            flag = "--" + opt.replace("_", "-")
            raise ParameterError(f"--out-of-core does not build household-level keys ({flag}): "
                                 "they need each household's members together; drop "
                                 f"--out-of-core or {flag}")
    data_defaults(args)
    path, source = args.data, None
    if str(path).startswith("example:"):
        from ..data.datasets import example_path

        source, path = path, example_path(path.split(":", 1)[1])
    if counts_only(args, est):
        table = tabulate_frequencies(
            path, parse_keys(args.keys), population_size=args.population_size,
            sampling_fraction=args.sampling_fraction, levels=read_levels(args.levels),
            missing=args.missing, max_levels=args.max_levels)
        return table if source is None else dataclasses.replace(table, source=source)
    table = tabulate_file(
        path, parse_keys(args.keys), weights=args.weights, household=args.household,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        levels=read_levels(args.levels), missing=args.missing, max_levels=args.max_levels)
    return table if source is None else dataclasses.replace(table, source=source)


def _sample_table(args, out_of_core: bool, est=None):
    """The sample's CellTable: streamed from the file (``--out-of-core``, or chosen because
    the file would not fit the memory limit), else read in memory one column at a time.
    Streamed for ``est`` under :func:`counts_only`: a FrequencyTable."""
    if (getattr(args, "scheduler", None) is not None and args.household is None
            and getattr(args, "household_size", None) is None
            and Path(str(args.data)).is_dir()):
        return _cluster_table(args)
    check_household_flags(args)
    if args.missing == "wildcard":  # the wildcard counts need every record's key codes
        if out_of_core:
            raise ParameterError("--out-of-core does not count missing values as wildcards; "
                                 "drop --out-of-core or use --missing category")
        return tabulate(sample_microdata(args))
    if out_of_core:
        return _out_of_core_table(args, est)
    if getattr(args, "household_size", None) is not None:
        return tabulate(sample_microdata(args))
    data_defaults(args)
    if not str(args.data).startswith("example:"):
        from ..data.route import needs_out_of_core  # not for the bundled examples
        from ..data.sizes import memory_limit

        # a method that needs only the counts' frequencies streams them (memory bounded by
        # DuckDB's limit) as soon as reading the file would take a quarter of the budget:
        # 10^8 records x 10 keys read in memory peaked at 5-6 GiB, streamed at 1.1 GiB
        limit = memory_limit() // COUNTS_ONLY_SHARE if counts_only(args, est) else None
        if needs_out_of_core(args.data, parse_keys(args.keys), weights=args.weights,
                             household=args.household, limit=limit):
            return _out_of_core_table(args, est)
    return tabulate_source(
        args.data, parse_keys(args.keys), weights=args.weights, household=args.household,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        levels=read_levels(args.levels), missing=args.missing, max_levels=args.max_levels)


def _cluster_table(args):
    """``assess FOLDER --scheduler ADDR``: the folder's Parquet parts tabulated on the
    cluster's workers (:func:`sdcrisk.runtime.tabulate_parts.tabulate_parts`)."""
    from ..runtime.tabulate_parts import tabulate_parts

    data_defaults(args)
    return tabulate_parts(
        args.data, parse_keys(args.keys), executor=args.scheduler, weights=args.weights,
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        levels=read_levels(args.levels), missing=args.missing, max_levels=args.max_levels)


def _where(args) -> str | None:
    """Where the method's units run, when --workers or --scheduler was given (else None)."""
    from ..runtime.executors import describe_executor

    if args.scheduler is not None:
        return describe_executor(args.scheduler)
    if args.workers is not None:
        return describe_executor("serial" if args.workers == 1 else None)
    return None


@contextlib.contextmanager
def _warm_up_while(enabled: bool):
    """Load the IPF kernel from numba's cache in a background thread while the block (reading
    and tabulating the file) runs: numba's start-up would otherwise come after the read. A
    failure there is ignored: the fit itself reports it.

    The thread is joined when the block ends, also when it raises, so that (1) only one thread
    runs numba at a time: numba formats the messages of the errors it raises and catches while
    compiling inside ``colorama.init()``/``deinit()``, which replace and then restore
    ``sys.stdout``/``sys.stderr``, process-wide and without a lock; a warm-up thread still
    compiling while ``main()`` returned restored, later, a stream saved before the caller
    swapped its own in (pytest's capsys between two tests: the next command's error went to
    the previous test's closed stream), and two threads compiling at once could leave a
    wrapper in place; (2) no thread outlives the command. numba itself is imported here, in
    the calling thread: importing a large package from a background thread while the main
    thread imports the file readers can let Python's import-deadlock detection hand one of
    them a partially initialised module. Started only once the options are valid, so that a
    refused run starts no thread."""
    if not enabled:
        yield
        return
    import threading

    import numba  # noqa: F401 - see above

    def run():
        try:
            from ..estimators._ipf import warm_up

            warm_up()
        except Exception:  # noqa: BLE001 - the real fit raises it with context
            pass

    thread = threading.Thread(target=run, name="sdcrisk-warm-up", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _assess(args) -> str | Outcome:
    out_of_core = getattr(args, "out_of_core", False)
    if out_of_core and (args.key_sets is not None or args.all_subsets_up_to is not None):
        raise ParameterError("--out-of-core tabulates one key set; --key-sets and "
                             "--all-subsets-up-to read the file in memory: drop one of them")
    if args.key_sets is not None or args.all_subsets_up_to is not None:
        if args.fail_above:  # the scenarios' ranking checks no limit: it was exit 0 unchecked
            flag = "--key-sets" if args.key_sets is not None else "--all-subsets-up-to"
            raise ParameterError(f"--fail-above checks the figures of one key set; {flag} "
                                 "ranks many and checks no limit: drop --fail-above, or gate "
                                 "a key set with assess --keys A,B,C --fail-above "
                                 f"{args.fail_above[0]}")
        require_population_size(args)
    text = run_scenarios(args, options_for(args))
    if text is not None:  # --key-sets / --all-subsets-up-to
        return text
    est = get_estimator(args.method, **options_for(args))
    with _warm_up_while(args.method == "loglinear"):
        table = _sample_table(args, out_of_core, est)
    if isinstance(table, CellTable) and not _needs_record_map(args, est):
        table = table.without_record_map()  # 4-8 bytes a record that no output reads
    limits = parse_limits(args.fail_above)
    where = _where(args)
    if where is None:  # the method's own default
        result = est.fit(table)
    else:  # MCMC chains, log-linear partitions on these workers / this cluster
        result = est.fit(table, executor=args.scheduler, workers=args.workers)
    breaches = tuple(limit_breaches({result.method: result}, limits))
    return Outcome(_render(args, result, where, limits), breaches)


def _render(args, result, where: str | None, limits=()) -> str:
    """The result in the output format asked for (the HTML page's verdict checks the
    ``--fail-above`` limits, as the exit code does)."""
    if args.format == "html":
        from ..report.collect import build_report

        return build_report(result, limits=list(limits))
    if args.format == "json":
        d = result.to_dict()  # provenance: the seed the method used (None: it draws none)
        if where is not None:
            d["provenance"]["executor"] = where
            if args.workers is not None:
                d["provenance"]["workers"] = args.workers
        er = result.measures.get("expected_reidentifications")
        if er is not None:
            d["expected_reidentifications"] = er.estimate
        return json.dumps(d, indent=2)
    return _result_table(result)


def _result_table(result) -> str:
    from ..report.formats import population_source

    t = result.table
    lines = [
        f"sdcrisk {__version__} - method: {result.method}",
        f"records n = {t.n:,}; population N = {t.population_size:,.0f} "
        f"({population_source(t.population_size_source)}); sampling fraction "
        f"{t.n / t.population_size:.4g}",
        f"keys: {', '.join(t.keys)}; cell space K = {t.cell_space:,}; observed cells "
        f"{t.key_cells:,}"
        + (f" (and {t.missing_patterns:,} patterns with missing values)"
           if t.missing_patterns else "")
        + f"; sample uniques {result.sample_uniques:,}",
        "k-anonymity violations (records in cells with f < k): " + ", ".join(
            f"k={k}: {v:,}" for k, v in t.k_anonymity_violations().items()),
        "",
        f"{'measure':<38}{'estimate':>14}{'lower':>14}{'upper':>14}",
    ]
    for name, m in result.measures.items():
        lines.append(f"{name:<38}{fmt(m.estimate):>14}{fmt(m.lower):>14}{fmt(m.upper):>14}")
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
                  + ("none needed (target already met)" if value is None
                     else "0 (no threshold among the record risks reaches the target)"
                     if value == 0 else f"{value:.6g}")]
    lines += ["", "assumptions:"] + [f"  - {a}" for a in result.assumptions]
    return "\n".join(lines)


def _choice_lines(result) -> list[str]:
    """The validation table and the reason, for a result that chose its method (auto)."""
    reason = result.fitted.get("reason")
    rows = result.diagnostics.get("validation")
    cands = result.diagnostics.get("candidates")
    if reason and isinstance(cands, list) and rows is None:  # auto's calibrated rule
        lines = ["", "method choice (calibrated combination learned on the corpus; "
                 "candidates fitted on this file):",
                 f"  {'candidate':<30}{'tau1':>11}{'tau2':>11}"]
        for r in cands:
            if r.get("tau1") is None:
                lines.append(f"  {r['candidate']:<30} {r.get('status')}")
                continue
            lines.append(f"  {r['candidate']:<30}{r['tau1']:>11.4g}{r['tau2']:>11.4g}")
        return [*lines, "  " + reason]
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
