import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import semver from "semver";
import { AssemblyLineError, type ErrorCode, type GatewaySlot, type StateFacetName } from "@assemblyline-agents/core";
import { isRangeOfSomeVersions, openAlternative } from "./bounded-range.js";
import { describeSchemaErrors, pluginManifestValidator } from "./schemas.js";

/** One adapter a plugin materializes through `hooks.slot`. */
export interface PluginProvide {
  slot: GatewaySlot;
  /** The adapter's name within the slot. */
  name: string;
  /** The package main's export that returns the descriptor (`localState`, `neonPostgres`). */
  export: string;
  /** `"<contract>@<major>"`, e.g. `state@1`. */
  contract: string;
  /** State only: the facets the adapter implements (runs included). */
  facets?: StateFacetName[];
  /** Overrides the package-level `configSchema` for this adapter's options. */
  configSchema?: string;
  /** The kit subject factory `plugins verify` runs the contract's kit on instead of the materialized adapter; required for runtime@1. */
  conformance?: PluginConformance;
}

/** Where a kit subject factory lives: a subpath of the package's exports map and the export name. */
export interface PluginConformance {
  module: string;
  export: string;
}

/** A channel helper the package exports, verified with the channel conformance kit. */
export interface PluginChannel {
  name: string;
  /** The package main's export (`defineDiscordChannel`). */
  export: string;
  contract: "channel@1";
  /** The kit subject factory: a subpath of the package's exports map and the export name. */
  conformance: PluginConformance;
}

/** An engine or telemetry sink the package exports, verified by its contract's kit through a subject factory. */
export interface PluginSubjectExport<Contract extends string> {
  name: string;
  /** The package main's export (`piAgentHarness`, `createOtlpSink`). */
  export: string;
  contract: Contract;
  conformance: PluginConformance;
}

export interface PluginEnvVar {
  name: string;
  secret: boolean;
  required: boolean;
  description?: string;
}

/** The `assemblyLine` block of a plugin's package.json (plugin-schema.json). */
export interface PluginManifest {
  manifestVersion: 1;
  id: string;
  kernel: string;
  provides: PluginProvide[];
  channels?: PluginChannel[];
  harnesses?: PluginSubjectExport<"harness@1">[];
  telemetrySinks?: PluginSubjectExport<"telemetry@1">[];
  env?: PluginEnvVar[];
  configSchema?: string;
}

/** A plugin package whose manifest has the right shape. */
export interface PluginPackage {
  /** Absolute package folder. */
  dir: string;
  packageName: string;
  version: string;
  manifest: PluginManifest;
  packageJson: Record<string, unknown>;
}

/** Who a refusal is about: `plugin jsonfile@0.3.0 (@acme/assembly-line-jsonfile)`. */
export function describePlugin(pkg: { packageName: string; version: string; manifest?: { id: string } }): string {
  return pkg.manifest ? `plugin ${pkg.manifest.id}@${pkg.version} (${pkg.packageName})` : `package ${pkg.packageName}@${pkg.version}`;
}

/** A refusal that names the plugin, its version, the rule broken and the fix. */
export function pluginRefusal(
  code: ErrorCode,
  pkg: { dir: string; packageName: string; version: string; manifest?: { id: string } },
  rule: string,
  fix: string,
  options: { cause?: unknown; details?: Record<string, unknown> } = {},
): AssemblyLineError {
  return new AssemblyLineError(code, `${describePlugin(pkg)} at ${pkg.dir}: ${rule}`, {
    fix,
    ...(options.cause !== undefined ? { cause: options.cause } : {}),
    details: { plugin: pkg.manifest?.id, version: pkg.version, package: pkg.packageName, dir: pkg.dir, ...options.details },
  });
}

/**
 * Read `<dir>/package.json` and check the shape of its `assemblyLine` block:
 * plugin-schema.json, then `kernel` as a semver range (step 1 of loading).
 */
