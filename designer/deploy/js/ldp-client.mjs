// ldp-client.mjs — exact sampler for ldp-designer mechanism packages (schema version 1,
// kinds "table", "block-hadamard", "high-low-hadamard" and "orbit").
//
// An ES module with no dependencies, for browsers and Node >= 20 (Web Crypto, Ed25519 included:
// crypto.getRandomValues and crypto.subtle). Usage:
//
//   import { loadPackage } from "./ldp-client.mjs";
//   const text = await (await fetch("mech.json")).text();
//   const mechanism = await loadPackage(text, { publicKey: "BASE64 of KEY.pub" });   // or { sha256: "hex" }
//   const report = mechanism.report("yes");          // an output label
//
// loadPackage checks the package's structure (schema version, integer table
// whose rows sum to 2^bits) and its SHA-256 against the canonical form, which
// is byte for byte the one of designer/deploy/sampler.py: the object without
// "sha256" and "signature", keys sorted, no whitespace, non-ASCII characters (and DEL) escaped
// as \uXXXX (lower-case hex, UTF-16 code units). Packages hold only strings,
// arrays, objects and two small integers, so no number formatting is involved; a
// number written with a fraction or an exponent (1.0, 32.0, 1e0) is refused, as in Python (when
// loadPackage is given the text: an object already parsed cannot tell 32.0 from 32).
//
// Trust: the hash proves integrity, not authorship. loadPackage needs one of
// { publicKey } (the author's Ed25519 public key, base64 of 32 raw bytes: the package's
// Ed25519 signature over the canonical form must verify with it, crypto.subtle), { sha256 }
// (the pinned hash of the trusted package) or { allowUnauthenticated: true } (the caller's
// explicit opt-out); anything else throws PackageUntrusted.
//
// Sampling is exact: row x holds integers T[x][y] summing to 2^b and cumulative
// thresholds c_y = T[x][0] + ... + T[x][y]; one uniform integer u in [0, 2^b)
// from crypto.getRandomValues gives the report min {y : u < c_y}, so
// P(Y = y | X = x) = T[x][y] / 2^b exactly. Thresholds and u are compared as
// two 32-bit limbs (hi, lo) held in doubles (exact below 2^53), never as
// floating-point probabilities; the tables are read with BigInt. Structured packages
// (block-hadamard: HadamardMechanism; high-low-hadamard: HighLowMechanism) compare u with
// their integer coin thresholds the same way and take uniform columns from the top bits
// of a 32-bit word (their sizes are powers of two), exactly as designer/deploy/sampler.py.
// Orbit packages (a symmetric design at class level: OrbitMechanism) compare u with their
// class's cumulative integer cell thresholds (binary search), then draw uniform integers below a bound by
// rejection (the top bits of one or two 32-bit words, redrawn while >= the bound): exact.

export const FORMAT = "ldp-designer-mechanism";
export const SCHEMA_VERSION = 1;
const COMMON = ["format", "schema_version", "kind", "bits", "certificate", "utility", "sha256"];
const MEMBERS = {
  table: [...COMMON, "inputs", "outputs", "E", "table"],
  "block-hadamard": [...COMMON, "block_sizes", "epsilon", "coin"],
  "high-low-hadamard": [...COMMON, "k", "sensitive", "epsilon", "coin", "keep"],
  orbit: [...COMMON, "classes", "class_E", "orbits"],
};
const MAX_CLASSES = 2 ** 12; // orbit packages: most classes, and most (classes x orbits) cells
const MAX_ORBIT_CELLS = 2 ** 22;
const MAX_ORBIT_CHECKS = 2 ** 21; // most (orbits x classes^2) ratio comparisons of the proof
const OPTIONAL = ["shuffle", "longitudinal"]; // the central guarantee after shuffling, the memoization policy (ldp-memo.mjs)
const MAX_SYMBOLS = 2n ** 31n;
const MAX_BLOCKS = 2 ** 20; // most blocks / sensitive symbols listed (as in sampler.py)
const MAX_LABEL_LENGTH = 1000;
const MAX_PACKAGE_CHARACTERS = 2 ** 28;
const MAX_COUNTED_OUTPUTS = 2 ** 24; // counts() refuses more outputs (a dense array of them)
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const DECIMAL = /^(0|[1-9][0-9]{0,19})$/;
const TWO_32 = 4294967296;
const BATCH = 16384; // getRandomValues fills at most 65536 bytes per call

export class PackageError extends Error {}
export class PackageTampered extends PackageError {}
/** Not authenticated: no trusted key or pin, another hash than the pinned one, no signature or a bad one. */
export class PackageUntrusted extends PackageTampered {}

