// Shared by Node (node trust_cases.mjs CLIENT.mjs CASES.json) and the headless Chromium page of
// tests/test_deploy_trust_js.py: load each case's package text with the given loadPackage options and
// record "ok: <trust>" or the error's class name and message. A case with "counts": [x, n] also calls
// mechanism.counts(x, n) and records its length (or the error).
export async function runCases(client, cases) {
  const out = {};
  for (const { name, text, options, counts } of cases) {
    try {
      const mechanism = await client.loadPackage(text, options);
      out[name] = `ok: ${mechanism.trust}`;
      if (counts) out[name] += `; counts ${mechanism.counts(counts[0], counts[1]).length}`;
    } catch (error) {
      out[name] = `${error.constructor.name}: ${error.message}`;
    }
  }
  return out;
}

if (typeof process !== "undefined" && process.argv?.[1]?.endsWith("trust_cases.mjs")) {
  const { readFileSync } = await import("node:fs");
  const { pathToFileURL } = await import("node:url");
  const [clientPath, casesPath] = process.argv.slice(2);
  const client = await import(pathToFileURL(clientPath).href);
  console.log(JSON.stringify(await runCases(client, JSON.parse(readFileSync(casesPath, "utf8")))));
}
