// ldp-memo.mjs — memoizing client for ldp-designer table packages with a longitudinal policy
// (the "longitudinal" member; designer/deploy/memo.py is the Python twin). No dependencies beyond
// ldp-client.mjs; browsers and Node >= 20.
//
//   import { loadMemoized, MemoryStorage, NodeFileStorage, IndexedDBStorage, LocalStorageStorage } from "./ldp-memo.mjs";
//   const client = await loadMemoized(text, new IndexedDBStorage("ldp-memo"), { publicKey: "BASE64" });
//   const report = await client.report("yes");   // same permanent response for "yes" on every call and reload
//
// The permanent response of a value is drawn once from the package's table (exactly, by ldp-client.mjs's
// Mechanism) and kept in the storage; every round reports the instantaneous stage applied to it (exact
// integer thresholds too), or the permanent response itself when the policy has none. A report beyond
// the policy's rounds_per_period in one period (floor(unix seconds / period_seconds)) throws RoundsExceeded.
//
// Storage: one state object per storage (per package), { package: sha256, permanent: { value: response },
// periods: { period: count } }, read, changed and written in one atomic step by the adapter's update(key, change):
//   MemoryStorage        — a Map (tests, one page's lifetime);
//   NodeFileStorage      — one JSON file: a lock file created exclusively (O_EXCL) serialises processes, the
//                          new state is written to a temporary file, synced and renamed over the old one;
//   IndexedDBStorage     — one readwrite transaction (get, then put; durability "strict") per update: atomic
//                          across tabs, on disk before the report is made;
//   LocalStorageStorage  — window.localStorage, one synchronous read-modify-write (atomic within a page).
// A storage keyed by another package's hash is refused (StoreMismatch). The state must stay secret:
// whoever reads it learns the permanent responses (docs/longitudinal.md).

import { Mechanism, PackageError, checkStructure, loadPackage } from "./ldp-client.mjs";

export class StoreMismatch extends PackageError {}
export class RoundsExceeded extends Error {}

const DECIMAL = /^(0|[1-9][0-9]{0,19})$/;
const STATE = "ldp-memo-state"; // one state per storage: it names its package, another package's is refused
const MEMBERS = ["instantaneous", "memoization", "period_seconds", "report_E", "rounds_per_period"];

function positive(text, where) {
  if (typeof text !== "string" || !DECIMAL.test(text) || BigInt(text) < 1n) throw new PackageError(`longitudinal.${where} must be a positive decimal string`);
  return Number(text);
}

/** Check a longitudinal member against a table package (k inputs, m outputs); return { rounds, period, stage }. */
export function checkLongitudinal(member, k, m) {
  if (member === null || typeof member !== "object" || Object.keys(member).sort().join(",") !== MEMBERS.join(",")) {
    throw new PackageError(`longitudinal must have exactly the members ${MEMBERS.join(", ")}`);
  }
  if (member.memoization !== "required") throw new PackageError(`longitudinal.memoization must be "required"`);
  const rounds = positive(member.rounds_per_period, "rounds_per_period");
  const period = positive(member.period_seconds, "period_seconds");
  const levels = member.report_E;
  if (!Array.isArray(levels) || levels.length !== k || !levels.every((row) => Array.isArray(row) && row.length === k && row.every((entry) => typeof entry === "string"))) {
    throw new PackageError(`longitudinal.report_E must be ${k} x ${k} exact levels written as text`);
  }
  const stage = member.instantaneous;
  if (stage === null) return { rounds, period, stage: null };
  if (typeof stage !== "object" || Array.isArray(stage) || Object.keys(stage).sort().join(",") !== "bits,outputs,table") {
    throw new PackageError("longitudinal.instantaneous must be null or have exactly the members bits, outputs, table");
  }
  if (!Number.isInteger(stage.bits) || stage.bits < 8 || stage.bits > 64) throw new PackageError("longitudinal.instantaneous.bits must be an integer from 8 to 64");
  if (!Array.isArray(stage.table) || stage.table.length !== m) throw new PackageError(`longitudinal.instantaneous.table must have ${m} rows (one per output of the package)`);
  // the stage is a table package of its own (rows: the package's outputs): ldp-client.mjs checks it
  const inputs = Array.from({ length: m }, (_, y) => `output ${y}`);
  const document = { format: "ldp-designer-mechanism", schema_version: 1, kind: "table", bits: stage.bits, inputs, outputs: stage.outputs,
    E: [], table: stage.table, certificate: {}, utility: {}, sha256: "0".repeat(64) };
  try {
    return { rounds, period, stage: new Mechanism(document, checkStructure(document)) };
  } catch (error) {
    throw new PackageError(`longitudinal.instantaneous: ${error.message}`);
  }
}

/** A Map: state lives as long as the object. */
export class MemoryStorage {
  constructor() {
    this._map = new Map();
  }

  async update(key, change) {
    const next = change(this._map.has(key) ? structuredClone(this._map.get(key)) : null);
    this._map.set(key, structuredClone(next));
    return next;
  }
}

/** One JSON file per store (Node): exclusive lock file, write to a temporary file, fsync, rename. */
export class NodeFileStorage {
  constructor(path, { timeoutMs = 30000 } = {}) {
    this.path = path;
    this.timeoutMs = timeoutMs;
  }