function canonicalString(text) {
  return JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** The canonical form (a string of ASCII characters) that the package's sha256 covers. */
export function canonicalForm(value, top = true) {
  if (Array.isArray(value)) return "[" + value.map((item) => canonicalForm(item, false)).join(",") + "]";
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).filter((key) => !(top && (key === "sha256" || key === "signature"))).sort();
    return "{" + keys.map((key) => canonicalString(key) + ":" + canonicalForm(value[key], false)).join(",") + "}";
  }
  if (typeof value === "string") return canonicalString(value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new PackageError(`numbers in a package must be small integers, got ${value}`);
    return String(value);
  }
  if (typeof value === "boolean" || value === null) return JSON.stringify(value);
  throw new PackageError(`unexpected value of type ${typeof value} in a package`);
}

async function hexDigest(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Lower-case hex SHA-256 of the canonical form. */
export async function packageDigest(document) {
  return hexDigest(new TextEncoder().encode(canonicalForm(document)));
}

function labels(document, member) {
  const list = document[member];
  if (!Array.isArray(list) || list.length === 0 || !list.every((label) => typeof label === "string")) {
    throw new PackageError(`${member} must be a non-empty list of strings`);
  }
  list.forEach((label, index) => {
    if (label.length > MAX_LABEL_LENGTH) throw new PackageError(`${member}[${index}] has ${label.length} characters, more than ${MAX_LABEL_LENGTH}`);
    if (LONE_SURROGATE.test(label)) throw new PackageError(`${member}[${index}] holds a lone surrogate (\\ud800-\\udfff): not valid Unicode text`);
  });
  if (new Set(list).size !== list.length) throw new PackageError(`${member} labels must be distinct`);
  return list;
}

/** Check what every package kind shares; return the kind. */
export function checkCommon(document) {
  if (document === null || typeof document !== "object" || Array.isArray(document)) {
    throw new PackageError("not a package: the JSON document is not an object");
  }
  if (document.format !== FORMAT) throw new PackageError(`not an ldp-designer mechanism package (format ${JSON.stringify(document.format)})`);
  if (!Number.isInteger(document.schema_version) || document.schema_version !== SCHEMA_VERSION) {
    throw new PackageError(`unsupported schema_version ${JSON.stringify(document.schema_version)}: this client reads version ${SCHEMA_VERSION}`);
  }
  // an own member only: "__proto__", "toString" and the like are unknown kinds, not Object.prototype's
  const members = typeof document.kind === "string" && Object.hasOwn(MEMBERS, document.kind) ? MEMBERS[document.kind] : undefined;
  if (members === undefined) throw new PackageError(`unknown package kind ${JSON.stringify(document.kind)}`);
  const missing = members.filter((member) => !(member in document));
  const unknown = Object.keys(document).filter((member) => !members.includes(member) && !OPTIONAL.includes(member) && member !== "signature");
  if (missing.length || unknown.length) throw new PackageError(`package members: missing [${missing}], unknown [${unknown}]`);
  const bits = document.bits;
  if (!Number.isInteger(bits) || bits < 8 || bits > 64) throw new PackageError(`bits must be an integer from 8 to 64, got ${bits}`);
  if (typeof document.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(document.sha256)) {
    throw new PackageError("sha256 must be 64 lower-case hex digits");
  }
  if ("signature" in document) signatureBytes(document);
  return document.kind;
}

/** Text without the ASCII white space (space, tab, CR, LF) around it: the set sampler.py strips too. */
function stripSpace(text) {
  return text.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
}

/** Standard padded base64 of exactly size bytes; unpadded text is refused (atob would accept it), as in Python. */
function base64Bytes(text, size, where) {
  let raw;
  try {
    const body = typeof text === "string" ? stripSpace(text) : "";
    if (typeof text !== "string" || body.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(body)) throw new Error();
    raw = Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
  } catch {
    throw new PackageError(`${where}: not base64 text (standard alphabet, padded with '=')`);
  }
  if (raw.length !== size) throw new PackageError(`${where}: ${raw.length} bytes, expected ${size} (raw Ed25519, base64)`);
  return raw;
}

// Ed25519 (RFC 8032, section 5.1): the field prime, d = -121665/121666, and the y coordinates of the
// eight points of small order (identity y = 1, y = -1, order 4: y = 0, order 8: y = +-Y8), as in sampler.py.
const FIELD_PRIME = 2n ** 255n - 19n;
const Y8 = 0x7a03ac9277fdc74ec6cc392cfa53202a0f67100d760b3cba4fd84d3d706a17c7n;
const SMALL_ORDER_Y = new Set([0n, 1n, FIELD_PRIME - 1n, Y8, FIELD_PRIME - Y8]);

function modPow(base, exponent, modulus) {
  let result = 1n;
  base %= modulus;
  for (; exponent > 0n; exponent >>= 1n, base = (base * base) % modulus) {
    if (exponent & 1n) result = (result * base) % modulus;
  }
  return result;
}

const CURVE_D = (((-121665n * modPow(121666n, FIELD_PRIME - 2n, FIELD_PRIME)) % FIELD_PRIME) + FIELD_PRIME) % FIELD_PRIME;

/**
 * Refuse a public key that is not a canonical encoding of a point of large order (WebCrypto accepts
 * any 32 bytes; with a small-order key a made-up signature verifies): y >= p, the eight small-order
 * points, and a y with no curve point. Same checks, order and messages as check_public_key in sampler.py.
 */
export function checkPublicKey(raw, where) {
  let y = 0n;
  for (let i = 31; i >= 0; i -= 1) y = (y << 8n) | BigInt(raw[i]);
  y &= (1n << 255n) - 1n;
  if (y >= FIELD_PRIME) throw new PackageError(`${where}: not a canonical Ed25519 encoding (y >= 2^255 - 19)`);
  if (SMALL_ORDER_Y.has(y)) {
    throw new PackageError(`${where}: a point of small order (one of the 8 such Ed25519 keys): any made-up signature would verify with it`);
  }
  const square = ((y * y - 1n) * modPow(CURVE_D * y * y + 1n, FIELD_PRIME - 2n, FIELD_PRIME)) % FIELD_PRIME;
  if (modPow(square, (FIELD_PRIME - 1n) / 2n, FIELD_PRIME) !== 1n) throw new PackageError(`${where}: not a point of the Ed25519 curve`);
  return raw;
}

/** The pinned SHA-256 in lower case: exactly 64 hex digits (either case), nothing around them, as in Python. */
function pinnedDigest(sha256) {
  if (typeof sha256 !== "string" || !/^[0-9a-fA-F]{64}$/.test(sha256)) {
    const shown = typeof sha256 === "string" ? sha256.slice(0, 80) : typeof sha256;
    throw new PackageError(`the pinned SHA-256 must be 64 hex digits, got ${JSON.stringify(shown)}`);
  }
  return sha256.toLowerCase();
}

/** The signer's public key (32 bytes) and the signature (64 bytes) of a signed package. */
export function signatureBytes(document) {
  const signature = document.signature;
  const members = signature !== null && typeof signature === "object" && !Array.isArray(signature) ? Object.keys(signature).sort() : [];
  if (members.join(",") !== "algorithm,public_key,value") throw new PackageError("signature must have exactly the members algorithm, public_key, value");
  if (signature.algorithm !== "Ed25519") throw new PackageError(`signature.algorithm must be "Ed25519", got ${JSON.stringify(signature.algorithm)}`);
  return [base64Bytes(signature.public_key, 32, "signature.public_key"), base64Bytes(signature.value, 64, "signature.value")];
}

async function fingerprint(key) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", key));
  return Array.from(digest.slice(0, 8), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Check that a package (structure and hash already checked; canonical = the UTF-8 bytes of its
 * canonical form) is the one the caller trusts:
 * options.publicKey (base64 of the author's raw 32-byte Ed25519 key: the signature must verify),
 * options.sha256 (the pinned hash), or options.allowUnauthenticated === true (explicit opt-out).
 * Returns how it was authenticated; throws PackageUntrusted.
 */
export async function authenticate(document, canonical, { publicKey, sha256, allowUnauthenticated } = {}) {
  const digest = await hexDigest(canonical);
  const how = [];
  if (sha256 !== undefined && sha256 !== null) {
    const pinned = pinnedDigest(sha256);
    if (digest !== pinned) throw new PackageUntrusted(`SHA-256 ${digest} is not the pinned ${pinned}`);
    how.push("pinned SHA-256");
  }
  if (publicKey !== undefined && publicKey !== null) {
    const trusted = checkPublicKey(base64Bytes(publicKey, 32, "the trusted public key"), "the trusted public key");
    if (!("signature" in document)) throw new PackageUntrusted(`the package is not signed, but a trusted public key (${await fingerprint(trusted)}) was given`);
    const [signer, value] = signatureBytes(document);
    if (signer.some((byte, i) => byte !== trusted[i])) {
      throw new PackageUntrusted(`signed by the key ${await fingerprint(signer)}, not by the trusted key ${await fingerprint(trusted)}`);
    }
    const key = await crypto.subtle.importKey("raw", trusted, { name: "Ed25519" }, false, ["verify"]);
    const valid = await crypto.subtle.verify({ name: "Ed25519" }, key, value, canonical);
    if (!valid) throw new PackageUntrusted("the Ed25519 signature does not match the content (forged, or changed after signing)");
    how.push(`Ed25519 signature by ${await fingerprint(trusted)}`);
  }
  if (how.length === 0) {
    if (allowUnauthenticated !== true) {
      throw new PackageUntrusted("no trusted public key or pinned SHA-256 given, and the hash alone proves nothing about the author (pass { publicKey }, { sha256 } or { allowUnauthenticated: true })");
    }
    how.push("unauthenticated (the caller opted out)");
  }
  return how.join(" and ");
}

function decimal(entry, where) {
  if (typeof entry !== "string" || !DECIMAL.test(entry)) throw new PackageError(`${where}: ${JSON.stringify(entry)} is not a decimal integer string`);
  return BigInt(entry);
}

/** Check a block-hadamard package; return { sizes, coin }. */
export function checkHadamard(document) {
  if (checkCommon(document) !== "block-hadamard") throw new PackageError("not a block Hadamard response package");
  const sizes = document.block_sizes;
  if (!Array.isArray(sizes) || sizes.length === 0) throw new PackageError("block_sizes must be a non-empty list");
  if (sizes.length > MAX_BLOCKS) throw new PackageError(`block_sizes lists ${sizes.length} blocks, more than ${MAX_BLOCKS}`);
  const values = sizes.map((size, j) => decimal(size, `block_sizes[${j}]`));
  if (values.some((size) => size < 1n || size >= MAX_SYMBOLS)) throw new PackageError("every block size must be from 1 to 2^31 - 1");
  return { sizes: values.map(Number), coin: checkCoin(document) };
}

function checkCoin(document) {
  const coin = decimal(document.coin, "coin");
  if (coin <= 0n || coin >= 1n << BigInt(document.bits)) throw new PackageError(`coin must be between 0 and 2^${document.bits}`);
  if (typeof document.epsilon !== "string") throw new PackageError("epsilon must be text");
  return coin;
}

/** Check a high-low-hadamard package; return { k, sensitive, coin, keep }. */
export function checkHighLow(document) {
  if (checkCommon(document) !== "high-low-hadamard") throw new PackageError("not a high-low Hadamard response package");
  const k = decimal(document.k, "k");
  if (k < 1n || k >= MAX_SYMBOLS) throw new PackageError(`k must be from 1 to 2^31 - 1, got ${k}`);
  const listed = document.sensitive;
  if (!Array.isArray(listed) || listed.length === 0) throw new PackageError("sensitive must be a non-empty list");
  if (listed.length > MAX_BLOCKS) throw new PackageError(`sensitive lists ${listed.length} symbols, more than ${MAX_BLOCKS}`);
  const sensitive = listed.map((symbol, i) => decimal(symbol, `sensitive[${i}]`));
  if (sensitive.some((symbol, i) => (i > 0 && symbol <= sensitive[i - 1]) || symbol >= k)) {
    throw new PackageError(`sensitive symbols must be strictly increasing and below k = ${k}`);
  }
  const keep = decimal(document.keep, "keep");
  if (keep >= 1n << BigInt(document.bits)) throw new PackageError(`keep must be below 2^${document.bits}`);
  return { k: Number(k), sensitive: Int32Array.from(sensitive, Number), coin: checkCoin(document), keep };
}

/**
 * Check an orbit package (as designer/deploy/sampler.py check_orbit_structure); return
 * { ranges: [[first, last, class, rank]...] sorted by first, sizes, columns, high, low, cells } with
 * cells[a] the class's cumulative thresholds (BigInt) over (orbit 0 high, orbit 0 low, orbit 1 high, ...).
 */
export function checkOrbit(document) {
  if (checkCommon(document) !== "orbit") throw new PackageError("not an orbit package");
  const classes = document.classes;
  if (!Array.isArray(classes) || classes.length === 0 || classes.length > MAX_CLASSES) {
    throw new PackageError(`classes must be a non-empty list of at most ${MAX_CLASSES} classes`);
  }
  const ranges = [];
  const sizes = [];
  let listed = 0;
  classes.forEach((members, a) => {
    if (!Array.isArray(members) || members.length === 0) throw new PackageError(`classes[${a}] must be a non-empty list of [first, last] ranges`);
    listed += members.length;
    if (listed > MAX_BLOCKS) throw new PackageError(`classes list more than ${MAX_BLOCKS} ranges`);
    let size = 0;
    let previous = -1n;
    members.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) throw new PackageError(`classes[${a}][${i}] must be a [first, last] pair of decimal strings`);
      const first = decimal(pair[0], `classes[${a}][${i}]`);
      const last = decimal(pair[1], `classes[${a}][${i}]`);
      if (last < first || first <= previous) throw new PackageError(`classes[${a}][${i}]: ranges must be increasing and disjoint`);
      previous = last;
      ranges.push([first, last, a, size]);
      size += Number(last - first) + 1;
    });
    sizes.push(size);
  });
  ranges.sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : 0));
  let expected = 0n;
  for (const [first, last] of ranges) {
    if (first !== expected) throw new PackageError(`classes do not partition 0..k-1: symbol ${first < expected ? first : expected} is ${first < expected ? "listed twice" : "in no class"}`);
    expected = last + 1n;
  }
  if (expected >= MAX_SYMBOLS) throw new PackageError("k must be below 2^31");
  const r = sizes.length;
  const levels = document.class_E;
  if (!Array.isArray(levels) || levels.length !== r || !levels.every((row) => Array.isArray(row) && row.length === r && row.every((level) => typeof level === "string"))) {
    throw new PackageError(`class_E must be ${r} x ${r} level texts (one row and column per class)`);
  }
  const orbits = document.orbits;
  const most = Math.min(Math.floor(MAX_ORBIT_CELLS / r), Math.floor(MAX_ORBIT_CHECKS / (r * r)));
  if (!Array.isArray(orbits) || orbits.length === 0 || orbits.length > most) {
    throw new PackageError(`orbits must be a non-empty list of at most ${most} orbits with ${r} classes `
      + "(the proof compares every class pair in every orbit)");
  }
  const names = ["high", "low", "cells_high", "cells_low"];
  const parsed = { columns: [], high: [], low: [], cells_high: [], cells_low: [] };
  orbits.forEach((orbit, o) => {
    const keys = orbit !== null && typeof orbit === "object" && !Array.isArray(orbit) ? Object.keys(orbit).sort().join(",") : "";
    if (keys !== "cells_high,cells_low,columns,high,low") throw new PackageError(`orbits[${o}] must have exactly the members columns, ${names.join(", ")}`);
    parsed.columns.push(decimal(orbit.columns, `orbits[${o}].columns`));
    for (const name of names) {
      const values = orbit[name];
      if (!Array.isArray(values) || values.length !== r) throw new PackageError(`orbits[${o}].${name} must list ${r} decimal strings (one per class)`);
      parsed[name].push(values.map((value, a) => decimal(value, `orbits[${o}].${name}[${a}]`)));
    }
  });
  const total = 1n << BigInt(document.bits);
  let outputs = 0n;
  parsed.columns.forEach((period, o) => {
    if (period < 1n) throw new PackageError(`orbits[${o}].columns must be at least 1`);
    outputs += period;
    sizes.forEach((size, a) => {
      const n = BigInt(size);
      const [j, l, h, c] = names.map((name) => parsed[name][o][a]);
      if (j + l > n || (h && !j) || (c && !l)) throw new PackageError(`orbits[${o}], class ${a}: counts ${j} high + ${l} low exceed the class size ${n}, or a cell is positive without its count`);
      if (j + l > 0n && j !== n && l !== n && period % n !== 0n) throw new PackageError(`orbits[${o}]: columns ${period} is not a multiple of the size ${n} of class ${a}`);
    });
  });
  if (outputs > 2n ** 53n) throw new PackageError("the orbits have more than 2^53 columns");
  const cells = sizes.map((_, a) => {
    let cumulative = 0n;
    const thresholds = [];
    parsed.columns.forEach((_, o) => {
      for (const name of ["cells_high", "cells_low"]) {
        cumulative += parsed[name][o][a];
        thresholds.push(cumulative);
      }
    });
    if (cumulative !== total) throw new PackageError(`the cells of class ${a} sum to ${cumulative}, not 2^${document.bits} = ${total}`);
    return thresholds;
  });
  return {
    ranges: ranges.map(([first, last, a, rank]) => [Number(first), Number(last), a, rank]),
    sizes,
    columns: parsed.columns.map(Number),
    high: parsed.high.map((row) => row.map(Number)),
    low: parsed.low.map((row) => row.map(Number)),
    cells,
  };
}

