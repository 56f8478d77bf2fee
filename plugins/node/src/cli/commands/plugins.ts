import "../registry-kernel.js";
import { existsSync } from "node:fs";
import { readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { AssemblyLineError, errorSummary, isAssemblyLineError } from "@assemblyline-agents/core";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import {
  contractExports,
  gatewayUsage,
  REGISTRY_SOURCE_ENV,
  inspectPluginPackage,
  loadRegistry,
  rangeIncludesKernel,
  searchRegistry,
  verifyPluginPackage,
  type InspectedPlugin,
  type KitOutcome,
  type LoadedRegistry,
  type PluginProvide,
  type RegistryEntry,
  type VerifyStep,
  runNpm,
} from "@assemblyline-agents/registry";
import { jsonOption, requirePositional, stringOption, type ParsedCommand } from "../args.js";
import type { CommandIO } from "../io.js";
import { readFromSpec, type InstallSource } from "../install-source.js";
import { npmInstall, readProjectPackageJson } from "../npm-install.js";
import { checkPluginBeforeInstall } from "../plugin-preflight.js";
import { envelope, progress } from "../output.js";

/** `assembly-line plugins <args>` for embedding (tests, scripts): the command line's parsing; errors are thrown, not printed. */
export async function pluginsCommand(args: string[], io: CommandIO): Promise<number> {
  const { runCommandLine } = await import("../program.js");
  return runCommandLine(["plugins", ...args], io);
}

const fits = (range: string) => rangeIncludesKernel(range, KERNEL_VERSION);

/** The list's contracts column: each adapter's contract (with its facet count), then each channel's, engine's and sink's. */
function contractsOf(entry: RegistryEntry): string {
  const adapters = entry.provides.map((provide: Pick<PluginProvide, "contract" | "facets">) => (provide.facets ? `${provide.contract} (${provide.facets.length} facets)` : provide.contract));
  const others = contractExports(entry).filter((exported) => !exported.gatewaySlot).map((exported) => exported.contract);
  const all = [...adapters, ...others];
  return all.length === 0 ? "(no gateway slots)" : all.join(", ");
}

/** Where each kind of non-slot export is used, for `plugins info`. */
const USED_FROM: Record<string, string> = {
  channel: "default-export its result from an agent's channels/<name>.ts",
  harness: "an engine: the host picks it per model spec (agentHarness, modelHarnesses)",
  "telemetry-sink": "return it from setup() in an agent's instrumentation.ts",
};

/** Left-aligned columns, two spaces apart. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  ").trimEnd());
}

function printEntries(entries: RegistryEntry[], io: CommandIO): void {
  io.out(
    table([
      ["id", "package", "version", "kernel", `fits ${KERNEL_VERSION}`, "contracts"],
      ...entries.map((entry) => [entry.id, entry.package, entry.version, entry.kernel, fits(entry.kernel) ? "yes" : "no", contractsOf(entry)]),
    ]).join("\n"),
  );
}

/** The index to read (--registry, $ASSEMBLY_LINE_REGISTRY, or the bundled one), and a line on stderr saying which and how old. */
async function openRegistry(parsed: ParsedCommand, io: CommandIO): Promise<LoadedRegistry> {
  const source = stringOption(parsed, "registry");
  const registry = await loadRegistry(source !== undefined ? { source } : {});
  const age = registry.ageDays === undefined ? "age unknown" : `${registry.ageDays} day(s) old`;
  if (registry.fallbackReason) io.err(`registry: ${registry.fallbackReason}; using the bundled index instead`);
  io.err(`registry: ${registry.location}${registry.updatedAt ? `, updated ${registry.updatedAt}` : ""} (${age})${registry.origin === "bundled" ? `; --registry <url|file> or ${REGISTRY_SOURCE_ENV} names a newer one` : ""}`);
  return registry;
}

export async function listPlugins(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const registry = await openRegistry(parsed, io);
  const entries = registry.entries;
  if (parsed.values.json) io.out(envelope({ kernelVersion: KERNEL_VERSION, ...(registry.updatedAt ? { updatedAt: registry.updatedAt } : {}), plugins: entries }));
  else printEntries(entries, io);
  return 0;
}

export async function searchPlugins(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const usage = "assembly-line plugins search <words...> [--json] [--registry <url|file>]";
  const { values, positionals } = parsed;
  requirePositional(positionals, 0, "words", usage);
  const found = searchRegistry((await openRegistry(parsed, io)).entries, positionals);
  if (values.json) io.out(envelope({ plugins: found }));
  else if (found.length === 0) io.out(`no plugin matches "${positionals.join(" ")}"; assembly-line plugins list shows them all`);
  else printEntries(found, io);
  return 0;
}

async function findEntry(id: string, parsed: ParsedCommand, io: CommandIO): Promise<RegistryEntry> {
  const entries = (await openRegistry(parsed, io)).entries;
  const entry = entries.find((candidate) => candidate.id === id);
  if (!entry) {
    throw new AssemblyLineError("AL_ERR_PLUGIN_NOT_FOUND", `the registry lists no plugin "${id}"`, {
      fix: `Pick one of ${entries.map((candidate) => candidate.id).join(", ")} (assembly-line plugins search <words>), or add a third-party package by folder or tarball.`,
    });
  }
  return entry;
}

export async function pluginInfo(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const usage = "assembly-line plugins info <id> [--json] [--registry <url|file>]";
  const { values, positionals } = parsed;
  const entry = await findEntry(requirePositional(positionals, 0, "id", usage), parsed, io);
  if (values.json) {
    io.out(envelope({ plugin: entry, fitsKernel: fits(entry.kernel), kernelVersion: KERNEL_VERSION, gateway: gatewayUsage(entry) }));
    return 0;
  }
  io.out(`${entry.id}: ${entry.package} ${entry.version}`);
  io.out(`  ${entry.description}`);
  io.out(`  tags: ${entry.tags.join(", ")}`);
  io.out(`  kernel: ${entry.kernel} (${fits(entry.kernel) ? "includes" : "does NOT include"} this kernel ${KERNEL_VERSION})`);
  const others = contractExports(entry).filter((exported) => !exported.gatewaySlot);
  io.out(entry.provides.length > 0 ? "  provides:" : others.length > 0 ? "  provides: no gateway slot" : "  provides: no gateway slot (it is used from host code)");
  for (const provide of entry.provides) {
    io.out(`    ${provide.slot} "${provide.name}" via ${provide.export}(): ${provide.contract}${provide.facets ? `, facets ${provide.facets.join(", ")}` : ""}`);
  }
  for (const [kind, title] of [["channel", "channels"], ["harness", "harnesses"], ["telemetry-sink", "telemetry sinks"]] as const) {
    const listed = others.filter((exported) => exported.kind === kind);
    if (listed.length === 0) continue;
    io.out(`  ${title}:`);
    for (const exported of listed) io.out(`    "${exported.name}" via ${exported.export}(): ${exported.contract}; ${USED_FROM[kind]}`);
  }
  if (entry.env.length > 0) io.out("  env:");
  for (const variable of entry.env) {
    io.out(`    ${variable.name} (${variable.required ? "required" : "optional"}${variable.secret ? ", secret" : ""})${variable.description ? `: ${variable.description}` : ""}`);
  }
  io.out(`  options schema: ${entry.configSchema ? "yes, checked at boot" : "none"}`);
  io.out(`  install: npx assembly-line plugins add ${entry.id}`);
  printGateway(gatewayUsage(entry), io);
  return 0;
}

function printGateway(lines: string[], io: CommandIO): void {
  if (lines.length === 0) return;
  io.out("  gateway.ts:");
  for (const line of lines) io.out(line === "" ? "" : `    ${line}`);
}

/**
 * Whether `plugins add <target>` names a folder or tarball rather than a registry
 * id: only when it says so (./, ../, ., .., an absolute path, a drive letter, or a
 * .tgz / .tar.gz name). A bare word is a registry id even when the project has a
 * folder of that name (a docker/ of compose files must not shadow the docker plugin).
 */
const isExplicitPath = (target: string) => /^(\.{1,2}([\\/]|$)|[\\/]|[A-Za-z]:[\\/])/.test(target) || /\.(tgz|tar\.gz)$/.test(target);

export async function addPlugin(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const usage = "assembly-line plugins add <id|dir|tarball> [--dir <project>] [--from <npm spec>] [--offline] [--registry <url|file>]";
  const json = jsonOption(parsed);
  const target = requirePositional(parsed.positionals, 0, "id", usage);
  const project = resolve(stringOption(parsed, "dir") ?? process.cwd());
  if (!existsSync(join(project, "package.json"))) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${project} has no package.json to add the plugin to`, { fix: "Run it in your project folder (npm init -y creates one), or pass --dir <project>." });
  }
  await readProjectPackageJson(project);
  const from = stringOption(parsed, "from");
  let source: InstallSource;
  if (from !== undefined) source = readFromSpec(from, usage);
  else if (isExplicitPath(target)) {
    const path = resolve(target);
    source = { check: path, install: () => path };
  } else {
    const entry = await findEntry(target, parsed, io).catch((error: unknown) => {
      if (!isAssemblyLineError(error, "AL_ERR_PLUGIN_NOT_FOUND") || !existsSync(target)) throw error;
      throw new AssemblyLineError(error.code, `${errorSummary(error)} ("${target}" is read as a registry id, not as the ${target} folder here)`, {
        fix: `To add that package folder or tarball, write it as a path: assembly-line plugins add ./${target}. ${error.fix ?? ""}`.trim(),
        cause: error,
      });
    });
    source = { check: `${entry.package}@^${entry.version}`, name: entry.package, install: (version) => `${entry.package}@${version}` };
  }
  const step = progress(io, json);
  step(`checking ${source.check} before installing it`);
  const checked = await checkPluginBeforeInstall(source.check, { kernelVersion: KERNEL_VERSION, project, offline: parsed.values.offline === true });
  // npm install would resolve a range or tag again, and a release published since the check would go in unchecked.
  const install = source.install(checked.version);
  const before = await snapshotProject(project);
  step(`installing ${install} into ${project} with npm`);
  const name = await npmInstall(project, install, { offline: parsed.values.offline === true, ...(source.name ? { knownName: source.name } : {}) });

  let plugin: InspectedPlugin;
  step(`checking ${name} against kernel ${KERNEL_VERSION}`);
  try {
    plugin = await inspectPluginPackage(join(project, "node_modules", name));
  } catch (error) {
    if (!isAssemblyLineError(error)) throw error;
    // A package the host would refuse at boot is no use in the project: put package.json, the lock file and node_modules back.
    step(`${name} does not load; restoring ${project} as it was`);
    const restored = await restoreProject(project, before, name, parsed.values.offline === true);
    const what = errorSummary(error);
    const outcome = restored.ok
      ? `Nothing was kept: ${project}'s package.json, lock file and node_modules are as they were before plugins add.`
      : `Putting the project back failed (${restored.reason}); ${project}'s package.json and lock file are restored, run npm install there to match node_modules to them.`;
    throw new AssemblyLineError(error.code, `${what}\n${outcome}`, {
      ...(error.fix ? { fix: `${error.fix} (a fix for the plugin's author; until then, use another release)` } : {}),
      details: { ...error.details, package: name, restored: restored.ok },
      cause: error,
    });
  }
  if (json) {
    const gateway = gatewayUsage({ package: name, provides: plugin.manifest.provides });
    io.out(envelope({ package: name, version: plugin.version, plugin: plugin.manifest.id, kernel: plugin.manifest.kernel, provides: plugin.manifest.provides, env: plugin.manifest.env ?? [], gateway }));
    return 0;
  }
  io.out(`added ${name}@${plugin.version}: plugin "${plugin.manifest.id}", kernel ${plugin.manifest.kernel} includes ${KERNEL_VERSION}`);
  for (const provide of plugin.manifest.provides) io.out(`  provides ${provide.slot} "${provide.name}" (${provide.contract}) via ${provide.export}()`);
  const required = (plugin.manifest.env ?? []).filter((variable) => variable.required);
  if (required.length > 0) io.out(`  set before a production boot: ${required.map((variable) => variable.name).join(", ")}`);
  printGateway(gatewayUsage({ package: name, provides: plugin.manifest.provides }), io);
  return 0;
}