export async function readPluginPackage(dir: string): Promise<PluginPackage> {
  const absolute = resolve(dir);
  const file = join(absolute, "package.json");
  let packageJson: Record<string, unknown>;
  try {
    packageJson = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    throw new AssemblyLineError("AL_ERR_PLUGIN_MANIFEST", `${file} ${missing ? "does not exist" : `is not readable JSON: ${(error as Error).message}`}`, {
      fix: missing ? "Point at the plugin package's folder (the one holding its package.json)." : "Fix the JSON syntax of package.json.",
      cause: error,
    });
  }
  const packageName = typeof packageJson.name === "string" ? packageJson.name : "(unnamed package)";
  const version = typeof packageJson.version === "string" ? packageJson.version : "(no version)";
  const who = { dir: absolute, packageName, version };
  if (typeof packageJson.name !== "string" || semver.valid(version) === null) {
    throw pluginRefusal("AL_ERR_PLUGIN_MANIFEST", who, "package.json needs a string name and a semver version", 'Set "name" and "version" (e.g. "1.0.0") in package.json.');
  }
  const block = packageJson.assemblyLine;
  if (block === undefined) {
    throw pluginRefusal("AL_ERR_PLUGIN_MANIFEST", who, 'package.json has no "assemblyLine" block, so it is not an Assembly Line plugin', 'Add "assemblyLine": { "manifestVersion": 1, "id", "kernel", "provides" } (see docs/plugins.md).');
  }
  const validate = pluginManifestValidator();
  if (!validate(block)) {
    const id = typeof (block as { id?: unknown })?.id === "string" ? (block as { id: string }).id : undefined;
    const problems = describeSchemaErrors(validate.errors, "assemblyLine");
    throw pluginRefusal(
      "AL_ERR_PLUGIN_MANIFEST",
      { ...who, ...(id ? { manifest: { id } } : {}) },
      `the assemblyLine block breaks plugin-schema.json: ${problems.join("; ")}`,
      "Correct those fields; plugin-schema.json (shipped with @assemblyline-agents/registry) describes each one, and docs/plugins.md explains them.",
      { details: { problems } },
    );
  }
  const manifest = block as PluginManifest;
  const pkg: PluginPackage = { dir: absolute, packageName, version, manifest, packageJson };
  checkRangeSyntax(pkg);
  checkUniqueProvides(pkg);
  return pkg;
}

function checkRangeSyntax(pkg: PluginPackage): void {
  const range = pkg.manifest.kernel;
  if (!isRangeOfSomeVersions(range)) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_MANIFEST",
      pkg,
      `assemblyLine.kernel "${range}" is not a bounded semver range`,
      'Declare the kernel versions the plugin was tested with, e.g. "kernel": "^0.1.0" (no "*", "x", "latest" or empty range).',
    );
  }
  // ">=0.1.0" would load the plugin on every future major, whose contracts it has never seen: each alternative needs a ceiling.
  const open = openAlternative(range);
  if (open) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_MANIFEST",
      pkg,
      `assemblyLine.kernel "${range}" has no upper bound (${open} includes every later kernel major)`,
      `Bound it to the kernels the plugin was tested with, e.g. "kernel": "^${semver.minVersion(range)?.version ?? "0.1.0"}" or ">=0.1.0 <0.3.0".`,
      { details: { kernelRange: range } },
    );
  }
}

/*
 * One adapter per slot: a gateway descriptor names only the plugin and the slot,
 * so a second entry for the same slot could not be told apart. Several helpers
 * (postgresState, neonPostgres) may still make descriptors for that one adapter.
 */
function checkUniqueProvides(pkg: PluginPackage): void {
  const seen = new Map<string, string>();
  for (const provide of pkg.manifest.provides) {
    const first = seen.get(provide.slot);
    if (first !== undefined) {
      throw pluginRefusal(
        "AL_ERR_PLUGIN_MANIFEST",
        pkg,
        `assemblyLine.provides lists two ${provide.slot} adapters ("${first}" and "${provide.name}")`,
        "Keep one entry per slot; extra helpers that make descriptors for the same adapter need no entry of their own.",
      );
    }
    seen.set(provide.slot, provide.name);
  }
}