/** Check a table package; return the table as BigInt rows. */
export function checkStructure(document) {
  if (checkCommon(document) !== "table") throw new PackageError("not a table package");
  const bits = document.bits;
  const inputs = labels(document, "inputs");
  const outputs = labels(document, "outputs");
  const rows = document.table;
  if (!Array.isArray(rows) || rows.length !== inputs.length) throw new PackageError(`table must have ${inputs.length} rows`);
  const total = 1n << BigInt(bits);
  return rows.map((row, x) => {
    if (!Array.isArray(row) || row.length !== outputs.length) throw new PackageError(`table row ${x} must have ${outputs.length} entries`);
    const values = row.map((entry, y) => decimal(entry, `table row ${x}, column ${y}`));
    const sum = values.reduce((a, b) => a + b, 0n);
    if (sum !== total) throw new PackageError(`table row ${x} sums to ${sum}, not 2^${bits} = ${total}`);
    return values;
  });
}

/** 32-bit words from crypto.getRandomValues, drawn in batches. */
class RandomWords {
  constructor() {
    this._words = new Uint32Array(BATCH);
    this._next = BATCH;
  }

  word() {
    if (this._next === BATCH) {
      crypto.getRandomValues(this._words);
      this._next = 0;
    }
    return this._words[this._next++];
  }

