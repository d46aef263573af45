"""Mechanism packages: one versioned JSON document holding exactly what was certified.

Schema: ``designer/deploy/mechanism-package.schema.json`` (JSON Schema 2020-12;
this module checks it by hand, no dependency). Version 1 members:

* ``format`` = ``"ldp-designer-mechanism"``, ``schema_version`` = 1, ``kind`` = ``"table"``;
* ``bits`` — every table row sums to ``2^bits``;
* ``inputs``, ``outputs`` — labels (distinct strings);
* ``E`` — k x k exact privacy levels as text (``"0"``, ``"1/2"``, ``"log(3)"``, ``"inf"``);
* ``table`` — k x m non-negative integers as decimal strings (exact at 2^64 in any language);
* ``certificate`` — the exact certificate of ``table / 2^bits`` against E (Definition 2,
  eq. 4): ``verdict`` (always ``"certified"``), ``mode`` (``"exact"``), ``margin``
  ``min (E - E_R)`` and ``tight_E``, floats written as text (``repr``; ``"inf"``);
* ``utility`` — the rounding loss (:class:`designer.deploy.table.RoundingLoss`), numbers as text;
* ``sha256`` — hex SHA-256 of the canonical form (:func:`designer.deploy.sampler.canonical_bytes`).

* ``signature`` (optional) — Ed25519 over the canonical form (:mod:`designer.deploy.signing`).

The hash detects any change to the file; it is not a signature (anyone can
re-hash an edited file), which is why :func:`verify_package` re-certifies the
table against the package's E from scratch, and recomputes every stored number the
package determines: the certificate's margin and ``tight_E``, the mixing weight's
agreement with the rounding method, ``mutual_information_table`` (under the uniform
prior) and ``relative_utility_loss`` from the two mutual informations. The numbers about
the channel before rounding (``max_total_variation``, ``max_relative_change``,
``mutual_information_channel``) describe a channel the package does not hold: only a
signature vouches for them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from designer.certify import Certificate, certify
from designer.deploy.sampler import (
    FORMAT,
    SCHEMA_VERSION,
    PackageError,
    PackageTampered,
    check_structure,
    package_digest,
    parse_package,
    verify_digest,
)
from designer.deploy.table import DeployableChannel, IntegerTable
from designer.exact import ExactEpsilon
from designer.io.writing import format_number, write_files
from designer.io.text import InputError, read_bytes
from designer.spec import PrivacyMatrix
from designer.utility import mutual_information

SCHEMA_PATH = Path(__file__).with_name("mechanism-package.schema.json")
#: Members of ``utility``, in the order they are written.
UTILITY_MEMBERS = (
    "rounding", "mixing_weight", "prior", "max_total_variation", "max_relative_change",
    "mutual_information_channel", "mutual_information_table", "relative_utility_loss",
)
#: Tolerances when comparing a stored certificate margin with the recomputed one: the
#: margin is a float summary (its last digits may differ between versions of the
#: certifier); the verdict is decided exactly and independently of it.
MARGIN_RTOL, MARGIN_ATOL = 1e-6, 1e-12
#: Tolerances for the utility numbers: recomputed by the same float formulas from the
#: package's own integers and text, so they agree to rounding noise.
UTILITY_RTOL, UTILITY_ATOL = 1e-12, 1e-15


@dataclass(frozen=True)
class PackageVerification:
    """Outcome of :func:`verify_package`: the package's E and table, and the recomputed exact certificate."""

    privacy: PrivacyMatrix
    table: IntegerTable
    certificate: Certificate
    sha256: str

    @property
    def certified(self) -> bool:
        return self.certificate.certified


def build_package(deployable: DeployableChannel, prior: str = "uniform") -> dict:
    """The package document (with its ``sha256``) of a certified table.

    Parameters
    ----------
    deployable : DeployableChannel
        From :func:`designer.deploy.table.deployable_table`; must be certified.
    prior : str
        How the prior of the mutual-information loss was chosen (written as is).
    """
    if not deployable.certificate.certified or deployable.certificate.mode != "exact":
        raise ValueError("only a table certified in exact mode can be packaged")
    table, loss = deployable.table, deployable.loss
    document = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": "table",
        "bits": table.bits,
        "inputs": list(table.input_labels),
        "outputs": list(table.output_labels),
        "E": [[str(level) for level in row] for row in deployable.privacy.exact_epsilon],
        "table": [[str(value) for value in row] for row in table.counts],
        "certificate": _certificate_fields(deployable.certificate),
        "utility": {
            "rounding": loss.method,
            "mixing_weight": str(loss.mixing_weight),
            "prior": prior,
            "max_total_variation": format_number(loss.max_total_variation),
            "max_relative_change": format_number(loss.max_relative_change),
            "mutual_information_channel": format_number(loss.mutual_information_channel),
            "mutual_information_table": format_number(loss.mutual_information_table),
            "relative_utility_loss": format_number(loss.relative_utility_loss),
        },
    }
    document["sha256"] = package_digest(document)
    return document


