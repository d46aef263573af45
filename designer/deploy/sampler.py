"""Exact sampler for a mechanism package, standard library only (``secrets``, ``json``, ``hashlib``, ``base64``).

This file is the Python client: copy it next to a package and use it with no
other dependency::

    from sampler import TableSampler
    mechanism = TableSampler.from_file("mech.json")   # checks structure and SHA-256
    report = mechanism.report("yes")                   # an output label

    from sampler import load_sampler, parse_package    # any kind: table, block-hadamard, high-low-hadamard, orbit
    mechanism = load_sampler(parse_package(open("hr.json").read()))
    report = mechanism.sample(4)                       # an output index for symbol 4

Sampling (exact): row x of the table holds integers ``T[x, 0..m-1]`` summing to
``2^b``; with cumulative thresholds ``c_y = T[x, 0] + ... + T[x, y]`` one uniform
integer ``u`` in ``[0, 2^b)`` from :func:`secrets.randbits` gives the report
``Y = min {y : u < c_y}``. Exactly ``T[x, y]`` of the ``2^b`` values of ``u`` give
``Y = y``, so ``P(Y = y | X = x) = T[x, y] / 2^b``: the channel that was
certified, bit for bit (no floating point anywhere). The structured kinds
(:class:`HadamardSampler`, :class:`HighLowHadamardSampler`) compare ``u`` with integer
coin thresholds and draw uniform columns of power-of-two ranges from raw random bits;
:class:`OrbitSampler` (a symmetric design at class level) compares ``u`` with its class's
integer cell thresholds and draws uniform integers below a bound with
:func:`secrets.randbelow` (rejection: exactly uniform).

Canonical form (what the package's ``sha256`` covers): the package object
without its ``sha256`` member, serialised as JSON with keys sorted, no
whitespace (separators ``,`` and ``:``), every non-ASCII character (and DEL)
escaped as ``\\uXXXX`` with lower-case hex (UTF-16 code units), encoded as
ASCII. Packages hold only strings, lists, objects and small integers
(``schema_version``, ``bits``), so no number formatting is involved and the
JavaScript client reproduces the same bytes. A number written with a fraction or an
exponent (``1.0``, ``32.0``, ``1e0``) is refused, here and in the JavaScript client.
The optional ``signature`` member is left out of the canonical form too: the hash
and the signature cover the same bytes.

Trust (:func:`authenticate`): the hash alone proves integrity, not authorship (anyone can
re-hash an edited file). Every sampler therefore needs one of

* ``public_key=`` — the author's Ed25519 public key (raw 32 bytes, base64); the package
  must carry an Ed25519 signature by that key over the canonical form. Only this path
  imports a non-standard module (``cryptography``), lazily;
* ``sha256=`` — the pinned SHA-256 of the exact package the caller trusts (standard
  library only);
* ``allow_unauthenticated=True`` — the caller's explicit opt-out (for packages it has
  just built or re-certified itself).

Anything else raises :class:`PackageUntrusted`.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import json
import secrets
from dataclasses import dataclass
from functools import cached_property

FORMAT = "ldp-designer-mechanism"
SCHEMA_VERSION = 1
MIN_BITS, MAX_BITS = 8, 64
_COMMON = ("format", "schema_version", "kind", "bits", "certificate", "utility", "sha256")
#: Members of a version-1 package of each kind (``sha256`` included).
MEMBERS = {
    "table": _COMMON + ("inputs", "outputs", "E", "table"),
    "block-hadamard": _COMMON + ("block_sizes", "epsilon", "coin"),
    "high-low-hadamard": _COMMON + ("k", "sensitive", "epsilon", "coin", "keep"),
    "orbit": _COMMON + ("classes", "class_E", "orbits"),
}
#: The optional member holding the author's Ed25519 signature (any kind).
SIGNATURE = "signature"
SIGNATURE_ALGORITHM = "Ed25519"
#: Symbols (block sizes, k) are below 2^31, so Hadamard rows and columns fit in 32 bits.
MAX_SYMBOLS = 1 << 31
#: Most blocks of a block-hadamard package and most sensitive symbols of a high-low one:
#: building, proving and reading a package stay within seconds.
MAX_BLOCKS = 1 << 20
MAX_LISTED_SYMBOLS = 1 << 20
#: Most classes, support orbits and (classes x orbits) cells of an ``orbit`` package.
MAX_CLASSES = 1 << 12
MAX_ORBIT_CELLS = 1 << 22
#: Most (orbits x classes^2) exact ratio comparisons of an ``orbit`` package's proof (about 5 s).
MAX_ORBIT_CHECKS = 1 << 21
#: Most outputs of an ``orbit`` package (output indices stay exact integers in JavaScript).
MAX_ORBIT_OUTPUTS = 1 << 53
#: Longest input or output label (characters), and largest package text (characters):
#: checked before anything is built from them.
MAX_LABEL_LENGTH = 1000
MAX_PACKAGE_CHARACTERS = 1 << 28
KINDS = tuple(MEMBERS)
#: Most digits of a number in package text (the numbers are ``schema_version`` and ``bits``;
#: large integers are decimal strings).
MAX_INTEGER_DIGITS = 20
#: Members a package of any kind may hold: ``shuffle``, the central guarantee after shuffling
#: (:mod:`designer.shuffle.package`; covered by the hash, re-proved by verify-package), and
#: ``longitudinal``, the memoization policy of a table package (:mod:`designer.longitudinal.policy`).
OPTIONAL_MEMBERS = ("shuffle", "longitudinal")


class PackageError(ValueError):
    """The document is not a well-formed package (bad input: exit code 2)."""


class PackageTampered(PackageError):
    """The document's SHA-256 does not match its canonical form (exit code 1)."""


