import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";
import { readRegistry, readRegistryIndex, type RegistryEntry } from "./registry-data.js";
import { describeSchemaErrors, generatedRegistryValidator, registryIndexValidator } from "./schemas.js";

/** The environment variable naming a newer index than the bundled one: a URL or a file. */
export const REGISTRY_SOURCE_ENV = "ASSEMBLY_LINE_REGISTRY";

/**
 * A registry snapshot, as `assembly-line plugins list --json` prints it (inside its `data`) and as a
 * URL or file named by ASSEMBLY_LINE_REGISTRY serves it: each entry is the index
 * line joined with what its package's manifest says.
 */
export interface RegistrySnapshot {
  updatedAt?: string;
  plugins: RegistrySnapshotEntry[];
}

type NonSlotExports = "channels" | "harnesses" | "telemetrySinks";

/** A snapshot's entry: one printed by a release before channels, harnesses and telemetrySinks were listed has none of them. */
export type RegistrySnapshotEntry = Omit<RegistryEntry, NonSlotExports> & Partial<Pick<RegistryEntry, NonSlotExports>>;

export interface LoadedRegistry {
  entries: RegistryEntry[];
  /** Where the entries came from: the file, or the URL with any query values masked. */
  origin: "bundled" | "file" | "url";
  location: string;
  /** YYYY-MM-DD or an ISO time, when the source says. */
  updatedAt: string | undefined;
  /** Whole days since updatedAt, when known. */
  ageDays: number | undefined;
  /** Set when the named source failed and the bundled index was used instead. */
  fallbackReason?: string;
}

export interface LoadRegistryOptions {
  /** A URL (http/https) or a file path; default $ASSEMBLY_LINE_REGISTRY, else the bundled index. */
  source?: string;
  env?: Record<string, string | undefined>;
  /** Bound on fetching a URL. Default 5 s. */
  timeoutMs?: number;
  now?: Date;
}

const ageInDays = (updatedAt: string | undefined, now: Date) => {
  const time = updatedAt ? Date.parse(updatedAt) : Number.NaN;
  return Number.isNaN(time) ? undefined : Math.max(0, Math.floor((now.getTime() - time) / 86_400_000));
};

/** Each entry checked against the index and generated schemas, so a snapshot is held to the committed files' rules. */
function checkSnapshot(data: unknown, location: string): RegistrySnapshot {
  const fail = (why: string) =>
    new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `the registry at ${location} ${why}`, {
      fix: `Serve what \`assembly-line plugins list --json\` prints ({ "updatedAt", "plugins": [...] }), or unset ${REGISTRY_SOURCE_ENV} to use the bundled index.`,
    });
  // `plugins list --json` wraps the snapshot in the command line's envelope, { "ok": true, "data": ... }; both are read.
  const unwrapped = typeof data === "object" && data !== null && (data as { ok?: unknown }).ok === true && "data" in data ? (data as { data: unknown }).data : data;
  if (typeof unwrapped !== "object" || unwrapped === null || !Array.isArray((unwrapped as RegistrySnapshot).plugins)) throw fail("is not { plugins: [...] }");
  const snapshot = unwrapped as RegistrySnapshot;
  if (snapshot.updatedAt !== undefined && (typeof snapshot.updatedAt !== "string" || Number.isNaN(Date.parse(snapshot.updatedAt)))) throw fail(`has an updatedAt that is not a date: ${JSON.stringify(snapshot.updatedAt)}`);
  const positions = new Map<string, number>();
  for (const [position, entry] of snapshot.plugins.entries()) {
    if (typeof entry !== "object" || entry === null || typeof entry.id !== "string") throw fail(`has a plugins[${position}] without an id`);
    // The committed index is keyed by id; two entries under one id would leave `plugins add` installing whichever sorts first.
    const earlier = positions.get(entry.id);
    if (earlier !== undefined) throw fail(`lists the plugin id "${entry.id}" twice (plugins[${earlier}] and plugins[${position}])`);
    positions.set(entry.id, position);
    const { id, description, tags, ...facts } = entry;
    const index = registryIndexValidator();
    if (!index({ plugins: { [id]: { package: facts.package, description, tags } } })) throw fail(`has an invalid plugin "${id}": ${describeSchemaErrors(index.errors, "").join("; ")}`);
    const generated = generatedRegistryValidator();
    if (!generated({ plugins: { [id]: facts } })) throw fail(`has an invalid plugin "${id}": ${describeSchemaErrors(generated.errors, "").join("; ")}`);
  }
  return snapshot;
}

/**
 * A registry URL as messages show it: user info, query values and the fragment masked, since any
 * of them may hold a token and these lines go to terminals and CI logs.
 */
function shownUrl(url: URL): string {
  const shown = new URL(url);
  if (shown.username !== "" || shown.password !== "") {
    shown.username = "***";
    shown.password = "";
  }
  for (const key of new Set(shown.searchParams.keys())) shown.searchParams.set(key, "***");
  if (shown.hash !== "") shown.hash = "***";
  return shown.href;
}

