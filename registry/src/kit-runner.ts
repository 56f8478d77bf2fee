import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, parse, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const CORE = "@assemblyline-agents/core";
/** The vitest the kits are written for; said in the install command. */
export const KIT_VITEST_RANGE = "^4.1.0";

/** The testkit and the vitest that runs it: one copy, so the kit's `import "vitest"` is the runner's own. */
export interface KitRunner {
  /** file: URL of @assemblyline-agents/core/testkit. */
  testkitUrl: string;
  /** file: URL of vitest's Node API (vitest/node). */
  vitestNodeUrl: string;
  /** Where vitest is installed, for messages. */
  vitestDir: string;
}

export interface MissingKitRunner {
  /** What is missing, in one line. */
  missing: string;
  /** The exact command that installs it. */
  fix: string;
}

/** `<ancestor>/node_modules/<name>` of `from` or one of its ancestors, real path, or undefined. */
function findPackageUpwards(name: string, from: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    const parent = dirname(dir);
    if (parent === dir || dir === parse(dir).root) return undefined;
    dir = parent;
  }
}

/** The ESM target of `subpath` in a package's exports ({ types, import?, default }). */
function exportTarget(packageDir: string, subpath: string): string | undefined {
  const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { exports?: Record<string, unknown> };
  let target = pkg.exports?.[subpath];
  while (typeof target === "object" && target !== null) {
    const conditions = target as Record<string, unknown>;
    target = conditions.import ?? conditions.default;
  }
  return typeof target === "string" ? join(packageDir, target) : undefined;
}

function runnerBeside(coreDir: string): KitRunner | undefined {
  const testkit = exportTarget(coreDir, "./testkit");
  // Resolved from the testkit's own folder, as its `import "vitest"` will be.
  const vitestDir = findPackageUpwards("vitest", coreDir);
  const vitestNode = vitestDir ? exportTarget(vitestDir, "./node") : undefined;
  if (!testkit || !vitestDir || !vitestNode) return undefined;
  return { testkitUrl: pathToFileURL(testkit).href, vitestNodeUrl: pathToFileURL(vitestNode).href, vitestDir };
}

/**
 * Find a testkit with a vitest beside it: first the plugin author's own
 * (their dev dependencies), then the host's. Neither: the exact command that
 * installs one, rather than a module-not-found stack.
 */
export function locateKitRunner(packageDir: string): KitRunner | MissingKitRunner {
  const pluginCore = findPackageUpwards(CORE, packageDir);
  // The package folder of the core this registry imports: <core>/dist/index.js -> <core>.
  const hostCore = realpathSync(fileURLToPath(new URL("..", import.meta.resolve(CORE))));
  for (const coreDir of [pluginCore, hostCore]) {
    const runner = coreDir ? runnerBeside(coreDir) : undefined;
    if (runner) return runner;
  }
  const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { devDependencies?: Record<string, string> };
  if (pkg.devDependencies?.vitest && pkg.devDependencies[CORE] && !pluginCore) {
    return { missing: `the plugin's dev dependencies (vitest, ${CORE}) are not installed`, fix: `cd ${packageDir} && npm install` };
  }
  // vitest must sit where the testkit's own `import "vitest"` finds it: in the project that holds the core package.
  const coreDir = pluginCore ?? hostCore;
  const project = projectOf(coreDir);
  return {
    missing: `no vitest is installed where ${CORE}/testkit (${coreDir}) can import it`,
    fix: `cd ${project} && npm install --save-dev vitest@${KIT_VITEST_RANGE}`,
  };
}

/** The folder whose node_modules holds `packageDir` (the package itself when it is not under node_modules). */
function projectOf(packageDir: string): string {
  const index = packageDir.lastIndexOf(`${sep}node_modules${sep}`);
  return index === -1 ? packageDir : packageDir.slice(0, index);
}
