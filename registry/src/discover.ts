import { existsSync } from "node:fs";
import { readFile, readdir, realpath } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/** `<from>/node_modules`, then each parent's, as Node resolves packages. */
export function nodeModulesChain(from: string): string[] {
  const chain: string[] = [];
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    if (basename(dir) !== "node_modules") chain.push(join(dir, "node_modules"));
    if (dirname(dir) === dir) return chain.filter((candidate) => existsSync(candidate));
  }
}

/** The folder of package `name` as Node would find it from `from`, or undefined. */
export function findPackageDir(name: string, from: string): string | undefined {
  return nodeModulesChain(from)
    .map((modules) => join(modules, name))
    .find((dir) => existsSync(join(dir, "package.json")));
}

/** A package that declares an `assemblyLine` block (not yet checked). */
export interface DiscoveredPlugin {
  dir: string;
  packageName: string;
  /** The declared id when it is a string; the loader checks the rest. */
  id: string | undefined;
}

async function readPackageJson(dir: string): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
  } catch {
    // Not every folder under node_modules is a package (.bin, .cache, broken installs).
    return undefined;
  }
}

/** Describe the package in `dir` when it declares itself an Assembly Line plugin. */
export async function discoverPackage(dir: string): Promise<DiscoveredPlugin | undefined> {
  const json = await readPackageJson(dir);
  if (!json || json.assemblyLine === undefined || typeof json.name !== "string") return undefined;
  const id = (json.assemblyLine as { id?: unknown } | null)?.id;
  return { dir: await realpath(dir), packageName: json.name, id: typeof id === "string" ? id : undefined };
}

/**
 * Every installed plugin package visible from `from`: top-level and scoped
 * packages of each node_modules up the tree. Nearer folders come first, so a
 * package installed beside the agent shadows the host's copy.
 */
export async function scanInstalledPlugins(from: string): Promise<DiscoveredPlugin[]> {
  const found: DiscoveredPlugin[] = [];
  for (const modules of nodeModulesChain(from)) {
    const entries = await readdir(modules, { withFileTypes: true }).catch(() => []);
    const dirs: string[] = [];
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
      if (entry.name.startsWith("@")) {
        const scoped = await readdir(join(modules, entry.name)).catch(() => []);
        dirs.push(...scoped.map((name) => join(modules, entry.name, name)));
      } else dirs.push(join(modules, entry.name));
    }
    const packages = await Promise.all(dirs.sort().map(discoverPackage));
    found.push(...packages.filter((pkg): pkg is DiscoveredPlugin => pkg !== undefined));
  }
  return found;
}
