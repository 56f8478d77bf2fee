import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createJiti } from "jiti";
import { pluginRefusal, type PluginPackage } from "./manifest.js";

/** Conditions tried, in order, when the package's `exports` map the entry point by condition. */
const CONDITIONS = ["import", "node", "default"];

function pickTarget(target: unknown): string | undefined {
  if (typeof target === "string") return target;
  if (Array.isArray(target)) return target.map(pickTarget).find((found) => found !== undefined);
  if (typeof target === "object" && target !== null) {
    for (const condition of CONDITIONS) {
      const found = pickTarget((target as Record<string, unknown>)[condition]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The file `import("<package>")` loads: `exports["."]`, else `main`, else index.js. */
export function packageEntry(pkg: Pick<PluginPackage, "dir" | "packageJson">): string {
  const { exports, main } = pkg.packageJson as { exports?: unknown; main?: unknown };
  let target: string | undefined;
  if (exports !== undefined) {
    const isSubpathMap = typeof exports === "object" && exports !== null && !Array.isArray(exports) && Object.keys(exports).some((key) => key.startsWith("."));
    target = pickTarget(isSubpathMap ? (exports as Record<string, unknown>)["."] : exports);
  }
  target ??= typeof main === "string" ? main : "index.js";
  return join(pkg.dir, target);
}

/** The file (relative, "./"-prefixed) a subpath of the package's exports map points at, by condition, or undefined. */
export function packageSubpathTarget(pkg: Pick<PluginPackage, "packageJson">, subpath: string): string | undefined {
  const { exports } = pkg.packageJson as { exports?: unknown };
  const isSubpathMap = typeof exports === "object" && exports !== null && !Array.isArray(exports) && Object.keys(exports).some((key) => key.startsWith("."));
  const target = pickTarget(isSubpathMap ? (exports as Record<string, unknown>)[subpath] : subpath === "." ? exports : undefined);
  return target?.startsWith("./") ? target : undefined;
}

/*
 * Plugin code is loaded through jiti with the SDK aliased to the host's copy, so
 * a plugin with its own copy of @assemblyline-agents/core still shares one
 * instance with the host, and a TypeScript main loads too. (Plugins depend on
 * the SDK only, never on the kernel.)
 */
const jiti = createJiti(import.meta.url, {
  alias: {
    "@assemblyline-agents/core": fileURLToPath(import.meta.resolve("@assemblyline-agents/core")),
  },
  tryNative: true,
});

let coreVersion: string | undefined;

/** The version of the host's @assemblyline-agents/core, the copy plugin imports of the SDK are bound to (read from its package.json). */
export function hostCoreVersion(): string {
  if (coreVersion !== undefined) return coreVersion;
  for (let dir = dirname(fileURLToPath(import.meta.resolve("@assemblyline-agents/core"))); ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const { name, version } = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
      if (name === "@assemblyline-agents/core" && typeof version === "string") return (coreVersion = version);
    }
    if (dirname(dir) === dir) throw new Error("@assemblyline-agents/core resolves to a file outside any package.json that names it");
  }
}

/** Import one of a plugin's modules the way a host does: through jiti, with the SDK aliased to the host's copy. */
export async function importPluginModule(file: string): Promise<Record<string, unknown>> {
  return (await jiti.import(file)) as Record<string, unknown>;
}

/** Import the package main (step 3 of loading starts here). */
export async function importPackageMain(pkg: PluginPackage): Promise<Record<string, unknown>> {
  const entry = packageEntry(pkg);
  if (!existsSync(entry)) {
    throw pluginRefusal(
      "AL_ERR_PLUGIN_IMPORT",
      pkg,
      `its main module ${entry} does not exist`,
      'Build the package (its "main"/"exports" must point at a file that ships), or fix the path in package.json.',
    );
  }
  try {
    return (await jiti.import(entry)) as Record<string, unknown>;
  } catch (error) {
    throw pluginRefusal("AL_ERR_PLUGIN_IMPORT", pkg, `importing ${entry} threw: ${(error as Error).message}`, "Fix that error; importing the package must not need anything but its dependencies.", {
      cause: error,
    });
  }
}
