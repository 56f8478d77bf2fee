import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import { pluginsCommand } from "../../plugins/node/src/cli/commands/plugins.js";
import type { RegistrySnapshot } from "../src/index.js";
import { LocalNpmRegistry } from "./support/npm-registry.js";

const root = resolve(import.meta.dirname, "../..");
const thirdParty = join(root, "examples/third-party-plugin");
const packageName = "@acme/assembly-line-jsonfile";

/** Runs the command with an IO that keeps what it prints, progress lines included. */
async function plugins(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await pluginsCommand(args, { out: (line) => out.push(line), err: (line) => err.push(line), errTTY: true });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** The third-party example as another release: same code, a new version and kernel range. */
async function releaseFolder(work: string, version: string, kernel: string): Promise<string> {
  const folder = join(work, `jsonfile-${version}`);
  await cp(thirdParty, folder, { recursive: true, filter: (source) => !source.includes("node_modules") });
  const manifest = JSON.parse(await readFile(join(folder, "package.json"), "utf8")) as { version: string; assemblyLine: { kernel: string } };
  manifest.version = version;
  manifest.assemblyLine.kernel = kernel;
  await writeFile(join(folder, "package.json"), JSON.stringify(manifest, null, 2));
  return folder;
}

/** A marketplace index listing only jsonfile at `version`, the release its maintainers reviewed. */
async function marketplaceFile(work: string, version: string): Promise<string> {
  const snapshot: RegistrySnapshot = {
    updatedAt: "2026-12-24",
    plugins: [
      {
        id: "jsonfile",
        package: packageName,
        description: "JSON-file state for Assembly Line.",
        tags: ["state"],
        version,
        kernel: "^0.1.0",
        provides: [{ slot: "state", name: "jsonfile", export: "jsonFileState", contract: "state@1", facets: ["runs", "conversations"] }],
        env: [],
        configSchema: true,
      },
    ],
  };
  const file = join(work, "marketplace.json");
  await writeFile(file, JSON.stringify(snapshot));
  return file;
}

describe("assembly-line plugins add <id> from an npm registry", () => {
  let work: string;
  let registry: LocalNpmRegistry;
  const outerEnv: Record<string, string | undefined> = {};

  beforeEach(async () => {
    work = await mkdtemp(join(tmpdir(), "al-add-release-"));
    registry = await LocalNpmRegistry.start();
    // The npm that plugins add runs inherits these; a private cache keeps releases from other runs out.
    const npmEnv = { npm_config_registry: registry.url, npm_config_cache: join(work, "npm-cache") };
    for (const [key, value] of Object.entries(npmEnv)) {
      outerEnv[key] = process.env[key];
      process.env[key] = value;
    }
  });
  afterEach(async () => {
    for (const [key, value] of Object.entries(outerEnv)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await registry.close();
    await rm(work, { recursive: true, force: true });
  });

  it("installs the release it checked, not one published between the check and npm install", async () => {
    const checkedRelease = await registry.pack(thirdParty);
    // Fits this kernel too, so only the version tells it apart: nothing after npm install would refuse it.
    const laterRelease = await registry.pack(await releaseFolder(work, "0.3.1", `^${KERNEL_VERSION}`));
    registry.publish(checkedRelease);
    registry.afterTarballSent(checkedRelease, () => registry.publish(laterRelease));
    const project = join(work, "project");
    await mkdir(project);
    // The peer dependency, satisfied from this checkout rather than the registry.
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "project", private: true, dependencies: { "@assemblyline-agents/core": `file:${join(root, "plugin-sdk")}` } }));

    const { code, out, err } = await plugins("add", "jsonfile", "--dir", project, "--registry", await marketplaceFile(work, "0.3.0"));

    // The premise: the check fetched 0.3.0, then npm install was offered 0.3.1 as latest.
    expect(registry.tarballsSent[0]).toEqual({ name: packageName, version: "0.3.0" });
    expect(registry.packumentsSent.at(-1)).toEqual({ name: packageName, latest: "0.3.1" });
    expect(code).toBe(0);
    const installed = JSON.parse(await readFile(join(project, "node_modules", packageName, "package.json"), "utf8")) as { version: string };
    expect(installed.version).toBe("0.3.0");
    const lock = JSON.parse(await readFile(join(project, "package-lock.json"), "utf8")) as { packages: Record<string, { version: string; integrity: string }> };
    expect(lock.packages[`node_modules/${packageName}`]).toMatchObject({ version: "0.3.0", integrity: checkedRelease.integrity });
    // npm saves a caret range as it would for `npm install <name>`; the lock file pins the checked release.
    const { dependencies } = JSON.parse(await readFile(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(dependencies[packageName]).toBe("^0.3.0");
    expect(err).toContain(`installing ${packageName}@0.3.0 into ${project} with npm`);
    expect(out).toContain(`added ${packageName}@0.3.0: plugin "jsonfile"`);
  });
});
