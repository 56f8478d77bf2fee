import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginsCommand } from "../../node/src/cli/commands/plugins.js";
import { baseImages, probeEngine } from "../../docker/test/support/engine.js";
import { startFakeE2b, type FakeE2b } from "./support/fake-e2b.js";
import { e2bTemplateImage } from "./support/template-image.js";

const probe = await probeEngine("assembly-line plugins verify plugins/e2b");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeE2b;
  const saved = { key: process.env.E2B_API_KEY, url: process.env.E2B_API_URL, sandboxUrl: process.env.E2B_SANDBOX_URL };
  beforeAll(async () => {
    fake = await startFakeE2b({ docker, templates: { base: await e2bTemplateImage(docker, (await baseImages(docker)).busybox) } });
    // verify materializes the plugin as a host does, from the environment.
    process.env.E2B_API_KEY = fake.apiKey;
    process.env.E2B_API_URL = fake.apiUrl;
    process.env.E2B_SANDBOX_URL = fake.sandboxUrl;
  }, 120_000);
  afterAll(async () => {
    for (const [name, value] of [["E2B_API_KEY", saved.key], ["E2B_API_URL", saved.url], ["E2B_SANDBOX_URL", saved.sandboxUrl]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await fake?.close();
  });

  describe("assembly-line plugins verify plugins/e2b", () => {
    it("passes: manifest, exports, live contract and the sandbox kit against the local E2B API and envd", async () => {
      const out: string[] = [];
      const code = await pluginsCommand(["verify", resolve(import.meta.dirname, "..")], { out: (line) => out.push(line), err: (line) => out.push(line) });
      expect(out.join("\n")).toMatch(/conformance sandbox "e2b" \(sandbox@1\) with describeSandboxConformance: 16 passed/);
      expect(code, out.join("\n")).toBe(0);
    }, 180_000);
  });
}
