"""How ``ldp-designer audit`` prints its verdict: the witness, the estimate, the power statements, rounding hints."""

from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console
from rich.markup import escape


def report(result, estimate, loop, source: str, e_name: str, declared: Path | None, out: Console,
           missing: list[int], hint: str | None, adaptive: bool, reading: dict | None = None) -> None:
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
    _report_reading(reading, out)
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
    _report_probe(result, out)
    if not result.violated:
        best = result.best
        out.print(escape(
            f"  largest lower bound: log P(S|x)/P(S|x') >= {best.lower_bound:.4g} at x={best.x} x'={best.x_prime} "
            f"(E = {best.allowed:.4g}), event {{{best.event}}}: {best.count_x}/{best.trials_x} vs "
            f"{best.count_other}/{best.trials_other}"
        ))
        out.print("  no violation found is not a certificate: sampling cannot prove privacy")
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


def _report_reading(reading: dict | None, out: Console) -> None:
    """How the lines of a program or a file were read: their bytes (and the respellings seen), or a parser."""
    if reading is None:
        return
    if reading["reading"] == "bytes":
        respelled = reading["respelled"]
        if respelled:
            row = next(iter(respelled.values()))
            out.print(escape(f"  reports read as their bytes: {row['reports']:,} reports are not the canonical "
                             f"spelling of a number (e.g. {_examples(row)}): each is an output of its own, "
                             "distinct from the number (declare --parser numbers if the collector reads them as "
                             "numbers)"))
        return
    normalisations = reading["normalisations"]
    audited = f"  reports read by --{reading['reading']}: the audit audits the parsed values, not the bytes"
    if normalisations is None:
        out.print(escape(f"{audited} (the parser's normalisations are its own)"))
    elif not normalisations:
        out.print(escape(f"{audited}; none of its normalisations changed a report"))
    else:
        applied = "; ".join(f"{kind}: {row['reports']:,} reports (e.g. {_examples(row)})"
                            for kind, row in normalisations.items())
        out.print(escape(f"{audited}; normalisations applied: {applied}"))


def _examples(row: dict) -> str:
    return ", ".join(repr(example["line"]) + (f" from input {example['input']}" if example["input"] is not None else "")
                     for example in row["examples"])


def _report_probe(result, out: Console) -> None:
    """The state probe: its violations with their witnesses, or what it tested."""
    probe = result.probe
    if probe is None:
        return
    for name, test in probe.tests.items():
        if test is not None and test.violated:
            w = test.witness
            out.print(escape(
                f"  violated (state): the client keeps state across calls ({name}): after a call with {w['group']}, "
                f"{w['cell']} in {w['count']}/{w['calls']} calls, against {w['count_others']}/{w['calls_others']} "
                f"after the others; p = {test.p_value:.3g} ({test.method}): a report depends on the call before "
                "it, so the client is no E-LDP channel"))
    if not probe.violated:
        tested = [f"its {name} (p = {test.p_value:.3g})" for name, test in probe.tests.items() if test is not None]
        out.print(f"  state probe: {probe.pairs:,} pairs of calls on random inputs; no report depended on "
                  + (" or on ".join(tested) if tested else "anything tested (too few calls)"))


def _report_power(result, out: Console) -> None:
    """Power per tested pair, for the kind of event its attack found, and per attack class (never next to a
    violation). Each figure is conditional on the stated event being the one chosen for the pair on the
    training reports: "if chosen as the event"."""
    from designer.audit.power import POWER

    _report_class_power(result, out)

    finite = sorted((pair for pair in result.pairs if math.isfinite(pair.detectable_excess)),
                    key=lambda pair: pair.detectable_excess)
    if result.delta:  # (E, delta): the smallest leak (an event x' never produces) detected, per tested pair
        nothing = "  power, (E, delta): no tested pair would reveal an event x' never produces at this budget"
        lead = (f"  power, (E, delta), per tested pair: an event x' never produces, of probability delta + h under x "
                f"(delta = {result.delta:g}), if chosen as the event, would have been detected with probability "
                f"{POWER:g} from h =")
        tail = ""
    else:
        nothing = "  power: no tested pair's event would reveal a finite excess over E at this budget"
        lead = ("  power, per tested pair, for an event of the kind its attack found (as likely under x as its "
                "witness), if chosen as the event: an excess over E of")
        tail = f" would have been detected with probability {POWER:g}"
    if not finite:
        out.print(nothing)
        return
    low, high = finite[0], finite[-1]
    out.print(escape(
        f"{lead} {low.detectable_excess:.3g} (x={low.x} x'={low.x_prime}) to {high.detectable_excess:.3g} "
        f"(x={high.x} x'={high.x_prime}){tail}; {len(result.pairs) - len(finite)} tested pairs without a finite "
        "figure; nothing is claimed for untested pairs or for events the attacks cannot express"
    ))


def _report_class_power(result, out: Console) -> None:
    """One line per attack class: the smallest and largest detection probability over the tested pairs."""
    for kind, row in result.power_by_class().items():
        low, high = row["smallest"], row["largest"]
        if kind == "rare outputs":
            violation = (f"an output of probability {low['event_probability']:g} under x that x' never produces "
                         "(infinite loss; it must show in x's training reports)")
        else:
            violation = ("an event as likely under x as this class's witness with " + (
                f"P(S|x) - e^E P(S|x') = delta + {row['excess']:g}" if result.delta else
                f"log P(S|x)/P(S|x') = E + {row['excess']:g}"))
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
