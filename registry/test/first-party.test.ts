import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { KERNEL_VERSION } from "@assemblyline-agents/runtime";
import { checkCoreRange, checkKernelRange, declaredCoreRange, inspectPluginPackage, loadPluginPackage, readPluginPackage } from "@assemblyline-agents/registry";

const plugin = (name: string) => resolve(import.meta.dirname, "../../plugins", name);

describe("first-party plugin packages", () => {
  it("declares a manifest of the right shape that fits this kernel, for local, node, pi and postgres", async () => {
    for (const name of ["local", "node", "otlp", "pi", "postgres", "redis"]) {
      const pkg = await readPluginPackage(plugin(name));
      expect(pkg.manifest.id).toBe(name);
      expect(pkg.packageName).toBe(`@assemblyline-agents/${name}`);
      expect(() => checkKernelRange(pkg, KERNEL_VERSION)).not.toThrow();
    }
  });

  it("declares a range on @assemblyline-agents/core that includes this checkout's core, for every plugin here and the third-party example", async () => {
    const root = resolve(import.meta.dirname, "../..");
    const coreVersion = (JSON.parse(readFileSync(join(root, "plugin-sdk/package.json"), "utf8")) as { version: string }).version;
    const folders = [
      ...readdirSync(join(root, "plugins")).map((name) => join(root, "plugins", name)).filter((dir) => existsSync(join(dir, "package.json"))),
      join(root, "examples/third-party-plugin"),
    ];
    for (const dir of folders) {
      const pkg = await readPluginPackage(dir);
      expect(declaredCoreRange(pkg), dir).toMatchObject({ field: "peerDependencies" });
      expect(() => checkCoreRange(pkg, coreVersion), dir).not.toThrow();
    }
  });

  it("loads local: its plugin materializes file state with all 9 facets and file blobs", async () => {
    const loaded = await loadPluginPackage(plugin("local"));
    expect(loaded.plugin).toMatchObject({ name: "local", version: loaded.version });
    const state = loaded.adapters.find((adapter) => adapter.provide.slot === "state");
    expect(state?.provide).toMatchObject({ contract: "state@1", export: "localState" });
    expect(state?.provide.facets).toHaveLength(9);
    expect(loaded.adapters.find((adapter) => adapter.provide.slot === "blob")?.provide).toMatchObject({ contract: "blob@1", export: "localBlob" });
  });

  it("refuses options local's schema does not allow before opening anything", async () => {
    await expect(loadPluginPackage(plugin("local"), { options: { compactAfterBytes: -1 } })).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_OPTIONS",
      message: expect.stringContaining("options/compactAfterBytes must be >= 0"),
    });
  });

  it("loads pi, which provides no gateway slot and declares its provider keys as optional secrets", async () => {
    const loaded = await loadPluginPackage(plugin("pi"));
    expect(loaded.adapters).toEqual([]);
    expect(loaded.plugin).toBeUndefined();
    expect(loaded.manifest.env).toContainEqual(expect.objectContaining({ name: "OPENAI_API_KEY", secret: true, required: false }));
  });

  it("inspects local without constructing anything", async () => {
    const inspected = await inspectPluginPackage(plugin("local"));
    expect(Object.keys(inspected.exports)).toEqual(expect.arrayContaining(["plugin", "localState", "localBlob"]));
  });
});