class PackageUntrusted(PackageTampered):
    """Not authenticated (exit code 1): no trusted key or pin, a hash other than the pinned one,
    a missing signature, or a signature that is not the trusted key's over this content."""


def canonical_bytes(document: dict) -> bytes:
    """The bytes the package hash and signature cover (see the module docstring)."""
    body = {key: value for key, value in document.items() if key not in ("sha256", SIGNATURE)}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def package_digest(document: dict) -> str:
    """Lower-case hex SHA-256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def parse_package(text: str) -> dict:
    """Parse package text (strict JSON: no NaN/Infinity, no number with a fraction or an exponent,
    at most :data:`MAX_PACKAGE_CHARACTERS`); raise :class:`PackageError` with one line."""
    def reject(constant: str):
        raise PackageError(f"the package holds {constant}, which is not JSON")

    def reject_float(number: str):
        raise PackageError(f"the package holds the number {number[:40]}: numbers must be integers written without "
                           "a fraction or an exponent (schema_version 1, bits 32)")

    def small_integer(number: str) -> int:
        digits = number.lstrip("-")
        if len(digits) > MAX_INTEGER_DIGITS:  # int() refuses beyond 4300 digits, with no file or member named
            raise PackageError(f"the package holds a {len(digits)}-digit number {digits[:20]}...: numbers in a package "
                               "are small integers (schema_version 1, bits 32)")
        return int(number)

    if len(text) > MAX_PACKAGE_CHARACTERS:
        raise PackageError(f"the package has {len(text)} characters, more than the limit {MAX_PACKAGE_CHARACTERS}")
    try:
        document = json.loads(text, parse_constant=reject, parse_float=reject_float, parse_int=small_integer)
    except json.JSONDecodeError as error:
        raise PackageError(f"not valid JSON (truncated or malformed): {error.msg} at line {error.lineno}, column {error.colno}") from None
    except RecursionError:
        raise PackageError("not a package: JSON nested too deeply") from None
    if not isinstance(document, dict):
        raise PackageError(f"not a package: the JSON document is a {type(document).__name__}, not an object")
    return document


def check_common(document: dict) -> str:
    """Check what every package kind shares (format, version, members, bits, sha256); return the kind."""
    if document.get("format") != FORMAT:
        raise PackageError(f"not an ldp-designer mechanism package (format {document.get('format')!r}, expected {FORMAT!r})")
    version = document.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise PackageError(f"unsupported schema_version {version!r}: this client reads version {SCHEMA_VERSION}")
    kind = document.get("kind")
    if kind not in KINDS:
        raise PackageError(f"unknown package kind {kind!r} (this client samples {', '.join(KINDS)})")
    missing = [member for member in MEMBERS[kind] if member not in document]
    unknown = sorted(set(document) - set(MEMBERS[kind]) - set(OPTIONAL_MEMBERS) - {SIGNATURE})
    if missing or unknown:
        raise PackageError(f"package members: missing {missing}, unknown {unknown}")
    bits = document["bits"]
    if type(bits) is not int or not MIN_BITS <= bits <= MAX_BITS:
        raise PackageError(f"bits must be an integer from {MIN_BITS} to {MAX_BITS}, got {bits!r}")
    sha = document["sha256"]
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise PackageError("sha256 must be 64 lower-case hex digits")
    if SIGNATURE in document:
        signature_bytes(document)
    return kind


def signature_bytes(document: dict) -> tuple[bytes, bytes]:
    """The signer's public key (32 bytes) and the signature (64 bytes) of a signed package.

    ``signature`` = ``{"algorithm": "Ed25519", "public_key": base64, "value": base64}``;
    :class:`PackageError` (one line) if it is malformed.
    """
    signature = document[SIGNATURE]
    if not isinstance(signature, dict) or set(signature) != {"algorithm", "public_key", "value"}:
        raise PackageError("signature must have exactly the members algorithm, public_key, value")
    if signature["algorithm"] != SIGNATURE_ALGORITHM:
        raise PackageError(f"signature.algorithm must be {SIGNATURE_ALGORITHM!r}, got {signature['algorithm']!r}")
    return decode_base64(signature["public_key"], 32, "signature.public_key"), \
        decode_base64(signature["value"], 64, "signature.value")


#: White space allowed around base64 text (a key file's line end): ASCII only, the same set in the
#: JavaScript client.
SPACE = " \t\n\r"


def decode_base64(text, size: int, where: str) -> bytes:
    """Standard padded base64 text of exactly ``size`` bytes (an Ed25519 key: 32, a signature: 64).

    Only ASCII white space (:data:`SPACE`) around the text is ignored; unpadded text, white
    space inside and any character outside the standard alphabet are refused, as in the
    JavaScript client.
    """
    try:
        if not isinstance(text, str):
            raise ValueError
        raw = base64.b64decode(text.strip(SPACE), validate=True)
    except (ValueError, binascii.Error):
        raise PackageError(f"{where}: not base64 text (standard alphabet, padded with '=')") from None
    if len(raw) != size:
        raise PackageError(f"{where}: {len(raw)} bytes, expected {size} (raw Ed25519, base64)")
    return raw


#: The field prime of Ed25519 and the curve constant d = -121665/121666 (RFC 8032, section 5.1).
FIELD_PRIME = 2**255 - 19
CURVE_D = -121665 * pow(121666, FIELD_PRIME - 2, FIELD_PRIME) % FIELD_PRIME
#: The y coordinates of the eight points of small order (1, 2, 4, 8): the identity (y = 1), its
#: negative (y = -1), the two points of order 4 (y = 0) and the four of order 8 (y = +-Y8).
_Y8 = 0x7A03AC9277FDC74EC6CC392CFA53202A0F67100D760B3CBA4FD84D3D706A17C7
SMALL_ORDER_Y = frozenset({0, 1, FIELD_PRIME - 1, _Y8, FIELD_PRIME - _Y8})


def check_public_key(raw: bytes, where: str) -> bytes:
    """Refuse an Ed25519 public key that is not a canonical encoding of a point of large order.

    ``cryptography`` (OpenSSL) and WebCrypto accept any 32 bytes: with a small-order key
    (the identity ``AQAA...A=`` among them) a made-up signature verifies over any content.
    Refused, with :class:`PackageError`: ``y >= p`` (a non-canonical encoding, RFC 8032
    section 5.1.3), the eight points of small order (:data:`SMALL_ORDER_Y`), and a ``y`` for
    which ``x^2 = (y^2 - 1) / (d y^2 + 1)`` has no square root (not a curve point).
    The JavaScript client applies the same checks in the same order.
    """
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    if y >= FIELD_PRIME:
        raise PackageError(f"{where}: not a canonical Ed25519 encoding (y >= 2^255 - 19)")
    if y in SMALL_ORDER_Y:
        raise PackageError(f"{where}: a point of small order (one of the 8 such Ed25519 keys): "
                           "any made-up signature would verify with it")
    square = (y * y - 1) * pow(CURVE_D * y * y + 1, FIELD_PRIME - 2, FIELD_PRIME) % FIELD_PRIME
    if pow(square, (FIELD_PRIME - 1) // 2, FIELD_PRIME) != 1:  # not a nonzero square (zero: y = +-1, refused above)
        raise PackageError(f"{where}: not a point of the Ed25519 curve")
    return raw


def pinned_digest(sha256) -> str:
    """The pinned SHA-256 as lower-case hex: exactly 64 hex digits (either case), nothing around them."""
    if not isinstance(sha256, str) or len(sha256) != 64 or any(c not in "0123456789abcdefABCDEF" for c in sha256):
        shown = sha256[:80] if isinstance(sha256, str) else type(sha256).__name__
        raise PackageError(f"the pinned SHA-256 must be 64 hex digits, got {shown!r}")
    return sha256.lower()


def key_fingerprint(public_key: bytes) -> str:
    """A short name for a public key: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(public_key).hexdigest()[:16]