  /** One uniform integer in [0, bound) for 1 <= bound <= 2^53 (rejection on the top bits of one or two words). */
  uniformBelow(bound) {
    if (bound <= 1) return 0;
    let width = 0;
    while (2 ** width < bound) width++;
    for (;;) {
      const value = width <= 32 ? this.word() >>> (32 - width) : (this.word() >>> (64 - width)) * TWO_32 + this.word();
      if (value < bound) return value;
    }
  }

  /** One uniform integer in [0, 2^bits) as limbs [hi, lo] (bits <= 64). */
  uniform(bits) {
    if (bits <= 32) return [0, this.word() >>> (32 - bits)];
    const hi = this.word() >>> (64 - bits);
    return [hi, this.word()];
  }
}

function limbs(value) {
  return [Number(value >> 32n), Number(value & 0xffffffffn)];
}

/** u < threshold, both as [hi, lo] 32-bit limbs. */
function below([uHi, uLo], [hi, lo]) {
  return uHi < hi || (uHi === hi && uLo < lo);
}

/** Move a uniform column onto S_row (inside) or its complement: flip the lowest set bit of row when the parity disagrees. */
function hadamardHalf(row, column, inside) {
  let parity = row & column;
  parity ^= parity >>> 16;
  parity ^= parity >>> 8;
  parity ^= parity >>> 4;
  parity ^= parity >>> 2;
  parity ^= parity >>> 1;
  return ((parity & 1) === 0) !== inside ? column ^ (row & -row) : column;
}