/** The files `npm install --save` rewrites, as they were; undefined for a file that did not exist. */
interface ProjectSnapshot {
  packageJson: string;
  lock: string | undefined;
}

async function snapshotProject(project: string): Promise<ProjectSnapshot> {
  return {
    packageJson: await readFile(join(project, "package.json"), "utf8"),
    lock: await readFile(join(project, "package-lock.json"), "utf8").catch(() => undefined),
  };
}

/**
 * Write package.json and the lock file back, then let npm make node_modules
 * match them (it prunes what they no longer name). A lock file npm created is
 * removed again. Never throws: the caller reports a failed restore.
 */
async function restoreProject(project: string, before: ProjectSnapshot, name: string, offline: boolean): Promise<{ ok: true } | { ok: false; reason: string }> {
  const lockFile = join(project, "package-lock.json");
  try {
    await writeFile(join(project, "package.json"), before.packageJson);
    if (before.lock !== undefined) await writeFile(lockFile, before.lock);
    const args = ["install", "--no-audit", "--no-fund", ...(offline ? ["--offline"] : [])];
    const ran = await runNpm(args, project, `restore ${project}`);
    const result = { code: ran.code, text: `${ran.stdout}${ran.stderr}` };
    if (before.lock === undefined) await rm(lockFile, { force: true });
    // npm prunes the package but leaves its scope folder behind; remove it when nothing else is in it.
    const scope = name.startsWith("@") ? join(project, "node_modules", name.split("/")[0]!) : undefined;
    if (scope) await rmdir(scope).catch(() => undefined);
    return result.code === 0 ? { ok: true } : { ok: false, reason: `npm ${args.join(" ")} exited ${result.code}: ${result.text.trim().split("\n").slice(-3).join(" / ")}` };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

export async function verifyPlugin(parsed: ParsedCommand, io: CommandIO): Promise<number> {
  const usage = "assembly-line plugins verify [dir] [--options <json>] [--json]";
  const dir = resolve(parsed.positionals[0] ?? process.cwd());
  const options = parseOptions(stringOption(parsed, "options"), usage);
  const json = jsonOption(parsed);
  if (!json) io.out(`verifying ${dir} against kernel ${KERNEL_VERSION}`);
  const report = await verifyPluginPackage(dir, {
    ...(options ? { options } : {}),
    ...(json ? {} : { onProgress: (event) => ("step" in event ? printStep(event.step, io) : "running" in event ? printRunning(event.running, io) : printKit(event.kit, io)) }),
  });
  if (json) {
    io.out(envelope(report));
    return report.ok ? 0 : 1;
  }
  const who = report.plugin ? `${report.plugin.packageName}@${report.plugin.version} (plugin ${report.plugin.id})` : dir;
  const problems = report.steps.filter((step) => !step.ok).length + report.kits.filter((kit) => kit.failed > 0).length;
  if (report.ok) io.out(`\nverify passed: ${who} is ready to publish`);
  else io.err(`\nverify failed: ${who}, ${problems} problem(s) above`);
  return report.ok ? 0 : 1;
}

function parseOptions(text: string | undefined, usage: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below with the usage.
  }
  throw new AssemblyLineError("AL_ERR_CLI_USAGE", `--options ${text} is not a JSON object`, { fix: `Pass the options gateway.ts would, e.g. --options '{"file":"state.json"}'. usage: ${usage}` });
}

function printStep(step: VerifyStep, io: CommandIO): void {
  io.out(`  ${step.ok ? "pass" : "FAIL"}  ${step.step}: ${step.detail}`);
  if (step.fix) io.out(`        fix: ${step.fix}`);
}

const kitSubject = (kit: KitOutcome) => `conformance ${kit.slot} "${kit.name}" (${kit.contract})`;

function printRunning(kit: KitOutcome, io: CommandIO): void {
  io.out(`  ....  ${kitSubject(kit)}: running ${kit.kit}`);
}

function printKit(kit: KitOutcome, io: CommandIO): void {
  const subject = kitSubject(kit);
  if (kit.kit === undefined) {
    io.out(`  skip  ${subject}: no conformance kit for ${kit.contract} yet; its methods were checked above`);
    return;
  }
  const counts = [`${kit.passed} passed`, ...(kit.failed ? [`${kit.failed} failed`] : []), ...(kit.skipped ? [`${kit.skipped} skipped`] : [])].join(", ");
  io.out(`  ${kit.failed === 0 ? "pass" : "FAIL"}  ${subject} with ${kit.kit}: ${counts}`);
  for (const failure of kit.failures) io.out(`        - ${failure.test}: ${failure.message.split("\n")[0]}`);
  if (kit.fix) io.out(`        fix: ${kit.fix}`);
}
