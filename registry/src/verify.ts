import { uniquePerTest } from "./unique-options.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Writable } from "node:stream";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { kernelHost } from "./kernel-host.js";
import { pluginTimeoutMs } from "./plugin-timeout.js";
import { inspectPluginPackage, loadPluginPackage } from "./load.js";
import { CORE_PACKAGE, checkCoreRange, checkKernelRange, declaredCoreRange, readPluginPackage, type PluginConformance, type PluginPackage, type PluginProvide } from "./manifest.js";
import { locateKitRunner, type KitRunner } from "./kit-runner.js";
import { checkPublishedFiles } from "./published-files.js";
import { hostCoreVersion, packageSubpathTarget } from "./package-main.js";

/**
 * The conformance kit of each contract, as exported by
 * @assemblyline-agents/core/testkit, and the extra arguments it takes. It runs
 * on the adapter the plugin materializes, or on the subject factory the
 * adapter's `conformance` entry names when it has one.
 * A contract without an entry is checked by its methods only.
 */
export const CONFORMANCE_KITS: Record<string, { kit: string; extraArgs(provide: PluginProvide): unknown[]; withSchedules?: boolean }> = {
  "state@1": { kit: "describeStateConformance", extraArgs: (provide) => [{ facets: provide.facets ?? ["runs"] }] },
  "blob@1": { kit: "describeBlobStoreConformance", extraArgs: () => [] },
  "sandbox@1": { kit: "describeSandboxConformance", extraArgs: () => [] },
  "deploy@1": { kit: "describeDeployConformance", extraArgs: () => [] },
  "scheduler@1": { kit: "describeSchedulerConformance", extraArgs: () => [], withSchedules: true },
};

export interface VerifyStep {
  step: "manifest" | "kernel range" | "exports" | "options and live contracts" | "published files";
  ok: boolean;
  detail: string;
  code?: string;
  fix?: string;
}

export interface KitOutcome {
  slot: string;
  name: string;
  contract: string;
  /** The testkit function that ran, or undefined when the contract has no kit yet. */
  kit: string | undefined;
  passed: number;
  failed: number;
  skipped: number;
  failures: Array<{ test: string; message: string }>;
  /** Set when the kit could not run at all: the error code and the exact command that fixes it. */
  code?: string;
  fix?: string;
}

export interface VerifyReport {
  ok: boolean;
  packageDir: string;
  plugin: { id: string; version: string; packageName: string } | undefined;
  steps: VerifyStep[];
  kits: KitOutcome[];
}

export interface VerifyOptions {
  /** Default: this host's KERNEL_VERSION. */
  kernelVersion?: string;
  /** Options passed to every provided export, as gateway.ts would. Default: none. */
  options?: Record<string, unknown>;
  env?: Record<string, string | undefined>;
  /** Bound on apply(kernel), each factory and each close(): above 0, at most MAX_TIMER_MS. Default DEFAULT_PLUGIN_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Bound on each conformance test. Default 60 s. */
  testTimeoutMs?: number;
  /** Called as each step finishes, as each kit starts (`running`) and as it finishes, for live progress. */
  onProgress?(event: { step: VerifyStep } | { running: KitOutcome } | { kit: KitOutcome }): void;
}

/**
 * What a plugin author runs before publishing: the loader's checks one by one
 * (manifest, kernel range, exports, options and live contracts), that the
 * files a host reads are in what `npm pack` would publish, then the
 * conformance kit of every contract the package provides, run by vitest on a
 * generated test file. Never throws for a broken plugin: the report says why.
 */