/** The first index in [0, length) where before(index) is false, before being true then false along the
 *  indices (binary search; length if it is true everywhere). */
function partitionPoint(length, before) {
  let low = 0;
  let high = length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (before(middle)) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The index of the last entry <= x in an increasing array whose first entry is <= x. */
function lastAtMost(starts, x) {
  return partitionPoint(starts.length, (i) => starts[i] <= x) - 1;
}

/** The index of the first threshold above u (u < c, as limbs) in non-decreasing thresholds whose last is above u. */
function firstAbove(thresholds, u) {
  return partitionPoint(thresholds.length, (i) => !below(u, thresholds[i]));
}

/** Counts of n reports for input x over nOutputs outputs (any mechanism with sample); refused (RangeError with the
 *  memory estimate) beyond MAX_COUNTED_OUTPUTS outputs: draw with sample() and count the outputs drawn instead. */
function tally(mechanism, x, n) {
  if (mechanism.nOutputs > MAX_COUNTED_OUTPUTS) {
    throw new RangeError(`counts over ${mechanism.nOutputs} outputs would need about ${(8 * mechanism.nOutputs / 2 ** 30).toFixed(1)} GiB (limit ${MAX_COUNTED_OUTPUTS} outputs): draw reports with sample() and count the ones drawn`);
  }
  const counts = new Array(mechanism.nOutputs).fill(0);
  for (let i = 0; i < n; i++) counts[mechanism.sample(x)]++;
  return counts;
}

/**
 * Block Hadamard response (context-aware-ldp.md, Section 6.1), drawn exactly: symbol x at
 * position i of its block uses Hadamard row r = i + 1 of order K = 2^ceil(log2(size + 1));
 * a uniform column c, a coin u < T ("inside S_x"), and c ^= r & -r when the parity of
 * popcount(r & c) disagrees with the coin. P(y | x) = 2T / (K 2^b) on S_x, 2(2^b - T) / (K 2^b) off it.
 */
export class HadamardMechanism {
  constructor(document, { sizes, coin }) {
    this.kind = "block-hadamard";
    this.bits = document.bits;
    this.sha256 = document.sha256;
    this.blockSizes = sizes;
    this.starts = [];
    this.offsets = [];
    this.logSizes = [];
    let start = 0;
    let offset = 0;
    for (const size of sizes) {
      const log = 32 - Math.clz32(size); // K = 2^log is the smallest power of two above size
      this.starts.push(start);
      this.offsets.push(offset);
      this.logSizes.push(log);
      start += size;
      offset += 2 ** log;
    }
    this.k = start;
    this.nOutputs = offset;
    this._coin = limbs(coin);
    this._random = new RandomWords();
  }

  /** One report (global output index) for symbol x. */
  sample(x) {
    if (!Number.isInteger(x) || x < 0 || x >= this.k) throw new RangeError(`input index must be in 0..${this.k - 1}`);
    const block = lastAtMost(this.starts, x);
    const row = x - this.starts[block] + 1;
    const log = this.logSizes[block];
    const column = this._random.word() >>> (32 - log);
    return this.offsets[block] + hadamardHalf(row, column, below(this._random.uniform(this.bits), this._coin));
  }

  /** How often each output index is reported in n draws for symbol x. */
  counts(x, n) {
    return tally(this, x, n);
  }
}

/**
 * High-low Hadamard response (context-aware-ldp.md, Section 5.1, channel (13)-(14)), drawn exactly.
 * S = 2^ceil(log2(s + 1)); the i-th sensitive symbol uses row i + 1: a uniform column c, a coin
 * u < T ("inside S_x") and the parity flip, so P(y | x) = 2T / (S 2^b) on S_x, 2(2^b - T) / (S 2^b)
 * on the rest of [S]. The i-th non-sensitive symbol reports its own output S + i when u < K,
 * otherwise c: P(S + i | x) = K / 2^b, P(y | x) = (2^b - K) / (S 2^b) on [S].
 */
export class HighLowMechanism {
  constructor(document, { k, sensitive, coin, keep }) {
    this.kind = "high-low-hadamard";
    this.bits = document.bits;
    this.sha256 = document.sha256;
    this.k = k;
    this.sensitive = sensitive;
    this.logSize = 32 - Math.clz32(sensitive.length); // S = 2^logSize is the smallest power of two above s
    this.hadamardSize = 2 ** this.logSize;
    this.nOutputs = this.hadamardSize + k - sensitive.length;
    this._coin = limbs(coin);
    this._keep = limbs(keep);
    this._random = new RandomWords();
  }

  /** One report (output index) for symbol x. */
  sample(x) {
    if (!Number.isInteger(x) || x < 0 || x >= this.k) throw new RangeError(`input index must be in 0..${this.k - 1}`);
    let low = 0; // rank of x among the sensitive symbols: the first index with sensitive[index] >= x
    let high = this.sensitive.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.sensitive[middle] < x) low = middle + 1;
      else high = middle;
    }
    const u = this._random.uniform(this.bits);
    if (low < this.sensitive.length && this.sensitive[low] === x) {
      const column = this._random.word() >>> (32 - this.logSize);
      return hadamardHalf(low + 1, column, below(u, this._coin));
    }
    if (below(u, this._keep)) return this.hadamardSize + x - low;
    return this._random.word() >>> (32 - this.logSize);
  }

  /** How often each output index is reported in n draws for symbol x. */
  counts(x, n) {
    return tally(this, x, n);
  }
}

