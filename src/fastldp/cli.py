"""The fastldp command line: demos, experiments, reports, data, audits and scale-out decodes."""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np


def _demo(args) -> int:
    from . import JPRS
    from .relations.populations import rate_diagnostic_population
    from .metrics import squared_frobenius_loss, support_scores

    seeds = np.random.SeedSequence(args.seed).spawn(3)
    t0 = time.perf_counter()
    pop = rate_diagnostic_population(
        shape=(args.d1, args.d2), s=args.s, k=args.k, n=args.n, rng=seeds[0]
    )
    t1 = time.perf_counter()
    codebook = int(seeds[1].generate_state(1, dtype=np.uint64)[0])
    mech = JPRS(shape=(args.d1, args.d2), k=args.k, s=args.s, codebook_seed=codebook,
                n_threads=args.threads)
    bits = mech.privatize(pop.relations, epsilons=args.epsilon, rng=seeds[2])
    t2 = time.perf_counter()
    result = mech.estimate(bits, epsilons=args.epsilon)
    t3 = time.perf_counter()
    loss = squared_frobenius_loss(result.matrix, pop.target)
    scores = support_scores(result.matrix, pop.target, args.s)
    print(f"fastldp demo: {mech!r}")
    print(f"  population  n={args.n}, d1 x d2 = {args.d1} x {args.d2}, s={args.s}, k={args.k}, "
          f"epsilon={args.epsilon} (Eq. 12, seed {args.seed})")
    print(f"  squared Frobenius loss E_s : {loss:.4f}")
    print(f"  precision / recall / F1 @s : {scores.precision:.3f} / {scores.recall:.3f} / {scores.f1:.3f}")
    print(f"  sanitized packets          : {result.sanitization.n_sanitized}")
    print(f"  time: population {t1 - t0:.3f} s, privatize {t2 - t1:.3f} s, "
          f"estimate {t3 - t2:.3f} s (sketch {result.seconds['sketch']:.3f} s, "
          f"{result.n_threads} threads)")
    return 0


def _config(args) -> int:
    from . import show_config

    show_config()
    return 0


def _all_cores() -> int:
    import os

    return os.cpu_count() or 1


#: The largest count a flag takes (reports, rows, bytes, repetitions): numpy's int64.
_COUNT_MAX = 2**63 - 1
#: The most threads, worker processes or client threads a flag asks for.
_THREADS_MAX = 4096
#: Identities and seeds are unsigned 64-bit integers.
_UINT64_MAX = 2**64 - 1


def _shown_bound(bound):
    """A bound as a flag's error shows it: ``65535``, ``0.5``, ``2**63 - 1``."""
    if bound is None:
        return None
    if isinstance(bound, int) and bound >= 2**32 and (bound + 1) & bound == 0:
        return f"2**{(bound + 1).bit_length() - 1} - 1"
    return f"{bound:g}" if isinstance(bound, float) else str(bound)


class _Number:
    """The argparse ``type`` of every numeric flag: a finite number of one kind in a range.

    ``kind`` is ``int`` or ``float``. An integer may be written ``1000000``,
    ``1_000_000`` or ``1e6``; it is read exactly (``decimal``), so ``1e400``
    or ``1.5`` is refused with the range instead of overflowing or being
    truncated. NaN and infinities are refused for both kinds. The error is
    argparse's one line, ``argument --flag: expected ..., got '...'``.
    """

    def __init__(self, kind: type, lo=None, hi=None, *, lo_open: bool = False,
                 hi_open: bool = False) -> None:
        if kind not in (int, float):
            raise TypeError(f"kind must be int or float, got {kind!r}")
        self.kind, self.lo, self.hi = kind, lo, hi
        self.lo_open, self.hi_open = lo_open, hi_open
        # argparse names the type in some messages by its __name__
        self.__name__ = "integer" if kind is int else "number"

    def expected(self) -> str:
        """``an integer in [1, 65535]``, ``a finite number > 0`` ...: the values allowed."""
        what = "an integer" if self.kind is int else "a finite number"
        lo, hi = _shown_bound(self.lo), _shown_bound(self.hi)
        if lo is not None and hi is not None:
            return (f"{what} in {'(' if self.lo_open else '['}{lo}, {hi}"
                    f"{')' if self.hi_open else ']'}")
        if lo is not None:
            return f"{what} {'>' if self.lo_open else '>='} {lo}"
        if hi is not None:
            return f"{what} {'<' if self.hi_open else '<='} {hi}"
        return what

    def __call__(self, text: str):
        import decimal

        refused = argparse.ArgumentTypeError(f"expected {self.expected()}, got {text!r}")
        try:
            exact = decimal.Decimal(text.strip())
        except (decimal.InvalidOperation, ValueError):
            raise refused from None
        if not exact.is_finite():  # nan, inf
            raise refused
        if self.kind is int and exact != exact.to_integral_value():  # 1.5
            raise refused
        # compared exactly, before any conversion: 1e400 never becomes an int or a float
        if self.lo is not None and (exact <= self.lo if self.lo_open else exact < self.lo):
            raise refused
        if self.hi is not None and (exact >= self.hi if self.hi_open else exact > self.hi):
            raise refused
        value = self.kind(exact)
        if self.kind is float and not math.isfinite(value):  # 1e309 within no upper bound
            raise refused
        return value

    def __repr__(self) -> str:
        return f"_number({self.kind.__name__}, {self.expected()!r})"


def _number(kind: type, lo=None, hi=None, *, lo_open: bool = False,
            hi_open: bool = False) -> _Number:
    """The argparse type of a numeric flag (see :class:`_Number`); use it for every one."""
    return _Number(kind, lo, hi, lo_open=lo_open, hi_open=hi_open)


