import { join, relative, sep } from "node:path";
import { AssemblyLineError, type ErrorCode } from "@assemblyline-agents/core";
import { configSchemaPath } from "./config-schema.js";
import { pluginRefusal, type PluginPackage } from "./manifest.js";
import { packageEntry } from "./package-main.js";
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

/**
 * What a host reads from an installed copy: the main module, each config
 * schema, each kit subject module. Checked against the tarball's file list, so
 * a `files` field that leaves one out fails here rather than on users' machines
 * (the package folder itself has every file, so the other steps pass).
 */
export async function checkPublishedFiles(pkg: PluginPackage): Promise<string[]> {
  const inPackage = (file: string) => relative(pkg.dir, file).split(sep).join("/");
  const needed: NeededFile[] = [{ path: inPackage(packageEntry(pkg)), why: "the main module", code: "AL_ERR_PLUGIN_IMPORT" }];
  const { manifest } = pkg;
  for (const provide of manifest.provides) {
    const schema = configSchemaPath(pkg, provide);
    if (schema) needed.push({ path: inPackage(schema), why: `the configSchema of the ${provide.slot} adapter "${provide.name}"`, code: "AL_ERR_PLUGIN_CONFIG_SCHEMA" });
  }
  // A package without adapters (an engine) still has its factory read this schema at run time.
  if (manifest.configSchema && manifest.provides.length === 0) needed.push({ path: inPackage(join(pkg.dir, manifest.configSchema)), why: "assemblyLine.configSchema", code: "AL_ERR_PLUGIN_CONFIG_SCHEMA" });
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
  return [...new Set(needed.map((file) => file.path))];
}