/**
 * A symmetric design at class level (kind orbit; designer/deploy/orbit.py), drawn exactly. Symbol x of
 * class a at rank i (n = n_a): u < c picks the cell (orbit o, high or low) on the class's cumulative
 * integer thresholds; then an offset d uniform in [0, j) (high) or [j, j + l) (low) and the column
 * t = ((i - d) mod n) + n q with q uniform in [0, T / n); a class constant on the orbit reports a uniform
 * column in [0, T). P(t | x) = H n / (2^b T j) where x is high, L n / (2^b T l) where it is low.
 */
export class OrbitMechanism {
  constructor(document, { ranges, sizes, columns, high, low, cells }) {
    this.kind = "orbit";
    this.bits = document.bits;
    this.sha256 = document.sha256;
    this.ranges = ranges;
    this.starts = ranges.map((range) => range[0]);
    this.sizes = sizes;
    this.columns = columns;
    this.high = high;
    this.low = low;
    this.k = sizes.reduce((a, b) => a + b, 0);
    this.offsets = [];
    let offset = 0;
    for (const period of columns) {
      this.offsets.push(offset);
      offset += period;
    }
    this.nOutputs = offset;
    this._cells = cells.map((row) => row.map(limbs));
    this._random = new RandomWords();
  }

  /** One report (output index) for symbol x. */
  sample(x) {
    if (!Number.isInteger(x) || x < 0 || x >= this.k) throw new RangeError(`input index must be in 0..${this.k - 1}`);
    const [first, , a, start] = this.ranges[lastAtMost(this.starts, x)];
    const rank = start + x - first;
    const u = this._random.uniform(this.bits);
    const cell = firstAbove(this._cells[a], u);
    const o = cell >>> 1;
    const isLow = (cell & 1) === 1;
    const n = this.sizes[a];
    const period = this.columns[o];
    const j = this.high[o][a];
    const count = isLow ? this.low[o][a] : j;
    if (count === n) return this.offsets[o] + this._random.uniformBelow(period);
    const d = (isLow ? j : 0) + this._random.uniformBelow(count);
    return this.offsets[o] + ((((rank - d) % n) + n) % n) + n * this._random.uniformBelow(period / n);
  }

