import { existsSync, realpathSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { AssemblyLineError, type ErrorCode } from "@assemblyline-agents/core";
import { configSchemaPath, packageConfigSchemaFile } from "./config-schema.js";
import { pluginRefusal, type PluginConformance, type PluginPackage } from "./manifest.js";
import { importPluginModule, packageEntry, packageSubpathTarget } from "./package-main.js";
import { runNpm } from "./run-npm.js";

/** The files `npm pack` would put in the tarball (paths relative to the package, "/"-separated), asked of npm's own client. */
export async function packedFiles(dir: string): Promise<Set<string>> {
  // --ignore-scripts: verify must not build; it checks what is there, as a publish right now would ship it.
  const args = ["pack", "--dry-run", "--json", "--ignore-scripts"];
  const output = await runNpm(args, dir, `list the files ${dir} would publish`);
  if (output.code !== 0) {
    throw new AssemblyLineError("AL_ERR_PLUGIN_INSTALL", `npm ${args.join(" ")} failed in ${dir} (exit ${output.code}): ${output.stderr.trim().split("\n").slice(-3).join(" / ")}`, {
      fix: "Fix what npm reports about package.json, then run verify again.",
    });
  }
  const [packed] = JSON.parse(output.stdout) as Array<{ files: Array<{ path: string }> }>;
  return new Set((packed?.files ?? []).map((file) => file.path));
}

/** One file a user's install needs, and the refusal its absence causes there. */
interface NeededFile {
  path: string;
  why: string;
  code: ErrorCode;
}

/** The kit subject modules the manifest names (`conformance.module`), with where each is declared. */
function subjectModules(pkg: PluginPackage): Array<{ module: string; where: string }> {
  const { manifest } = pkg;
  const entries: Array<{ conformance?: PluginConformance | undefined; where: string }> = [
    ...manifest.provides.map((provide, index) => ({ conformance: provide.conformance, where: `assemblyLine.provides[${index}]` })),
    ...(manifest.channels ?? []).map((entry, index) => ({ conformance: entry.conformance, where: `assemblyLine.channels[${index}]` })),
    ...(manifest.harnesses ?? []).map((entry, index) => ({ conformance: entry.conformance, where: `assemblyLine.harnesses[${index}]` })),
    ...(manifest.telemetrySinks ?? []).map((entry, index) => ({ conformance: entry.conformance, where: `assemblyLine.telemetrySinks[${index}]` })),
  ];
  return entries.flatMap(({ conformance, where }) => (conformance ? [{ module: conformance.module, where: `${where}.conformance` }] : []));
}

/**
 * What a host reads from an installed copy: the main module, each config
 * schema, each kit subject module. First checked against the tarball's file
 * list, then imported from a copy of exactly those files (with the package's
 * declared dependencies linked in), so a `files` field that leaves out a file
 * one of them imports fails here rather than on users' machines (the package
 * folder itself has every file, so the other steps pass).
 */
export async function checkPublishedFiles(pkg: PluginPackage): Promise<string[]> {
  const inPackage = (file: string) => relative(pkg.dir, file).split(sep).join("/");
  const main: NeededFile = { path: inPackage(packageEntry(pkg)), why: "the main module", code: "AL_ERR_PLUGIN_IMPORT" };
  const needed: NeededFile[] = [main];
  const { manifest } = pkg;
  for (const provide of manifest.provides) {
    const schema = configSchemaPath(pkg, provide);
    if (schema) needed.push({ path: inPackage(schema), why: `the configSchema of the ${provide.slot} adapter "${provide.name}"`, code: "AL_ERR_PLUGIN_CONFIG_SCHEMA" });
  }
  // A package without adapters (an engine) still has its factory read this schema at run time.
  if (manifest.configSchema && manifest.provides.length === 0) needed.push({ path: inPackage(packageConfigSchemaFile(pkg, manifest.configSchema)), why: "assemblyLine.configSchema", code: "AL_ERR_PLUGIN_CONFIG_SCHEMA" });
  const modules: NeededFile[] = [main];
  for (const { module, where } of subjectModules(pkg)) {
    const target = packageSubpathTarget(pkg, module);
    // A subpath missing from the exports map is the kit step's to report.
    if (!target) continue;
    const file: NeededFile = { path: inPackage(join(pkg.dir, target)), why: `the kit subject module "${module}" (${where})`, code: "AL_ERR_PLUGIN_IMPORT" };
    needed.push(file);
    modules.push(file);
  }
  const packed = await packedFiles(pkg.dir);
  const missing = needed.filter((file, index) => !packed.has(file.path) && needed.findIndex((other) => other.path === file.path) === index);
  if (missing.length > 0) {
    throw pluginRefusal(
      missing[0]!.code,
      pkg,
      `npm would publish it without ${missing.map((file) => `${file.path} (${file.why})`).join(", ")}, so a host that installs it fails`,
      `Add ${missing.map((file) => `"${file.path}"`).join(", ")} (or its folder) to "files" in package.json, or remove it from .npmignore; npm pack --dry-run lists what ships.`,
      { details: { missing: missing.map((file) => file.path) } },
    );
  }
  await importFromPackedCopy(pkg, packed, modules.filter((file, index) => modules.findIndex((other) => other.path === file.path) === index));
  return [...new Set(needed.map((file) => file.path))];
}

/**
 * Copy the files npm would pack into a temporary folder, link the package's
 * declared dependencies (as installed for the source folder) into its
 * node_modules, and import each module there, as a host that installed the
 * tarball would. A module that imports a file the tarball lacks is refused,
 * naming that file.
 */
async function importFromPackedCopy(pkg: PluginPackage, packed: Set<string>, modules: NeededFile[]): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "al-verify-packed-"));
  try {
    const copy = join(work, "package");
    for (const file of packed) {
      await mkdir(dirname(join(copy, file)), { recursive: true });
      await copyFile(join(pkg.dir, file), join(copy, file));
    }
    const { dependencies, peerDependencies, optionalDependencies } = pkg.packageJson as Record<string, Record<string, string> | undefined>;
    const declared = new Set(Object.keys({ ...dependencies, ...peerDependencies, ...optionalDependencies }));
    for (const name of declared) {
      const installed = installedPackage(name, pkg.dir);
      if (!installed) continue;
      await mkdir(dirname(join(copy, "node_modules", name)), { recursive: true });
      await symlink(installed, join(copy, "node_modules", name), "junction");
    }
    for (const module of modules) {
      try {
        await importPluginModule(join(copy, module.path));
      } catch (error) {
        const undeclared = missingPackage(error, copy);
        if (undeclared !== undefined && !declared.has(undeclared)) {
          throw pluginRefusal(
            "AL_ERR_PLUGIN_IMPORT",
            pkg,
            `${module.path} (${module.why}) imports the package "${undeclared}", which package.json does not declare, so npm does not install it with the plugin and importing the installed package fails with ERR_MODULE_NOT_FOUND (it loads from this folder only because a node_modules above it has a copy)`,
            `Add "${undeclared}" to "dependencies" in package.json (or to "peerDependencies" when the host provides it), then run verify again.`,
            { cause: error, details: { undeclared, importedBy: module.path } },
          );
        }
        const absent = missingFile(error, copy);
        if (absent === undefined) continue; // Any other import failure is the exports step's to report, from the folder.
        throw pluginRefusal(
          "AL_ERR_PLUGIN_IMPORT",
          pkg,
          `npm would publish it without ${absent}, which ${module.path} (${module.why}) imports, so importing the installed package fails with ERR_MODULE_NOT_FOUND`,
          `Add "${absent}" (or its folder) to "files" in package.json, or remove it from .npmignore; npm pack --dry-run lists what ships.`,
          { cause: error, details: { missing: [absent], importedBy: module.path } },
        );
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The real folder of `name` as the source folder resolves it (its node_modules or an ancestor's), or undefined. */
function installedPackage(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * What a failed import could not find, read from its message: the specifier
 * and the importing file. Node says "Cannot find module '/abs/file' imported
 * from /abs/importer" (or "Cannot find package 'name' imported from ..."); jiti's
 * loader says "Cannot find module './file'" followed by "Require stack:\n- /abs/importer".
 */
function notFound(error: unknown): { specifier: string; importer: string | undefined } | undefined {
  const text = [error, (error as { cause?: unknown })?.cause].map((each) => (each as Error | undefined)?.message ?? "").join("\n");
  const specifier = /Cannot find (?:module|package) ['"]([^'"]+)['"]/.exec(text)?.[1];
  if (specifier === undefined) return undefined;
  const importer = /imported from (\S+)/.exec(text)?.[1] ?? /Require stack:\s*\n- (.+)/.exec(text)?.[1];
  return { specifier, importer: importer === undefined ? undefined : asPath(importer.trim()) };
}

const asPath = (value: string) => (value.startsWith("file://") ? fileURLToPath(value) : value);

/** `file`'s path relative to `copy` ("/"-separated), or undefined when it lies outside. */
function inCopy(file: string, copy: string): string | undefined {
  for (const root of new Set([copy, realpathSync(copy)])) {
    const inside = relative(root, file);
    if (!inside.startsWith("..") && !isAbsolute(inside)) return inside.split(sep).join("/");
  }
  return undefined;
}

/** The package-relative path of a file inside `copy` that a failed import could not find, or undefined when it failed otherwise. */
function missingFile(error: unknown, copy: string): string | undefined {
  const found = notFound(error);
  if (found === undefined) return undefined;
  let file: string;
  if (found.specifier.startsWith(".")) {
    if (found.importer === undefined) return undefined;
    file = resolve(dirname(found.importer), found.specifier);
  } else if (isAbsolute(asPath(found.specifier))) file = asPath(found.specifier);
  else return undefined; // A bare package: a dependency question (missingPackage), not a "files" one.
  return inCopy(file, copy);
}

/**
 * The package name of a bare import (`name`, `@scope/name`, or a subpath of
 * either) that one of the plugin's own files in `copy` could not resolve, or
 * undefined. A failure inside a linked dependency is that dependency's affair.
 */
function missingPackage(error: unknown, copy: string): string | undefined {
  const found = notFound(error);
  if (found === undefined || found.importer === undefined) return undefined;
  const { specifier } = found;
  if (specifier.startsWith(".") || isAbsolute(asPath(specifier)) || specifier.startsWith("node:")) return undefined;
  const importer = inCopy(found.importer, copy);
  if (importer === undefined || importer.split("/").includes("node_modules")) return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}