/**
 * The fetch failures that mean the network did not carry the request (no route, DNS, refused,
 * reset, timed out): undici reports them as TypeError("fetch failed") with the cause attached, and
 * a timeout as a TimeoutError. A TypeError without a cause is fetch refusing the request itself.
 */
function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === "TimeoutError" || error.name === "AbortError" || (error instanceof TypeError && error.cause !== undefined);
}

async function readSource(source: string, timeoutMs: number): Promise<{ data: unknown; origin: "file" | "url"; location: string }> {
  if (/^https?:\/\//i.test(source)) {
    if (!URL.canParse(source)) {
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", "the registry URL is not a valid URL", { fix: `Give an http:// or https:// URL or a file path, or unset ${REGISTRY_SOURCE_ENV}.` });
    }
    const url = new URL(source);
    const location = shownUrl(url);
    // fetch refuses a URL with user info outright; it is the source being wrong, not the network, so it is never a reason to fall back.
    if (url.username !== "" || url.password !== "") {
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `the registry URL ${location} carries credentials (user:password@), which are not supported`, {
        fix: `Serve the index where it can be read without credentials, or download it yourself and name the file: --registry ./registry.json (or ${REGISTRY_SOURCE_ENV}=./registry.json).`,
      });
    }
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json" } });
    } catch (error) {
      const reason = (error as Error).message.split(source).join(location);
      // Unreachable is not fatal (loadRegistry falls back); fetch refusing the request is the source being wrong.
      const details = isNetworkFailure(error) ? { unreachable: true } : {};
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `could not fetch the registry at ${location}: ${reason}`, { fix: `Check the URL and the network, or unset ${REGISTRY_SOURCE_ENV}.`, cause: error, details });
    }
    if (!response.ok) throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `the registry at ${location} answered HTTP ${response.status}`, { fix: `Check the URL, or unset ${REGISTRY_SOURCE_ENV}.` });
    try {
      return { data: await response.json(), origin: "url", location };
    } catch (error) {
      throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `the registry at ${location} is not JSON`, { fix: `Serve the output of \`assembly-line plugins list --json\`, or unset ${REGISTRY_SOURCE_ENV}.`, cause: error });
    }
  }
  const file = resolve(source);
  try {
    return { data: JSON.parse(await readFile(file, "utf8")), origin: "file", location: file };
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_REGISTRY_INVALID", `the registry file ${file} is missing or not JSON: ${(error as Error).message}`, { fix: `Write it with \`assembly-line plugins list --json > ${source}\`, or unset ${REGISTRY_SOURCE_ENV}.`, cause: error });
  }
}

/**
 * The marketplace listing `plugins list/search/info/add` read: the index named
 * by `source` or $ASSEMBLY_LINE_REGISTRY (a URL or a file holding a snapshot),
 * refreshed on every call; the index bundled with this package when none is
 * named, or, with the reason, when the named one cannot be read.
 */
export async function loadRegistry(options: LoadRegistryOptions = {}): Promise<LoadedRegistry> {
  const now = options.now ?? new Date();
  const source = options.source ?? (options.env ?? process.env)[REGISTRY_SOURCE_ENV];
  const bundled = async (fallbackReason?: string): Promise<LoadedRegistry> => {
    const [entries, index] = await Promise.all([readRegistry(), readRegistryIndex()]);
    return { entries, origin: "bundled", location: "the index bundled with @assemblyline-agents/registry", updatedAt: index.updatedAt, ageDays: ageInDays(index.updatedAt, now), ...(fallbackReason ? { fallbackReason } : {}) };
  };
  if (!source) return bundled();
  let read: Awaited<ReturnType<typeof readSource>>;
  try {
    read = await readSource(source, options.timeoutMs ?? 5_000);
  } catch (error) {
    // Unreachable is not fatal: the bundled index still answers, and the caller shows why. A file
    // that is missing or not JSON, or a server's refusal, is the source being wrong: refused.
    if ((error as AssemblyLineError).details?.unreachable !== true) throw error;
    return bundled((error as Error).message.split("\n")[0]);
  }
  // A source that answers with something broken is refused: silently using it would mislead.
  const snapshot = checkSnapshot(read.data, read.location);
  // A snapshot from a release before channels, harnesses and telemetrySinks were listed has none of them.
  const entries = snapshot.plugins.map((entry) => ({ ...entry, channels: entry.channels ?? [], harnesses: entry.harnesses ?? [], telemetrySinks: entry.telemetrySinks ?? [] })).sort((a, b) => a.id.localeCompare(b.id));
  return { entries, origin: read.origin, location: read.location, updatedAt: snapshot.updatedAt, ageDays: ageInDays(snapshot.updatedAt, now) };
}
