import { dirname, isAbsolute, resolve } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** The project config file names, searched from the working folder up to the project root (the nearest package.json). */
export const CONFIG_FILES = ["package.json", "assembly-line.config.ts", "assembly-line.config.js", "assembly-line.config.mjs", "assembly-line.config.json"] as const;
/** The package.json key that can hold the config instead of a file. */
export const PACKAGE_KEY = "assembly-line";

/** What a project config may set: the defaults of the flags of the same meaning. */
export interface ProjectConfig {
  /** The agent folder commands use when none is given (`run`, `build`, `--agent`, ...). */
  agent?: string;
  /** Where runs are kept (`--state-dir`). */
  stateDir?: string;
  /** The model spec runs use (`--model`); a `scripted:` file is relative to the config file. */
  model?: string;
  /** An OpenAI- or Anthropic-compatible server for the model (`--base-url`). */
  baseUrl?: string;
  /** That server's wire API (`--api`). */
  api?: string;
  /** `dev` and `start`: where the host listens. */
  host?: { port?: number; host?: string };
}

/** Each key the config may hold, its type, and the flag it stands for. */
export const CONFIG_KEYS = {
  agent: { type: "path", flag: "agent" },
  stateDir: { type: "path", flag: "state-dir" },
  model: { type: "model", flag: "model" },
  baseUrl: { type: "string", flag: "base-url" },
  api: { type: "string", flag: "api" },
  "host.port": { type: "port", flag: "port" },
  "host.host": { type: "string", flag: "host" },
} as const;
export type ConfigKey = keyof typeof CONFIG_KEYS;

export interface LoadedConfig {
  /** Values by key, paths made absolute against the config file's folder. */
  values: Partial<Record<ConfigKey, string | number>>;
  /** The file the values came from, or undefined when the project has none. */
  filepath?: string;
}

/**
 * The project config found from `cwd` with cosmiconfig: assembly-line.config.{ts,js,mjs,json}
 * or the "assembly-line" key of package.json. A .ts file loads through jiti.
 */
export async function loadProjectConfig(cwd: string = process.cwd()): Promise<LoadedConfig> {
  const { cosmiconfig } = await import("cosmiconfig");
  const importModule = async (filepath: string) => {
    const { createJiti } = await import("jiti");
    const loaded = (await createJiti(import.meta.url, { moduleCache: false }).import(filepath, { default: true })) as unknown;
    return loaded ?? null;
  };
  const explorer = cosmiconfig("assembly-line", {
    searchPlaces: [...CONFIG_FILES],
    mergeSearchPlaces: false,
    packageProp: PACKAGE_KEY,
    searchStrategy: "project",
    cache: false,
    // JSON.parse rather than cosmiconfig's parse-json, which loads a code-frame printer on every
    // command that finds a package.json; a broken file is still named in the error below.
    loaders: { ".ts": importModule, ".js": importModule, ".mjs": importModule, ".json": parseJsonFile },
  });
  let found;
  try {
    found = await explorer.search(cwd);
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_CLI_CONFIG", `the project config could not be read: ${(error as Error).message}`, {
      fix: `Fix the file it names (${CONFIG_FILES.slice(1).join(", ")} or the "${PACKAGE_KEY}" key of package.json).`,
      cause: error,
    });
  }
  if (!found || found.isEmpty) return { values: {} };
  return { values: checkConfig(found.config, found.filepath), filepath: found.filepath };
}

function parseJsonFile(filepath: string, content: string): unknown {
  try {
    return JSON.parse(content) as unknown;
  } catch (error) {
    throw new Error(`${filepath} is not JSON: ${(error as Error).message}`);
  }
}

function checkConfig(config: unknown, filepath: string): LoadedConfig["values"] {
  const refuse = (what: string) =>
    new AssemblyLineError("AL_ERR_CLI_CONFIG", `${filepath}: ${what}`, {
      fix: `The config takes ${Object.keys(CONFIG_KEYS).join(", ")} (host is { port, host }); see docs/cli.md.`,
    });
  if (typeof config !== "object" || config === null || Array.isArray(config)) throw refuse("the config is not an object");
  const flat: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (key === "host" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [inner, innerValue] of Object.entries(value)) flat[`host.${inner}`] = innerValue;
    } else flat[key] = value;
  }
  const values: LoadedConfig["values"] = {};
  const base = dirname(filepath);
  for (const [key, value] of Object.entries(flat)) {
    const spec = CONFIG_KEYS[key as ConfigKey];
    if (!spec) throw refuse(`unknown key "${key}"`);
    if (value === undefined) continue;
    if (spec.type === "port") {
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 65_535) throw refuse(`${key} ${JSON.stringify(value)} is not a port number (0-65535)`);
      values[key as ConfigKey] = value as number;
    } else {
      if (typeof value !== "string" || value === "") throw refuse(`${key} ${JSON.stringify(value)} is not a non-empty string`);
      values[key as ConfigKey] = spec.type === "path" ? resolveFrom(base, value) : spec.type === "model" ? scriptFrom(base, value) : value;
    }
  }
  return values;
}

function resolveFrom(base: string, path: string): string {
  return isAbsolute(path) ? path : resolve(base, path);
}

/** A `scripted:` model's file is relative to the config file, as `agent` and `stateDir` are: the command may run in any folder of the project. */
function scriptFrom(base: string, model: string): string {
  return model.startsWith(SCRIPTED) ? SCRIPTED + resolveFrom(base, model.slice(SCRIPTED.length)) : model;
}

const SCRIPTED = "scripted:";

/** Where an effective value came from. */
export type ValueSource = "flag" | "default" | { config: string };

export interface EffectiveValue {
  value: string | number | undefined;
  source: ValueSource;
}

/** A flag wins over the config file, the config over the command's default. */
export function effectiveValue(flag: string | undefined, key: ConfigKey, config: LoadedConfig, fallback?: string | number): EffectiveValue {
  if (flag !== undefined) return { value: flag, source: "flag" };
  const configured = config.values?.[key];
  if (configured !== undefined) return { value: configured, source: { config: config.filepath! } };
  return { value: fallback, source: "default" };
}