#: Worker processes and threads: 1 .. 4096.
_workers = _number(int, 1, _THREADS_MAX)
#: A count of reports, rows, bytes or repetitions: 1 .. 2**63 - 1 (``1e6`` is read as 1000000).
_count = _number(int, 1, _COUNT_MAX)
#: An epsilon or a rate: finite and > 0.
_positive_float = _number(float, 0, lo_open=True)
#: A seed or an identity: 0 .. 2**64 - 1.
_uint64 = _number(int, 0, _UINT64_MAX)


class _DeprecatedAlias(argparse.Action):
    """An old option name: does what ``new`` does and says so on stderr (removed next release)."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        # a DeprecationWarning would be hidden by Python's default filters outside __main__
        print(f"fastldp: warning: {option_string} is deprecated and will be removed in the "
              f"next release; use {self.new}.", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _add_quiet(parser) -> None:
    """``--quiet`` (alias ``--no-progress``): one flag on every command that shows progress."""
    parser.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true",
                        help="no progress bar (--no-progress is the same flag)")


def _failed(what: str, failed: int, where) -> int:
    """Exit status of a run: non-zero, with the reason first, when any row failed."""
    if failed:
        print(f"fastldp: error: {failed} {what} failed; their messages are in the 'failure' "
              f"column of {where} (rerun with --retry-failures once the cause is fixed).",
              file=sys.stderr)
        return 1
    return 0


def _run(args) -> int:
    from .experiments import run

    if args.data is not None and not args.data.expanduser().is_dir():
        # as reproduce does: a data folder that is not there is not "no data"
        raise FileNotFoundError(f"The '--data' option of fastldp run must be an existing "
                                f"folder. Got {str(args.data)!r}, which does not exist or is "
                                "not a folder, instead.")
    summary = run(args.spec, args.out, workers=args.workers, quick=args.quick,
                  progress=not args.quiet, data_dir=args.data,
                  retry_failures=args.retry_failures, parquet=args.parquet)
    print(summary)
    return _failed("rows", summary.failed, summary.table)


def _report(args) -> int:
    from .experiments import build_report

    out = args.out if args.out is not None else args.results.parent / "report"
    report = build_report(args.results, out, reference=args.reference,
                          slope_min_n=args.slope_min_n, figures=not args.no_figures)
    print(report.text)
    print(f"\nTables in {out}" + (
        f"; figures in {out / 'figures'}: "
        f"{', '.join(p.name for p in report.figures if p.suffix == '.png')}"
        if report.figures else ""))
    return 0


def _reproduce(args) -> int:
    from .experiments import reproduce

    report = reproduce(args.experiment, quick=args.quick, out=args.out, workers=args.workers,
                       data_dir=args.data, progress=not args.quiet,
                       figures=not args.no_figures, repetitions=args.repetitions,
                       retry_failures=args.retry_failures)
    failed = getattr(report, "failed", 0)
    checks = getattr(report, "checks", None)
    if failed and checks:  # a run that compares itself with the papers or a target
        print(f"fastldp: error: {failed} of {len(checks)} checks failed; the report above "
              f"lists them (FAILED), and checks.csv in {args.out or 'the output folder'}.",
              file=sys.stderr)
        return 1
    return _failed("rows", failed, args.out or "the results table")


def _data_export(args) -> int:
    from .relations.scenarios import export_frozen

    manifest = export_frozen(args.out)
    print(f"Frozen populations written to {args.out}"
          + ("" if manifest is None else f" (manifest: {manifest})"))
    return 0


def _audit(args) -> int:
    from .audit import audit_all, channels, format_table, negative_controls

    if args.list:
        listed = channels(args.epsilon)
        if args.controls:
            listed = {**listed, **negative_controls(args.epsilon)}
        width = max(len(name) for name in listed)
        for name, ch in listed.items():
            print(f"{name:<{width}} {ch.kind:<9} {ch.description}")
        return 0
    t0 = time.perf_counter()
    rows = audit_all(args.mechanisms, epsilon=args.epsilon, controls=args.controls, n=args.n,
                     rng=args.seed)
    print(format_table(rows))
    bad = [r for r in rows if not r.as_expected]
    fewer = sorted({f"{r.empirical.counts[1]} for {r.name.split(':')[-1].split('@')[0]}"
                    for r in rows if r.empirical is not None and r.empirical.counts[1] != args.n})
    weak = [r.name for r in rows if r.low_power]
    print(f"\n{len(rows)} audits in {time.perf_counter() - t0:.1f} s. exact eps: largest "
          "likelihood ratio, in rational arithmetic; empirical lb: 1 - 1e-6 Clopper-Pearson "
          f"lower bound from {args.n} draws per input"
          + (f" (whole protocol runs: {', '.join(fewer)})" if fewer else "")
          + "; shuffle and fit rows: ln((p_lo - delta) / q_hi) on the analyzer's view or the "
          "fitted model, the largest over their statistics, plus exact and conformance checks "
          "of the view (Bonferroni over each row's tests). detects: the smallest fault the row "
          "catches, as k for a channel built at k eps that claims eps ('any': the exact law).")
    if weak:
        print(f"low power ({len(weak)} rows, a pass says little about faults below their "
              f"'detects'): {', '.join(weak)}")
    if bad:
        what = ", ".join(r.name + (" (control not caught)" if r.expect_violation else "")
                         for r in bad)
        print(f"fastldp: error: privacy audit failed: {what}", file=sys.stderr)
        return 1
    return 0


def _add_audit_command(sub) -> None:
    au = sub.add_parser(
        "audit", help="exact and empirical privacy audits of every local randomizer",
        description="Audit the claimed epsilon of each channel: exactly (largest likelihood "
                    "ratio, rational arithmetic) where the output space is finite, by "
                    "distinguishing tests (Clopper-Pearson lower bounds) otherwise; the "
                    "shuffle protocols on the analyzer's view (lower bounds, an exact check "
                    "and conformance tests of the accounting's assumptions). Each row says "
                    "the smallest fault it detects and warns when that is large. Exits 1 "
                    "on any violation.")
    au.add_argument("mechanisms", nargs="*", metavar="MECHANISM",
                    help="channels to audit (default: all; see --list); a negative control's "
                         "name audits that fault as if it were honest (exit 1 when caught)")
    au.add_argument("--epsilon", type=_positive_float, default=1.0, help="claimed budget (default 1.0)")
    au.add_argument("--eps", type=_positive_float, dest="epsilon", action=_DeprecatedAlias,
                    new="--epsilon", help=argparse.SUPPRESS)
    au.add_argument("--controls", action="store_true",
                    help="also run the negative controls of the channels audited, which must "
                         "be flagged (exit 1 only if one is not); with --list, list them")
    au.add_argument("--n", type=_count, default=100_000,
                    help="draws per input of each distinguishing test (default 100000)")
    au.add_argument("--seed", type=_uint64, default=0, help="seed of the audit (default 0)")
    au.add_argument("--list", action="store_true", help="list the registry and exit")
    au.set_defaults(func=_audit)


def _add_experiment_commands(sub) -> None:
    from pathlib import Path

    from .experiments import experiments

    known = experiments()

    run = sub.add_parser("run", help="run an experiment spec (TOML) into a results table")
    run.add_argument("spec", type=Path, help="the spec file")
    run.add_argument("--out", type=Path, default=None,
                     help="output folder (default results/<spec name>); resumes if it has a table")
    run.add_argument("--workers", type=_workers, default=_all_cores(),
                     help="worker processes (default: all cores; results do not depend on it)")
    run.add_argument("--quick", action="store_true", help="use the spec's [quick] grid")
    run.add_argument("--data", type=Path, default=None,
                     help="folder that relative data paths in the spec are read from")
    run.add_argument("--retry-failures", action="store_true",
                     help="drop failed rows from the table and run them again")
    run.add_argument("--parquet", action="store_true", help="also write results.parquet (pyarrow)")
    _add_quiet(run)
    run.set_defaults(func=_run)

    rep = sub.add_parser("report", help="statistics, tables and figures from a results table")
    rep.add_argument("results", type=Path, help="a results.csv written by 'fastldp run'")
    rep.add_argument("--out", type=Path, default=None,
                     help="output folder (default: report/ beside the table)")
    rep.add_argument("--reference", default=None,
                     help="baseline of the paired method comparisons (default: the family's, "
                          "JPRS-Global or RPC)")
    rep.add_argument("--slope-min-n", type=_number(int, 0, _COUNT_MAX), default=None,
                     help="fit log-log slopes over n >= this only")
    rep.add_argument("--no-figures", action="store_true", help="skip the figures")
    rep.set_defaults(func=_report)

    width = max(len(name) for name in known)
    listing = "\n".join(
        f"  {name:<{width}}  {exp.description}" + ("  [needs --data]" if exp.needs_data else "")
        for name, exp in known.items())
    rp = sub.add_parser(
        "reproduce", help="run and report one of the papers' experiments",
        description="Run a shipped experiment and report it (tables, text, figures).",
        epilog="experiments:\n" + listing, formatter_class=argparse.RawDescriptionHelpFormatter)
    rp.add_argument("experiment", choices=list(known), metavar="EXPERIMENT",
                    help="one of the experiments listed below")
    rp.add_argument("--quick", action="store_true",
                    help="the reduced grid (minutes on 2 cores); unless its headline is the full "
                         "run's, it first says that it is too small to rank the methods and "
                         "which differences its standard errors resolve")
    rp.add_argument("--out", type=Path, default=None,
                    help="output folder (default results/<experiment>[-quick])")
    rp.add_argument("--workers", type=_workers, default=_all_cores(),
                    help="worker processes (default: all cores; results do not depend on it)")
    rp.add_argument("--data", type=Path, default=None,
                    help="folder with the real-data files (default $FASTLDP_DATA)")
    rp.add_argument("--retry-failures", action="store_true",
                    help="run the failed rows of an earlier run again")
    _add_quiet(rp)
    rp.add_argument("--no-figures", action="store_true", help="skip the figures")
    rp.add_argument("--repetitions", type=_count, default=None, metavar="N",
                    help="repetitions instead of the spec's (the experiments that take them: "
                         + ", ".join(n for n, e in known.items() if e.takes_repetitions) + ")")
    rp.add_argument("--trials", type=_count, dest="repetitions", action=_DeprecatedAlias,
                    new="--repetitions", help=argparse.SUPPRESS)
    rp.set_defaults(func=_reproduce)

    data = sub.add_parser("data", help="populations: export the frozen benchmark")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    export = data_sub.add_parser("export", help="write the frozen populations to files")
    export.add_argument("--out", type=Path, default=Path("frozen-populations"),
                        help="output folder (default frozen-populations)")
    export.set_defaults(func=_data_export)


def _progress_callback(total_hint: int, desc: str, enabled: bool):
    from ._progress import progress_bar

    bar = progress_bar(total_hint, desc, enabled=enabled, unit="report")
    seen = [0]

    def update(done: int, total: int) -> None:
        bar.update(done - seen[0])
        seen[0] = done

    return bar, update


#: Seconds ``decode --scheduler`` waits for the scheduler to answer.
_SCHEDULER_TIMEOUT = 5.0


def _sanitized_line(san) -> str:
    """``none of 1,000,000`` or ``12 of 1,000,000 (out_of_range 10, non_numeric 2)``."""
    if not san.n_sanitized:
        return f"none of {san.n_received:,}"
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in san.by_reason.items() if count)
    return f"{san.n_sanitized:,} of {san.n_received:,}" + (f" ({reasons})" if reasons else "")


def _decode_summary(mech, result) -> str:
    """The line ``fastldp decode`` prints about an estimate, by the mechanism's ``kind``."""
    estimate = np.asarray(result.estimate, dtype=np.float64)  # every decoder's result has it
    labels = getattr(result, "categories", None) or mech.labels
    if mech.kind == "matrix" and estimate.ndim == 2:
        flat = estimate.ravel()
        top = np.argsort(-flat, kind="stable")[:5]
        rows, cols = np.divmod(top, estimate.shape[1])
        return "  largest entries: " + ", ".join(
            f"({r}, {c}) {flat[i]:.4f}" for i, r, c in zip(top, rows, cols))
    if mech.kind == "ranking":  # heavy hitters: the items found, in their order
        return "  top items: " + ", ".join(f"{label}: {c:,.1f}" for label, c in
                                           zip(list(labels or ())[:5], estimate[:5]))
    flat = estimate.ravel()
    top = np.argsort(-flat, kind="stable")[:5]
    name = (lambda v: labels[v]) if labels is not None and len(labels) == flat.size else str
    what = "largest counts" if mech.kind == "counts" else "largest entries"
    return f"  {what}: " + ", ".join(f"{name(v)}: {flat[v]:,.1f}" for v in top)


