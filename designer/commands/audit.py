"""``ldp-designer audit``: test code (not a matrix) against a declared E by sampling.

Exit codes: 0 no violation found (and, with ``--declared``, the code is
consistent with the declared matrix, which is proved E-LDP); 1 violated;
2 bad input; 3 no violation found but, with ``--declared``, the loop did not
close (the reports reject the declared matrix, or that matrix is not E-LDP).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from designer.commands import guarded, print_json
from designer.commands.audit_report import report, rounding_hint
from designer.defaults import (
    AUDIT_BOOSTED_LIMIT,
    AUDIT_COMMAND_TIMEOUT,
    AUDIT_CONFIDENCE,
    AUDIT_MAX_MEMORY_GIB,
    AUDIT_MAX_PAIRS,
    AUDIT_NARROWED_MAX_PAIRS,
    AUDIT_TRAIN_FRACTION,
)

VIOLATED = 1
NOT_CLOSED = 3
#: Below this ``--seconds``, the learned attacks are off unless ``--attacks`` asks for them.
LEARNED_MIN_SECONDS = 10.0


class Correction(str, Enum):
    holm = "holm"
    bonferroni = "bonferroni"


@guarded(reads=("--E", "--sampler", "--command", "--reports", "--support", "--features", "--declared"),
         writes=("--channel-out", "--lower-bounds-out", "--plot"))
def audit_command(
    e_file: Path = typer.Option(..., "--E", help="CSV of the declared E (k x k; inf and log(r) allowed)."),
    sampler: str = typer.Option(None, "--sampler", help="Python sampler module:function or file.py:function, called as f(x, n, rng, **args)."),
    arguments: list[str] = typer.Option(None, "--arg", help="key=value passed to the sampler and the support function (repeatable)."),
    command: str = typer.Option(None, "--command", help="A program: reads one input per line on stdin, writes one report per line."),
    reports_file: Path = typer.Option(None, "--reports", help="A file of input,report lines."),
    parser: str = typer.Option(None, "--parser", help="Read --command/--reports lines by 'numbers' or module:function (the audit then audits the parsed values; default: the bytes)."),
    support: str = typer.Option(None, "--support", help="Support function module:function, f(reports, z, **args) -> bools (hashed reports)."),
    attacks: str = typer.Option(None, "--attacks", help=f"Learned attacks: logistic,boosted or none (default: both up to {AUDIT_BOOSTED_LIMIT:,} reports, then logistic)."),
    features: str = typer.Option(None, "--features", help="User features module:function, f(reports, **args) -> one row of numbers per report."),
    reports_per_input: int = typer.Option(None, "--reports-per-input", help="Reports drawn for every input."),
    seconds: float = typer.Option(None, "--seconds", help="Spend this many seconds on the whole audit instead."),
    max_memory: float = typer.Option(AUDIT_MAX_MEMORY_GIB, "--max-memory", help="GiB the reports may take (a larger budget is refused up front)."),
    timeout: float = typer.Option(AUDIT_COMMAND_TIMEOUT, "--timeout", help="Seconds a --sampler call or a --command program may take per batch of inputs (then it is stopped: exit 2)."),
    confidence: float = typer.Option(AUDIT_CONFIDENCE, "--confidence", help="Probability that a 'violated' verdict is right."),
    delta: float = typer.Option(0.0, "--delta", help="Audit (E, delta)-LDP: violated when P(S|x) > e^E P(S|x') + delta."),
    correction: Correction = typer.Option(Correction.holm, "--correction", help="holm or bonferroni (across pairs)."),
    max_pairs: int = typer.Option(None, "--max-pairs", help=f"Pairs tested, chosen on the training split (0: all; default: all when the budget affords them (docs/audit.md), else {AUDIT_MAX_PAIRS}; {AUDIT_NARROWED_MAX_PAIRS} after the adaptive narrowing round)."),
    train_fraction: float = typer.Option(AUDIT_TRAIN_FRACTION, "--train-fraction", help="Share of reports that choose pairs and events."),
    alphabet: int = typer.Option(None, "--alphabet", help="Declared output alphabet 0..M-1 (other reports are an error)."),
    declared: Path = typer.Option(None, "--declared", help="CSV of the channel the code claims to implement."),
    channel_out: Path = typer.Option(None, "--channel-out", help="Write the estimated channel here (small output spaces)."),
    lower_bounds_out: Path = typer.Option(None, "--lower-bounds-out", help="Write the k x k matrix of simultaneous lower bounds on each pair's privacy loss."),
    plot: Path = typer.Option(None, "--plot", help="Save the lower-bound matrix beside the declared E (PNG, PDF, SVG)."),
    adaptive: bool = typer.Option(None, "--adaptive/--fixed-split", help="Pilot on every input (--train-fraction of the budget), the rest on the inputs of the chosen pairs (default with --sampler/--command and --reports-per-input, without --looks, --declared, --channel-out, --lower-bounds-out, --plot); --fixed-split: every input's reports split once."),
    looks: str = typer.Option(None, "--looks", help="Early stopping: audit at these shares of --reports-per-input (e.g. 0.25,0.5,1), error split equally; stop at a violation."),
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Test for state across calls on a share of the budget (random input order; --sampler and --command)."),
    seed: int = typer.Option(None, "--seed", min=0, help="Random seed (reproducible audits)."),
    rounds: int = typer.Option(None, "--rounds", help="Longitudinal: --sampler is a client factory f(rng, **args) -> client(x); each user is one client asked this many times, E the claimed long-term level."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Audit a mechanism given as code against E. Exit 0 no violation found, 1 violated, 2 bad input, 3 loop not closed."""
    import numpy as np

    from designer.audit import (
        Budget,
        ReportFile,
        audit_reports,
        close_loop,
        estimate_channel,
        output_counts,
        parse_arguments,
    )
    from designer.audit.adaptive import choose_adaptive
    from designer.audit.events import MAX_OUTPUTS
    from designer.audit.run import audit_source
    from designer.audit.usercode import load_callable
    from designer.audit.verdict import check_settings
    from designer.io import read_channel, read_privacy_matrix, write_matrix_csv

    chosen = [option for option, value in (("--sampler", sampler), ("--command", command), ("--reports", reports_file)) if value]
    if len(chosen) != 1:
        raise ValueError("give exactly one source of reports: --sampler, --command or --reports")
    if arguments and not (sampler or support or features):
        raise ValueError("--arg applies to --sampler, --support and --features")
    if rounds is not None and (not sampler or declared or channel_out):
        raise ValueError("--rounds asks client instances built by --sampler (a factory), without --declared or "
                         "--channel-out (the joint reports have no declared channel)")
    chosen_attacks = parse_attacks(attacks)
    if chosen_attacks is None and seconds is not None and seconds < LEARNED_MIN_SECONDS:
        chosen_attacks = ()  # fitting the classifiers would not fit in a short time budget
    if alphabet is not None and alphabet < 1:
        raise ValueError(f"--alphabet must be >= 1, got {alphabet}")
    check_settings(confidence, correction.value, max_pairs, train_fraction, delta)
    shares = parse_looks(looks)
    privacy = read_privacy_matrix(e_file)
    k = privacy.k
    declared_channel = read_channel(declared) if declared else None
    if declared_channel is not None:
        if declared_channel.k != k:
            raise ValueError(f"{declared}: the declared channel has {declared_channel.k} rows but E is {k} x {k}")
        if alphabet is not None and alphabet != declared_channel.n_outputs:
            raise ValueError(f"--alphabet {alphabet} but {declared} has {declared_channel.n_outputs} outputs")
        alphabet = declared_channel.n_outputs
    extra = parse_arguments(arguments)
    support_function = load_callable(support, "support function") if support else None
    features_function = load_callable(features, "features function") if features else None
    rng = np.random.default_rng(seed)
    console = Console(stderr=True)

    options = dict(
        correction=correction.value, max_pairs=max_pairs, support=support_function, support_arguments=extra,
        alphabet=alphabet, attacks=chosen_attacks, features=features_function,
        features_arguments=_accepted(features_function, extra), delta=delta,
    )
    adaptive = choose_adaptive(adaptive, reports_file is None, reports_per_input is not None, shares is not None,
                               bool(declared or channel_out), bool(lower_bounds_out or plot))
    if shares is not None and (reports_file or declared or channel_out):
        raise ValueError("--looks draws the reports in steps: it needs --sampler or --command, without "
                         "--declared or --channel-out")
    if parser and sampler:
        raise ValueError("--parser reads lines of text: it applies to --command and --reports, not --sampler")
    if reports_file:
        if reports_per_input is not None or seconds is not None:
            raise ValueError("--reports-per-input and --seconds apply to --sampler and --command, not --reports")
        source = ReportFile(reports_file, k, parser)
        reports = source.reports
        result = audit_reports(reports, privacy, confidence, train_fraction=train_fraction, rng=rng, **options)
    else:
        budget = Budget(reports_per_input, seconds, max_memory * 2**30)
        source = _source(sampler, command, extra, timeout, rounds, parser)
        # the source first: a sampler's worker is forked before the progress bar starts its thread
        with source, Progress(
            TextColumn("drawing reports"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
            console=console, transient=True, disable=not console.is_terminal,
        ) as progress:
            task = progress.add_task("draw", total=1.0)
            result, reports = audit_source(source, privacy, budget, rng, adaptive, shares, probe, train_fraction,
                                           confidence, lambda fraction: progress.update(task, completed=fraction),
                                           **options)
    estimate = loop = hint = None
    if result.outputs is not None and result.outputs.n_outputs <= MAX_OUTPUTS and len(reports) == k:
        counts = output_counts(result.encoded, k, result.outputs.n_outputs)
        estimate = estimate_channel(counts, confidence)
        if declared_channel is not None:
            loop = close_loop(counts, declared_channel, privacy, confidence)
            hint = rounding_hint(declared_channel, privacy, loop.certificate)
    elif declared_channel is not None:
        raise ValueError("--declared needs reports of every input (the channel is tested row by row)")
    if channel_out is not None:
        if estimate is None:
            raise ValueError(
                f"--channel-out needs a finite output space (at most {MAX_OUTPUTS} outputs) and reports of every input"
            )
        write_matrix_csv(channel_out, estimate.matrix)

    if lower_bounds_out is not None:
        write_matrix_csv(lower_bounds_out, result.lower_bounds)
    if plot is not None:
        from designer.audit.plot import plot_lower_bounds

        plot_lower_bounds(result.lower_bounds, privacy.epsilon, plot, f"{source.description} against {e_file}")
    missing = getattr(source, "missing", [])  # inputs of a --reports file without reports
    if as_json:
        payload = {"source": source.description, "E": str(e_file), "k": k, "adaptive": adaptive,
                   "reading": source.reading(), **result.to_dict()}
        if missing:
            payload["inputs_without_reports"] = missing
        if estimate is not None:
            payload["channel"] = estimate.to_dict()
            payload["outputs"] = [_label(value) for value in result.outputs.values]
        if loop is not None:
            payload["declared"] = {"file": str(declared), **loop.to_dict()}
            if hint:
                payload["declared"]["hint"] = hint
        print_json(payload)
    else:
        report(result, estimate, loop, source.description, str(e_file), declared, Console(soft_wrap=True), missing,
               hint, adaptive, source.reading())
    if result.violated:
        raise typer.Exit(VIOLATED)
    if loop is not None and not loop.closed:
        raise typer.Exit(NOT_CLOSED)


def _source(sampler: str | None, command: str | None, arguments: dict, timeout: float, rounds: int | None,
            parser: str | None):
    """The report source of --sampler (a client factory with --rounds) or --command (its lines read by
    --parser)."""
    from designer.audit import CommandSampler, PythonSampler

    if rounds is not None:
        from designer.audit.rounds import RoundsSampler

        return RoundsSampler(sampler, arguments, rounds, timeout)
    return PythonSampler(sampler, arguments, timeout) if sampler else CommandSampler(command, timeout, parser)


def parse_looks(text: str | None) -> tuple[float, ...] | None:
    """``--looks``: increasing shares of the budget ending at 1 (None: one look at the end)."""
    from designer.audit.sequential import check_looks

    if text is None:
        return None
    try:
        shares = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--looks {text!r}: expected comma-separated shares such as 0.25,0.5,1") from None
    check_looks(shares)
    return shares


def parse_attacks(text: str | None) -> tuple[str, ...] | None:
    """``--attacks``: None (the default set), ``()`` for ``none``, else the named models."""
    from designer.audit.attacks import MODELS

    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names == ("none",):
        return ()
    unknown = [name for name in names if name not in MODELS]
    if unknown or not names:
        raise ValueError(f"--attacks {text!r}: expected none or a comma-separated subset of {', '.join(MODELS)}")
    return names


def _accepted(function, arguments: dict) -> dict:
    """The ``--arg`` values a function takes by name (all of them if it takes ``**keywords``)."""
    import inspect

    if function is None:
        return {}
    parameters = inspect.signature(function).parameters
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return arguments
    return {key: value for key, value in arguments.items() if key in parameters}


def _label(value):
    item = getattr(value, "tolist", None)
    return item() if item else value


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
