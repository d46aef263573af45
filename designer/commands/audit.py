"""``ldp-designer audit``: test code (not a matrix) against a declared E by sampling.

Exit codes: 0 no violation found (and, with ``--declared``, the code is
consistent with the declared matrix, which is proved E-LDP); 1 violated;
2 bad input; 3 no violation found but, with ``--declared``, the loop did not
close (the reports reject the declared matrix, or that matrix is not E-LDP).
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from designer.commands import guarded, print_json
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


@guarded
def audit_command(
    e_file: Path = typer.Option(..., "--E", help="CSV of the declared E (k x k; inf and log(r) allowed)."),
    sampler: str = typer.Option(None, "--sampler", help="Python sampler module:function or file.py:function, called as f(x, n, rng, **args)."),
    arguments: list[str] = typer.Option(None, "--arg", help="key=value passed to the sampler and the support function (repeatable)."),
    command: str = typer.Option(None, "--command", help="A program: reads one input per line on stdin, writes one report per line."),
    reports_file: Path = typer.Option(None, "--reports", help="A file of input,report lines."),
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
    seed: int = typer.Option(None, "--seed", help="Random seed (reproducible audits)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Audit a mechanism given as code against E. Exit 0 no violation found, 1 violated, 2 bad input, 3 loop not closed."""
    import numpy as np

    from designer.audit import (
        Budget,
        CommandSampler,
        PythonSampler,
        ReportFile,
        audit_reports,
        close_loop,
        collect_reports,
        estimate_channel,
        output_counts,
        parse_arguments,
    )
    from designer.audit.adaptive import choose_adaptive
    from designer.audit.events import MAX_OUTPUTS
    from designer.audit.sources import load_callable
    from designer.audit.verdict import check_settings
    from designer.io import read_channel, read_privacy_matrix, write_matrix_csv

    chosen = [option for option, value in (("--sampler", sampler), ("--command", command), ("--reports", reports_file)) if value]
    if len(chosen) != 1:
        raise ValueError("give exactly one source of reports: --sampler, --command or --reports")
    if arguments and not (sampler or support or features):
        raise ValueError("--arg applies to --sampler, --support and --features")
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
        confidence=confidence, correction=correction.value, max_pairs=max_pairs, support=support_function,
        support_arguments=extra, alphabet=alphabet, attacks=chosen_attacks, features=features_function,
        features_arguments=_accepted(features_function, extra), delta=delta,
    )
    adaptive = choose_adaptive(adaptive, reports_file is None, reports_per_input is not None, shares is not None,
                               bool(declared or channel_out), bool(lower_bounds_out or plot))
    if shares is not None and (reports_file or declared or channel_out):
        raise ValueError("--looks draws the reports in steps: it needs --sampler or --command, without "
                         "--declared or --channel-out")
    if reports_file:
        if reports_per_input is not None or seconds is not None:
            raise ValueError("--reports-per-input and --seconds apply to --sampler and --command, not --reports")
        source = ReportFile(reports_file, k)
        reports = source.reports
        result = audit_reports(reports, privacy, train_fraction=train_fraction, rng=rng, **options)
    else:
        budget = Budget(reports_per_input, seconds, max_memory * 2**30)
        source = PythonSampler(sampler, extra, timeout) if sampler else CommandSampler(command, timeout)
        # the source first: a sampler's worker is forked before the progress bar starts its thread
        with source, Progress(
            TextColumn("drawing reports"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
            console=console, transient=True, disable=not console.is_terminal,
        ) as progress:
            task = progress.add_task("draw", total=1.0)
            advance = lambda fraction: progress.update(task, completed=fraction)  # noqa: E731
            if adaptive:
                from designer.audit.adaptive import adaptive_audit

                reports = {}
                result = adaptive_audit(source, privacy, budget, rng, train_fraction, advance, **options)
            elif shares is not None:
                from designer.audit.sequential import sequential_audit

                reports = {}
                result = sequential_audit(source, privacy, budget, rng, shares, progress=advance,
                                          train_fraction=train_fraction, **options)
            else:
                reports = collect_reports(source, k, budget, rng, advance)
        if not adaptive and shares is None:
            result = audit_reports(reports, privacy, train_fraction=train_fraction, rng=rng, **options)
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
        payload = {"source": source.description, "E": str(e_file), "k": k, "adaptive": adaptive, **result.to_dict()}
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
        _report(result, estimate, loop, source.description, str(e_file), declared, Console(soft_wrap=True), missing,
                hint, adaptive)
    if result.violated:
        raise typer.Exit(VIOLATED)
    if loop is not None and not loop.closed:
        raise typer.Exit(NOT_CLOSED)


def _report(result, estimate, loop, source: str, e_name: str, declared: Path | None, out: Console,
            missing: list[int], hint: str | None, adaptive: bool) -> None:
    import numpy as np

    colour = "red" if result.violated else "green"
    out.print(f"[bold {colour}]{result.verdict.upper()}[/]: {escape(source)} against E = {escape(e_name)}")
    counts = list(result.reports_per_input.values())
    per_input = f"{min(counts):,}" if min(counts) == max(counts) else f"{min(counts):,}..{max(counts):,}"
    split = (f"adaptive: a pilot of {result.train_fraction:.0%} on every input chooses pairs and events, the rest "
             "tests them on their inputs" if adaptive else
             f"fixed split: {result.train_fraction:.0%} choose events, the rest test them")
    out.print(
        f"  {per_input} reports per input ({split}); "
        f"events: {result.event_space}; {len(result.pairs)} of {result.pairs_constrained} constrained pairs tested, "
        f"{result.correction} correction, confidence {result.confidence:g}"
    )
    if result.looks:
        last = result.looks[-1]
        out.print(f"  early stopping: look {len(result.looks)} of the schedule at {last['share']:g} of the budget "
                  f"({last['reports_per_input']:,} reports per input), error {last['error']:.3g} per look")
    if missing:
        out.print(f"  note: no reports of inputs {missing[:20]}{' ...' if len(missing) > 20 else ''}: their pairs were not tested")
    for pair in result.violations[:10]:
        out.print(escape(
            f"  violated: x={pair.x} x'={pair.x_prime} ({pair.attack}) event {{{pair.event}}}: {pair.count_x}/{pair.trials_x} vs "
            f"{pair.count_other}/{pair.trials_other}; log P(S|x)/P(S|x') estimated {pair.log_ratio:.4g} > "
            f"E = {pair.allowed:.4g}, p = {pair.p_value:.3g} ({result.correction}); "
            f"simultaneous lower bound {pair.lower_bound:.4g}"
            + (f"; P(S|x) - e^E P(S|x') >= {pair.hockey_stick_lower_bound:.4g} > delta = {result.delta:g}"
               if result.delta else "")
        ))
    if len(result.violations) > 10:
        out.print(f"  ... and {len(result.violations) - 10} more violated pairs")
    if not result.violated:
        best = result.best
        out.print(escape(
            f"  largest lower bound: log P(S|x)/P(S|x') >= {best.lower_bound:.4g} at x={best.x} x'={best.x_prime} "
            f"(E = {best.allowed:.4g}), event {{{best.event}}}: {best.count_x}/{best.trials_x} vs "
            f"{best.count_other}/{best.trials_other}"
        ))
        out.print("  no violation found is not a certificate: sampling cannot prove privacy")
        if result.delta:
            out.print(f"  (E, delta) audit, delta = {result.delta:g}: no power statement (it is stated for pure E-LDP)")
        else:
            _report_power(result, out)
    off_diagonal = result.lower_bounds[~np.eye(len(result.lower_bounds), dtype=bool)]
    if off_diagonal.size:
        out.print(
            f"  empirical E (simultaneous {result.confidence:g} lower bounds on every audited pair's privacy loss): "
            f"{off_diagonal.min():.4g} to {off_diagonal.max():.4g} (--lower-bounds-out writes the matrix)"
        )
    if estimate is not None:
        shape = estimate.matrix.shape
        out.print(
            f"  channel estimated ({shape[0]} inputs x {shape[1]} outputs), simultaneous {estimate.confidence:g} "
            f"intervals, largest half-width {estimate.largest_half_width:.3g}"
        )
    if loop is not None:
        fit = loop.fit
        rejected = [int(x) for x in fit.rejected.nonzero()[0]]
        verdict = "consistent with" if fit.consistent else f"NOT consistent with (inputs {rejected[:10]})"
        out.print(escape(
            f"  the reports are {verdict} {declared} (chi-square per input, Holm, confidence {fit.confidence:g}); "
            f"smallest p = {fit.p_values.min():.3g}"
        ))
        certificate = loop.certificate
        state = "is E-LDP (exact proof)" if certificate.certified else "is NOT E-LDP (exact)"
        out.print(escape(f"  {declared} {state}: margin {certificate.margin:.6g}"))
        if hint:
            out.print(escape(f"  hint: {hint}"))
        if loop.closed:
            out.print("  [bold green]loop closed[/]: the code matches this matrix, and this matrix is E-LDP")


def _report_power(result, out: Console) -> None:
    """Power per tested pair, for the kind of event its attack found, and per attack class (never next to a
    violation). Each figure is conditional on the stated event being the one chosen for the pair on the
    training reports: "if chosen as the event"."""
    from designer.audit.power import POWER

    _report_class_power(result, out)

    finite = [pair for pair in result.pairs if math.isfinite(pair.detectable_excess)]
    if not finite:
        out.print("  power: no tested pair's event would reveal a finite excess over E at this budget")
        return
    finite.sort(key=lambda pair: pair.detectable_excess)
    low, high = finite[0], finite[-1]
    out.print(escape(
        f"  power, per tested pair, for an event of the kind its attack found (as likely under x as its witness), "
        f"if chosen as the event: an excess over E of {low.detectable_excess:.3g} (x={low.x} x'={low.x_prime}) to "
        f"{high.detectable_excess:.3g} (x={high.x} x'={high.x_prime}) would have been detected with probability "
        f"{POWER:g}; {len(result.pairs) - len(finite)} tested pairs without a finite figure; nothing is claimed for "
        "untested pairs or for events the attacks cannot express"
    ))


def _report_class_power(result, out: Console) -> None:
    """One line per attack class: the smallest and largest detection probability over the tested pairs."""
    for kind, row in result.power_by_class().items():
        low, high = row["smallest"], row["largest"]
        if kind == "rare outputs":
            violation = (f"an output of probability {low['event_probability']:g} under x that x' never produces "
                         "(infinite loss; it must show in x's training reports)")
        else:
            violation = (f"an event as likely under x as this class's witness with log P(S|x)/P(S|x') = E + "
                         f"{row['excess']:g}")
        span = (f"{low['probability']:.3g} (x={low['pair'][0]} x'={low['pair'][1]}) to {high['probability']:.3g} "
                f"(x={high['pair'][0]} x'={high['pair'][1]}) per tested pair"
                if f"{low['probability']:.3g}" != f"{high['probability']:.3g}" else
                f"{low['probability']:.3g} on every tested pair")
        out.print(escape(f"  power, {kind}: {violation}, if chosen as the event, would have been detected with "
                         f"probability {span}"))


def rounding_hint(declared, privacy, certificate) -> str | None:
    """Why a decimal matrix failed, when it fails only by the rounding of its decimals."""
    from designer.certify import certify

    if certificate.certified or not declared.is_exact:
        return None
    denominators = [value.denominator for value in declared.exact_matrix.ravel()]
    if not any(_is_decimal_denominator(d) and d > 1 for d in denominators):
        return None
    if not certify(declared.matrix, privacy).certified:
        return None
    return (
        f"the matrix fails only by the rounding of its decimals (margin {certificate.margin:.3g}): decimals are "
        "read exactly as written; write the entries as fractions (e.g. 1/3) to certify the intended matrix"
    )


def _is_decimal_denominator(denominator: int) -> bool:
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


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