def _decode(args) -> int:
    import warnings

    from . import mechanisms
    from .reports import (ReportFile, SanitizationWarning, decode_files, expand_sources,
                          open_reports, sanitization_warning, save_result)

    files = expand_sources(args.reports)  # a file named twice is refused by its arguments
    # the files written at the end must have a folder now, not after the whole decode
    _writable_place("the result file", args.out)
    _writable_place("the checkpoint", args.checkpoint)
    if args.mechanism:
        spec, mech = _mechanism_spec(args.mechanism)
    else:
        spec = ReportFile(files[0]).spec
        mech = mechanisms.from_spec(spec)
    if args.threads is not None:
        mech.n_threads = max(1, args.threads)
    # refuse a mismatch, a copy or a report column of the wrong type before the progress
    # bar and any work
    total = sum(r.num_rows for r in open_reports(mech, args.reports))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # a mostly sanitized decode is said below in one line and by the exit status
        warnings.simplefilter("ignore", SanitizationWarning)
        if args.scheduler:
            from . import distributed
            try:
                from dask.distributed import Client
            except ImportError:
                raise ImportError("--scheduler needs dask and distributed: "
                                  "pip install 'fastldp[distributed]'") from None
            # fail in seconds, in one line: Client retries an unreachable address for 30 s
            distributed.check_scheduler(args.scheduler, timeout=_SCHEDULER_TIMEOUT)
            with Client(args.scheduler, timeout=f"{_SCHEDULER_TIMEOUT:g}s") as client:
                result = distributed.estimate(mech, args.reports, client=client)
        else:  # the bar of decode_files(progress=True), which also counts a resumed start
            try:
                result = decode_files(mech, args.reports, checkpoint=args.checkpoint,
                                      progress=not args.quiet)
            except OSError as exc:
                if args.checkpoint is None or not str(exc.filename or "").startswith(
                        str(args.checkpoint)):
                    raise
                raise OSError(exc.errno, f"the checkpoint {args.checkpoint} cannot be "
                                         f"written: {exc.strerror or exc}") from exc
    seconds = time.perf_counter() - t0
    print(f"fastldp decode: {len(files)} file(s), {total:,} reports of "
          f"{spec['mechanism']} in {seconds:.2f} s ({total / max(seconds, 1e-9):,.0f} reports/s"
          f"{', scheduler ' + args.scheduler if args.scheduler else ', local stream'})")
    san = getattr(result, "sanitization", None)
    if san is not None:  # a mechanism that sanitizes nothing has no such counts
        print(f"  sanitized reports: {_sanitized_line(san)}")
    print(_decode_summary(mech, result))
    if args.out:
        try:
            save_result(result, args.out)
        except OSError as exc:
            raise OSError(exc.errno, f"the result file {args.out} cannot be written: "
                                     f"{exc.strerror or exc}") from exc
        print(f"  result written to {args.out}")
    message = sanitization_warning(result)
    if message is not None:
        print(f"fastldp: warning: {message}", file=sys.stderr)
        return 1
    return 0


