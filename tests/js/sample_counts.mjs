// Node driver for tests/test_deploy_js.py: load a package with the JS client and count reports.
// Usage: node sample_counts.mjs CLIENT.mjs PACKAGE.json X N [TRUST]
// TRUST is a JSON object of loadPackage options ({"publicKey": ...}, {"sha256": ...}); default
// {"allowUnauthenticated": true}.
// Prints one JSON line: {"digest", "canonical", "counts", "trust"} or {"error": class name, "message"}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [clientPath, packagePath, x, n, trust] = process.argv.slice(2);
const client = await import(pathToFileURL(clientPath).href);
const text = readFileSync(packagePath, "utf8");
try {
  const mechanism = await client.loadPackage(text, trust ? JSON.parse(trust) : { allowUnauthenticated: true });
  const document = JSON.parse(text);
  let counts = [];
  if (mechanism.kind === "table") counts = Number(n) > 0 ? mechanism.counts(Number(x), Number(n)) : [];
  else {
    counts = new Array(mechanism.nOutputs).fill(0);
    for (let i = 0; i < Number(n); i++) counts[mechanism.sample(Number(x))]++;
  }
  console.log(JSON.stringify({ digest: await client.packageDigest(document), canonical: client.canonicalForm(document), counts, trust: mechanism.trust }));
} catch (error) {
  console.log(JSON.stringify({ error: error.constructor.name, message: error.message }));
}
