#!/usr/bin/env node
// What installing the CLI costs a user: packs the workspaces, installs
// @assemblyline-agents/node from its tarball (with the tarballs of the
// workspaces it depends on, nothing else) into a temp folder, then reports the
// size of node_modules, the median wall time of `assembly-line help`, of
// importing the CLI module, and whether a provider SDK was loaded by it.
// Numbers for docs/releasing.md; never run from the test suite.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, publishedWorkspaces, packWorkspaces } from "./workspaces.mjs";

const CLI = "@assemblyline-agents/node";
const RUNS = 5;

const workspaces = publishedWorkspaces();
const byName = new Map(workspaces.map((workspace) => [workspace.name, workspace]));
const closure = new Set();
const visit = (name) => {
  if (closure.has(name) || !byName.has(name)) return;
  closure.add(name);
  const pkg = byName.get(name).packageJson;
  for (const dependency of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies })) visit(dependency);
};
visit(CLI);

const work = mkdtempSync(join(tmpdir(), "al-measure-cli-"));
try {
  const packed = packWorkspaces(join(work, "tarballs"), workspaces.filter((workspace) => closure.has(workspace.name)));
  const app = join(work, "app");
  execFileSync("mkdir", ["-p", app]);
  cpSync(join(ROOT, "examples/notes-agent"), join(app, "notes-agent"), { recursive: true, filter: (source) => !source.includes(".assembly-line") });
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "measure-cli", private: true, type: "module" }));
  // --omit-optional: what `npm install --omit=optional @assemblyline-agents/node` gives, without the Pi engine (an optional dependency).
  const omitOptional = process.argv.includes("--omit-optional");
  const tarballs = packed.filter((entry) => !(omitOptional && byName.get(CLI).packageJson.optionalDependencies?.[entry.name])).map((entry) => entry.tarball);
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...(omitOptional ? ["--omit=optional"] : []), ...tarballs], { cwd: app, stdio: "ignore" });
  const kilobytes = Number(execFileSync("du", ["-sk", join(app, "node_modules")], { encoding: "utf8" }).split("\t")[0]);
  const packages = Number(execFileSync("bash", ["-c", "find node_modules -name package.json -path '*node_modules/*/package.json' -not -path '*/node_modules/*/node_modules/*/*/package.json' | wc -l"], { cwd: app, encoding: "utf8" }));
  const median = (command, args) => {
    const times = [];
    for (let index = 0; index < RUNS; index += 1) {
      const started = process.hrtime.bigint();
      const result = spawnSync(command, args, { cwd: app, stdio: "ignore" });
      if (result.status !== 0 && args[1] !== "help") throw new Error(`${command} ${args.join(" ")} exited ${result.status}`);
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return Math.round(times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]);
  };
  const bin = join(app, "node_modules/.bin/assembly-line");
  const main = join(app, "node_modules", CLI, "dist/cli/main.js");
  // A resolve hook lists every module the import pulls in.
  const hooks = `export async function resolve(s, c, next) { const r = await next(s, c); process.stderr.write("RESOLVED " + r.url + "\\n"); return r; }`;
  const traced = spawnSync(process.execPath, ["--input-type=module", "-e",
    `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}); await import(${JSON.stringify(main)});`], { cwd: app, encoding: "utf8" });
  const urls = traced.stderr.split("\n").filter((line) => line.startsWith("RESOLVED ")).map((line) => line.slice(9));
  const packagesLoaded = {};
  for (const url of urls) {
    const name = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
    if (name && !name.startsWith("@assemblyline-agents/")) packagesLoaded[name] = (packagesLoaded[name] ?? 0) + 1;
  }
  const report = {
    installedBytes: kilobytes * 1024,
    installedMB: Math.round(kilobytes / 1024),
    packages,
    helpMs: median(process.execPath, [bin, "help"]),
    importMs: median(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(main)})`]),
    // What importing the CLI cost while it imported the Pi engine at start-up: the same two graphs in one process.
    ...(omitOptional ? {} : { importWithPiEngineMs: median(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(main)}); await import("@assemblyline-agents/pi")`]) }),
    // A run on a scripted model, which needs no engine package.
    scriptedRunExit: spawnSync(process.execPath, [bin, "run", "notes-agent", "--message", "Remember to buy milk", "--model", "scripted:notes-agent/conversations/remember-milk.json", "--approve", "all"], { cwd: app, encoding: "utf8" }).status,
    modulesLoadedByImport: urls.length,
    dependencyModulesLoadedByImport: packagesLoaded,
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  rmSync(work, { recursive: true, force: true });
}