  /** How often each output index is reported in n draws for symbol x. */
  counts(x, n) {
    return tally(this, x, n);
  }
}

/** A checked table package ready to sample. Build it with loadPackage. */
export class Mechanism {
  constructor(document, table) {
    this.kind = "table";
    this.nOutputs = document.outputs.length;
    this.bits = document.bits;
    this.inputs = [...document.inputs];
    this.outputs = [...document.outputs];
    this.sha256 = document.sha256;
    this._index = new Map(this.inputs.map((label, x) => [label, x]));
    // Cumulative thresholds as (hi, lo) 32-bit limbs; a report is the first y with u < c_y.
    this._hi = [];
    this._lo = [];
    for (const row of table) {
      let cumulative = 0n;
      const hi = new Float64Array(row.length);
      const lo = new Float64Array(row.length);
      row.forEach((value, y) => {
        cumulative += value;
        hi[y] = Number(cumulative >> 32n);
        lo[y] = Number(cumulative & 0xffffffffn);
      });
      this._hi.push(hi);
      this._lo.push(lo);
    }
    this._random = new RandomWords();
  }

  /** One report (output index) for input index x: P(Y = y) = T[x][y] / 2^bits exactly. */
  sample(x) {
    if (!Number.isInteger(x) || x < 0 || x >= this._hi.length) throw new RangeError(`input index must be in 0..${this._hi.length - 1}`);
    const [uHi, uLo] = this._random.uniform(this.bits);
    const hi = this._hi[x];
    const lo = this._lo[x];
    let low = 0;
    let high = hi.length - 1; // c_{m-1} = 2^bits > u: the answer is in [0, m-1]
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (uHi < hi[middle] || (uHi === hi[middle] && uLo < lo[middle])) high = middle;
      else low = middle + 1;
    }
    return low;
  }

  /** One report (output label) for an input label. */
  report(label) {
    const x = this._index.get(label);
    if (x === undefined) throw new RangeError(`unknown input label ${JSON.stringify(label)}`);
    return this.outputs[this.sample(x)];
  }

  /** How often each output index is reported in n draws for input index x. */
  counts(x, n) {
    return tally(this, x, n);
  }
}