def authenticate(document: dict, public_key: str | bytes | None = None, sha256: str | None = None,
                 allow_unauthenticated: bool = False) -> str:
    """Check that a package (structure and hash already checked) is the one the caller trusts.

    Parameters
    ----------
    document : dict
        The parsed package.
    public_key : str or bytes, optional
        The author's Ed25519 public key: 32 raw bytes, or their base64 text (the
        ``KEY.pub`` file written by ``ldp-designer keygen``). The package must carry a
        signature by this key over its canonical form (verified with ``cryptography``,
        imported only here).
    sha256 : str, optional
        The pinned hex SHA-256 of the trusted package.
    allow_unauthenticated : bool
        The explicit opt-out: accept a package with neither (it is still checked for
        structure and hash, which prove nothing about its author).

    Returns
    -------
    str
        How the package was authenticated (for messages).

    Raises
    ------
    PackageUntrusted
        Neither a key nor a pin (and no opt-out), a hash other than the pinned one, an
        unsigned package when a key is given, a signature by another key, or a
        signature that does not verify.
    """
    how = []
    if sha256 is not None:
        digest, pinned = package_digest(document), pinned_digest(sha256)
        if digest != pinned:
            raise PackageUntrusted(f"SHA-256 {digest} is not the pinned {pinned}")
        how.append("pinned SHA-256")
    if public_key is not None:
        how.append(verify_signature(document, public_key))
    if not how:
        if not allow_unauthenticated:
            raise PackageUntrusted(
                "no trusted public key or pinned SHA-256 given, and the hash alone proves nothing about the author "
                "(pass public_key=..., sha256=..., or allow_unauthenticated=True)"
            )
        how.append("unauthenticated (the caller opted out)")
    return " and ".join(how)