def _writable_place(role: str, path) -> None:
    """Refuse, naming the file's role, an output path whose folder is missing or is a folder."""
    if path is None:
        return
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{role} {path} is a folder; give a file path")
    if not path.parent.is_dir():
        raise ValueError(f"{role} {path} cannot be written: its folder {path.parent} does not "
                         "exist")


def _mechanism_spec(text):
    """``(spec, mechanism)`` of ``--mechanism``; every error says "the mechanism spec"."""
    from . import mechanisms

    try:
        spec = mechanisms.read_spec(text)
        return spec, mechanisms.from_spec(spec)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ValueError(f"the mechanism spec {shown} cannot be used: {_one_line(exc)}") \
            from exc


def _simulation_budgets(values):
    """``--epsilon`` of simulate: one finite budget > 0, or ``low high`` with low < high."""
    if values is None:
        return 0.5, 2.0
    expected = "one finite budget > 0, or two (low high) with low < high"
    shown = " ".join(str(v) for v in values)
    if len(values) not in (1, 2):
        raise ValueError(f"The '--epsilon' option of fastldp simulate must be {expected}. "
                         f"Got {len(values)} values ({shown}) instead.")
    for v in values:
        if not (math.isfinite(v) and v > 0):  # NaN fails
            raise ValueError(f"The '--epsilon' option of fastldp simulate must be {expected}. "
                             f"Got {v} instead (budgets are finite and > 0).")
    if len(values) == 2 and not values[0] < values[1]:
        raise ValueError(f"The '--epsilon' option of fastldp simulate must be {expected}. "
                         f"Got low {values[0]} >= high {values[1]} instead.")
    return values[0] if len(values) == 1 else tuple(values)