const KINDS = {
  table: [checkStructure, (document, parsed) => new Mechanism(document, parsed)],
  "block-hadamard": [checkHadamard, (document, parsed) => new HadamardMechanism(document, parsed)],
  "high-low-hadamard": [checkHighLow, (document, parsed) => new HighLowMechanism(document, parsed)],
  orbit: [checkOrbit, (document, parsed) => new OrbitMechanism(document, parsed)],
};

/** Refuse package text holding a number with a fraction or an exponent (JSON.parse would read 1.0 as 1). */
function checkNumbers(text) {
  const outside = text.replace(/"(?:[^"\\]|\\.)*"/g, '""'); // the text with every string emptied
  const number = outside.match(/-?\d+(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)/);
  if (number) {
    throw new PackageError(`the package holds the number ${number[0].slice(0, 40)}: numbers must be integers written without a fraction or an exponent (schema_version 1, bits 32)`);
  }
  const long = outside.match(/\d{21,}/); // as sampler.py's MAX_INTEGER_DIGITS (JSON.parse reads it as a rounded double)
  if (long) {
    throw new PackageError(`the package holds a ${long[0].length}-digit number ${long[0].slice(0, 20)}...: numbers in a package are small integers (schema_version 1, bits 32)`);
  }
}

/**
 * Parse (if text), check structure and SHA-256, authenticate (options: { publicKey } base64 Ed25519 key,
 * { sha256 } pinned hash, or { allowUnauthenticated: true }); return a Mechanism (table), HadamardMechanism,
 * HighLowMechanism or OrbitMechanism, whose .trust says how it was authenticated. Throws PackageError / PackageTampered /
 * PackageUntrusted.
 */
export async function loadPackage(source, options = {}) {
  let document = source;
  if (typeof source === "string") {
    if (source.length > MAX_PACKAGE_CHARACTERS) throw new PackageError(`the package has ${source.length} characters, more than the limit ${MAX_PACKAGE_CHARACTERS}`);
    try {
      document = JSON.parse(source);
    } catch (error) {
      throw new PackageError(`not valid JSON (truncated or malformed): ${error.message}`);
    }
    checkNumbers(source);
  }
  const [check, build] = KINDS[checkCommon(document)]; // checkCommon accepts only the own kinds of MEMBERS
  const parsed = check(document);
  const canonical = new TextEncoder().encode(canonicalForm(document));
  const digest = await hexDigest(canonical);
  if (digest !== document.sha256) {
    throw new PackageTampered(`SHA-256 mismatch: the package says ${document.sha256} but its content hashes to ${digest}`);
  }
  const trust = await authenticate(document, canonical, options);
  const mechanism = build(document, parsed);
  mechanism.trust = trust;
  return mechanism;
}