  async update(key, change) {
    const fs = await import("node:fs/promises");
    const lock = `${this.path}.lock`;
    const start = Date.now();
    let handle;
    for (;;) {
      try {
        handle = await fs.open(lock, "wx");
        break;
      } catch (error) {
        if (error.code !== "EEXIST") throw error;
        if (Date.now() - start > this.timeoutMs) throw new Error(`the memo store ${this.path} stayed locked for ${this.timeoutMs} ms (${lock})`);
        await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8));
      }
    }
    try {
      let all = {};
      try {
        all = JSON.parse(await fs.readFile(this.path, "utf8"));
      } catch (error) {
        if (error.code !== "ENOENT") throw error;
      }
      const next = change(key in all ? all[key] : null);
      all[key] = next;
      const temporary = `${this.path}.${process.pid}.tmp`;
      const out = await fs.open(temporary, "w");
      try {
        await out.writeFile(JSON.stringify(all));
        await out.sync();
      } finally {
        await out.close();
      }
      await fs.rename(temporary, this.path);
      return next;
    } finally {
      await handle.close();
      await fs.unlink(lock);
    }
  }
}

/** Browser IndexedDB: one object store, one readwrite transaction per update. */
export class IndexedDBStorage {
  constructor(name = "ldp-memo") {
    this.name = name;
    this._database = null;
  }

  _open() {
    if (this._database === null) {
      this._database = new Promise((resolve, reject) => {
        const request = indexedDB.open(this.name, 1);
        request.onupgradeneeded = () => request.result.createObjectStore("state");
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
      });
    }
    return this._database;
  }

  async update(key, change) {
    const database = await this._open();
    return new Promise((resolve, reject) => {
      const transaction = database.transaction("state", "readwrite", { durability: "strict" });
      const store = transaction.objectStore("state");
      let next;
      const read = store.get(key);
      read.onsuccess = () => {
        try {
          next = change(read.result === undefined ? null : read.result);
          store.put(next, key);
        } catch (error) {
          transaction.abort();
          reject(error);
        }
      };
      transaction.oncomplete = () => resolve(next);
      transaction.onerror = () => reject(transaction.error);
    });
  }
}

/** Browser localStorage (JSON text per key): a synchronous read-modify-write, atomic within a page; pages of
 *  one origin open at once may interleave (IndexedDBStorage serialises them). */
export class LocalStorageStorage {
  constructor(prefix = "ldp-memo:") {
    this.prefix = prefix;
  }

  async update(key, change) {
    const text = localStorage.getItem(this.prefix + key);
    const next = change(text === null ? null : JSON.parse(text));
    localStorage.setItem(this.prefix + key, JSON.stringify(next));
    return next;
  }
}

/** A table package under its longitudinal policy: memoized permanent responses, rounds per period enforced. */
export class MemoizedMechanism {
  constructor(mechanism, policy, storage, clock) {
    this.mechanism = mechanism;
    this.policy = policy;
    this.storage = storage;
    this.clock = clock;
    this.sha256 = mechanism.sha256;
    this.trust = mechanism.trust;
    this.outputs = policy.stage === null ? mechanism.outputs : policy.stage.outputs;
  }

  /** Open (or create) this package's state, refusing one made for another package. */
  async _change(step) {
    return this.storage.update(STATE, (state) => {
      const current = state ?? { package: this.sha256, permanent: {}, periods: {} };
      if (current.package !== this.sha256) throw new StoreMismatch(`the memo store was made for the package ${String(current.package).slice(0, 16)}..., not for ${this.sha256.slice(0, 16)}...`);
      return step(current);
    });
  }

  /** Check the storage belongs to this package (StoreMismatch otherwise). */
  async open() {
    await this._change((state) => state);
    return this;
  }

  /** The permanent response (output index of the package's table) of input index x, drawn once. */
  async permanent(x) {
    const label = this.mechanism.inputs[x];
    const state = await this._change((current) => {
      if (!(label in current.permanent)) current.permanent[label] = this.mechanism.sample(x);
      return current;
    });
    return state.permanent[label];
  }

  /** One report (output index) of input index x this round; throws RoundsExceeded beyond the policy. */
  async sample(x) {
    if (!Number.isInteger(x) || x < 0 || x >= this.mechanism.inputs.length) throw new RangeError(`input index must be in 0..${this.mechanism.inputs.length - 1}`);
    const period = String(Math.floor(this.clock() / 1000 / this.policy.period));
    const label = this.mechanism.inputs[x];
    const state = await this._change((current) => {
      const count = current.periods[period] ?? 0;
      if (count >= this.policy.rounds) throw new RoundsExceeded(`${this.policy.rounds} report(s) already made in this period (the package's policy allows ${this.policy.rounds} per period)`);
      current.periods = { [period]: count + 1 }; // earlier periods are done with
      if (!(label in current.permanent)) current.permanent[label] = this.mechanism.sample(x);
      return current;
    });
    const response = state.permanent[label];
    return this.policy.stage === null ? response : this.policy.stage.sample(response);
  }

  /** One report (output label) of an input label. */
  async report(label) {
    const x = this.mechanism.inputs.indexOf(label);
    if (x < 0) throw new RangeError(`unknown input label ${JSON.stringify(label)}`);
    return this.outputs[await this.sample(x)];
  }
}

/**
 * Load a table package with a longitudinal member (loadPackage's checks and trust options), bind it to a
 * storage adapter (StoreMismatch if that storage holds another package's state). options.clock: ms since the
 * epoch (default Date.now).
 */
export async function loadMemoized(source, storage, options = {}) {
  const { clock = Date.now, ...trust } = options;
  const mechanism = await loadPackage(source, trust);
  const document = typeof source === "string" ? JSON.parse(source) : source;
  if (mechanism.kind !== "table" || !("longitudinal" in document)) throw new PackageError("a memoizing client needs a table package with a longitudinal member");
  const policy = checkLongitudinal(document.longitudinal, mechanism.inputs.length, mechanism.nOutputs);
  return new MemoizedMechanism(mechanism, policy, storage, clock).open();
}
