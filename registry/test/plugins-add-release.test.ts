import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import { pluginsCommand } from "../../plugins/node/src/cli/commands/plugins.js";
import { readFromSpec } from "../../plugins/node/src/cli/install-source.js";
import type { RegistrySnapshot } from "../src/index.js";
import { LocalNpmRegistry, type PackedRelease } from "./support/npm-registry.js";

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

  /** 0.3.0 published; 0.3.1, which fits this kernel too, published as latest once 0.3.0's tarball was sent (to the check). */
  async function releaseDuringCheck(): Promise<PackedRelease> {
    const checkedRelease = await registry.pack(thirdParty);
    // Fits this kernel too, so only the version tells it apart: nothing after npm install would refuse it.
    const laterRelease = await registry.pack(await releaseFolder(work, "0.3.1", `^${KERNEL_VERSION}`));
    registry.publish(checkedRelease);
    registry.afterTarballSent(checkedRelease, () => registry.publish(laterRelease));
    return checkedRelease;
  }

  /** An empty project whose peer dependency is satisfied from this checkout rather than the registry. */
  async function emptyProject(): Promise<string> {
    const project = join(work, "project");
    await mkdir(project);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "project", private: true, dependencies: { "@assemblyline-agents/core": `file:${join(root, "plugin-sdk")}` } }));
    return project;
  }

  /** The version in node_modules/<folder>, and the lock file's entry for it. */
  async function installed(project: string, folder: string) {
    const manifest = JSON.parse(await readFile(join(project, "node_modules", folder, "package.json"), "utf8")) as { name: string; version: string };
    const lock = JSON.parse(await readFile(join(project, "package-lock.json"), "utf8")) as { packages: Record<string, { name?: string; version: string; integrity: string }> };
    const { dependencies } = JSON.parse(await readFile(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    return { manifest, locked: lock.packages[`node_modules/${folder}`], saved: dependencies[folder] };
  }

  it("installs the release it checked, not one published between the check and npm install", async () => {
    const checkedRelease = await releaseDuringCheck();
    const project = await emptyProject();

    const { code, out, err } = await plugins("add", "jsonfile", "--dir", project, "--registry", await marketplaceFile(work, "0.3.0"));

    // The premise: the check fetched 0.3.0, then npm install was offered 0.3.1 as latest.
    expect(registry.tarballsSent[0]).toEqual({ name: packageName, version: "0.3.0" });
    expect(registry.packumentsSent.at(-1)).toEqual({ name: packageName, latest: "0.3.1" });
    expect(code).toBe(0);
    const { manifest, locked, saved } = await installed(project, packageName);
    expect(manifest.version).toBe("0.3.0");
    expect(locked).toMatchObject({ version: "0.3.0", integrity: checkedRelease.integrity });
    // npm saves a caret range as it would for `npm install <name>`; the lock file pins the checked release.
    expect(saved).toBe("^0.3.0");
    expect(err).toContain(`installing ${packageName}@0.3.0 into ${project} with npm`);
    expect(out).toContain(`added ${packageName}@0.3.0: plugin "jsonfile"`);
  });

  it.each([
    { spec: `${packageName}@^0.3.0`, kind: "a range" },
    { spec: `${packageName}@latest`, kind: "a tag" },
    { spec: packageName, kind: "a bare name" },
  ])("installs the release it checked for --from $kind, not one published between the check and npm install", async ({ spec }) => {
    const checkedRelease = await releaseDuringCheck();
    const project = await emptyProject();

    const { code, out, err } = await plugins("add", "jsonfile", "--dir", project, "--from", spec);

    // The premise: the check fetched 0.3.0, then npm install was offered 0.3.1 as latest, which the spec matches too.
    expect(registry.tarballsSent[0]).toEqual({ name: packageName, version: "0.3.0" });
    expect(registry.packumentsSent.at(-1)).toEqual({ name: packageName, latest: "0.3.1" });
    expect(code).toBe(0);
    const { manifest, locked, saved } = await installed(project, packageName);
    expect(manifest.version).toBe("0.3.0");
    expect(locked).toMatchObject({ version: "0.3.0", integrity: checkedRelease.integrity });
    expect(saved).toBe("^0.3.0");
    expect(err).toContain(`checking ${spec} before installing it`);
    expect(err).toContain(`installing ${packageName}@0.3.0 into ${project} with npm`);
    expect(out).toContain(`added ${packageName}@0.3.0: plugin "jsonfile"`);
  });

  it("checks the package from the registry the project's .npmrc names, as npm install then installs it", async () => {
    const release = await registry.pack(thirdParty);
    registry.publish(release);
    const project = await emptyProject();
    // Only the project says where its packages come from: no variable, no user config points there.
    delete process.env.npm_config_registry;
    await writeFile(join(project, ".npmrc"), `registry=${registry.url}\n`);

    const { code, err } = await plugins("add", "jsonfile", "--dir", project, "--registry", await marketplaceFile(work, "0.3.0"));

    expect(err).not.toMatch(/AL_ERR_PLUGIN_INSTALL/);
    expect(code).toBe(0);
    expect(registry.tarballsSent[0]).toEqual({ name: packageName, version: "0.3.0" });
    expect((await installed(project, packageName)).manifest.version).toBe("0.3.0");
  });

  it("installs an alias's checked release under the alias: --from jsonfile@npm:<name>@^0.3.0", async () => {
    const checkedRelease = await releaseDuringCheck();
    const project = await emptyProject();

    const { code, out, err } = await plugins("add", "jsonfile", "--dir", project, "--from", `jsonfile@npm:${packageName}@^0.3.0`);

    expect(registry.tarballsSent[0]).toEqual({ name: packageName, version: "0.3.0" });
    expect(registry.packumentsSent.at(-1)).toEqual({ name: packageName, latest: "0.3.1" });
    expect(code).toBe(0);
    const { manifest, locked, saved } = await installed(project, "jsonfile");
    expect(manifest).toMatchObject({ name: packageName, version: "0.3.0" });
    expect(locked).toMatchObject({ name: packageName, version: "0.3.0", integrity: checkedRelease.integrity });
    expect(saved).toBe(`npm:${packageName}@^0.3.0`);
    expect(err).toContain(`installing jsonfile@npm:${packageName}@0.3.0 into ${project} with npm`);
    expect(out).toContain(`added jsonfile@0.3.0: plugin "jsonfile"`);
  });

  it.each([
    { spec: "jsr:@acme/assembly-line-jsonfile", reason: 'Unsupported URL Type "jsr:"' },
    { spec: `${packageName}@not a range`, reason: 'Invalid tag name "not a range"' },
  ])("refuses --from $spec as a usage error naming the flag and the spec, before fetching anything", async ({ spec, reason }) => {
    registry.publish(await registry.pack(thirdParty));
    const project = await emptyProject();
    const before = await readFile(join(project, "package.json"), "utf8");

    const refusal = await plugins("add", "jsonfile", "--dir", project, "--from", spec).catch((error: unknown) => error);

    expect(refusal).toMatchObject({ code: "AL_ERR_CLI_USAGE" });
    const message = (refusal as Error).message;
    expect(message).toContain(`--from ${JSON.stringify(spec)} is not an npm package spec: ${reason}`);
    expect(message).toContain("fix: Pass what npm install takes: name, name@1.2.3, name@^1.2.0, name@latest");
    expect(registry.packumentsSent).toEqual([]);
    expect(await readFile(join(project, "package.json"), "utf8")).toBe(before);
  });
});

describe("what plugins add --from checks and installs for specs the registry does not resolve", () => {
  const usage = "assembly-line plugins add <id> --from <npm spec>";

  it("reads a relative tarball or folder against the working folder, so the check and npm install (run in the project) read the same file", () => {
    for (const spec of ["./jsonfile-0.3.0.tgz", "file:../jsonfile", "vendor/jsonfile/"]) {
      const source = readFromSpec(spec, usage);
      const path = resolve(spec.replace(/^file:/, ""));
      expect(source.check).toBe(path);
      expect(source.install("0.3.0")).toBe(path);
    }
  });

  it("installs git and tarball URLs as given: npm fetches them again", () => {
    for (const spec of ["github:acme/jsonfile#semver:^0.3.0", "git+https://example.com/acme/jsonfile.git#v0.3.0", "https://example.com/jsonfile-0.3.0.tgz"]) {
      const source = readFromSpec(spec, usage);
      expect(source).toMatchObject({ check: spec });
      expect(source.install("0.3.0")).toBe(spec);
      expect(source.name).toBeUndefined();
    }
  });
});
