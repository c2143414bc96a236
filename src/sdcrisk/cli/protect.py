"""``sdcrisk protect DATA --keys ... (--k-anonymity K | --target tau2=V) --out FILE``.

Writes the protected file (CSV, Parquet, Stata ``.dta`` or SPSS ``.sav`` by the extension of
``--out``, value labels kept): user recodes from ``--recode FILE.json``, then local
suppression to k-anonymity (missing values are wildcards, sdcMicro's ``localSuppression``;
the least important key of ``--importance`` first) or the recommended changes for a tau2
target. Every other column is written as read. The output path is checked before any work;
the input is never overwritten; the file is written atomically. Prints the before/after risk,
the values suppressed per key, the categories merged and the information loss.

Registered by :func:`sdcrisk.cli.build_parser` through :func:`register`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..data.text import utf8_text
from ..exceptions import ParameterError

__all__ = ["register"]


def register(sub) -> None:
    """Add the ``protect`` subparser (handler via ``set_defaults(run=)``)."""
    from ._common import (
        add_method_options,
        add_risk_settings,
        add_sample_arguments,
        command_help,
    )

    p = sub.add_parser("protect", **command_help(
        "write a protected file: recodes, local suppression to k-anonymity or to a risk "
        "target",
        "Write the protected version of a file: your recodes (--recode), then local "
        "suppression until every record shares its key values with at least K-1 others "
        "(--k-anonymity K; a missing value matches every category, as sdcMicro's "
        "localSuppression), or the plan recommend ranks first (--target tau2=V). Other "
        "columns are written as read; the input is never overwritten. Prints the risk "
        "before and after, the values suppressed and the information loss.",
        "sdcrisk protect EXAMPLE --population-size 56075912 --k-anonymity 3 "
        "--out protected.csv"))
    add_sample_arguments(p, method_help="risk method for the before/after figures (default "
                         "auto, fitted once; nb --mode sdcmicro when suppressed values must "
                         "count as wildcards, which auto's candidates cannot)")
    p.add_argument("--keys", help="comma-separated key variables")
    goal = p.add_mutually_exclusive_group()
    goal.add_argument("--k-anonymity", type=int, metavar="K",
                      help="suppress key values until every record shares its key values "
                      "with at least K-1 others (missing matches every category)")
    goal.add_argument("--target", metavar="MEASURE=VALUE",
                      help="apply the change recommend ranks first that brings MEASURE to "
                      "VALUE or below; MEASURE is tau2 (e.g. tau2=5)")
    p.add_argument("--importance", metavar="A,B,C",
                   help="keys from most to least important; the least important is "
                   "suppressed first (default: a key with more categories is less important, as in "
                   "sdcMicro); "
                   "or sdcMicro's numbers, one per key in --keys order, 1 = most important")
    p.add_argument("--recode", metavar="FILE.json",
                   help="your own category merges, {key: {old: new}}, applied first")
    p.add_argument("--out", dest="output", required=True, metavar="FILE",
                   help="protected file: .csv, .csv.gz, .tsv, .parquet, .dta or .sav (never "
                   "the input; a CSV keeps the input's separator, ';' included; Stata and "
                   "SPSS value labels are kept)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--whole-population", action="store_true",
                   help="the file is the whole population (N = n)")
    p.add_argument("--max-levels", type=int, default=1000,
                   help="refuse keys with more distinct values (default 1000)")
    p.add_argument("--format", choices=["table", "json"], default="table",
                   help="summary printed on stdout (default table)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    add_method_options(p)
    add_risk_settings(p)
    p.set_defaults(run=_protect, out=None)


def _read_recodes(path: str | None):
    if path is None:
        return None
    try:
        data = json.loads(utf8_text(Path(path).read_bytes(), f"--recode {path!r}"))
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise ParameterError(f"--recode {path!r}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise ParameterError("--recode must hold a JSON object {key: {old: new}}")
    return data


def _protect(args) -> str:
    from ..analyses.methods import get_estimator
    from ..analyses.protect import check_output_path, protect, write_frame
    from ._common import data_defaults, options_for, parse_keys

    if args.k_anonymity is None and args.target is None and args.recode is None:
        raise ParameterError("give --k-anonymity K, --target MEASURE=VALUE or --recode FILE")
    if args.k_anonymity is not None and args.k_anonymity < 2:  # before reading the file
        raise ParameterError(f"--k-anonymity {args.k_anonymity} must be an integer >= 2 (every "
                             "record then shares its key values with at least K-1 others)")
    out = check_output_path(args.output, args.data, overwrite=args.overwrite)
    data_defaults(args)
    keys = parse_keys(args.keys)
    importance = parse_keys(args.importance) if args.importance else None
    est = get_estimator(args.method, **options_for(args))
    prot = protect(args.data, keys, k=args.k_anonymity, target=args.target,
                   importance=importance, recodes=_read_recodes(args.recode), estimator=est,
                   weights=args.weights, population_size=args.population_size,
                   sampling_fraction=args.sampling_fraction, max_levels=args.max_levels)
    write_frame(prot.frame, out)
    if args.format == "json":
        d = prot.to_dict()
        d["output"] = out.name
        return json.dumps(d, indent=2)
    return _text(prot, out)


def _fig(x) -> str:
    return "-" if x is None else f"{x:.6g}"


def _risk_table(b: dict, a: dict, title: str) -> list[str]:
    """Before/after rows of one method's figures, intervals and record-risk threshold."""
    header = f"{'before':>42}{'after':>14}"
    # a title too long for the column stands on its own line above the header
    lines = ["", (title + header[len(title):] if len(title) < 36 else f"{title}\n{header}")]
    for name in ("tau1", "tau2", "expected_reidentifications", "global_risk"):
        if name in b or name in a:
            lines.append(f"  {name:<28}{_fig(b.get(name)):>12}{_fig(a.get(name)):>14}")
        for side in ("lower", "upper"):
            bi, ai = (r.get("intervals", {}).get(name, {}).get(side) for r in (b, a))
            if bi is not None or ai is not None:
                label = f"  {side} {b.get('ci_level', 0.95):.0%}"
                lines.append(f"{label:<30}{_fig(bi):>12}{_fig(ai):>14}")
    if "max_global_risk" in b:
        before, after = b.get("record_risk_threshold"), a.get("record_risk_threshold")
        lines.append(f"  record risk threshold for max global risk {b['max_global_risk']:g}: "
                     f"{_fig(before)} before, {_fig(after)} after (- = already met"
                     + ("; 0 = no threshold among the record risks reaches the target"
                        if 0 in (before, after) else "") + ")")
    return lines


