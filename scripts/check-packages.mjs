#!/usr/bin/env node
// `npm run check:packages`: pack every published workspace once and lint the
// tarball as npm would publish it, with publint (package.json fields, exports,
// files) and @arethetypeswrong/cli (types resolve the way the code does).
// Our packages are ESM-only, so attw runs with its esm-only profile: a
// CommonJS require() of them is not supported, by design.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publint } from "publint";
import { formatMessage } from "publint/utils";
import { ROOT, packWorkspaces } from "./workspaces.mjs";

const destination = mkdtempSync(join(tmpdir(), "al-check-packages-"));
let problems = 0;
try {
  for (const pkg of packWorkspaces(destination)) {
    const tarball = readFileSync(pkg.tarball);
    const { messages, pkg: packageJson } = await publint({ pack: { tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength) }, level: "suggestion", strict: true });
    const lines = messages.map((message) => `    publint ${message.type}: ${formatMessage(message, packageJson, { color: false })}`);
    let attw = "";
    try {
      execFileSync(join(ROOT, "node_modules/.bin/attw"), [pkg.tarball, "--profile", "esm-only", "--format", "ascii", "--no-color", "--no-emoji"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      attw = `${error.stdout ?? ""}${error.stderr ?? ""}`.trim();
    }
    if (attw) lines.push(...attw.split("\n").map((line) => `    attw: ${line}`));
    problems += messages.length + (attw ? 1 : 0);
    console.log(`${lines.length === 0 ? "ok  " : "FAIL"}  ${pkg.name}@${pkg.version} (${pkg.files.length} files)`);
    for (const line of lines) console.log(line);
  }
} finally {
  rmSync(destination, { recursive: true, force: true });
}
if (problems > 0) {
  console.error(`\n${problems} packaging problem(s); docs/releasing.md lists the rules every package follows.`);
  process.exitCode = 1;
} else console.log("\nevery published package passes publint and attw");