export async function verifyPluginPackage(packageDir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  // A caller's mistake, not the plugin's: thrown, not reported as a failed step.
  const timeoutMs = pluginTimeoutMs(options.timeoutMs, "verifyPluginPackage");
  const dir = resolve(packageDir);
  const kernelVersion = options.kernelVersion ?? kernelHost().version;
  const report: VerifyReport = { ok: false, packageDir: dir, plugin: undefined, steps: [], kits: [] };
  const record = (step: VerifyStep) => {
    report.steps.push(step);
    options.onProgress?.({ step });
    return step.ok;
  };
  const attempt = async (step: VerifyStep["step"], work: () => Promise<string> | string): Promise<boolean> => {
    try {
      return record({ step, ok: true, detail: await work() });
    } catch (error) {
      if (!isAssemblyLineError(error)) return record({ step, ok: false, detail: `unexpected failure: ${(error as Error).stack ?? String(error)}` });
      return record({ step, ok: false, detail: error.message.split("\n")[0]!, code: error.code, ...(error.fix ? { fix: error.fix } : {}) });
    }
  };

  let pkg: PluginPackage | undefined;
  const ok =
    (await attempt("manifest", async () => {
      pkg = await readPluginPackage(dir);
      report.plugin = { id: pkg.manifest.id, version: pkg.version, packageName: pkg.packageName };
      const adapters = pkg.manifest.provides.map((provide) => `${provide.slot} "${provide.name}"`).join(", ") || "no adapters";
      return `assemblyLine block matches plugin-schema.json: id "${pkg.manifest.id}", ${adapters}`;
    })) &&
    (await attempt("kernel range", () => {
      checkKernelRange(pkg!, kernelVersion);
      const core = declaredCoreRange(pkg!);
      if (core === undefined) return `"${pkg!.manifest.kernel}" includes kernel ${kernelVersion}`;
      const coreVersion = hostCoreVersion();
      checkCoreRange(pkg!, coreVersion);
      return `"${pkg!.manifest.kernel}" includes kernel ${kernelVersion}; ${core.field}["${CORE_PACKAGE}"] "${core.range}" includes core ${coreVersion}`;
    })) &&
    (await attempt("exports", async () => {
      const inspected = await inspectPluginPackage(dir, { kernelVersion });
      const names = [...(inspected.plugin ? ["plugin"] : []), ...inspected.manifest.provides.map((provide) => `${provide.export}()`), ...[...(inspected.manifest.channels ?? []), ...(inspected.manifest.harnesses ?? []), ...(inspected.manifest.telemetrySinks ?? [])].map((entry) => `${entry.export}()`)];
      return `the package main exports ${names.join(", ") || "nothing the kernel needs"}`;
    })) &&
    (await attempt("options and live contracts", async () => {
      const loaded = await loadPluginPackage(dir, {
        kernelVersion,
        ...(options.options ? { options: uniquePerTest(options.options)! } : {}),
        ...(options.env ? { env: options.env } : {}),
        timeoutMs,
      });
      const claims = loaded.manifest.provides.map((provide) => `${provide.slot} "${provide.name}" has every method of ${provide.contract}${provide.facets ? ` (${provide.facets.join(", ")})` : ""}`);
      return claims.join("; ") || "nothing to materialize";
    }));
  if (!ok) return report;
  // Not a gate for the kits: they run from the folder, which has every file either way.
  const published = await attempt("published files", async () => `npm pack would ship ${(await checkPublishedFiles(pkg!)).join(", ")}`);

  report.kits = await runConformanceKits(pkg!, { ...options, kernelVersion, timeoutMs });
  report.ok = published && report.kits.every((kit) => kit.failed === 0);
  return report;
}

/**
 * Kits whose subject the package itself ships (a factory named by a
 * `conformance` entry), because the kit needs more than the materialized
 * adapter: a fake provider to sign requests (channels), a scripted model
 * server (engines), a backend to read spans back (telemetry sinks), or a
 * host to boot (runtimes).
 */
export const SUBJECT_KITS: Record<string, string> = {
  "channel@1": "describeChannelConformance",
  "harness@1": "describeHarnessConformance",
  "telemetry@1": "describeTelemetrySinkConformance",
  "runtime@1": "describeRuntimeConformance",
};

/** The channel kit: run for every `assemblyLine.channels` entry against the subject factory the package ships. */
export const CHANNEL_KIT = SUBJECT_KITS["channel@1"]!;

/** A kit to run on a subject factory the package ships, and where the manifest declared it (for messages). */
interface SubjectKitEntry {
  outcome: KitOutcome;
  conformance: PluginConformance | undefined;
  /** e.g. `assemblyLine.harnesses[0]`. */
  where: string;
}

/**
 * Run the kit of each provided contract, one generated test file and one
 * vitest run per kit, so progress shows kit by kit. The runner is the author's
 * vitest or the host's; with neither, each kit fails with the install command.
 */