def _simulate(args) -> int:
    from . import mechanisms

    if args.send is not None:
        return _simulate_send(args)
    if args.out is None:
        raise ValueError("fastldp simulate needs --out FILE (or --send URL to feed a collector)")
    from .reports import _fixed_epsilon

    _writable_place("the report file", args.out)
    _, mech = _mechanism_spec(args.mechanism)
    eps = _simulation_budgets(args.epsilon)
    fixed = _fixed_epsilon(mech)
    if args.epsilon is not None and fixed is not None and eps != fixed:
        # the mechanism privatizes at its own epsilon: another --epsilon would be ignored
        raise ValueError(f"The '--epsilon' option of fastldp simulate is "
                         f"{' '.join(f'{v:g}' for v in args.epsilon)}, but the mechanism "
                         f"{args.mechanism} has the fixed epsilon {fixed:g}: omit it, or give "
                         f"{fixed:g}.")
    bar, update = _progress_callback(args.n, "simulate", not args.quiet)
    t0 = time.perf_counter()
    with bar:
        try:
            mechanisms.simulate(mech, args.n, args.out, epsilon=eps, seed=args.seed,
                                chunk=args.row_group, progress=update)
        except OSError as exc:  # the only file simulate writes
            raise OSError(exc.errno, f"the report file {args.out} cannot be written: "
                                     f"{exc.strerror or exc}") from exc
    print(f"fastldp simulate: {args.n:,} reports of {type(mech).__name__} written to {args.out} "
          f"in {time.perf_counter() - t0:.2f} s")
    return 0


def _simulate_send(args) -> int:
    from .service.client import simulate_clients

    if args.token is None:
        raise ValueError("fastldp simulate --send needs --token TOKEN (a client of the collector)")
    if args.first_identity + args.n - 1 > _UINT64_MAX:
        raise ValueError(f"fastldp simulate --send: the identities --first-identity .. "
                         f"--first-identity + --n - 1 must be below 2**64; got --first-identity "
                         f"{args.first_identity} and --n {args.n}")
    # None: the collector's fixed epsilon, or personal budgets 0.5 .. 2.0 (a given --epsilon
    # that disagrees with a fixed-epsilon collector is refused by simulate_clients)
    eps = None if args.epsilon is None else _simulation_budgets(args.epsilon)
    bar, update = _progress_callback(args.n, "simulate", not args.quiet)
    t0 = time.perf_counter()
    with bar:
        done = simulate_clients(args.send, args.token, args.n, epsilon=eps, seed=args.seed,
                                batch_size=args.batch_size, clients=args.clients,
                                first_identity=args.first_identity, progress=update,
                                verify=args.cacert if args.cacert else True)
    seconds = time.perf_counter() - t0
    print(f"fastldp simulate: {done['accepted']:,} reports sent to {args.send} in "
          f"{done['batches']:,} batches ({done['replayed']} answered from a repeated key) in "
          f"{seconds:.2f} s ({done['accepted'] / max(seconds, 1e-9):,.0f} reports/s)")
    if done["failed"] or done["unsent"]:
        total = done["batches"] + done["failed"] + done["unsent"]
        unsent = (f"; {done['unsent']:,} not sent once the collector was unreachable or "
                  "refused the token" if done["unsent"] else "")
        first = f"; first: {_one_line(done['errors'][0])}" if done["errors"] else ""
        print(f"fastldp: error: {done['failed']:,} of {total:,} batches failed "
              f"({done['failed_reports']:,} reports not accepted){unsent}{first}",
              file=sys.stderr)
        return 1 if done["batches"] else 2  # some sent, some failed: 1; none sent: an error
    return 0