def package_text(document: dict) -> str:
    """Readable JSON: one member per line, one matrix row per line (the hash does not depend on layout)."""
    lines = []
    for key, value in document.items():
        if key in ("E", "table", "certificate"):
            lines.append(f"  {json.dumps(key)}: {_rows_text(value)}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_package(path: str | Path, document: dict) -> None:
    """Write a package atomically (temporary file + rename; nothing partial on failure)."""
    text = package_text(document)
    write_files([(path, lambda handle: handle.write(text))])


def read_package(path: str | Path) -> dict:
    """Read and parse a package file; :class:`PackageError` (one line) if unreadable or not JSON."""
    path = Path(path)
    try:
        text = read_bytes(path, "package").decode("utf-8")  # bounded; a pipe with no writer is refused
    except InputError as error:
        raise PackageError(str(error)) from None
    except UnicodeDecodeError:
        raise PackageError(f"{path}: not UTF-8 text, so not a package") from None
    try:
        return parse_package(text)
    except PackageError as error:
        raise PackageError(f"{path}: {error}") from None


def load_package(document: dict) -> tuple[PrivacyMatrix, IntegerTable]:
    """Check a package's structure (not its hash) and return its E and table.

    Raises
    ------
    PackageError
        Any departure from the schema (one line naming the member).
    """
    counts = check_structure(document)
    inputs = document["inputs"]
    k = len(inputs)
    rows = document["E"]
    if not isinstance(rows, list) or len(rows) != k or not all(isinstance(row, list) and len(row) == k for row in rows):
        raise PackageError(f"E must be {k} x {k} (one row and column per input)")
    if not all(isinstance(entry, str) for row in rows for entry in row):
        raise PackageError("E entries must be text (exact levels such as \"log(3)\", \"1/2\", \"inf\")")
    privacy = _package_privacy(rows, inputs)
    _check_certificate_fields(document["certificate"], k)
    _check_utility_fields(document["utility"])
    table = IntegerTable(tuple(tuple(row) for row in counts), document["bits"], tuple(inputs), tuple(document["outputs"]))
    return privacy, table


def verify_package(document: dict) -> PackageVerification:
    """Check a package and re-certify its table exactly against its E, from scratch.

    Order: structure (:class:`PackageError`, exit 2), then the SHA-256
    (:class:`PackageTampered`, exit 1), then the exact certificate of
    ``table / 2^bits`` (violated: exit 1), then the stored margin must agree
    with the recomputed one (else :class:`PackageTampered`).
    """
    privacy, table = load_package(document)
    verify_digest(document)
    certificate = certify(table.channel(), privacy, exact=True)
    if certificate.certified:
        stored = text_number(document["certificate"]["margin"])
        check_stored("certificate.margin", stored, certificate.margin)
        tight = np.array([[text_number(entry) for entry in row] for row in document["certificate"]["tight_E"]])
        recomputed = certificate.tight_epsilon
        differs = ~np.isclose(tight, recomputed, rtol=MARGIN_RTOL, atol=MARGIN_ATOL)
        if differs.any():
            x, x_prime = (int(i) for i in np.argwhere(differs)[0])
            check_stored(f"certificate.tight_E[{x}][{x_prime}]", tight[x, x_prime], recomputed[x, x_prime])
        _check_utility_numbers(document["utility"], table)
    return PackageVerification(privacy, table, certificate, document["sha256"])


def check_stored(name: str, stored: float, recomputed: float, rtol: float = MARGIN_RTOL,
                 atol: float = MARGIN_ATOL) -> None:
    """:class:`PackageTampered` unless a stored number agrees with its recomputed value (default relative 1e-6)."""
    if not math.isclose(stored, recomputed, rel_tol=rtol, abs_tol=atol) and stored != recomputed:
        raise PackageTampered(f"the stored {name} {format_number(stored)} differs from the recomputed "
                              f"{format_number(recomputed)}")


def _check_utility_numbers(utility: dict, table: IntegerTable) -> None:
    """Recompute what the package determines: the mixing weight's range, ``mutual_information_table``
    (uniform prior) and ``relative_utility_loss`` (:class:`PackageTampered` on a mismatch)."""
    weight = utility["mixing_weight"]
    if (Fraction(weight) == 0) != (utility["rounding"] != "mixed"):
        raise PackageTampered(f"utility.mixing_weight {weight} does not fit utility.rounding {utility['rounding']} "
                              "(mixed rounding has a positive weight, the others 0)")
    if utility["prior"] == "uniform":
        recomputed = mutual_information(np.full(table.k, 1.0 / table.k), table.probabilities())
        check_stored("utility.mutual_information_table", text_number(utility["mutual_information_table"]), recomputed,
                     UTILITY_RTOL, UTILITY_ATOL)
    channel, rounded = (text_number(utility[member]) for member in
                        ("mutual_information_channel", "mutual_information_table"))
    loss = 0.0 if channel == 0 else (channel - rounded) / channel
    check_stored("utility.relative_utility_loss", text_number(utility["relative_utility_loss"]), loss,
                 UTILITY_RTOL, UTILITY_ATOL)


# ------------------------------------------------------------------ helpers
def _package_privacy(rows: list[list[str]], inputs: list[str]) -> PrivacyMatrix:
    """E from its text entries, each distinct text parsed once (a package's E has few distinct levels)."""
    parsed: dict[str, ExactEpsilon] = {}
    exact = np.empty((len(rows), len(rows)), dtype=object)
    for x, row in enumerate(rows):
        for x_prime, entry in enumerate(row):
            level = parsed.get(entry)
            if level is None:
                try:
                    level = parsed[entry] = ExactEpsilon.parse(entry)
                except ValueError as error:
                    raise PackageError(f"bad E in the package: E row {x}, column {x_prime}: value {entry[:40]!r}: "
                                       f"{error}") from None
            exact[x, x_prime] = level
    floats = {entry: float(level) for entry, level in parsed.items()}
    values = np.array([[floats[entry] for entry in row] for row in rows], dtype=float)
    try:
        return PrivacyMatrix(values, inputs, "E of the package", exact_epsilon=exact)
    except ValueError as error:
        raise PackageError(f"bad E in the package: {error}") from None


def _certificate_fields(certificate: Certificate) -> dict:
    return {
        "verdict": certificate.verdict,
        "mode": certificate.mode,
        "margin": format_number(certificate.margin),
        "tight_E": [[format_number(value) for value in row] for row in certificate.tight_epsilon.tolist()],
    }


def _rows_text(value, indent: str = "  ") -> str:
    inner_indent = indent + "  "
    if isinstance(value, dict):
        inner = [
            f"{inner_indent}{json.dumps(key)}: "
            + (_rows_text(item, inner_indent) if key == "tight_E" else json.dumps(item))
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(inner) + f"\n{indent}}}"
    return "[\n" + ",\n".join(f"{inner_indent}{json.dumps(row)}" for row in value) + f"\n{indent}]"


def text_number(text) -> float:
    """A finite or infinite number written as text (``PackageError`` for anything else, NaN included)."""
    if not isinstance(text, str):
        raise PackageError(f"expected a number written as text, got {text!r}")
    try:
        value = float(text)
    except ValueError:
        raise PackageError(f"expected a number written as text, got {text!r}") from None
    if math.isnan(value):
        raise PackageError("NaN is not allowed in a package")
    return value


def _check_certificate_fields(certificate, k: int) -> None:
    if not isinstance(certificate, dict) or set(certificate) != {"verdict", "mode", "margin", "tight_E"}:
        raise PackageError("certificate must have exactly the members verdict, mode, margin, tight_E")
    if certificate["verdict"] != "certified" or certificate["mode"] != "exact":
        raise PackageError("a package holds only tables certified in exact mode (verdict certified, mode exact)")
    text_number(certificate["margin"])
    tight = certificate["tight_E"]
    if not isinstance(tight, list) or len(tight) != k or not all(isinstance(row, list) and len(row) == k for row in tight):
        raise PackageError(f"certificate.tight_E must be {k} x {k}")
    for row in tight:
        for entry in row:
            text_number(entry)


def _check_utility_fields(utility) -> None:
    if not isinstance(utility, dict) or set(utility) != set(UTILITY_MEMBERS):
        raise PackageError(f"utility must have exactly the members {', '.join(UTILITY_MEMBERS)}")
    if utility["rounding"] not in ("nearest", "directed", "mixed"):
        raise PackageError(f"utility.rounding must be nearest, directed or mixed, got {utility['rounding']!r}")
    if not all(isinstance(utility[member], str) for member in UTILITY_MEMBERS):
        raise PackageError("utility members must be text")
    try:
        weight = Fraction(utility["mixing_weight"])
    except (ValueError, ZeroDivisionError):
        raise PackageError(f"utility.mixing_weight must be an exact fraction, got {utility['mixing_weight']!r}") \
            from None
    if not 0 <= weight <= Fraction(1, 2):
        raise PackageError(f"utility.mixing_weight must be from 0 to 1/2, got {utility['mixing_weight']}")
    for member in UTILITY_MEMBERS[3:]:
        text_number(utility[member])
