import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  REGISTRY_GENERATED_FILE,
  formatGeneratedRegistry,
  generateRegistry,
  readRegistry,
  readRegistryIndex,
} from "@assemblyline-agents/registry";

const root = resolve(import.meta.dirname, "../..");

describe("the registry files", () => {
  it("keeps generated.json current with the indexed packages' manifests (else: npm run registry:generate)", async () => {
    const fresh = formatGeneratedRegistry(await generateRegistry());
    expect(readFileSync(REGISTRY_GENERATED_FILE, "utf8"), "registry/generated.json is stale: run npm run registry:generate").toBe(fresh);
  });

  it("lists every first-party plugin package that declares a manifest, and local, node, pi and postgres", async () => {
    const index = await readRegistryIndex();
    const packages = Object.values(index.plugins).map((entry) => entry.package);
    const declared = readdirSync(join(root, "plugins"))
      .map((name) => join(root, "plugins", name, "package.json"))
      .filter((file) => existsSync(file))
      .map((file) => JSON.parse(readFileSync(file, "utf8")) as { name: string; assemblyLine?: unknown })
      .filter((json) => json.assemblyLine !== undefined)
      .map((json) => json.name);
    expect(packages).toEqual(expect.arrayContaining(declared));
    expect(Object.keys(index.plugins)).toEqual(expect.arrayContaining(["local", "node", "pi", "postgres", "redis"]));
  });

  it("carries each package's channels, harnesses and telemetry sinks into generated.json, beside its adapters", async () => {
    const { plugins } = await generateRegistry();
    const conformance = { module: "./testkit", export: expect.any(String) };
    expect(plugins.pi!.harnesses).toEqual([{ name: "pi", export: "piAgentHarness", contract: "harness@1", conformance }]);
    expect(plugins.codex!.harnesses).toEqual([{ name: "codex", export: "codexAgentHarness", contract: "harness@1", conformance }]);
    expect(plugins.discord!.channels).toEqual([{ name: "discord", export: "defineDiscordChannel", contract: "channel@1", conformance }]);
    expect(plugins.otlp!.telemetrySinks).toEqual([{ name: "otlp", export: "createOtlpSink", contract: "telemetry@1", conformance }]);
    expect(plugins.local).toMatchObject({ channels: [], harnesses: [], telemetrySinks: [] });
  });

  it("joins index and generated data into listings that pass both schemas", async () => {
    const local = (await readRegistry()).find((entry) => entry.id === "local");
    expect(local).toMatchObject({ package: "@assemblyline-agents/local", kernel: "^0.1.0", tags: expect.arrayContaining(["state"]) });
  });

  describe("refusals", () => {
    const withTemp = async (work: (dir: string) => Promise<void>) => {
      const dir = await mkdtemp(join(tmpdir(), "al-registry-"));
      try {
        await work(dir);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    };

    it("refuses an index entry whose package declares another id", async () => {
      const index = { plugins: { storage: { package: "@assemblyline-agents/local", description: "x", tags: [] } } };
      await expect(generateRegistry({ index })).rejects.toMatchObject({ code: "AL_ERR_REGISTRY_INVALID", message: expect.stringContaining('whose manifest id is "local"') });
    });

    it("refuses an index entry whose package is not installed", async () => {
      const index = { plugins: { ghost: { package: "@acme/ghost", description: "x", tags: [] } } };
      await expect(generateRegistry({ index })).rejects.toMatchObject({ code: "AL_ERR_REGISTRY_INVALID", message: expect.stringContaining("@acme/ghost, which is not installed") });
    });

    it("refuses an index that breaks its schema", async () => {
      await withTemp(async (dir) => {
        const file = join(dir, "index.json");
        await writeFile(file, JSON.stringify({ plugins: { Local: { package: "@assemblyline-agents/local", tags: [] } } }));
        await expect(readRegistryIndex(file)).rejects.toMatchObject({ code: "AL_ERR_REGISTRY_INVALID", message: expect.stringContaining("must have required property 'description'") });
      });
    });
  });
});
