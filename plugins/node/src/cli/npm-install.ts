import { runNpm } from "@assemblyline-agents/registry";
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** How many trailing lines of npm's output an install failure quotes. */
const QUOTED_LINES = 12;

/**
 * The project's package.json, refused with AL_ERR_CLI_USAGE when it is not a
 * JSON object: npm could not install into it, and `plugins add` checks it before
 * it fetches, installs or changes anything.
 */
export async function readProjectPackageJson(projectDir: string): Promise<{ dependencies?: Record<string, string> }> {
  const file = join(projectDir, "package.json");
  const text = await readFile(file, "utf8");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${file} is not valid JSON: ${(error as Error).message}`, {
      fix: "Fix its syntax (npm reads it too), then run plugins add again; nothing was changed.",
      cause: error,
    });
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new AssemblyLineError("AL_ERR_CLI_USAGE", `${file} is not a JSON object`, { fix: 'Make it an object such as { "name": "my-project", "private": true }, then run plugins add again; nothing was changed.' });
  }
  return json as { dependencies?: Record<string, string> };
}

async function dependencies(projectDir: string): Promise<Record<string, string>> {
  return (await readProjectPackageJson(projectDir)).dependencies ?? {};
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
