import { readFile, realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import type { ValidateFunction } from "ajv";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { describeSchemaErrors, registryAjv } from "./schemas.js";
import { pluginRefusal, type PluginPackage, type PluginProvide } from "./manifest.js";

const compiled = new Map<string, ValidateFunction>();

/** The schema file that governs `provide`'s options: its own, else the package's, else none. */
export function configSchemaPath(pkg: PluginPackage, provide: PluginProvide): string | undefined {
  const relativePath = provide.configSchema ?? pkg.manifest.configSchema;
  return relativePath === undefined ? undefined : packageConfigSchemaFile(pkg, relativePath);
}

/**
 * `relativePath` (a manifest's configSchema) as a file inside the package. A path
 * leading out of it ("./../x.json") is refused: the host would read, and quote
 * in its errors, a file the plugin does not own.
 */
export function packageConfigSchemaFile(pkg: PluginPackage, relativePath: string): string {
  const file = resolve(pkg.dir, relativePath);
  if (!isInside(pkg.dir, file)) throw outsidePackage(pkg, relativePath, file);
  return file;
}

const isInside = (dir: string, file: string): boolean => {
  const path = relative(dir, file);
  return path !== "" && path !== ".." && !path.startsWith(`..${sep}`) && !isAbsolute(path);
};

const outsidePackage = (pkg: PluginPackage, relativePath: string, file: string) =>
  pluginRefusal("AL_ERR_PLUGIN_CONFIG_SCHEMA", pkg, `its configSchema "${relativePath}" leads outside the package, to ${file}`, "Ship the schema inside the package and name it from the package root, e.g. \"./config.schema.json\".", {
    details: { configSchema: relativePath },
  });

/** Read and compile a plugin's config schema; refuses a file outside the package (a symbolic link leading out included), a missing file or a schema ajv cannot compile. */
export async function compileConfigSchema(pkg: PluginPackage, provide: PluginProvide): Promise<ValidateFunction | undefined> {
  const file = configSchemaPath(pkg, provide);
  if (file === undefined) return undefined;
  const cached = compiled.get(file);
  if (cached) return cached;
  let text: string;
  try {
    const target = await realpath(file);
    if (!isInside(await realpath(pkg.dir), target)) throw outsidePackage(pkg, (provide.configSchema ?? pkg.manifest.configSchema)!, target);
    text = await readFile(target, "utf8");
  } catch (error) {
    if (isAssemblyLineError(error)) throw error;
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    throw pluginRefusal("AL_ERR_PLUGIN_CONFIG_SCHEMA", pkg, `its configSchema ${file} ${missing ? "is missing" : `cannot be read: ${(error as Error).message}`}`, 'Ship the file (list it in package.json "files") or fix the configSchema path.', {
      cause: error,
    });
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    // The parser's message quotes the file's first characters; a file named by mistake may hold secrets, so it is not repeated.
    throw pluginRefusal("AL_ERR_PLUGIN_CONFIG_SCHEMA", pkg, `its configSchema ${file} is not JSON`, "Point configSchema at the package's JSON Schema file, or fix its JSON syntax.");
  }
  try {
    // Compiled without $id registration, so two plugins may both call their schema "config".
    const { $id: _ignored, ...anonymous } = schema as Record<string, unknown>;
    const validate = registryAjv().compile(anonymous);
    compiled.set(file, validate);
    return validate;
  } catch (error) {
    throw pluginRefusal("AL_ERR_PLUGIN_CONFIG_SCHEMA", pkg, `its configSchema ${file} does not compile: ${(error as Error).message}`, "Correct the schema so ajv compiles it (draft-07).", {
      cause: error,
    });
  }
}

/** Where the user wrote a descriptor's options, for the fix: the file and the call in it. */
export interface OptionsSource {
  /** `gateway.ts`, `sandbox.ts`. */
  file: string;
  /** `dockerSandbox(...)`, `defineSandbox({ adapter: "docker", ... })`. */
  call: string;
}

/**
 * The options a descriptor carries to the factory must satisfy the plugin's
 * config schema (step 4 of loading, before anything is constructed with them).
 * `source` says where they were written; default: the provided export's call in gateway.ts.
 */
export async function checkAdapterOptions(pkg: PluginPackage, provide: PluginProvide, options: unknown, source?: OptionsSource): Promise<void> {
  const validate = await compileConfigSchema(pkg, provide);
  if (!validate || validate(options ?? {})) return;
  const problems = describeSchemaErrors(validate.errors, "options");
  const { file, call } = source ?? { file: "gateway.ts", call: `${provide.export}(...)` };
  throw pluginRefusal(
    "AL_ERR_PLUGIN_OPTIONS",
    pkg,
    `the options for its ${provide.slot} adapter "${provide.name}" (from ${file}) break ${configSchemaPath(pkg, provide)}: ${problems.join("; ")}`,
    `Pass options that match the schema to ${call} in ${file}.`,
    { details: { problems, slot: provide.slot, adapter: provide.name, file } },
  );
}
