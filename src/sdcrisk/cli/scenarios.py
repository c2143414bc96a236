"""``sdcrisk assess ... --key-sets FILE | --all-subsets-up-to D``: many key sets at once.

Two functions for :mod:`sdcrisk.cli`: :func:`add_scenario_arguments` adds the options to the
``assess`` parser, and :func:`run_scenarios` runs the scenarios when one of them was given
(returning the text to print) or returns None so that the single-key-set path runs.
"""

from __future__ import annotations

import argparse
import json

from ..exceptions import ParameterError

__all__ = ["add_scenario_arguments", "run_scenarios"]


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--key-sets``, ``--all-subsets-up-to``, ``--scheduler``, ``--workers``,
    ``--rank-by`` to an assess-like parser."""
    from ._common import add_executor_arguments

    g = parser.add_argument_group("scenarios (many key sets)")
    how = g.add_mutually_exclusive_group()
    how.add_argument("--key-sets", metavar="FILE",
                     help="assess every key set in FILE (one comma-separated set per line, "
                     "optionally 'NAME: a,b,c'; or JSON) and rank them by risk")
    how.add_argument("--all-subsets-up-to", type=int, metavar="D",
                     help="assess every subset of --keys with 1..D variables and rank them")
    g.add_argument("--rank-by", default=None, metavar="MEASURE",
                   help="measure that ranks the key sets (default tau2; also tau1, "
                   "global_risk, p_pu, sample_uniques, k3_violations, ...)")
    add_executor_arguments(
        g, workers="local worker processes for the key sets (default: all CPUs; 1 = in this "
        "process); for one key set, for the method's units (MCMC chains, log-linear "
        "partitions; default: the method's own choice)",
        scheduler="run the key sets (or one key set's MCMC chains / log-linear partitions) on "
        "a Dask cluster, e.g. tcp://host:8786 (needs sdcrisk[cluster])")


def run_scenarios(args: argparse.Namespace, options: dict) -> str | None:
    """Run the scenarios of ``args`` (None when neither scenario option was given).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``assess`` arguments (data, keys, method, weights, ... and the scenario
        options).
    options : dict
        The estimator options built by the CLI from ``args``.

    Raises
    ------
    ParameterError
        ``--rank-by`` without a scenario option, ``--all-subsets-up-to`` without ``--keys``,
        or an html format. (``--workers``/``--scheduler`` without a scenario option are for
        the single key set's fit: see :func:`sdcrisk.cli._assess`.)
    """
    from ..analyses.scenarios import all_subsets, assess_scenarios, read_key_sets

    key_sets_file = getattr(args, "key_sets", None)
    depth = getattr(args, "all_subsets_up_to", None)
    if key_sets_file is None and depth is None:
        if getattr(args, "rank_by", None) is not None:
            raise ParameterError("--rank-by applies to scenarios only; add --key-sets FILE or "
                                 "--all-subsets-up-to D")
        return None
    if getattr(args, "format", "table") not in ("table", "json"):
        raise ParameterError(f"--format {args.format} is not available for scenarios; use "
                             "table or json")
    if str(args.data).startswith("example:"):
        from ._common import data_defaults

        data_defaults(args)  # the example's documented keys and N
    if depth is not None:
        keys = _data_keys(args)
        if keys is None:
            raise ParameterError("--all-subsets-up-to needs --keys (the variables to combine)")
        if depth < 1:
            raise ParameterError(f"--all-subsets-up-to {depth} must be an integer >= 1 (the "
                                 "largest number of keys in a combination, e.g. 3)")
        sets = all_subsets(keys, depth)
    else:
        sets = read_key_sets(key_sets_file)
    from ._common import reading_options

    report = assess_scenarios(
        args.data, sets, method=args.method, options=options,
        rank_by=args.rank_by or "tau2", seed=args.seed, workers=args.workers,
        scheduler=args.scheduler, weights=args.weights,
        household=getattr(args, "household", None),
        population_size=args.population_size, sampling_fraction=args.sampling_fraction,
        **reading_options(args))
    if args.format == "json":
        return json.dumps(report.to_dict(), indent=2)
    return report.to_text()


def _data_keys(args) -> list[str] | None:
    if args.keys is None:
        return None
    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    return keys or None
