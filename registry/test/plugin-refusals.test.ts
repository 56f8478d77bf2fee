import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAssemblyLineError, type ErrorCode } from "@assemblyline-agents/core";
import { checkCoreRange, loadPluginPackage, rangeIncludesKernel, readPluginPackage, type LoadPluginOptions } from "@assemblyline-agents/registry";

/**
 * Each folder under fixtures/ with an _expect.json is a broken plugin package:
 * the file says what it breaks, the code loading must refuse with, and what
 * the message must say.
 */
interface Expectation {
  description: string;
  code: ErrorCode;
  messageIncludes: string[];
  load?: LoadPluginOptions;
}

const fixtures = join(import.meta.dirname, "fixtures");
const cases = readdirSync(fixtures)
  .filter((name) => existsSync(join(fixtures, name, "_expect.json")))
  .map((name) => ({ name, expected: JSON.parse(readFileSync(join(fixtures, name, "_expect.json"), "utf8")) as Expectation }));

describe("loading a broken plugin package", () => {
  it("has a fixture for each rule, including the two broken jsonfile releases", () => {
    expect(cases.map((entry) => entry.name)).toEqual(expect.arrayContaining(["wrong-kernel-range", "missing-facet-method"]));
    expect(cases.length).toBeGreaterThanOrEqual(12);
  });

  for (const { name, expected } of cases) {
    it(`refuses with ${expected.code}: ${expected.description} (${name})`, async () => {
      const error = await loadPluginPackage(join(fixtures, name), expected.load).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isAssemblyLineError(error), `${name} should be refused`).toBe(true);
      if (!isAssemblyLineError(error)) return;
      expect(error.code).toBe(expected.code);
      for (const text of expected.messageIncludes) expect(error.message).toContain(text);
      // Every refusal says what to do.
      expect(error.fix).toMatch(/\S/);
    });
  }

  it("names the package folder when there is no package.json", async () => {
    const empty = await mkdtemp(join(tmpdir(), "al-plugin-"));
    try {
      await expect(loadPluginPackage(empty)).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringContaining(join(empty, "package.json")) });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("refuses a package without an assemblyLine block, naming it and its version", async () => {
    const dir = await mkdtemp(join(tmpdir(), "al-plugin-"));
    try {
      await writeFile(join(dir, "package.json"), JSON.stringify({ name: "left-pad", version: "1.3.0" }));
      await expect(loadPluginPackage(dir)).rejects.toMatchObject({
        code: "AL_ERR_PLUGIN_MANIFEST",
        message: expect.stringContaining('package left-pad@1.3.0 at'),
        fix: expect.stringContaining('"assemblyLine"'),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("carries the plugin, its version and the package in the error details", async () => {
    const error = await loadPluginPackage(join(fixtures, "wrong-kernel-range")).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ details: { plugin: "jsonfile", version: "0.3.0", package: "@acme/assembly-line-jsonfile", kernelRange: "^2.0.0" } });
  });

  it("accepts kernel ranges with a ceiling and refuses one whose any alternative is open-ended", async () => {
    const dir = await mkdtemp(join(tmpdir(), "al-plugin-"));
    const withKernel = (kernel: string) =>
      writeFile(join(dir, "package.json"), JSON.stringify({ name: "@acme/ranges", version: "1.0.0", assemblyLine: { manifestVersion: 1, id: "ranges", kernel, provides: [] } }));
    try {
      for (const kernel of ["^0.1.0", "~0.1.2", "0.1.x", "0.1.0", ">=0.1.0 <0.3.0", "^0.1.0 || ^1.0.0"]) {
        await withKernel(kernel);
        await expect(readPluginPackage(dir), kernel).resolves.toMatchObject({ manifest: { kernel } });
      }
      for (const kernel of [">0.0.0", "^0.1.0 || >=1.0.0"]) {
        await withKernel(kernel);
        await expect(readPluginPackage(dir), kernel).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringContaining(`"${kernel}" has no upper bound`), fix: expect.stringContaining('"kernel": "^') });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the range a plugin declares on @assemblyline-agents/core", () => {
  async function withPackage(fields: Record<string, unknown>, check: (dir: string) => Promise<void>) {
    const dir = await mkdtemp(join(tmpdir(), "al-plugin-core-"));
    try {
      await writeFile(join(dir, "package.json"), JSON.stringify({ name: "@acme/core-range", version: "1.0.0", ...fields, assemblyLine: { manifestVersion: 1, id: "core-range", kernel: "^0.1.0", provides: [] } }));
      await check(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it("is read from peerDependencies, else dependencies, and matched by the kernel range's rules", async () => {
    const core = "@assemblyline-agents/core";
    for (const [fields, version, fits] of [
      [{ peerDependencies: { [core]: "^0.1.0" } }, "0.1.4", true],
      [{ peerDependencies: { [core]: "^0.1.0" } }, "0.2.0", false],
      [{ dependencies: { [core]: "^0.3.0" } }, "0.1.0", false],
      [{ peerDependencies: { [core]: "^0.1.0" }, dependencies: { [core]: "^0.3.0" } }, "0.1.0", true],
      [{ peerDependencies: { [core]: "^0.2.0" } }, "0.2.0-rc.1", true],
      [{ peerDependencies: { [core]: "^0.2.0-rc.2" } }, "0.2.0-rc.1", false],
      [{ peerDependencies: { [core]: ">=0.1.0 <0.2.0" } }, "0.2.0-rc.1", false],
    ] as const) {
      await withPackage(fields, async (dir) => {
        const pkg = await readPluginPackage(dir);
        const outcome = (() => {
          try {
            checkCoreRange(pkg, version);
            return "fits";
          } catch (error) {
            return (error as { code?: string }).code;
          }
        })();
        expect(outcome, `${JSON.stringify(fields)} on core ${version}`).toBe(fits ? "fits" : "AL_ERR_PLUGIN_KERNEL_MISMATCH");
      });
    }
  });

  it("is not checked when the package declares none, or something that is not a semver range", async () => {
    for (const fields of [{}, { peerDependencies: { "@assemblyline-agents/core": "file:../../plugin-sdk" } }, { dependencies: { "@assemblyline-agents/core": "workspace:*" } }]) {
      await withPackage(fields, async (dir) => {
        const pkg = await readPluginPackage(dir);
        expect(() => checkCoreRange(pkg, "0.1.0"), JSON.stringify(fields)).not.toThrow();
      });
    }
  });

  it("names the range and the fix, and carries both versions in the details", async () => {
    await withPackage({ peerDependencies: { "@assemblyline-agents/core": "^0.3.0" } }, async (dir) => {
      const error = await loadPluginPackage(dir, { coreVersion: "0.1.0" }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({
        code: "AL_ERR_PLUGIN_KERNEL_MISMATCH",
        message: expect.stringContaining('peerDependencies["@assemblyline-agents/core"] "^0.3.0" does not include the host\'s @assemblyline-agents/core 0.1.0'),
        fix: expect.stringContaining('Install a release of @acme/core-range built for @assemblyline-agents/core 0.1.0, or upgrade the host\'s @assemblyline-agents/core'),
        details: { coreRange: "^0.3.0", coreVersion: "0.1.0" },
      });
    });
  });
});

describe("which kernels a manifest's kernel range includes", () => {
  it("refuses a prerelease of a version the range excludes", () => {
    for (const [range, kernel] of [
      [">=0.1.0 <0.2.0", "0.2.0-rc.1"],
      ["^0.1.0", "0.2.0-rc.1"],
      ["~0.1.0", "0.2.0-rc.1"],
      ["0.1.x", "0.2.0-rc.1"],
      [">=0.1.0 <1.0.0", "1.0.0-beta.0"],
      ["^1.0.0", "2.0.0-alpha.1"],
      ["<=0.1.9", "0.1.10-rc.0"],
      [">=0.2.0 <0.3.0", "0.1.9-rc.1"],
    ]) {
      expect(rangeIncludesKernel(range!, kernel!), `${range} on kernel ${kernel}`).toBe(false);
    }
  });

  it("refuses a prerelease below the later prerelease a range names as its floor", () => {
    for (const [range, kernel] of [
      ["^0.2.0-rc.2", "0.2.0-rc.1"],
      [">=0.2.0-rc.2 <0.3.0", "0.2.0-rc.1"],
      [">=1.0.0-beta.3 <2.0.0", "1.0.0-alpha.1"],
      ["^0.1.0 || ^0.2.0-rc.2", "0.2.0-rc.1"],
    ]) {
      expect(rangeIncludesKernel(range!, kernel!), `${range} on kernel ${kernel}`).toBe(false);
    }
  });

  it("includes a prerelease that semver matches, or whose release the range includes", () => {
    for (const [range, kernel] of [
      ["^0.2.0-rc.0", "0.2.0-rc.1"],
      [">=0.2.0-rc.1 <0.3.0", "0.2.0-rc.1"],
      ["^0.2.0", "0.2.0-rc.1"],
      [">=0.1.0 <0.2.0", "0.1.5-rc.0"],
      ["^0.1.0", "0.1.1-beta.2"],
      ["^0.1.0 || ^1.0.0", "1.0.0-rc.1"],
      ["^0.2.0-rc.2", "0.2.0-rc.3"],
      [">=0.1.0-rc.1 <0.3.0", "0.2.0-rc.1"],
    ]) {
      expect(rangeIncludesKernel(range!, kernel!), `${range} on kernel ${kernel}`).toBe(true);
    }
  });

  it("matches release kernels as semver does, ^0.1.0 included", () => {
    expect(rangeIncludesKernel("^0.1.0", "0.1.0")).toBe(true);
    expect(rangeIncludesKernel("^0.1.0", "0.1.7")).toBe(true);
    expect(rangeIncludesKernel("^0.1.0", "0.2.0")).toBe(false);
    expect(rangeIncludesKernel("^0.1.0", "0.0.9")).toBe(false);
    expect(rangeIncludesKernel(">=0.1.0 <0.2.0", "0.2.0")).toBe(false);
    expect(rangeIncludesKernel("^0.2.0-rc.0", "0.2.3")).toBe(true);
  });
});
