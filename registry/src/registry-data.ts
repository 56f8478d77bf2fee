import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ValidateFunction } from "ajv";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { findPackageDir } from "./discover.js";
import { readPluginPackage, type PluginChannel, type PluginEnvVar, type PluginProvide, type PluginSubjectExport } from "./manifest.js";
import { REGISTRY_DIR, describeSchemaErrors, generatedRegistryValidator, registryIndexValidator } from "./schemas.js";

export const REGISTRY_INDEX_FILE = join(REGISTRY_DIR, "index.json");
export const REGISTRY_GENERATED_FILE = join(REGISTRY_DIR, "generated.json");

/** registry/index.json: hand-kept, id -> package. */
export interface RegistryIndex {
  /** YYYY-MM-DD of the last edit; the bundled index's age is shown from it. */
  updatedAt?: string;
  plugins: Record<string, { package: string; description: string; tags: string[] }>;
}

export interface GeneratedPluginEntry {
  package: string;
  version: string;
  kernel: string;
  provides: Array<Omit<PluginProvide, "configSchema">>;
  /** The manifest's `channels`, `harnesses` and `telemetrySinks`: exports used outside gateway slots, each with its kit subject. */
  channels: PluginChannel[];
  harnesses: PluginSubjectExport<"harness@1">[];
  telemetrySinks: PluginSubjectExport<"telemetry@1">[];
  env: PluginEnvVar[];
  configSchema: boolean;
}

/** registry/generated.json: what each indexed package's manifest says. */
export interface GeneratedRegistry {
  plugins: Record<string, GeneratedPluginEntry>;
}

/** One marketplace listing: the index line plus the generated facts. */
export interface RegistryEntry extends GeneratedPluginEntry {
  id: string;
  description: string;
  tags: string[];
}

async function readChecked<T>(file: string, validator: () => ValidateFunction, fix: string): Promise<T> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `${file} is missing or not JSON: ${(error as Error).message}`, { fix, cause: error });
  }
  const validate = validator();
  if (!validate(data)) {
    throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `${file} breaks its schema: ${describeSchemaErrors(validate.errors, "").join("; ")}`, { fix });
  }
  return data as T;
}

export function readRegistryIndex(file: string = REGISTRY_INDEX_FILE): Promise<RegistryIndex> {
  return readChecked(file, registryIndexValidator, "Fix the entry the message names; registry/schemas/index.schema.json describes the format.");
}

export function readGeneratedRegistry(file: string = REGISTRY_GENERATED_FILE): Promise<GeneratedRegistry> {
  return readChecked(file, generatedRegistryValidator, "Regenerate it: npm run registry:generate.");
}

/**
 * Read the manifest of every package the index lists, as installed from `from`
 * (the monorepo root for first-party plugins). Deterministic: ids sorted, no
 * timestamps, so a test can compare it with the committed file.
 */
export async function generateRegistry(options: { index?: RegistryIndex; from?: string } = {}): Promise<GeneratedRegistry> {
  const index = options.index ?? (await readRegistryIndex());
  const from = options.from ?? REGISTRY_DIR;
  const plugins: Record<string, GeneratedPluginEntry> = {};
  for (const id of Object.keys(index.plugins).sort()) {
    const { package: packageName } = index.plugins[id]!;
    const dir = findPackageDir(packageName, from);
    if (!dir) {
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `registry/index.json lists "${id}" as ${packageName}, which is not installed under ${from}`, {
        fix: "Install the package (npm install at the repository root links the workspaces), or correct the package name.",
      });
    }
    const pkg = await readPluginPackage(dir);
    if (pkg.manifest.id !== id) {
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `registry/index.json lists "${id}" as ${packageName}, whose manifest id is "${pkg.manifest.id}"`, {
        fix: `Key the index entry "${pkg.manifest.id}", or fix the package's assemblyLine.id.`,
      });
    }
    plugins[id] = {
      package: packageName,
      version: pkg.version,
      kernel: pkg.manifest.kernel,
      provides: pkg.manifest.provides.map(({ configSchema: _perAdapter, ...provide }) => provide),
      channels: pkg.manifest.channels ?? [],
      harnesses: pkg.manifest.harnesses ?? [],
      telemetrySinks: pkg.manifest.telemetrySinks ?? [],
      env: pkg.manifest.env ?? [],
      configSchema: pkg.manifest.configSchema !== undefined || pkg.manifest.provides.some((provide) => provide.configSchema !== undefined),
    };
  }
  return { plugins };
}

/** The file text of a generated registry, as committed. */
export function formatGeneratedRegistry(registry: GeneratedRegistry): string {
  return `${JSON.stringify({ $schema: "./schemas/generated.schema.json", ...registry }, null, 2)}\n`;
}

export async function writeGeneratedRegistry(registry: GeneratedRegistry, file: string = REGISTRY_GENERATED_FILE): Promise<void> {
  await writeFile(file, formatGeneratedRegistry(registry));
}

/** The marketplace listing: index and generated data joined by id, sorted. */
export async function readRegistry(options: { indexFile?: string; generatedFile?: string } = {}): Promise<RegistryEntry[]> {
  const [index, generated] = await Promise.all([readRegistryIndex(options.indexFile), readGeneratedRegistry(options.generatedFile)]);
  return Object.keys(index.plugins)
    .sort()
    .map((id) => {
      const facts = generated.plugins[id];
      if (!facts) {
        throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `registry/generated.json has no entry for "${id}", which index.json lists`, {
          fix: "Regenerate it: npm run registry:generate.",
        });
      }
      return { id, ...index.plugins[id]!, ...facts };
    });
}

/** One thing a plugin exports by contract: a gateway adapter (kind is its slot), a channel, an engine or a telemetry sink. */
export interface ContractExport {
  kind: PluginProvide["slot"] | "channel" | "harness" | "telemetry-sink";
  /** True for an adapter that fills a gateway slot; channels, engines and sinks are used outside gateway.ts. */
  gatewaySlot: boolean;
  name: string;
  export: string;
  contract: string;
}

/** Everything a plugin exports by contract: its adapters, then its channels, engines and telemetry sinks. */
export function contractExports(entry: Pick<GeneratedPluginEntry, "provides" | "channels" | "harnesses" | "telemetrySinks">): ContractExport[] {
  const other = (kind: "channel" | "harness" | "telemetry-sink") => (exported: { name: string; export: string; contract: string }): ContractExport => ({
    kind,
    gatewaySlot: false,
    name: exported.name,
    export: exported.export,
    contract: exported.contract,
  });
  return [
    ...entry.provides.map((provide): ContractExport => ({ kind: provide.slot, gatewaySlot: true, name: provide.name, export: provide.export, contract: provide.contract })),
    ...entry.channels.map(other("channel")),
    ...entry.harnesses.map(other("harness")),
    ...entry.telemetrySinks.map(other("telemetry-sink")),
  ];
}

/** Entries matching every word (case-insensitive) in id, package, description, tags, or the slot (or kind), name and contract of anything it exports. */
export function searchRegistry(entries: RegistryEntry[], words: string[]): RegistryEntry[] {
  const needles = words.flatMap((word) => word.toLowerCase().split(/\s+/)).filter(Boolean);
  return entries.filter((entry) => {
    const haystack = [entry.id, entry.package, entry.description, ...entry.tags, ...contractExports(entry).flatMap((exported) => [exported.kind, exported.name, exported.contract])]
      .join(" ")
      .toLowerCase();
    return needles.every((needle) => haystack.includes(needle));
  });
}