async function runConformanceKits(pkg: PluginPackage, options: VerifyOptions & { kernelVersion: string }): Promise<KitOutcome[]> {
  const blank = (slot: string, name: string, contract: string, kit: string | undefined): KitOutcome => ({ slot, name, contract, kit, passed: 0, failed: 0, skipped: 0, failures: [] });
  const outcomes: KitOutcome[] = pkg.manifest.provides.map((provide) => blank(provide.slot, provide.name, provide.contract, CONFORMANCE_KITS[provide.contract]?.kit ?? SUBJECT_KITS[provide.contract]));
  const subjectKits: SubjectKitEntry[] = [];
  for (const [index, provide] of pkg.manifest.provides.entries()) {
    if (!CONFORMANCE_KITS[provide.contract] && SUBJECT_KITS[provide.contract]) subjectKits.push({ outcome: outcomes[index]!, conformance: provide.conformance, where: `assemblyLine.provides[${index}]` });
  }
  const listed = [
    ...(pkg.manifest.channels ?? []).map((entry, index) => ({ slot: "channel", entry, where: `assemblyLine.channels[${index}]` })),
    ...(pkg.manifest.harnesses ?? []).map((entry, index) => ({ slot: "harness", entry, where: `assemblyLine.harnesses[${index}]` })),
    ...(pkg.manifest.telemetrySinks ?? []).map((entry, index) => ({ slot: "telemetry-sink", entry, where: `assemblyLine.telemetrySinks[${index}]` })),
  ];
  for (const { slot, entry, where } of listed) subjectKits.push({ outcome: blank(slot, entry.name, entry.contract, SUBJECT_KITS[entry.contract]), conformance: entry.conformance, where });

  const runner = outcomes.some((outcome) => outcome.kit !== undefined) || subjectKits.length > 0 ? locateKitRunner(pkg.dir) : undefined;
  /** One generated test file, one vitest run: progress shows kit by kit. */
  const runKit = async (outcome: KitOutcome, fileName: string, source: (runner: KitRunner) => string): Promise<void> => {
    if (!runner) return;
    if ("missing" in runner) {
      outcome.failed = 1;
      outcome.code = "AL_ERR_VERIFY_RUNNER_MISSING";
      outcome.fix = runner.fix;
      outcome.failures.push({ test: "(starting the kit)", message: `cannot run ${outcome.kit}: ${runner.missing}` });
      return;
    }
    options.onProgress?.({ running: outcome });
    const work = await mkdtemp(join(tmpdir(), `al-verify-${pkg.manifest.id}-`));
    try {
      const file = join(work, fileName);
      await writeFile(file, source(runner));
      await runVitest(runner, work, new Map([[file, outcome]]), options.testTimeoutMs ?? 60_000);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };
  /** Run `outcome`'s kit on the subject factory `conformance` names, or fail it naming what is missing. */
  const runOnSubject = async (outcome: KitOutcome, conformance: PluginConformance | undefined, where: string, fileName: string, extraArgs: unknown[] = []): Promise<void> => {
    const subject = conformance ? packageSubpathUrl(pkg, conformance.module) : undefined;
    if (!conformance) {
      outcome.failed += 1;
      outcome.fix = `Export a kit subject factory (see ${outcome.kit} in @assemblyline-agents/core/testkit) and name it in ${where}.conformance: { "module": "./testkit", "export": "..." }.`;
      outcome.failures.push({ test: "(finding the kit subject)", message: `${where} (${outcome.contract}) has no conformance entry naming the subject factory its kit runs on` });
    } else if (!subject) {
      outcome.failed += 1;
      outcome.failures.push({ test: "(finding the kit subject)", message: `${where}.conformance.module "${conformance.module}" is not in the package's exports map` });
    } else {
      await runKit(outcome, fileName, (found) => subjectKitTestFile(pkg, outcome, conformance, subject, found, extraArgs));
    }
  };
  for (const [index, provide] of pkg.manifest.provides.entries()) {
    const kit = CONFORMANCE_KITS[provide.contract];
    if (!kit) continue;
    const outcome = outcomes[index]!;
    // A named subject factory is what the author says the kit needs (a fake provider, a scratch database): the kit runs on it, not on the adapter verify materializes.
    if (provide.conformance) await runOnSubject(outcome, provide.conformance, `assemblyLine.provides[${index}]`, `${index}-${provide.slot}-subject.test.mjs`, kit.extraArgs(provide));
    else await runKit(outcome, `${index}-${provide.slot}.test.mjs`, (found) => kitTestFile(pkg, provide, kit, found, options));
    options.onProgress?.({ kit: outcome });
  }
  for (const [index, { outcome, conformance, where }] of subjectKits.entries()) {
    if (!outcomes.includes(outcome)) outcomes.push(outcome);
    await runOnSubject(outcome, conformance, where, `subject-${index}-${outcome.slot}-${outcome.name}.test.mjs`);
    options.onProgress?.({ kit: outcome });
  }
  return outcomes;
}

function subjectKitTestFile(pkg: PluginPackage, outcome: KitOutcome, conformance: PluginConformance, subjectUrl: string, runner: KitRunner, extraArgs: unknown[]): string {
  const title = `${pkg.manifest.id}@${pkg.version} ${outcome.slot} "${outcome.name}"`;
  const args = [JSON.stringify(title), "subject", ...extraArgs.map((arg) => JSON.stringify(arg))];
  return [
    "// Generated by `assembly-line plugins verify`; removed when it finishes.",
    `import { ${outcome.kit} } from ${JSON.stringify(runner.testkitUrl)};`,
    `import { ${conformance.export} as subject } from ${JSON.stringify(subjectUrl)};`,
    "",
    `${outcome.kit}(${args.join(", ")});`,
    "",
  ].join("\n");
}

/** The file URL a subpath of the package's exports map points at, or undefined. */
function packageSubpathUrl(pkg: PluginPackage, subpath: string): string | undefined {
  const target = packageSubpathTarget(pkg, subpath);
  return target ? pathToFileURL(join(pkg.dir, target)).href : undefined;
}

function kitTestFile(pkg: PluginPackage, provide: PluginProvide, kit: { kit: string; extraArgs(provide: PluginProvide): unknown[]; withSchedules?: boolean }, runner: KitRunner, options: VerifyOptions & { kernelVersion: string }): string {
  const subject = {
    packageDir: pkg.dir,
    slot: provide.slot,
    kernelVersion: options.kernelVersion,
    ...(options.options ? { options: options.options } : {}),
    ...(options.env ? { env: options.env } : {}),
    timeoutMs: options.timeoutMs,
    ...(kit.withSchedules ? { withSchedules: true } : {}),
  };
  const title = `${pkg.manifest.id}@${pkg.version} ${provide.slot} "${provide.name}"`;
  const args = [JSON.stringify(title), `conformanceSubjectFactory(${JSON.stringify(subject)})`, ...kit.extraArgs(provide).map((arg) => JSON.stringify(arg))];
  return [
    "// Generated by `assembly-line plugins verify`; removed when it finishes.",
    `import { ${kit.kit} } from ${JSON.stringify(runner.testkitUrl)};`,
    `import { conformanceSubjectFactory } from ${JSON.stringify(new URL("./conformance-subject.js", import.meta.url).href)};`,
    `import { useKernelHost } from ${JSON.stringify(new URL("./kernel-host.js", import.meta.url).href)};`,
    `import { kernelHost } from ${JSON.stringify(kernelHost().moduleUrl)};`,
    "useKernelHost(kernelHost);",
    "",
    `${kit.kit}(${args.join(", ")});`,
    "",
  ].join("\n");
}

async function runVitest(runner: KitRunner, root: string, files: Map<string, KitOutcome>, testTimeout: number): Promise<void> {
  // Loaded only here, and from beside the testkit: vitest is heavy, only `verify` needs it,
  // and the kit's `import "vitest"` must reach the same copy that runs it.
  const { startVitest } = (await import(runner.vitestNodeUrl)) as typeof import("vitest/node");
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  // startVitest sets process.exitCode when tests fail; the report carries that instead.
  const exitCode = process.exitCode;
  const vitest = await startVitest(
    "test",
    [],
    { root, config: false, watch: false, run: true, include: ["*.test.mjs"], reporters: [{}], testTimeout, hookTimeout: testTimeout, pool: "forks" },
    {},
    { stdout: silent, stderr: silent },
  );
  try {
    for (const module of vitest.state.getTestModules()) {
      const outcome = files.get(module.moduleId);
      if (!outcome) continue;
      for (const error of module.errors()) outcome.failures.push({ test: "(loading the test file)", message: error.message ?? String(error) });
      outcome.failed += module.errors().length;
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === "passed") outcome.passed += 1;
        else if (result.state === "skipped") outcome.skipped += 1;
        else {
          outcome.failed += 1;
          outcome.failures.push({ test: test.fullName, message: result.errors?.[0]?.message ?? result.state });
        }
      }
    }
    for (const [file, outcome] of files) {
      if (!vitest.state.getTestModules().some((module) => module.moduleId === file)) {
        outcome.failed += 1;
        outcome.failures.push({ test: "(running the test file)", message: `vitest did not run ${file}` });
      }
    }
  } finally {
    await vitest.close();
    process.exitCode = exitCode;
  }
}
