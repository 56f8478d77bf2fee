import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginsCommand } from "../../node/src/cli/commands/plugins.js";
import { baseImages, probeEngine } from "../../docker/test/support/engine.js";
import { startFakeModal, type FakeModal } from "./support/fake-modal.js";

const probe = await probeEngine("assembly-line plugins verify plugins/modal");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeModal;
  const names = ["MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_SERVER_URL"] as const;
  const saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
  beforeAll(async () => {
    fake = await startFakeModal({ docker, images: { "debian:bookworm-slim": (await baseImages(docker)).busybox } });
    // verify materializes the plugin as a host does, from the environment.
    process.env.MODAL_TOKEN_ID = fake.tokenId;
    process.env.MODAL_TOKEN_SECRET = fake.tokenSecret;
    process.env.MODAL_SERVER_URL = fake.serverUrl;
  }, 120_000);
  afterAll(async () => {
    for (const name of names) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await fake?.close();
  });

  describe("assembly-line plugins verify plugins/modal", () => {
    it("passes: manifest, exports, live contract and the sandbox kit against the local Modal", async () => {
      const out: string[] = [];
      const code = await pluginsCommand(["verify", resolve(import.meta.dirname, "..")], { out: (line) => out.push(line), err: (line) => out.push(line) });
      expect(out.join("\n")).toMatch(/conformance sandbox "modal" \(sandbox@1\) with describeSandboxConformance: 16 passed/);
      expect(code, out.join("\n")).toBe(0);
    }, 180_000);
  });
}
