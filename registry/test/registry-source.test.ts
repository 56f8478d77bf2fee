import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { REGISTRY_SOURCE_ENV, loadRegistry, readRegistry, readRegistryIndex, type RegistrySnapshot } from "../src/index.js";
import { pluginsCommand } from "../../plugins/node/src/cli/commands/plugins.js";

/** A newer index than the bundled one: everything bundled plus a plugin published since. */
async function newerSnapshot(): Promise<RegistrySnapshot> {
  return {
    updatedAt: "2026-12-24",
    plugins: [
      ...(await readRegistry()),
      {
        id: "acme-kv",
        package: "@acme/assembly-line-kv",
        description: "Key-value blob storage on Acme KV.",
        tags: ["blob", "acme"],
        version: "1.2.0",
        kernel: "^0.1.0",
        provides: [{ slot: "blob", name: "acme-kv", export: "acmeKv", contract: "blob@1" }],
        env: [{ name: "ACME_KV_TOKEN", secret: true, required: true }],
        configSchema: false,
      },
    ],
  };
}

describe("the registry index is data that can be refreshed", () => {
  let dir: string;
  let server: Server;
  let url: string;
  let served: unknown;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "al-registry-source-"));
    server = createServer((_request, response) => {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(served));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/registry.json`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it("falls back to the bundled index and says how old it is", async () => {
    const { updatedAt } = await readRegistryIndex();
    expect(updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const registry = await loadRegistry({ env: {}, now: new Date(Date.parse(updatedAt!) + 3 * 86_400_000 + 1000) });
    expect(registry).toMatchObject({ origin: "bundled", updatedAt, ageDays: 3 });
    expect(registry.entries.map((entry) => entry.id)).toContain("postgres");
  });

  it("reads a newer index from a file named by ASSEMBLY_LINE_REGISTRY", async () => {
    const file = join(dir, "registry.json");
    await writeFile(file, JSON.stringify(await newerSnapshot()));
    const registry = await loadRegistry({ env: { [REGISTRY_SOURCE_ENV]: file }, now: new Date("2026-12-25T12:00:00Z") });
    expect(registry).toMatchObject({ origin: "file", location: file, updatedAt: "2026-12-24", ageDays: 1 });
    expect(registry.entries.find((entry) => entry.id === "acme-kv")?.package).toBe("@acme/assembly-line-kv");
  });

  it("reads an entry printed before channels, harnesses and telemetry sinks were listed as having none, and keeps those of one that lists them", async () => {
    served = await newerSnapshot();
    const entries = (await loadRegistry({ source: url })).entries;
    expect(entries.find((entry) => entry.id === "acme-kv")).toMatchObject({ channels: [], harnesses: [], telemetrySinks: [] });
    expect(entries.find((entry) => entry.id === "pi")?.harnesses).toEqual([expect.objectContaining({ name: "pi", contract: "harness@1" })]);
  });

  it("refuses an entry whose harness names another contract", async () => {
    const snapshot = await newerSnapshot();
    snapshot.plugins.at(-1)!.harnesses = [{ name: "acme", export: "acmeHarness", contract: "channel@1" as "harness@1", conformance: { module: "./testkit", export: "subject" } }];
    served = snapshot;
    const refusal = await loadRegistry({ source: url }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toContain('invalid plugin "acme-kv"');
    expect((refusal as Error).message).toContain("harnesses");
  });

  it("reads a newer index from a URL, fresh on every call", async () => {
    served = await newerSnapshot();
    expect((await loadRegistry({ source: url })).entries.some((entry) => entry.id === "acme-kv")).toBe(true);
    served = { ...(served as RegistrySnapshot), plugins: (served as RegistrySnapshot).plugins.filter((entry) => entry.id !== "acme-kv") };
    const again = await loadRegistry({ source: url });
    expect(again.origin).toBe("url");
    expect(again.entries.some((entry) => entry.id === "acme-kv")).toBe(false);
  });

  it("uses the bundled index, with the reason, when the named URL cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const registry = await loadRegistry({ source: `http://127.0.0.1:${port}/registry.json` });
    expect(registry.origin).toBe("bundled");
    expect(registry.fallbackReason).toContain(`could not fetch the registry at http://127.0.0.1:${port}/registry.json`);
  });

  it("refuses a URL carrying credentials instead of falling back to the bundled index, never showing the password", async () => {
    served = await newerSnapshot();
    const withCredentials = url.replace("http://", "http://deploy:S3cretToken@");
    const refusal = await loadRegistry({ source: withCredentials }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toContain("carries credentials (user:password@), which are not supported");
    expect((refusal as Error).message).toContain(url.replace("http://", "http://***@"));
    expect(String(refusal) + JSON.stringify(refusal)).not.toContain("S3cretToken");
    expect((refusal as { fix?: string }).fix).toContain("--registry ./registry.json");
  });

  it("shows a registry URL with its query values and fragment masked, and still fetches it with them", async () => {
    served = await newerSnapshot();
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line) };
    expect(await pluginsCommand(["search", "acme", "--registry", `${url}?token=S3cretToken&v=2#frag=SECRET456`], io)).toBe(0);
    expect(out.join("\n")).toContain("@acme/assembly-line-kv");
    expect(err.join("\n")).toContain(`registry: ${url}?token=***&v=***#***, updated 2026-12-24`);
    expect(err.join("\n")).not.toContain("S3cretToken");
    expect(err.join("\n")).not.toContain("SECRET456");
  });

  it("refuses a named file that is missing or not JSON instead of falling back to the bundled index", async () => {
    await writeFile(join(dir, "broken.json"), "{ not json");
    for (const source of [join(dir, "missing.json"), join(dir, "broken.json")]) {
      const refusal = await loadRegistry({ source }).catch((error: unknown) => error);
      expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), String(refusal)).toBe(true);
      expect((refusal as Error).message).toContain("is missing or not JSON");
    }
  });

  it("refuses an index whose entry breaks the schema, naming the plugin and the fix", async () => {
    const snapshot = await newerSnapshot();
    const broken = snapshot.plugins.at(-1)! as unknown as Record<string, unknown>;
    delete broken.kernel;
    served = snapshot;
    const refusal = await loadRegistry({ source: url }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toContain('invalid plugin "acme-kv"');
    expect((refusal as Error).message).toContain("kernel");
    expect((refusal as { fix?: string }).fix).toContain("plugins list --json");
  });

  it("refuses a snapshot listing one plugin id twice, naming the id, instead of letting plugins add install whichever package sorts first", async () => {
    const snapshot = await newerSnapshot();
    snapshot.plugins.push({ ...snapshot.plugins.at(-1)!, package: "@someone-else/assembly-line-kv" });
    served = snapshot;
    const refusal = await loadRegistry({ source: url }).catch((error: unknown) => error);
    expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), String(refusal)).toBe(true);
    expect((refusal as Error).message).toContain('lists the plugin id "acme-kv" twice');
  });

  it("refuses an entry whose version is not semver, whose kernel is not a semver range or whose facets are not state facets, naming the entry and the field", async () => {
    const cases: Array<[string, (entry: Record<string, unknown>) => void, string]> = [
      ["version", (entry) => (entry.version = "banana"), '"acme-kv": /plugins/acme-kv/version must be a semver version'],
      ["kernel", (entry) => (entry.kernel = "not a range"), '"acme-kv": /plugins/acme-kv/kernel must be a bounded semver range'],
      ["facets", (entry) => ((entry.provides as Array<Record<string, unknown>>)[0]!.facets = ["runs", "bogus"]), '"acme-kv": /plugins/acme-kv/provides/0/facets/1 must be equal to one of the allowed values (runs, conversations,'],
    ];
    for (const [field, spoil, says] of cases) {
      const snapshot = await newerSnapshot();
      spoil(snapshot.plugins.at(-1)! as unknown as Record<string, unknown>);
      const file = join(dir, `spoilt-${field}.json`);
      await writeFile(file, JSON.stringify(snapshot));
      const refusal = await loadRegistry({ env: { [REGISTRY_SOURCE_ENV]: file } }).catch((error: unknown) => error);
      expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), `${field}: ${String(refusal)}`).toBe(true);
      expect((refusal as Error).message, field).toContain(`the registry at ${file} has an invalid plugin ${says}`);
    }
  });

  it("refuses an entry whose kernel range the loader would refuse (any version, or no upper bound), naming the entry", async () => {
    for (const kernel of ["*", "x", ">=0.1.0", "^0.1.0 || >=1.0.0", ""]) {
      const snapshot = await newerSnapshot();
      (snapshot.plugins.at(-1)! as { kernel: string }).kernel = kernel;
      served = snapshot;
      const refusal = await loadRegistry({ source: url }).catch((error: unknown) => error);
      expect(isAssemblyLineError(refusal, "AL_ERR_REGISTRY_INVALID"), `${kernel}: ${String(refusal)}`).toBe(true);
      expect((refusal as Error).message, kernel).toContain('has an invalid plugin "acme-kv": /plugins/acme-kv/kernel must be a bounded semver range, as the loader requires of assemblyLine.kernel');
    }
    const bounded = await newerSnapshot();
    (bounded.plugins.at(-1)! as { kernel: string }).kernel = ">=0.1.0 <0.3.0";
    served = bounded;
    expect((await loadRegistry({ source: url })).entries.find((entry) => entry.id === "acme-kv")).toMatchObject({ kernel: ">=0.1.0 <0.3.0" });
  });

  it("lets plugins search and info find a plugin published after this version, with the index's age on stderr", async () => {
    served = await newerSnapshot();
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line) };
    expect(await pluginsCommand(["search", "acme", "--registry", url], io)).toBe(0);
    expect(out.join("\n")).toContain("@acme/assembly-line-kv");
    expect(err.join("\n")).toContain(`registry: ${url}, updated 2026-12-24`);
    expect(await pluginsCommand(["info", "acme-kv", "--registry", url], io)).toBe(0);
    expect(out.join("\n")).toContain("ACME_KV_TOKEN (required, secret)");
    err.length = 0;
    expect(await pluginsCommand(["list"], io)).toBe(0);
    expect(err.join("\n")).toMatch(/registry: the index bundled with @assemblyline-agents\/registry, updated \d{4}-\d{2}-\d{2} \(\d+ day\(s\) old\)/);
  });
});
