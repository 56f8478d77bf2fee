import { cp, mkdtemp, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { adapterDescriptor, defineGateway } from "@assemblyline-agents/core";
import { composeGateway, configSchemaPath, loadPluginPackage, readPluginPackage, type PluginPackage } from "@assemblyline-agents/registry";

const root = resolve(import.meta.dirname, "../..");
const thirdParty = join(root, "examples/third-party-plugin");
const SECRET = "DATABASE_PASSWORD=hunter2";

const folders: string[] = [];
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

/**
 * A copy of the third-party example inside a fresh folder, `<folder>/plugin`,
 * beside a `<folder>/secrets.json` (not JSON at all) the plugin does not own; `configSchema` replaces the
 * manifest's.
 */
async function examplePlugin(configSchema?: string): Promise<{ folder: string; dir: string }> {
  const folder = await mkdtemp(join(tmpdir(), "al-config-schema-path-"));
  folders.push(folder);
  const dir = join(folder, "plugin");
  await cp(thirdParty, dir, { recursive: true, filter: (source) => !source.includes("node_modules") });
  await writeFile(join(folder, "secrets.json"), `${SECRET}\n`);
  await writeFile(join(folder, "outside.schema.json"), JSON.stringify({ type: "object" }));
  if (configSchema !== undefined) {
    const packageJson = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as { assemblyLine: Record<string, unknown> };
    packageJson.assemblyLine.configSchema = configSchema;
    await writeFile(join(dir, "package.json"), JSON.stringify(packageJson, null, 2));
  }
  return { folder, dir };
}

/** What a refusal shows anywhere: message, fix, details and the cause's message. */
const everythingShown = (error: unknown) => {
  const { message, fix, details, cause } = error as { message: string; fix?: string; details?: unknown; cause?: { message?: string } };
  return [message, fix, JSON.stringify(details), cause?.message].join("\n");
};

describe("a plugin's configSchema path", () => {
  it("may name a .json file anywhere inside the package, and nothing that leads out of it", async () => {
    const folder = await mkdtemp(join(tmpdir(), "al-config-schema-pattern-"));
    folders.push(folder);
    const withSchema = (configSchema: string) =>
      writeFile(join(folder, "package.json"), JSON.stringify({ name: "@acme/paths", version: "1.0.0", assemblyLine: { manifestVersion: 1, id: "paths", kernel: "^0.1.0", provides: [], configSchema } }));
    for (const inside of ["./config.schema.json", "./schemas/options.json", "./a..b.json", "./..json", "./.../x.json"]) {
      await withSchema(inside);
      await expect(readPluginPackage(folder), inside).resolves.toMatchObject({ manifest: { configSchema: inside } });
    }
    for (const outside of ["./../x.json", "./..\\x.json", "./schemas/../../x.json", "./x.json/../../y.json", "./schemas\\options.json", "../x.json", "./../secrets.json"]) {
      await withSchema(outside);
      await expect(readPluginPackage(folder), outside).rejects.toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringContaining("assemblyLine/configSchema must match pattern") });
    }
  });

  it("leading to a sibling of the package is refused by loadPluginPackage and composeGateway before that file is read", async () => {
    const { folder, dir } = await examplePlugin("./../secrets.json");
    const loading = await loadPluginPackage(dir).catch((error: unknown) => error);
    expect(loading).toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringContaining("assemblyLine/configSchema") });
    expect(everythingShown(loading)).not.toContain("DATABASE_P");

    const composing = await composeGateway({ gateway: defineGateway({ state: adapterDescriptor("state", "jsonfile", {}) }), agentDir: folder, plugins: [dir] }).catch((error: unknown) => error);
    expect(composing).toMatchObject({ code: "AL_ERR_PLUGIN_MANIFEST", message: expect.stringContaining("assemblyLine/configSchema") });
    expect(everythingShown(composing)).not.toContain("DATABASE_P");
  });

  it("is refused by configSchemaPath when it leads out of the package, whatever checked the manifest", async () => {
    const { dir } = await examplePlugin();
    const pkg = await readPluginPackage(dir);
    const provide = pkg.manifest.provides[0]!;
    expect(configSchemaPath(pkg, provide)).toBe(join(dir, "config.schema.json"));
    for (const outside of ["./../secrets.json", "./src/../../outside.schema.json", "../outside.schema.json"]) {
      const unchecked: PluginPackage = { ...pkg, manifest: { ...pkg.manifest, configSchema: outside } };
      expect(() => configSchemaPath(unchecked, provide), outside).toThrow(expect.objectContaining({ code: "AL_ERR_PLUGIN_CONFIG_SCHEMA", message: expect.stringContaining(`its configSchema "${outside}" leads outside the package`) }));
    }
  });

  it("is refused when the file it names is a symbolic link leading out of the package", async () => {
    const { folder, dir } = await examplePlugin();
    await rm(join(dir, "config.schema.json"));
    await symlink(join(folder, "outside.schema.json"), join(dir, "config.schema.json"));
    await expect(loadPluginPackage(dir)).rejects.toMatchObject({
      code: "AL_ERR_PLUGIN_CONFIG_SCHEMA",
      message: expect.stringContaining(`its configSchema "./config.schema.json" leads outside the package, to ${await realpath(join(folder, "outside.schema.json"))}`),
    });
  });

  it("naming a file that is not JSON is refused without quoting the file", async () => {
    const { dir } = await examplePlugin();
    await writeFile(join(dir, "config.schema.json"), `${SECRET}\n`);
    const refusal = await loadPluginPackage(dir).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: "AL_ERR_PLUGIN_CONFIG_SCHEMA", message: expect.stringContaining(`its configSchema ${join(dir, "config.schema.json")} is not JSON`) });
    expect(everythingShown(refusal)).not.toContain("DATABASE_P");
  });
});