def verify_signature(document: dict, public_key: str | bytes) -> str:
    """Verify the package's Ed25519 signature with the trusted ``public_key``; return a description.

    Imports ``cryptography`` (the only non-standard import of this module, and only here).
    """
    trusted = public_key if isinstance(public_key, bytes) else decode_base64(public_key, 32, "the trusted public key")
    if len(trusted) != 32:
        raise PackageError(f"the trusted public key has {len(trusted)} bytes, expected 32 (raw Ed25519)")
    check_public_key(trusted, "the trusted public key")
    if SIGNATURE not in document:
        raise PackageUntrusted(f"the package is not signed, but a trusted public key ({key_fingerprint(trusted)}) "
                               "was given")
    signer, value = signature_bytes(document)
    if signer != trusted:
        raise PackageUntrusted(f"signed by the key {key_fingerprint(signer)}, not by the trusted key "
                               f"{key_fingerprint(trusted)}")
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(trusted).verify(value, canonical_bytes(document))
    except InvalidSignature:
        raise PackageUntrusted("the Ed25519 signature does not match the content (forged, or changed after "
                               "signing)") from None
    return f"Ed25519 signature by {key_fingerprint(trusted)}"


def check_structure(document: dict) -> list[list[int]]:
    """Check a ``table`` package's members, types and table; return the table as integers.

    Raises :class:`PackageError` naming the first problem: missing or unknown
    members, another format or schema version, labels that are not distinct
    strings, table entries that are not decimal integer strings, a row whose
    sum is not ``2^bits``. (E's entries and the certificate's meaning are
    checked by :mod:`designer.deploy.package`.)
    """
    if check_common(document) != "table":
        raise PackageError(f"a {document['kind']} package has no table")
    bits = document["bits"]
    inputs, outputs = _labels(document, "inputs"), _labels(document, "outputs")
    rows = document["table"]
    if not isinstance(rows, list) or len(rows) != len(inputs):
        raise PackageError(f"table must be a list of {len(inputs)} rows (one per input)")
    total = 1 << bits
    table = []
    for x, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(outputs):
            raise PackageError(f"table row {x} must be a list of {len(outputs)} entries (one per output)")
        values = []
        for y, entry in enumerate(row):
            values.append(_decimal(entry, f"table row {x}, column {y}"))
        if sum(values) != total:
            raise PackageError(f"table row {x} sums to {sum(values)}, not 2^{bits} = {total}")
        table.append(values)
    return table


def check_hadamard_structure(document: dict) -> tuple[list[int], int]:
    """Check a ``block-hadamard`` package; return its block sizes and its coin threshold.

    ``block_sizes`` are decimal strings of positive integers (consecutive blocks of
    symbols); ``coin`` is a decimal string ``T`` with ``0 < T < 2^bits``: a report falls
    in ``S_x`` when a uniform integer in ``[0, 2^bits)`` is below ``T``.
    """
    if check_common(document) != "block-hadamard":
        raise PackageError(f"a {document['kind']} package is not a block Hadamard response")
    sizes = document["block_sizes"]
    if not isinstance(sizes, list) or not sizes:
        raise PackageError("block_sizes must be a non-empty list of decimal integer strings")
    if len(sizes) > MAX_BLOCKS:
        raise PackageError(f"block_sizes lists {len(sizes)} blocks, more than {MAX_BLOCKS}")
    sizes = [_decimal(size, f"block_sizes[{j}]") for j, size in enumerate(sizes)]
    if min(sizes) < 1 or max(sizes) >= MAX_SYMBOLS:
        raise PackageError("every block size must be from 1 to 2^31 - 1")
    return sizes, _coin(document)


def check_high_low_structure(document: dict) -> tuple[int, list[int], int, int]:
    """Check a ``high-low-hadamard`` package; return ``k``, the sensitive symbols, ``coin`` and ``keep``.

    ``k`` is a decimal string from 1 to 2^31 - 1; ``sensitive`` a non-empty list of
    strictly increasing decimal strings below ``k``; ``coin`` = T with ``0 < T < 2^bits``
    (a sensitive symbol reports inside ``S_x`` when a uniform integer in ``[0, 2^bits)`` is
    below T); ``keep`` = K with ``0 <= K < 2^bits`` (a non-sensitive symbol reports itself
    when the uniform integer is below K).
    """
    if check_common(document) != "high-low-hadamard":
        raise PackageError(f"a {document['kind']} package is not a high-low Hadamard response")
    k = _decimal(document["k"], "k")
    if not 1 <= k < MAX_SYMBOLS:
        raise PackageError(f"k must be from 1 to 2^31 - 1, got {k}")
    listed = document["sensitive"]
    if not isinstance(listed, list) or not listed:
        raise PackageError("sensitive must be a non-empty list of decimal integer strings")
    if len(listed) > MAX_LISTED_SYMBOLS:
        raise PackageError(f"sensitive lists {len(listed)} symbols, more than {MAX_LISTED_SYMBOLS}")
    sensitive = [_decimal(symbol, f"sensitive[{i}]") for i, symbol in enumerate(listed)]
    if any(later <= earlier for earlier, later in zip(sensitive, sensitive[1:])) or sensitive[-1] >= k:
        raise PackageError(f"sensitive symbols must be strictly increasing and below k = {k}")
    keep = _decimal(document["keep"], "keep")
    if not keep < 1 << document["bits"]:
        raise PackageError(f"keep must be below 2^{document['bits']}, got {keep}")
    return k, sensitive, _coin(document), keep


