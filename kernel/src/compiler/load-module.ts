import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { isAbsolute, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Jiti } from "jiti";
import { AssemblyLineError, errorSummary, isAssemblyLineError } from "@assemblyline-agents/core";

/** Node's module cache, which jiti's JSON imports go through whatever its own moduleCache says. */
const requireCache = createRequire(import.meta.url).cache;

/**
 * Load agent-folder TypeScript through jiti. The SDK packages are aliased to the
 * host's own copies, so user code and host share one instance even when the
 * agent folder has no node_modules of its own. `loaded` holds every file loaded,
 * the modules whose imports the build follows (listImportedFiles).
 */
export function createModuleLoader(agentDir: string) {
  const loaded = new Set<string>();
  const roots = [...new Set([agentDir, realpathSync(agentDir)])].map((dir) => dir + sep);
  // Loaded on first use: a runtime that loads only a built agent never needs jiti (13 MB of RSS).
  let jiti: Promise<Jiti> | undefined;
  const open = async (): Promise<Jiti> => (await import("jiti")).createJiti(agentDir + "/", {
    alias: {
      "@assemblyline-agents/core": fileURLToPath(import.meta.resolve("@assemblyline-agents/core")),
      "@assemblyline-agents/runtime": fileURLToPath(new URL("../index.js", import.meta.url)),
    },
    tryNative: true,
    moduleCache: false,
    // Transpiled files are kept (agentDir/node_modules/.cache/jiti, else the OS temp folder) under a
    // hash of their source, so an unchanged tool is not transpiled again by every command.
    fsCache: true,
  });
  const loadModule = async function loadModule(file: string): Promise<Record<string, unknown>> {
    loaded.add(file);
    // A JSON file of the folder stays in Node's cache across loads: a rebuild in this process
    // would hash the new file but run the old data. Packages stay cached (one shared instance).
    for (const key of Object.keys(requireCache)) {
      if (roots.some((root) => key.startsWith(root)) && !key.includes(`${sep}node_modules${sep}`)) delete requireCache[key];
    }
    try {
      const loader = await (jiti ??= open());
      return (await loader.import(file)) as Record<string, unknown>;
    } catch (error) {
      // Named from the agent folder, as every other build error names its file.
      const shown = relative(agentDir, file);
      const named = shown.startsWith("..") || isAbsolute(shown) ? file : shown.split(sep).join("/");
      // A define* helper's refusal keeps its code (AL_ERR_CONTEXT_DEFINITION, ...) and its fix.
      if (isAssemblyLineError(error)) {
        const said = errorSummary(error);
        throw new AssemblyLineError(error.code, `${named}: ${said}`, { ...(error.fix ? { fix: error.fix } : {}), cause: error });
      }
      const missing = missingPackageOf(error);
      throw new AssemblyLineError("AL_ERR_SOURCE_LOAD", `${named} threw while loading: ${(error as Error).message}`, {
        fix: missing
          ? `Install ${missing} where the agent folder resolves its packages (\`npm install ${missing}\` in the agent folder or the project holding it); for a plugin adapter, \`assembly-line plugins add <id>\` installs and lists it. Only @assemblyline-agents/core and @assemblyline-agents/runtime come from the host's own install.`
          : "Fix the error in that file (run it with `npx tsx <file>` to see the full stack).",
        cause: error,
      });
    }
  };
  return Object.assign(loadModule, { loaded });
}

/**
 * The package a failed import named, when the failure is a bare specifier Node could not find
 * (`left-pad`, `@scope/pkg/sub` → `@scope/pkg`); undefined for any other failure or a relative path.
 */
function missingPackageOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "MODULE_NOT_FOUND" && code !== "ERR_MODULE_NOT_FOUND") return undefined;
  const specifier = /Cannot find (?:module|package) '([^']+)'/.exec((error as Error).message)?.[1];
  if (!specifier || specifier.startsWith(".") || isAbsolute(specifier) || specifier.startsWith("file:")) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}
