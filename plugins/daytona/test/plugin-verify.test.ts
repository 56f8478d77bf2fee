import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginsCommand } from "../../node/src/cli/commands/plugins.js";
import { baseImages, probeEngine } from "../../docker/test/support/engine.js";
import { startFakeDaytona, type FakeDaytona } from "./support/fake-daytona.js";

const probe = await probeEngine("assembly-line plugins verify plugins/daytona");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeDaytona;
  const saved = { key: process.env.DAYTONA_API_KEY, url: process.env.DAYTONA_API_URL };
  beforeAll(async () => {
    fake = await startFakeDaytona({ docker, image: (await baseImages(docker)).busybox });
    // verify materializes the plugin as a host does, from the environment.
    process.env.DAYTONA_API_KEY = fake.apiKey;
    process.env.DAYTONA_API_URL = fake.apiUrl;
  }, 120_000);
  afterAll(async () => {
    for (const [name, value] of [["DAYTONA_API_KEY", saved.key], ["DAYTONA_API_URL", saved.url]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await fake?.close();
  });

  describe("assembly-line plugins verify plugins/daytona", () => {
    it("passes: manifest, exports, live contract and the sandbox kit against the local Daytona API", async () => {
      const out: string[] = [];
      const code = await pluginsCommand(["verify", resolve(import.meta.dirname, "..")], { out: (line) => out.push(line), err: (line) => out.push(line) });
      expect(out.join("\n")).toMatch(/conformance sandbox "daytona" \(sandbox@1\) with describeSandboxConformance: 16 passed/);
      expect(code, out.join("\n")).toBe(0);
    }, 180_000);
  });
}