#: protect's notes on a --target run's outcome (analyses.protect.protect writes them)
_TARGET_NOTES = ("recommended plan (", "target tau2 <= ")


def _text(prot, out: Path) -> str:
    d = prot.to_dict()
    lines = [f"protected file written: {out}"]
    # the target's outcome first: the risk tables below count suppressed values in ways
    # other than the search did (nb's wildcards), and read alone they looked like a miss
    first = tuple(n for n in prot.notes if n.startswith(_TARGET_NOTES))
    lines += [f"note: {n}" for n in first]
    if prot.k is not None:
        lines.append(f"k-anonymity k = {prot.k} (missing values match every category): "
                     f"{prot.k_violations_before:,} records below k before, "
                     f"{prot.k_violations_after:,} after")
    lines.append(f"values suppressed: {d['values_suppressed']:,} ("
                 + ", ".join(f"{k} {v:,}" for k, v in prot.suppressed.items()) + ")")
    merged = {key: groups for key, groups in (prot.merged or {}).items() if groups}
    for key, groups in merged.items():
        text = "; ".join(f"{{{', '.join(olds)}}} -> {new}" for new, olds in groups.items())
        lines.append(f"categories merged in {key}: {text}")
    if not merged:  # no recode, or a recode map with no entry ({"c": {}})
        lines.append("categories merged: none")
    cb, ca = prot.combinations_before, prot.combinations_after
    if cb is not None and ca is not None:
        patterns = ca["patterns_with_missing_values"], cb["patterns_with_missing_values"]
        lines.append(f"observed key combinations: {cb['observed_cells']:,} before, "
                     f"{ca['observed_cells']:,} after"
                     + (f" (and patterns with missing values, each matching several: "
                        f"{patterns[1]:,} before, {patterns[0]:,} after)" if any(patterns)
                        else ""))
    own = prot.risk_missing_as_category
    # the title says how missing (suppressed) values were counted: the wildcard table of a
    # method that cannot count them is nb --mode sdcmicro's, not the method named after it
    title = prot.risk_before["method"] + (" --mode sdcmicro" if own is not None else "")
    if any(c is not None and c["patterns_with_missing_values"] for c in (cb, ca)):
        title += ", missing as a wildcard"
    lines += _risk_table(prot.risk_before, prot.risk_after, f"risk ({title})")
    if own is not None:
        lines += _risk_table(own["before"], own["after"],
                             f"risk ({own['before']['method']}, missing as a category)")
    il = prot.information_loss
    lines += ["", f"information loss: {il['share_of_key_values_suppressed']:.3%} of key values "
              f"suppressed; entropy loss {il['entropy_loss_bits']:.1f} bits "
              f"({il['entropy_loss_share']:.3%} of the keys' information)"]
    lines += [f"note: {n}" for n in prot.notes if n not in first]
    return "\n".join(lines)
