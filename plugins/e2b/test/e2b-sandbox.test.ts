import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { E2bSandboxAdapter, METADATA, e2bSandbox } from "../src/index.js";
import { IMAGE_MARKER, baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeE2b, type FakeE2b } from "./support/fake-e2b.js";
import { e2bTemplateImage } from "./support/template-image.js";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe("e2bSandbox options", () => {
  it("refuses snapshot and image, which the E2B adapter does not implement, naming each option", () => {
    for (const [options, name] of [
      [{ snapshot: { mode: "auto" as const } }, "snapshot"],
      [{ image: "node:22" }, "image"],
    ] as const) {
      const error = refusal(() => e2bSandbox(options));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
      expect(String(error)).toContain(`option ${name} is not supported`);
    }
  });

  it("refuses an API key in the options (they are build artifacts) and unknown options", () => {
    expect(String(refusal(() => e2bSandbox({ apiKey: "e2b_secret" } as never)))).toMatch(/apiKey is not supported.*\n.*E2B_API_KEY/);
    expect(String(refusal(() => e2bSandbox({ templat: "base" } as never)))).toMatch(/option templat/);
    expect(String(refusal(() => e2bSandbox({ onTimeout: "stop" as never })))).toMatch(/option onTimeout/);
  });

  it("fails the first acquire, not the boot, when E2B_API_KEY is missing", async () => {
    const error = await new E2bSandboxAdapter({ hostEnv: {} }).acquire("run-1").catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
    expect(String(error)).toMatch(/E2B_API_KEY/);
  });
});

const probe = await probeEngine("E2bSandboxAdapter behaviour");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeE2b;
  const adapter = (options: ConstructorParameters<typeof E2bSandboxAdapter>[0] = {}) =>
    new E2bSandboxAdapter({ scope: randomScope("e2b"), hostEnv: { E2B_API_KEY: fake.apiKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl }, ...options });
  beforeAll(async () => {
    const template = await e2bTemplateImage(docker, (await baseImages(docker)).busybox);
    fake = await startFakeE2b({ docker, templates: { base: template, "al-test": template } });
  }, 120_000);
  afterAll(() => fake?.close());

  describe("E2bSandboxAdapter against a local E2B API and envd", () => {
    it("creates nothing until a tool asks, then one sandbox per key tagged with it, offline by default", async () => {
      const made = adapter({ template: "al-test", env: { GREETING: "hello" }, lifetimeMs: 120_000 });
      const before = fake.requests.length;
      await Promise.resolve();
      expect(fake.requests.length).toBe(before);
      const sandbox = await made.acquire("run-lazy");
      expect(fake.creates.at(-1)).toMatchObject({
        templateID: "al-test",
        metadata: { [METADATA.key]: "run-lazy", [METADATA.scope]: made.options.scope },
        allow_internet_access: false,
        timeout: 120,
        autoPause: true,
      });
      const result = await sandbox.exec(`cat ${IMAGE_MARKER}; echo "$GREETING $PWD"; echo "\${HOME_SECRET:-unset}"`);
      expect(result.stdout).toBe(`assembly-line test image: busybox\nhello /workspace\nunset\n`);
      expect(fake.requests).toContain("POST /process.Process/Start");
    });

    it("kills the whole process tree at the timeout: a background child never writes", async () => {
      const sandbox = await adapter().acquire("run-tree");
      const result = await sandbox.exec("(sleep 1; echo late > /workspace/late.txt) & sleep 30", { timeoutMs: 300 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
    }, 20_000);

    it("moves binary files byte for byte through envd's /files", async () => {
      const sandbox = await adapter().acquire("run-binary");
      const bytes = new Uint8Array(300_000).map((_, index) => (index * 7919) % 256);
      await sandbox.writeFile("data/blob.bin", bytes.subarray(1000, 201_000));
      const back = await sandbox.readFile("/workspace/data/blob.bin");
      expect(Buffer.from(back).equals(Buffer.from(bytes.subarray(1000, 201_000)))).toBe(true);
      expect(fake.requests.filter((line) => line === "POST /files" || line === "GET /files").length).toBeGreaterThanOrEqual(2);
    });

    it("after a host restart finds the run's sandbox by its metadata, resuming it when E2B paused it", async () => {
      const scope = randomScope("restart");
      const first = adapter({ scope });
      await (await first.acquire("run-resumed")).writeFile("/workspace/kept.txt", "kept");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-resumed" && entry.metadata[METADATA.scope] === scope)!;
      await fake.pause(remote.id);
      const creates = fake.creates.length;
      const again = await adapter({ scope }).acquire("run-resumed");
      expect(text(await again.readFile("/workspace/kept.txt"))).toBe("kept");
      expect(fake.creates.length).toBe(creates);
      expect(fake.requests).toContain(`POST /v2/sandboxes/${remote.id}/connect`);
      expect(fake.sandboxes.get(remote.id)?.state).toBe("running");
    });

    it("kills the sandbox at release, leaves other scopes' sandboxes alone, and a second release is a no-op", async () => {
      const made = adapter();
      const other = adapter();
      await made.acquire("run-released");
      await other.acquire("run-released");
      const ours = () => [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-released" && entry.metadata[METADATA.scope] === made.options.scope);
      const theirs = () => [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-released" && entry.metadata[METADATA.scope] === other.options.scope);
      expect(ours()).toHaveLength(1);
      await made.release("run-released");
      expect(ours()).toHaveLength(0);
      expect(theirs()).toHaveLength(1);
      await made.release("run-released");
    });

    it("reports a wrong API key as the provider's refusal, without the key in the message", async () => {
      const wrongKey = "e2b_wrong_key_0123456789";
      const made = adapter({ hostEnv: { E2B_API_KEY: wrongKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } });
      const error = await made.acquire("run-wrong-key").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/HTTP 401/);
      expect(String(error)).not.toContain(wrongKey);
      expect((error as Error).cause).toBeUndefined();
    });
  });
}