def _add_scale_commands(sub) -> None:
    from pathlib import Path

    dec = sub.add_parser(
        "decode", help="decode report files (streaming, or on a Dask cluster)",
        description="Decode Parquet report files in bounded memory, a row group at a time, "
                    "or on a Dask cluster with --scheduler. The result is bit-identical to "
                    "the in-memory estimate: at the mechanism's fixed epsilon, which every "
                    "row's epsilon must equal (a file with another budget is refused), or "
                    "at the files' personal budgets for a mechanism without a fixed one "
                    "(JPRS, P-RS, an oracle built with epsilon=None). A file named twice "
                    "(the same path, link or file id) is "
                    "refused. Exit status: 0 on success; 1 when most reports (more than "
                    "half) were malformed and sanitized, the estimate being printed and "
                    "written all the same; 2 on an error.")
    dec.add_argument("reports", nargs="+", metavar="REPORTS",
                     help="report files, folders or globs")
    dec.add_argument("--mechanism", metavar="SPEC",
                     help="the decoder: a preset, a JSON/TOML spec file or inline JSON "
                          "(default: the mechanism recorded in the files; a mismatch is refused)")
    dec.add_argument("--scheduler", metavar="ADDRESS",
                     help="a Dask scheduler address (tcp://host:8786), checked to answer within "
                          "5 s before any work; default: stream locally")
    dec.add_argument("--out", type=Path, metavar="RESULT",
                     help="write the result to this .npz file (fastldp.reports.load_result "
                          "reads it back)")
    dec.add_argument("--checkpoint", type=Path, metavar="FILE",
                     help="local streaming: save progress here after each row group and "
                          "resume from it after a kill")
    dec.add_argument("--threads", type=_workers, default=None, help="sketch threads (default: all)")
    _add_quiet(dec)
    dec.set_defaults(func=_decode)

    sim = sub.add_parser(
        "simulate", help="write a report file of a chosen size from a synthetic population",
        description="Privatize a synthetic population (JPRS/P-RS: each identity holds 1..k "
                    "of s hot pairs; oracles: Zipf(1.1) symbols) and write a report file, "
                    "or send it to a collector with --send. Exit status: 0 on success; 1 "
                    "when some batches sent failed and others were accepted (how many "
                    "failed is said); 2 on an error, every batch failing included.")
    sim.add_argument("--mechanism", metavar="SPEC", default="jprs-4096",
                     help="a preset (jprs-4096, olh-4096), a JSON/TOML spec file or inline "
                          "JSON (default jprs-4096)")
    sim.add_argument("--n", type=_count, default=1_000_000, help="reports (default 1e6)")
    sim.add_argument("--out", type=Path, help="the Parquet file to write (or use --send)")
    sim.add_argument("--epsilon", type=_positive_float, nargs="+", metavar="EPS",
                     help="one budget, or low high for personal budgets (default 0.5 2.0; "
                          "with --send to a collector with a fixed epsilon: that epsilon, and "
                          "another is refused)")
    sim.add_argument("--seed", type=_uint64, default=0, help="seed (default 0)")
    sim.add_argument("--row-group", type=_count, default=1 << 20,
                     help="reports per row group (default 1048576)")
    sim.add_argument("--send", metavar="URL",
                     help="instead of a file, send the reports to a collector (fastldp serve) "
                          "with the server's mechanism")
    sim.add_argument("--token", metavar="TOKEN", help="with --send: the client's bearer token")
    sim.add_argument("--clients", type=_workers, default=4,
                     help="with --send: concurrent clients (default 4)")
    sim.add_argument("--batch-size", type=_count, default=1000,
                     help="with --send: reports per request (default 1000)")
    sim.add_argument("--first-identity", type=_uint64, default=0,
                     help="with --send: the first identity (default 0)")
    sim.add_argument("--cacert", metavar="PEM",
                     help="with --send to https: the server's certificate (self-signed)")
    _add_quiet(sim)
    sim.set_defaults(func=_simulate)


def _account_cap(args):
    """``--cap`` / ``--delta`` of account: None, an epsilon, or (epsilon, delta)."""
    if args.delta is not None and args.cap is None:
        raise ValueError("The '--delta' option of fastldp account needs --cap (the epsilon "
                         "at that delta). Got --delta alone instead.")
    if args.cap is not None and not (0 < args.cap < math.inf):  # NaN fails
        raise ValueError(f"The '--cap' option of fastldp account must be a finite epsilon "
                         f"> 0. Got {args.cap} instead.")
    if args.delta is not None and not (0 < args.delta < 1):
        raise ValueError(f"The '--delta' option of fastldp account must be in (0, 1). "
                         f"Got {args.delta} instead.")
    if args.cap is None:
        return None
    return args.cap if args.delta is None else (args.cap, args.delta)


def _json_finite(value):
    """A float JSON can hold, or None (a remaining budget of -inf: nothing fits at that delta)."""
    return value if value is None or math.isfinite(value) else None


