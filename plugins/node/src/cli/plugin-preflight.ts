import { existsSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AssemblyLineError, errorSummary, isAssemblyLineError } from "@assemblyline-agents/core";
import { checkCoreRange, checkKernelRange, hostCoreVersion, readPluginPackage, runNpm, type PluginPackage } from "@assemblyline-agents/registry";

/** How many trailing lines of npm's output a pack failure quotes. */
const QUOTED_LINES = 12;

/**
 * `npm pack <spec>` into `destination` with npm's own client, run in `project` so it reads the
 * project's .npmrc (registry, scopes, auth) as the npm install after it does; the tarball's file name.
 */
async function npmPack(spec: string, project: string, destination: string, offline: boolean): Promise<string> {
  const args = ["pack", spec, "--pack-destination", destination, "--json", "--ignore-scripts", ...(offline ? ["--offline"] : [])];
  const output = await runNpm(args, project, `fetch ${spec}`);
  if (output.code !== 0) {
    const tail = `${output.stdout}\n${output.stderr}`.trim().split("\n").slice(-QUOTED_LINES).join("\n  ");
    throw new AssemblyLineError("AL_ERR_PLUGIN_INSTALL", `npm ${args.join(" ")} failed (exit ${output.code}), so ${spec} was not installed:\n  ${tail}`, {
      fix: "Fix what npm reports (network, registry access, a wrong name, path or tarball) and run the command again.",
    });
  }
  const packed = JSON.parse(output.stdout) as Array<{ filename: string }>;
  return packed[0]!.filename.replace(/^@/, "").replace(/\//, "-");
}

/**
 * The checks `plugins add` makes before npm touches the project: the package
 * (a folder as it is; a tarball or registry spec as `npm pack` fetches it,
 * unpacked in a temporary folder) must have a manifest that passes
 * plugin-schema.json, a kernel range that includes `kernelVersion`, and a range on
 * @assemblyline-agents/core (if it declares one) that includes `coreVersion` (default: the
 * host's core, the one the check after install holds it to), which npm install would
 * otherwise reach first and refuse with its own ERESOLVE.
 * A refusal keeps the loader's code and fix and says nothing was installed.
 * The package returned is the release `npm pack` resolved the spec to: install
 * that version, since the spec's range may resolve to a newer release later.
 */
export async function checkPluginBeforeInstall(spec: string, options: { kernelVersion: string; coreVersion?: string; project: string; offline?: boolean }): Promise<PluginPackage> {
  const isFolder = existsSync(spec) && statSync(spec).isDirectory();
  const work = isFolder ? undefined : await mkdtemp(join(tmpdir(), "al-plugin-preflight-"));
  try {
    let dir = spec;
    if (work) {
      const tarball = await npmPack(spec, options.project, work, options.offline === true);
      // Loaded here: only `plugins add` unpacks anything.
      const { extract } = await import("tar");
      await extract({ file: join(work, tarball), cwd: work });
      dir = join(work, "package");
    }
    const pkg = await readPluginPackage(dir);
    checkKernelRange(pkg, options.kernelVersion);
    checkCoreRange(pkg, options.coreVersion ?? hostCoreVersion());
    return pkg;
  } catch (error) {
    if (!isAssemblyLineError(error) || error.code === "AL_ERR_PLUGIN_INSTALL") throw error;
    const what = errorSummary(error);
    throw new AssemblyLineError(error.code, `${what}\nNothing was installed: ${spec} was refused before npm install.`, {
      ...(error.fix ? { fix: error.fix } : {}),
      ...(error.details ? { details: error.details } : {}),
      cause: error,
    });
  } finally {
    if (work) await rm(work, { recursive: true, force: true });
  }
}