def most_orbits(r: int) -> int:
    """Most support orbits of an ``orbit`` package with r classes.

    Bounded by :data:`MAX_ORBIT_CELLS` (classes x orbits) and :data:`MAX_ORBIT_CHECKS` (orbits x classes^2).
    """
    return min(MAX_ORBIT_CELLS // r, MAX_ORBIT_CHECKS // (r * r))


@dataclass(frozen=True)
class OrbitStructure:
    """The checked members of an ``orbit`` package (see :func:`check_orbit_structure`)."""

    ranges: list  # (first, last, class, rank of first) sorted by first
    sizes: list
    levels: list  # r x r level texts (class_E)
    columns: list  # T_o per orbit
    high: list  # j[o][a]
    low: list  # l[o][a]
    cells_high: list  # H[o][a]
    cells_low: list  # L[o][a]
    bits: int  # every class's cells sum to 2^bits

    @property
    def k(self) -> int:
        return sum(self.sizes)

    @property
    def n_outputs(self) -> int:
        return sum(self.columns)

    @cached_property
    def range_index(self) -> tuple[list, list, list]:
        """The ranges' first symbols, classes and ranks of their first symbols, by first symbol (what
        :meth:`locate` searches)."""
        return ([first for first, *_ in self.ranges], [a for _, _, a, _ in self.ranges],
                [rank for *_, rank in self.ranges])

    def locate(self, x, search=None, index=None):
        """The class of symbol ``x`` and its rank in the class (members in increasing order).

        The range holding x is the last whose first symbol is at most x. ``x`` is an int, or
        (vectorised) an integer array with ``index`` the :attr:`range_index` as arrays and
        ``search(x)`` their ``searchsorted(first symbols, x, side="right")``: this module
        imports no numpy. Symbols must lie in ``0..k-1`` (the samplers check their input first).
        """
        first, classes, ranks = self.range_index if index is None else index
        i = (bisect.bisect_right(first, x) if search is None else search(x)) - 1
        return classes[i], ranks[i] + x - first[i]


def check_orbit_structure(document: dict) -> OrbitStructure:
    """Check an ``orbit`` package (a symmetric design at class level); return its integers.

    ``classes``: for each class a, its symbols as ``[first, last]`` ranges of decimal strings;
    together they partition ``0..k-1`` (a member's *rank* is its position in the class in
    increasing order). ``class_E``: r x r level texts (``E[x, x']`` for x in class a, x' in
    class b, x != x'). ``orbits``: for each support orbit o, ``columns`` ``T_o`` and, per class,
    ``high`` ``j_a``, ``low`` ``l_a`` (``j_a + l_a <= n_a``), ``cells_high`` ``H_a`` and ``cells_low``
    ``L_a``: class a's row puts mass ``H_a / 2^b`` on the columns of o where its member is high
    and ``L_a / 2^b`` where it is low. Checked: every class's cells sum to ``2^bits``; a cell is
    positive only with its count (``H_a > 0`` needs ``j_a > 0``); ``n_a`` divides ``T_o`` whenever
    class a is not constant on o (neither ``j_a = n_a`` nor ``l_a = n_a`` nor ``j_a + l_a = 0``).
    """
    if check_common(document) != "orbit":
        raise PackageError(f"a {document['kind']} package is not an orbit design")
    classes = document["classes"]
    if not isinstance(classes, list) or not classes or len(classes) > MAX_CLASSES:
        raise PackageError(f"classes must be a non-empty list of at most {MAX_CLASSES} classes")
    ranges, sizes, listed = [], [], 0
    for a, members in enumerate(classes):
        if not isinstance(members, list) or not members:
            raise PackageError(f"classes[{a}] must be a non-empty list of [first, last] ranges")
        listed += len(members)
        if listed > MAX_LISTED_SYMBOLS:
            raise PackageError(f"classes list more than {MAX_LISTED_SYMBOLS} ranges")
        size = 0
        for i, pair in enumerate(members):
            if not isinstance(pair, list) or len(pair) != 2:
                raise PackageError(f"classes[{a}][{i}] must be a [first, last] pair of decimal strings")
            first, last = (_decimal(end, f"classes[{a}][{i}]") for end in pair)
            if last < first or (ranges and ranges[-1][2] == a and first <= ranges[-1][1]):
                raise PackageError(f"classes[{a}][{i}]: ranges must be increasing and disjoint")
            ranges.append((first, last, a, size))
            size += last - first + 1
        sizes.append(size)
    ranges.sort()
    expected = 0
    for first, last, a, _ in ranges:
        if first != expected:
            raise PackageError(f"classes do not partition 0..k-1: symbol {min(first, expected)} is "
                               + ("listed twice" if first < expected else "in no class"))
        expected = last + 1
    if expected >= MAX_SYMBOLS:
        raise PackageError("k must be below 2^31")
    r = len(sizes)
    levels = document["class_E"]
    if not isinstance(levels, list) or len(levels) != r or not all(
            isinstance(row, list) and len(row) == r and all(isinstance(level, str) for level in row) for row in levels):
        raise PackageError(f"class_E must be {r} x {r} level texts (one row and column per class)")
    orbits = document["orbits"]
    most = most_orbits(r)
    if not isinstance(orbits, list) or not orbits or len(orbits) > most:
        raise PackageError(f"orbits must be a non-empty list of at most {most} orbits with {r} classes "
                           "(the proof compares every class pair in every orbit)")
    names = ("high", "low", "cells_high", "cells_low")
    parsed = {name: [] for name in ("columns",) + names}
    for o, orbit in enumerate(orbits):
        if not isinstance(orbit, dict) or set(orbit) != {"columns", *names}:
            raise PackageError(f"orbits[{o}] must have exactly the members columns, {', '.join(names)}")
        parsed["columns"].append(_decimal(orbit["columns"], f"orbits[{o}].columns"))
        for name in names:
            values = orbit[name]
            if not isinstance(values, list) or len(values) != r:
                raise PackageError(f"orbits[{o}].{name} must list {r} decimal strings (one per class)")
            parsed[name].append([_decimal(value, f"orbits[{o}].{name}[{a}]") for a, value in enumerate(values)])
    total = 1 << document["bits"]
    for o, period in enumerate(parsed["columns"]):
        if period < 1:
            raise PackageError(f"orbits[{o}].columns must be at least 1")
        for a, n in enumerate(sizes):
            j, l, h, c = (parsed[name][o][a] for name in names)
            if j + l > n or (h and not j) or (c and not l):
                raise PackageError(f"orbits[{o}], class {a}: counts {j} high + {l} low exceed the class size {n}, "
                                   "or a cell is positive without its count")
            if 0 < j + l and j != n and l != n and period % n:
                raise PackageError(f"orbits[{o}]: columns {period} is not a multiple of the size {n} of class {a}")
    if sum(parsed["columns"]) > MAX_ORBIT_OUTPUTS:
        raise PackageError("the orbits have more than 2^53 columns")
    for a in range(r):
        mass = sum(parsed["cells_high"][o][a] + parsed["cells_low"][o][a] for o in range(len(orbits)))
        if mass != total:
            raise PackageError(f"the cells of class {a} sum to {mass}, not 2^{document['bits']} = {total}")
    return OrbitStructure(ranges, sizes, levels, parsed["columns"], parsed["high"], parsed["low"],
                          parsed["cells_high"], parsed["cells_low"], document["bits"])


def _coin(document: dict) -> int:
    """The ``coin`` threshold T (``0 < T < 2^bits``) of a Hadamard package; its ``epsilon`` must be text."""
    coin = _decimal(document["coin"], "coin")
    if not 0 < coin < 1 << document["bits"]:
        raise PackageError(f"coin must be between 0 and 2^{document['bits']} (exclusive), got {coin}")
    if not isinstance(document["epsilon"], str):
        raise PackageError("epsilon must be text (an exact level such as \"log(3)\" or \"1\")")
    return coin


def _decimal(entry, where: str) -> int:
    """A non-negative integer written as a decimal string of at most 20 digits (2^64 has 20)."""
    if (
        not isinstance(entry, str) or not entry.isascii() or not entry.isdigit()
        or (len(entry) > 1 and entry[0] == "0") or len(entry) > 20
    ):
        raise PackageError(f"{where}: {entry!r} is not a decimal integer string")
    return int(entry)


def verify_digest(document: dict) -> None:
    """Raise :class:`PackageTampered` if ``sha256`` is not the digest of the canonical form."""
    expected = package_digest(document)
    if document.get("sha256") != expected:
        raise PackageTampered(
            f"SHA-256 mismatch: the package says {document.get('sha256')!r} but its content hashes to {expected!r} "
            "(modified after it was written)"
        )


def _labels(document: dict, member: str) -> list[str]:
    """Distinct strings of at most :data:`MAX_LABEL_LENGTH` characters, valid Unicode (no lone surrogate)."""
    labels = document[member]
    if not isinstance(labels, list) or not labels or not all(isinstance(label, str) for label in labels):
        raise PackageError(f"{member} must be a non-empty list of strings")
    for index, label in enumerate(labels):
        if len(label) > MAX_LABEL_LENGTH:
            raise PackageError(f"{member}[{index}] has {len(label)} characters, more than {MAX_LABEL_LENGTH}")
        if any("\ud800" <= character <= "\udfff" for character in label):
            raise PackageError(f"{member}[{index}] holds a lone surrogate (\\ud800-\\udfff): not valid Unicode text")
    if len(set(labels)) != len(labels):
        raise PackageError(f"{member} labels must be distinct")
    return labels


class _PackageSampler:
    """What every sampler does first: check the structure and the SHA-256, authenticate (what the caller
    trusts: ``public_key=``, ``sha256=`` or ``allow_unauthenticated=True``, :func:`authenticate`), then load."""

    def __init__(self, document: dict, *, public_key: str | bytes | None = None, sha256: str | None = None,
                 allow_unauthenticated: bool = False):
        checked = self._check(document)
        verify_digest(document)
        self.trust: str = authenticate(document, public_key, sha256, allow_unauthenticated)
        self.bits: int = document["bits"]
        self._load(document, checked)

    def counts(self, x: int, n: int) -> list[int]:
        """How often each output is reported in ``n`` independent draws for input index ``x``."""
        tally = zero_counts(self.n_outputs)
        for _ in range(n):
            tally[self.sample(x)] += 1
        return tally

    @classmethod
    def from_file(cls, path: str, **trust):
        """Read, check, authenticate (``public_key=``, ``sha256=``: :func:`authenticate`) and load a package file."""
        with open(path, encoding="utf-8") as handle:
            return cls(parse_package(handle.read(MAX_PACKAGE_CHARACTERS + 1)), **trust)


class TableSampler(_PackageSampler):
    """Draw reports from a checked package with :func:`secrets.randbits` (exact, see the module docstring).

    Parameters
    ----------
    document : dict
        A parsed package; its structure and SHA-256 are checked
        (:class:`PackageError`, :class:`PackageTampered`).
    public_key, sha256, allow_unauthenticated
        What the caller trusts (:func:`authenticate`); one is required
        (:class:`PackageUntrusted` otherwise).
    """

    _check = staticmethod(check_structure)

    def _load(self, document: dict, table) -> None:
        self.inputs: list[str] = list(document["inputs"])
        self.outputs: list[str] = list(document["outputs"])
        self.n_outputs: int = len(self.outputs)
        self.thresholds: list[list[int]] = [_cumulative(row) for row in table]
        self._index = {label: x for x, label in enumerate(self.inputs)}

    def sample(self, x: int) -> int:
        """One report (output index) for input index ``x``: ``P(Y = y) = T[x, y] / 2^b`` exactly."""
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(self.thresholds):
            raise ValueError(f"input index must be an integer in 0..{len(self.thresholds) - 1}, got {x!r}")
        return bisect.bisect_right(self.thresholds[x], secrets.randbits(self.bits))

    def report(self, label: str) -> str:
        """One report (output label) for an input label."""
        if label not in self._index:
            raise ValueError(f"unknown input label {label!r}")
        return self.outputs[self.sample(self._index[label])]


class HadamardSampler(_PackageSampler):
    """Block Hadamard response (context-aware-ldp.md, Section 6.1) drawn exactly with :mod:`secrets`.

    Symbol x, at position ``i`` of its block of size ``k_j`` (``K_j = 2^ceil(log2(k_j + 1))``
    outputs from ``offset_j``), uses Hadamard row ``r = i + 1``; ``S_x`` is the set of columns
    c with ``popcount(r & c)`` even (``K_j / 2`` of them). One draw: a uniform column
    ``c = randbits(log2 K_j)``, a coin ``randbits(b) < T`` ("report inside ``S_x``"), and if
    the parity of c disagrees with the coin, ``c ^= r & -r`` (flip the lowest set bit of r:
    a bijection between ``S_x`` and its complement). So, exactly,
    ``P(offset_j + c | x) = 2 T / (K_j 2^b)`` for c in ``S_x`` and
    ``2 (2^b - T) / (K_j 2^b)`` otherwise; zero outside block j. The keyword arguments
    are those of :class:`TableSampler` (what the caller trusts).
    """

    _check = staticmethod(check_hadamard_structure)

    def _load(self, document: dict, checked) -> None:
        sizes, self.coin = checked
        self.block_sizes = sizes
        self.starts = _cumulative([0] + sizes)[:-1]
        self.hadamard_sizes = [1 << size.bit_length() for size in sizes]
        self.offsets = _cumulative([0] + self.hadamard_sizes)[:-1]
        self.k = sum(sizes)
        self.n_outputs = sum(self.hadamard_sizes)

    def sample(self, x: int) -> int:
        """One report (global output index) for symbol ``x``."""
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < self.k:
            raise ValueError(f"input index must be an integer in 0..{self.k - 1}, got {x!r}")
        block = bisect.bisect_right(self.starts, x) - 1
        row = x - self.starts[block] + 1
        size = self.hadamard_sizes[block]
        column = secrets.randbits(size.bit_length() - 1)
        column = hadamard_half(row, column, secrets.randbits(self.bits) < self.coin)
        return self.offsets[block] + column

    def counts(self, x: int, n: int) -> list[int]:
        """Counts of ``n`` reports for symbol ``x`` over the outputs of its block (``K_j`` entries)."""
        block = bisect.bisect_right(self.starts, x) - 1
        tally = zero_counts(self.hadamard_sizes[block])
        for _ in range(n):
            tally[self.sample(x) - self.offsets[block]] += 1
        return tally


class HighLowHadamardSampler(_PackageSampler):
    """High-low Hadamard response (context-aware-ldp.md, Section 5.1, channel (13)-(14)) drawn exactly.

    With ``s`` sensitive symbols (sorted; the i-th uses Hadamard row ``i + 1`` of order
    ``S = 2^ceil(log2(s + 1))``) and ``t = k - s`` others (the i-th in increasing order owns
    output ``S + i``), one draw takes ``u = randbits(b)`` and a uniform column
    ``c = randbits(log2 S)``:

    * sensitive x: ``c`` moved onto ``S_x`` when ``u < T``, onto its complement otherwise
      (:func:`hadamard_half`), so ``Q(y|x) = 2T / (S 2^b)`` on ``S_x`` and
      ``2 (2^b - T) / (S 2^b)`` on the rest of ``[S]``;
    * non-sensitive x: its own output ``S + i`` when ``u < K`` (probability exactly
      ``K / 2^b``), otherwise ``c``: ``Q(y|x) = (2^b - K) / (S 2^b)`` on ``[S]``.

    The keyword arguments are those of :class:`TableSampler` (what the caller trusts).
    """

    _check = staticmethod(check_high_low_structure)

    def _load(self, document: dict, checked) -> None:
        self.k, self.sensitive, self.coin, self.keep = checked
        self.hadamard_size = 1 << len(self.sensitive).bit_length()
        self.n_outputs = self.hadamard_size + self.k - len(self.sensitive)

    def sample(self, x: int) -> int:
        """One report (output index) for symbol ``x``."""
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < self.k:
            raise ValueError(f"input index must be an integer in 0..{self.k - 1}, got {x!r}")
        rank = bisect.bisect_left(self.sensitive, x)
        u = secrets.randbits(self.bits)
        if rank < len(self.sensitive) and self.sensitive[rank] == x:
            column = secrets.randbits(self.hadamard_size.bit_length() - 1)
            return hadamard_half(rank + 1, column, u < self.coin)
        if u < self.keep:
            return self.hadamard_size + x - rank
        return secrets.randbits(self.hadamard_size.bit_length() - 1)


class OrbitSampler(_PackageSampler):
    """A symmetric design packaged at class level (kind ``orbit``, :mod:`designer.deploy.orbit`), drawn exactly.

    Symbol x of class a, at rank i (``n = n_a``), one draw: ``u = randbits(b)`` picks the
    cell (orbit o, high or low) whose cumulative integer thresholds over the class's
    ``(H_o, L_o)`` first exceed u, so the cell has probability exactly ``H / 2^b`` (or ``L / 2^b``).
    Then an offset d uniform in ``[0, j)`` (high) or ``[j, j + l)`` (low), and the column
    ``t = ((i - d) mod n) + n q`` with q uniform in ``[0, T / n)``: the columns of the orbit's
    cyclic materialisation where x is high (low) are exactly those t, each once, so
    ``Q(t | x) = H n / (2^b T j)`` (``L n / (2^b T l)``). A class constant on the orbit reports a
    uniform column in ``[0, T)``. The report is the orbit's offset plus t. The keyword arguments
    are those of :class:`TableSampler` (what the caller trusts).
    """

    _check = staticmethod(check_orbit_structure)

    def _load(self, document: dict, structure) -> None:
        self.structure = structure
        self.k, self.n_outputs = structure.k, structure.n_outputs
        self.offsets = _cumulative([0] + structure.columns)[:-1]
        orbits = range(len(structure.columns))
        self.thresholds = [
            _cumulative([cell for o in orbits for cell in (structure.cells_high[o][a], structure.cells_low[o][a])])
            for a in range(len(structure.sizes))
        ]

    def sample(self, x: int) -> int:
        """One report (output index) for symbol ``x``."""
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < self.k:
            raise ValueError(f"input index must be an integer in 0..{self.k - 1}, got {x!r}")
        a, rank = self.structure.locate(x)
        cell = bisect.bisect_right(self.thresholds[a], secrets.randbits(self.bits))
        o, low = divmod(cell, 2)
        s = self.structure
        n, period, j, count = s.sizes[a], s.columns[o], s.high[o][a], (s.low[o][a] if low else s.high[o][a])
        if count == n:
            return self.offsets[o] + secrets.randbelow(period)
        offset = (j if low else 0) + secrets.randbelow(count)
        return self.offsets[o] + (rank - offset) % n + n * secrets.randbelow(period // n)


#: Most outputs a ``counts`` list covers (a block of 2^31 symbols has 2^31 outputs: 16 GiB of counts).
MAX_COUNTED_OUTPUTS = 1 << 24


def check_counted(size: int) -> None:
    """``ValueError`` with the memory estimate if counts over ``size`` outputs exceed :data:`MAX_COUNTED_OUTPUTS`."""
    if size > MAX_COUNTED_OUTPUTS:
        raise ValueError(f"counts over {size} outputs would need about {8 * size / 2**30:.1f} GiB (limit "
                         f"{MAX_COUNTED_OUTPUTS} outputs): draw reports with sample() and count the ones drawn")


def zero_counts(size: int) -> list[int]:
    """A list of ``size`` zero counts (refused beyond :data:`MAX_COUNTED_OUTPUTS`, see :func:`check_counted`)."""
    check_counted(size)
    return [0] * size


def hadamard_half(row: int, column: int, inside: bool) -> int:
    """Move a uniform column onto ``S_row`` (``inside``) or its complement, keeping it uniform there.

    ``S_row`` holds the columns ``c`` with ``popcount(row & c)`` even (Sylvester row
    ``row >= 1``); flipping the lowest set bit of ``row`` is a bijection between the two halves.
    """
    if (bin(row & column).count("1") % 2 == 0) != inside:
        column ^= row & -row
    return column


_SAMPLERS = {"table": TableSampler, "block-hadamard": HadamardSampler, "high-low-hadamard": HighLowHadamardSampler,
             "orbit": OrbitSampler}


def load_sampler(document: dict, **trust) -> "TableSampler | HadamardSampler | HighLowHadamardSampler | OrbitSampler":
    """The sampler of a package's kind (structure and SHA-256 checked, authenticated by ``trust``:
    ``public_key=``, ``sha256=`` or ``allow_unauthenticated=True``, see :func:`authenticate`)."""
    return _SAMPLERS.get(document.get("kind"), TableSampler)(document, **trust)


def _cumulative(row: list[int]) -> list[int]:
    """Thresholds ``c_y = T[0] + ... + T[y]``; ``bisect_right(c, u)`` is the report for ``u``."""
    total, out = 0, []
    for value in row:
        total += value
        out.append(total)
    return out