def _json_event(obj):
    """An event's JSON object with its non-finite floats as strings ('Infinity', '-Infinity').

    An RDP curve may hold ``inf`` at some orders; :func:`fastldp.accounting.to_json` writes
    it as the bare ``Infinity`` of Python's json module, which strict JSON does not allow.
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if obj != obj else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, list):
        return [_json_event(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _json_event(v) for k, v in obj.items()}
    return obj


def _account(args) -> int:
    import json
    import sqlite3

    from .accounting.ledger import Ledger, LedgerDamagedError

    cap = _account_cap(args)
    try:
        with Ledger(args.ledger, readonly=True) as ledger:
            ledger.verify()  # SQLite's integrity check and the charges' range, first
            releases = ledger.releases()
            groups = ledger.groups(cap=cap)
            n = ledger.n_identities
    except LedgerDamagedError as exc:
        print(f"fastldp: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:  # damage the integrity check did not list
        print(f"fastldp: error: The ledger {args.ledger} is damaged: "
              f"{_one_line(exc)} (met while reading it).", file=sys.stderr)
        return 1
    if args.json:
        # allow_nan=False: strict JSON or an error, never a bare Infinity or NaN
        print(json.dumps({
            "ledger": str(args.ledger), "identities": n,
            "cap": None if cap is None else {"epsilon": args.cap, "delta": args.delta},
            "releases": [{"name": r.name, "index": r.index, "identities": r.n_identities,
                          "epsilon_min": r.epsilon_min, "epsilon_max": r.epsilon_max,
                          "event": None if r.event_json is None
                          else _json_event(json.loads(r.event_json)),
                          "created": r.created} for r in releases],
            "groups": [{"releases": list(g.releases), "identities": g.n_identities,
                        "spent_min": g.spent_min, "spent_max": g.spent_max,
                        "remaining": _json_finite(g.remaining)} for g in groups]},
            indent=2, allow_nan=False))
        return 0
    how = ("" if cap is None else f"; cap epsilon {args.cap:g} (basic composition)"
           if args.delta is None else
           f"; cap epsilon {args.cap:g} at delta {args.delta:g} (events composed)")
    print(f"fastldp account: {args.ledger}: {len(releases)} release"
          f"{'' if len(releases) == 1 else 's'}, {n:,} identities in {len(groups)} group"
          f"{'' if len(groups) == 1 else 's'}{how}")
    print(f"  {'identities':>12}  {'spent':<16}" + ("" if cap is None else
                                                   f"  {'remaining':>10}") + "  releases")
    for g in groups:
        spent = (f"{g.spent_max:.6g}" if g.spent_min == g.spent_max
                 else f"{g.spent_min:.6g}-{g.spent_max:.6g}")
        names = list(g.releases)
        shown = (", ".join(names) if len(names) <= 6 else
                 ", ".join(names[:3]) + f", ..., {names[-1]} ({len(names)} releases)")
        print(f"  {g.n_identities:>12,}  {spent:<16}" + (
            "" if cap is None else f"  {g.remaining:>10.6g}") + f"  {shown}")
    return 0


def _account_charge(args) -> int:
    from .accounting.ledger import BudgetExceededError, Ledger

    cap = _account_cap(args)
    with Ledger(args.ledger) as ledger:
        before = len(ledger.releases())
        try:
            record = ledger.charge_store(args.store, release=args.release, cap=cap)
        except BudgetExceededError as exc:
            print(f"fastldp account charge: refused: {_one_line(exc)}", file=sys.stderr)
            return 1
        again = len(ledger.releases()) == before
    eps = (f"{record.epsilon_max:g}" if record.epsilon_min == record.epsilon_max
           else f"{record.epsilon_min:g}..{record.epsilon_max:g}")
    if again:
        print(f"fastldp account charge: {args.ledger}: the release {record.name!r} was charged "
              f"before (release #{record.index}, {record.n_identities:,} identities at epsilon "
              f"{eps}); the same identities and event: nothing charged again")
    else:
        print(f"fastldp account charge: {args.ledger}: charged the release {record.name!r} "
              f"(#{record.index}) to the {record.n_identities:,} identities the store "
              f"{args.store} acknowledged, epsilon {eps} each")
    return 0


def _account_charge_parser() -> argparse.ArgumentParser:
    from pathlib import Path

    charge = argparse.ArgumentParser(
        prog="fastldp account charge",
        description="Charge a ledger (fastldp.accounting.Ledger.charge_store) with a release: "
                    "exactly the identities the collector of --store acknowledged, each at the "
                    "privacy event its mechanism states for one report. The collector must be "
                    "stopped (its identities are final then; a running one holds the store and "
                    "is named). A second charge of the same release from the same store "
                    "charges nothing. With --cap (and --delta) the release is charged only if "
                    "every identity stays within the budget, else nobody is. Exit status: 0; "
                    "1 when --cap refuses the release; 2 on an error.")
    charge.add_argument("ledger", type=Path, metavar="LEDGER",
                        help="the ledger file (SQLite; created when absent)")
    charge.add_argument("--store", type=Path, required=True, metavar="DIR",
                        help="the store directory of the (stopped) collector")
    charge.add_argument("--release", required=True, metavar="NAME",
                        help="the release's unique name")
    charge.add_argument("--cap", type=float, metavar="EPS",
                        help="refuse the release if an identity would exceed this epsilon "
                             "(basic composition; with --delta, the epsilon at that delta)")
    charge.add_argument("--delta", type=float, metavar="D",
                        help="with --cap: compose each identity's events to the epsilon at "
                             "this delta")
    charge.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    charge.set_defaults(func=_account_charge)
    return charge


def _parse(argv: list) -> argparse.Namespace:
    """The arguments; ``fastldp account charge ...`` goes to its own parser.

    ``fastldp account LEDGER`` reads a ledger, so ``charge`` cannot be an
    argparse sub-command of ``account`` (it would take every LEDGER for a
    sub-command name); a ledger file named ``charge`` is read as ``./charge``.
    """
    at = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if at is not None and argv[at:at + 2] == ["account", "charge"]:
        head = build_parser().parse_args(argv[:at] + ["config"])  # --debug, --version
        args = _account_charge_parser().parse_args(argv[at + 2:])
        args.debug = args.debug or head.debug
        return args
    return build_parser().parse_args(argv)


def _add_account_command(sub) -> None:
    from pathlib import Path

    acc = sub.add_parser(
        "account", help="each identity group's spend and remaining budget in a ledger",
        description="Read a per-identity privacy ledger (fastldp.accounting.Ledger) and "
                    "print, for each group of identities that took part in the same "
                    "releases, how many they are, the epsilon they spent (basic "
                    "composition; a range when the releases charged them differently) and, "
                    "with --cap, the smallest remaining budget of the group. With --delta "
                    "the cap is (epsilon, delta) and each group's releases are composed "
                    "through their privacy events. The ledger is opened read-only and "
                    "checked first (SQLite's integrity check, every charge in (0, "
                    "MAX_EPSILON]). --json prints strict JSON: a remaining budget that is "
                    "-inf (no finite epsilon at that delta) is null, an infinite value "
                    "inside an event the string \"Infinity\". Exit status: 0; 1 when the "
                    "file is damaged (one line names the first problem); 2 on an error (a "
                    "missing or unreadable file, a bad option). 'fastldp account charge "
                    "LEDGER --store DIR --release NAME [--cap EPS]' charges a release: the "
                    "identities a stopped collector acknowledged (fastldp account charge "
                    "--help).")
    acc.add_argument("ledger", type=Path, metavar="LEDGER", help="the ledger file (SQLite)")
    acc.add_argument("--cap", type=float, metavar="EPS",
                     help="the budget: an epsilon under basic composition, or with --delta "
                          "the epsilon at that delta")
    acc.add_argument("--delta", type=float, metavar="D",
                     help="compose each group's events to the epsilon at this delta")
    acc.add_argument("--json", action="store_true", help="print JSON instead of a table")
    acc.set_defaults(func=_account)


def _serve(args) -> int:
    if args.hash_token is not None:
        from .service.auth import hash_token

        print(f"NAME {hash_token(args.hash_token)}  # a line of the tokens file "
              "(append 'lo hi' to bind an identity range)")
        return 0
    missing = [f"--{name}" for name in ("mechanism", "store", "tokens")
               if getattr(args, name) is None]
    if missing:
        raise ValueError(f"fastldp serve needs {', '.join(missing)} (or --hash-token TOKEN)")
    from .service.server import serve

    def ready(url: str) -> None:
        # said only once the spec, the tokens file, the port, the store (its lock and
        # recovery) and the TLS files are all in place: a failure before is one error line
        print(f"fastldp serve: collecting on {url} into {args.store} "
              "(Ctrl-C stops it and closes the open segment)", flush=True)

    serve(args.mechanism, args.store, args.tokens, host=args.host, port=args.port, ready=ready,
          tls_cert=args.tls_cert, tls_key=args.tls_key, max_body=args.max_body, rate=args.rate,
          segment_rows=args.segment_rows, threads=args.threads, max_rows=args.max_rows,
          publish_every=args.publish_every, publish_seconds=args.publish_seconds)
    return 0


def _add_serve_command(sub) -> None:
    from pathlib import Path

    srv = sub.add_parser(
        "serve", help="run a collector: authenticated, durable, exactly-once ingest over HTTP",
        description="Collect privatized reports over HTTP (POST /v1/reports, JSON or Arrow "
                    "IPC) from clients holding bearer tokens; store them durably and exactly "
                    "once in --store (Parquet segments that fastldp decode reads, and an "
                    "SQLite journal); serve the live estimate (GET /v1/estimate), statistics, "
                    "Prometheus metrics and a dashboard (GET /). Needs pip install "
                    "'fastldp[serve]'. Exit status: 0 after a stop, 2 on an error.")
    srv.add_argument("--mechanism", metavar="SPEC",
                     help="a preset (jprs-4096, olh-4096), a JSON/TOML spec file or inline JSON")
    srv.add_argument("--store", type=Path, metavar="DIR", help="the store directory")
    srv.add_argument("--tokens", type=Path, metavar="FILE",
                     help="the tokens file: lines 'name sha256-hex [identity_lo identity_hi]'")
    srv.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    srv.add_argument("--port", type=_number(int, 1, 65535), default=8000, help="port (default 8000)")
    srv.add_argument("--tls-cert", metavar="PEM", help="TLS certificate (with --tls-key)")
    srv.add_argument("--tls-key", metavar="PEM", help="TLS private key")
    srv.add_argument("--max-body", type=_count, default=16 << 20, metavar="BYTES",
                     help="largest request body, public (default 16777216); larger: HTTP 413")
    srv.add_argument("--max-rows", type=_count, default=None, metavar="N",
                     help="most reports per batch, public (default --max-body // 8); more, or "
                          "Arrow buffers decoding to more than N x (32 + 8 x report size) "
                          "bytes: HTTP 413")
    srv.add_argument("--rate", type=_positive_float, default=None, metavar="LIMIT",
                     help="reports per second per token (default: no limit); over it: HTTP 429")
    srv.add_argument("--segment-rows", type=_count, default=1 << 20, metavar="N",
                     help="reports per closed Parquet segment (default 1048576)")
    srv.add_argument("--threads", type=_workers, default=None,
                     help="threads of the live estimate's decode (default: all cores)")
    srv.add_argument("--publish-every", type=_count, default=1000, metavar="N",
                     help="the public estimate advances in steps of at least N reports "
                          "(default 1000), so that no two estimates it shows differ by fewer; "
                          "1 publishes every batch, which lets a reader difference two "
                          "estimates around one report and recover it")
    srv.add_argument("--publish-seconds", type=_positive_float, default=None, metavar="S",
                     help="and at least S seconds between two publications (default: none)")
    srv.add_argument("--hash-token", metavar="TOKEN",
                     help="print the tokens-file line of TOKEN (its SHA-256) and exit")
    srv.set_defaults(func=_serve)


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="fastldp", description=__doc__)
    parser.add_argument("--version", action="version", version=f"fastldp {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, show its traceback instead of one line")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="privatize a synthetic population with JPRS and score the estimate")
    demo.add_argument("--n", type=_count, default=128_000, help="identities (default 128000)")
    demo.add_argument("--d1", type=_count, default=64, help="rows of the relation table (default 64)")
    demo.add_argument("--d2", type=_count, default=64,
                      help="columns of the relation table (default 64)")
    demo.add_argument("--s", type=_count, default=128, help="support size (default 128)")
    demo.add_argument("--k", type=_count, default=8, help="relations per identity (default 8)")
    demo.add_argument("--epsilon", type=_positive_float, default=0.75,
                      help="homogeneous budget (default 0.75)")
    demo.add_argument("--eps", type=_positive_float, dest="epsilon", action=_DeprecatedAlias,
                      new="--epsilon", help=argparse.SUPPRESS)
    demo.add_argument("--seed", type=_uint64, default=0, help="master seed (default 0)")
    demo.add_argument("--threads", type=_workers, default=None, help="threads (default: all)")
    demo.set_defaults(func=_demo)
    cfg = sub.add_parser("config", help="show how the kernels were built")
    cfg.set_defaults(func=_config)
    _add_experiment_commands(sub)
    _add_audit_command(sub)
    _add_scale_commands(sub)
    _add_account_command(sub)
    _add_serve_command(sub)
    return parser


def _expected_errors() -> tuple:
    """The failures ``main`` reports in one line: bad input, unreadable files, pyarrow's errors."""
    errors = (ValueError, TypeError, OSError, OverflowError, ImportError)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # imported by the command that read Parquet, never here
        errors += (arrow.lib.ArrowException,)
    return errors


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def main(argv=None) -> int:
    """Run the command line; 2 and one ``fastldp: error:`` line on an expected failure.

    ``fastldp --debug ...`` shows the traceback instead.
    """
    args = _parse(list(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\nfastldp: interrupted; finished rows are kept and a rerun resumes.",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``fastldp audit --list | head``): not an error of ours;
        # point stdout at devnull so the interpreter's final flush does not fail again
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        if args.debug or not isinstance(exc, _expected_errors()):
            raise
        print(f"fastldp: error: {_one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
