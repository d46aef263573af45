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

The hash detects any change to the file; it is not a signature (anyone can
re-hash an edited file), which is why :func:`verify_package` re-certifies the
table against the package's E from scratch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

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
from designer.io.writing import format_number, write_files
from designer.io.text import InputError, read_bytes
from designer.spec import PrivacyMatrix

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


@dataclass(frozen=True)
class PackageVerification:
    """Outcome of :func:`verify_package`: the package's E and table, and the recomputed exact certificate."""

    privacy: PrivacyMatrix
    table: IntegerTable
    certificate: Certificate
    digest: str

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
    try:
        privacy = PrivacyMatrix(rows, inputs, "E of the package")
    except ValueError as error:
        raise PackageError(f"bad E in the package: {error}") from None
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
        stored = _text_number(document["certificate"]["margin"])
        if not math.isclose(stored, certificate.margin, rel_tol=MARGIN_RTOL, abs_tol=MARGIN_ATOL):
            raise PackageTampered(
                f"the stored certificate margin {document['certificate']['margin']} differs from the recomputed "
                f"{format_number(certificate.margin)}"
            )
    return PackageVerification(privacy, table, certificate, document["sha256"])


# ------------------------------------------------------------------ helpers
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


def _text_number(text) -> float:
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
    _text_number(certificate["margin"])
    tight = certificate["tight_E"]
    if not isinstance(tight, list) or len(tight) != k or not all(isinstance(row, list) and len(row) == k for row in tight):
        raise PackageError(f"certificate.tight_E must be {k} x {k}")
    for row in tight:
        for entry in row:
            _text_number(entry)


def _check_utility_fields(utility) -> None:
    if not isinstance(utility, dict) or set(utility) != set(UTILITY_MEMBERS):
        raise PackageError(f"utility must have exactly the members {', '.join(UTILITY_MEMBERS)}")
    if utility["rounding"] not in ("nearest", "directed", "mixed"):
        raise PackageError(f"utility.rounding must be nearest, directed or mixed, got {utility['rounding']!r}")
    if not all(isinstance(utility[member], str) for member in UTILITY_MEMBERS):
        raise PackageError("utility members must be text")
    for member in UTILITY_MEMBERS[3:]:
        _text_number(utility[member])
