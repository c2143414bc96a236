"""CLI subcommand ``report``: the HTML risk report of a microdata file.

``sdcrisk report DATA --keys a,b,c [--methods auto,nb] [--population POPFILE]
[--protected PROTECTED.csv] [--internal] [--fail-above MEASURE=LIMIT] --out report.html``

Fits every method on the same table (default ``auto``, as ``assess``) and writes
:func:`sdcrisk.report.build_report`'s page (external by default). The first method is the
headline: the cards and every section use it. The verdict line and the exit code make one
check (:func:`sdcrisk.report.verdict.checked_limits`): the ``--fail-above`` limits when given
(on every method; exit code 3 when one fails), else the method's max global risk (the stated
default, 0.01 unless ``--max-global-risk``), which the page checks but which does not set the
exit code (the page says so). With ``--population`` the sample is coded with
the population's levels, N is the population size and the report adds the true measures, ROC
and calibration plots. With ``--protected`` the headline method is also fitted on the
protected file (same keys and N) for a before/after section, and ``--fail-above`` gates the
protected file (the one to release) instead of the original.

A method of several whose fit fails with the package's own error (a memory limit, a sample
too small for it) is left out with a warning and named as failed on the page; the first
method that fitted is then the headline. When every method fails the command fails (exit 2).

Registered by :func:`sdcrisk.cli.build_parser` through :func:`register`.
"""

from __future__ import annotations

import warnings

from ..exceptions import ParameterError, SdcRiskError, SdcRiskWarning
from ._common import Outcome

__all__ = ["register"]


def register(sub) -> None:
    """Add the ``report`` subparser (handler via ``set_defaults(run=)``)."""
    from ..data.datasets import EXAMPLES
    from ._common import (
        FILE_KINDS,
        add_fail_above,
        add_input_arguments,
        command_help,
        data_argument,
        number_argument,
    )

    r = sub.add_parser("report", **command_help(
        "write the HTML risk report (external by default)",
        "Write one self-contained HTML page for a release panel: the headline measures with "
        "their assumptions, a verdict against the limits (--fail-above, else the max global "
        "risk), k-anonymity, the riskiest key combinations (listed with their values only "
        "in the --internal report), what drives the risk, SUDA and uniqueness models. "
        "--population adds the truth; --protected a before/after section. A method of "
        "several that fails is named as failed and left out.",
        "sdcrisk report EXAMPLE --population-size 56075912 --out report.html",
        "sdcrisk report EXAMPLE --population-size 56075912 --methods auto,nb "
        "--fail-above global_risk=0.01 --out report.html"))
    r.add_argument("data", type=data_argument, help=f"the sample file: {FILE_KINDS} "
                   f"(examples: {', '.join(EXAMPLES)})")
    size = r.add_mutually_exclusive_group()
    size.add_argument("--population-size", type=number_argument, metavar="N",
                      help="population size N (the file is a sample of N records)")
    size.add_argument("--sampling-fraction", type=number_argument, metavar="F",
                      help="sampling fraction n/N (N = n / F)")
    r.add_argument("--weights", metavar="COLUMN",
                   help="survey weight column (N defaults to its sum)")
    r.add_argument("--methods", default="auto",
                   help="comma-separated estimators; the first is the headline, used by the "
                   "verdict and every section (default auto, as in assess)")
    r.add_argument("--population", help="population file the sample was drawn from: true "
                   "measures, ROC and calibration plots (N = its number of records)")
    r.add_argument("--protected", metavar="FILE",
                   help="the protected version of DATA (same keys): the headline method is "
                   "fitted on it too, with the same N, for a before/after section; "
                   "--fail-above then gates the protected file")
    r.add_argument("--internal", action="store_true",
                   help="internal report: lists the key values of the riskiest combinations "
                   "(disclosive; for the data owner only)")
    r.add_argument("--min-count", type=int, default=3,
                   help="external report: never name a category with fewer records "
                   "(default 3)")
    r.add_argument("--top", type=int, default=20,
                   help="number of riskiest key combinations listed (default 20)")
    r.add_argument("--title", help="page title (default: 'Disclosure risk report: ' and "
                   "the data file's name)")
    r.add_argument("--risk-threshold", type=float,
                   help="record risk above which a record counts as high risk (default: the "
                   "mu-Argus threshold for --max-global-risk when it is not met)")
    r.add_argument("--contributions", default="headline",
                   help="leave-one-key-out method: headline (the headline method again; nb "
                   "for the MCMC methods hdp and mixed-membership; 'auto' is read as "
                   "headline, its former name), another method name, or none (default "
                   "headline)")
    r.add_argument("--no-suda", action="store_true", help="leave out the SUDA section")
    r.add_argument("--suda-max-size", default="auto", metavar="SIZE",
                   help="largest MSU size SUDA searches: auto (every size when the search "
                   "fits a work budget, always up to 10 keys below census scale; else the "
                   "largest size that "
                   "does, said on the page), all (every size, as sdcMicro; its time grows "
                   "steeply with the number of keys) or a number (default auto)")
    r.add_argument("--no-uniqueness", action="store_true",
                   help="leave out the population-uniqueness estimators (ARX models)")
    add_input_arguments(r, formats=("html",))
    add_fail_above(r, verdict=True)
    r.set_defaults(run=_report)


