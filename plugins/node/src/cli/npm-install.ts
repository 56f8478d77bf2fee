import { runNpm } from "@assemblyline-agents/registry";
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** How many trailing lines of npm's output an install failure quotes. */
const QUOTED_LINES = 12;

async function dependencies(projectDir: string): Promise<Record<string, string>> {
  const json = JSON.parse(await readFile(join(projectDir, "package.json"), "utf8")) as { dependencies?: Record<string, string> };
  return json.dependencies ?? {};
}

/**
 * `npm install --save <spec>` in `projectDir`, with npm's own client, and the
 * name the package was saved under: the dependency that appeared, or for a
 * reinstall the one whose spec points at the same path or tarball.
 */
export async function npmInstall(projectDir: string, spec: string, options: { offline?: boolean; knownName?: string } = {}): Promise<string> {
  const before = await dependencies(projectDir);
  const args = ["install", "--save", "--no-audit", "--no-fund", ...(options.offline ? ["--offline"] : []), spec];
  const ran = await runNpm(args, projectDir, `install ${spec}`);
  const output = { code: ran.code, text: `${ran.stdout}${ran.stderr}` };
  if (output.code !== 0) {
    const tail = output.text.trim().split("\n").slice(-QUOTED_LINES).join("\n  ");
    throw new AssemblyLineError("AL_ERR_PLUGIN_INSTALL", `npm ${args.join(" ")} failed in ${projectDir} (exit ${output.code}):\n  ${tail}`, {
      fix: "Fix what npm reports (network, registry access, a wrong path or tarball) and run the command again.",
    });
  }
  if (options.knownName) return options.knownName;
  const after = await dependencies(projectDir);
  const added = Object.keys(after).find((name) => !(name in before));
  const matching = Object.entries(after).find(([, value]) => value.endsWith(basename(spec)));
  const name = added ?? matching?.[0];
  if (!name) {
    throw new AssemblyLineError("AL_ERR_PLUGIN_INSTALL", `npm installed ${spec} but ${join(projectDir, "package.json")} names no dependency for it`, {
      fix: "Pass the registry id (assembly-line plugins add <id>) or a package folder, or check that npm saved the dependency.",
    });
  }
  return name;
}