/**
 * Whether a manifest's kernel range includes `kernelVersion`. A release kernel
 * is matched as semver matches it. A prerelease kernel (0.2.0-rc.1) is a
 * preview of its release (0.2.0): it fits a range semver says it fits (one
 * naming a prerelease of the same version, ^0.2.0-rc.0), or one alternative of
 * which includes that release (^0.2.0) and whose prerelease floors it reaches:
 * never one that excludes the release (<0.2.0), which semver's
 * includePrerelease let through as "below 0.2.0", nor one whose floor is a
 * later prerelease (^0.2.0-rc.2 refuses 0.2.0-rc.1, as semver orders them).
 */
export function rangeIncludesKernel(range: string, kernelVersion: string): boolean {
  if (semver.satisfies(kernelVersion, range)) return true;
  const kernel = semver.parse(kernelVersion);
  if (kernel === null || kernel.prerelease.length === 0 || semver.validRange(range) === null) return false;
  const release = new semver.SemVer(`${kernel.major}.${kernel.minor}.${kernel.patch}`);
  return new semver.Range(range).set.some(
    (comparators) =>
      comparators.every((comparator) => comparator.test(release)) &&
      comparators.filter(isPrereleaseFloor).every((floor) => floor.test(kernel)),
  );
}

/** A lower bound naming a prerelease (">=0.2.0-rc.2", from "^0.2.0-rc.2"): the kernel itself, not its release, must reach it. */
const isPrereleaseFloor = (comparator: semver.Comparator): boolean =>
  (comparator.operator === ">" || comparator.operator === ">=") && comparator.semver.prerelease.length > 0;

/** The SDK package every plugin is bound to: the loader points its imports at the host's copy. */
export const CORE_PACKAGE = "@assemblyline-agents/core";

/**
 * The range a plugin declares on the SDK: `peerDependencies["@assemblyline-agents/core"]`,
 * else `dependencies[...]` (the loader binds either to the host's copy), with the field
 * it came from; undefined when it declares none, or something that is not a semver
 * range (`file:`, `workspace:`, an `npm:` alias), which says nothing about versions.
 */
export function declaredCoreRange(pkg: PluginPackage): { field: string; range: string } | undefined {
  for (const field of ["peerDependencies", "dependencies"] as const) {
    const declared = (pkg.packageJson[field] as Record<string, unknown> | undefined)?.[CORE_PACKAGE];
    if (typeof declared !== "string") continue;
    return semver.validRange(declared) === null ? undefined : { field, range: declared };
  }
  return undefined;
}

/**
 * Step 2 of loading, for the SDK: the range the plugin declares on
 * @assemblyline-agents/core must include the host's core, the copy its imports
 * are bound to, by the rules of the kernel range (rangeIncludesKernel).
 */
export function checkCoreRange(pkg: PluginPackage, coreVersion: string): void {
  const declared = declaredCoreRange(pkg);
  if (declared === undefined || rangeIncludesKernel(declared.range, coreVersion)) return;
  throw pluginRefusal(
    "AL_ERR_PLUGIN_KERNEL_MISMATCH",
    pkg,
    `${declared.field}["${CORE_PACKAGE}"] "${declared.range}" does not include the host's ${CORE_PACKAGE} ${coreVersion}, which the plugin's imports of it are bound to`,
    `Install a release of ${pkg.packageName} built for ${CORE_PACKAGE} ${coreVersion}, or upgrade the host's ${CORE_PACKAGE} (with @assemblyline-agents/runtime) to a version in "${declared.range}". Plugin authors: test against ${coreVersion}, then widen the range.`,
    { details: { coreRange: declared.range, coreVersion } },
  );
}

/** Step 2 of loading: the manifest's kernel range must include the running kernel. */
export function checkKernelRange(pkg: PluginPackage, kernelVersion: string): void {
  if (!rangeIncludesKernel(pkg.manifest.kernel, kernelVersion)) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_KERNEL_MISMATCH",
      pkg,
      `assemblyLine.kernel "${pkg.manifest.kernel}" does not include the running kernel ${kernelVersion}`,
      `Install a release of ${pkg.packageName} built for kernel ${kernelVersion}, or run a kernel in "${pkg.manifest.kernel}". Plugin authors: test against ${kernelVersion}, then widen the range.`,
      { details: { kernelRange: pkg.manifest.kernel, kernelVersion } },
    );
  }
}