def _suda_max_size(text: str, n_keys: int) -> int | str:
    """--suda-max-size: auto, all or a size in 1..M, refused before any fit."""
    value = text.strip().lower()
    if value in ("auto", "all"):
        return value
    if value.isdigit() and 1 <= int(value) <= n_keys:
        return int(value)
    raise ParameterError(f"--suda-max-size {text!r}: give auto, all or a size from 1 to "
                         f"{n_keys} (the number of keys)")


def _on_levels(md, levels):
    """``md`` coded on ``levels`` (one tuple per key), its own categories that they lack (a
    recode's new label, a missing value) after them. With --population the sample is coded
    on the population's categories, and so is the protected file: read on its own it had a
    cell space of its categories only (a copy of the sample showed poisson-gamma's tau1
    40.75 before and 40.72 after, on uci_adult)."""
    import dataclasses

    import numpy as np

    codes, out = [], []
    for c, own, given in zip(md.codes, md.levels, levels, strict=True):
        known = set(given)
        lv = tuple(given) + tuple(v for v in own if v not in known)
        at = {v: i for i, v in enumerate(lv)}
        codes.append(np.array([at[v] for v in own], np.int64)[c])
        out.append(lv)
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(out))


def _report(args) -> Outcome:
    from ..analyses.evaluate import every_method_failed
    from ..analyses.methods import ESTIMATORS, get_estimator
    from ..data.table import Microdata, tabulate
    from ..report.collect import build_report, check_report_options
    from ._common import (
        data_defaults,
        limit_breaches,
        method_options,
        parse_keys,
        parse_limits,
        parse_methods,
        reading_options,
        sample_microdata,
        sample_of_population,
    )

    methods = parse_methods(args.methods)
    if not methods:
        raise ParameterError("--methods is empty")
    check_report_options(kind="internal" if args.internal else "external",  # before the fits
                         min_count=args.min_count, top=args.top,
                         risk_threshold=args.risk_threshold)
    limits = parse_limits(args.fail_above)
    contributions = {"headline": True, "auto": True, "none": False}.get(
        args.contributions, args.contributions)
    if isinstance(contributions, str) and contributions not in ESTIMATORS:
        raise ParameterError(f"--contributions {args.contributions!r}: give headline, none or a "
                             f"method name ({', '.join(ESTIMATORS)})")
    if getattr(args, "household_size", None) is not None:
        for flag, value in (("--population", args.population), ("--protected", args.protected)):
            if value:  # these files are read person by person: the keys would not match
                raise ParameterError(f"{flag} does not take household-level keys "
                                     f"(--household-size) yet; drop {flag} or --household-size")
    population = None
    if args.population:
        if args.population_size is not None or args.sampling_fraction is not None:
            raise ParameterError("--population fixes N (its number of records); drop "
                                 "--population-size/--sampling-fraction")
        data_defaults(args)
        keys = parse_keys(args.keys)
        population = Microdata.from_source(
            args.population, keys, household=args.household, **reading_options(args))
        sample = sample_of_population(
            args.data, keys, population, what=f"the sample {args.data!r}",
            population_path=args.population, weights=args.weights, household=args.household,
            population_size=population.n)
        table = tabulate(sample, population=population)
    else:
        table = tabulate(sample_microdata(args))
    prot = None
    if args.protected:  # read before any fit: a bad file is refused at once, not after them
        prot = Microdata.from_source(
            args.protected, list(table.keys), weights=args.weights, household=args.household,
            population_size=float(table.population_size), **reading_options(args))
        if population is not None:  # as the sample: the population's categories
            prot = _on_levels(prot, population.levels)
    suda_max_size = _suda_max_size(args.suda_max_size, len(table.keys))
    if args.no_suda and args.suda_max_size != "auto":  # it would be ignored without a word
        raise ParameterError(f"--suda-max-size {args.suda_max_size!r} bounds the SUDA section, "
                             "which --no-suda leaves out; drop one of the two")
    options = method_options(args, methods)
    estimators = {name: get_estimator(name, **options[name]) for name in methods}
    for est in estimators.values():  # a misspelt key is the user's error: before any fit
        est.check_keys(table.keys)
    results, failed = {}, {}
    for name, est in estimators.items():
        try:
            results[name] = est.fit(table)
        except SdcRiskError as exc:  # this method only: the report shows the others
            failed[name] = exc
    if not results:  # one method: its own error; several: their common class, each message
        raise every_method_failed(failed)
    for name, exc in failed.items():
        warnings.warn(f"report: method {name!r} failed and is left out (named as failed on "
                      f"the page): {exc}", SdcRiskWarning, stacklevel=2)
    breaches = tuple(limit_breaches(results, limits))
    protected = None
    if prot is not None:
        head = next(iter(results))  # the headline: the first method that fitted
        protected = get_estimator(head, **options[head]).fit(tabulate(prot))
        # the protected file is the one to release: the gate is its figures (the original's
        # verdict is on the page)
        breaches = tuple(limit_breaches({head: protected}, limits,
                                        where=f"protected file {str(args.protected)!r}"))
    return Outcome(build_report(results, kind="internal" if args.internal else "external",
                        min_count=args.min_count, title=args.title,
                        risk_threshold=args.risk_threshold, top=args.top,
                        contributions=contributions, suda=not args.no_suda,
                        suda_max_size=suda_max_size,
                        uniqueness=not args.no_uniqueness, limits=limits,
                        protected=protected,
                        failed={k: str(e) for k, e in failed.items()}), breaches)
