import { describeSandboxConformance } from "@assemblyline-agents/core/testkit";
import { afterAll } from "vitest";
import { ModalSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeModal } from "./support/fake-modal.js";

const probe = await probeEngine("ModalSandboxAdapter conformance");

if (probe.available) {
  const { docker } = probe;
  const fake = await startFakeModal({ docker, images: { "debian:bookworm-slim": (await baseImages(docker)).busybox } });
  afterAll(() => fake.close());

  describeSandboxConformance("ModalSandboxAdapter (local Modal control plane and command router)", () => {
    const adapter = new ModalSandboxAdapter({ scope: randomScope("kit"), hostEnv: { MODAL_TOKEN_ID: fake.tokenId, MODAL_TOKEN_SECRET: fake.tokenSecret, MODAL_SERVER_URL: fake.serverUrl } });
    return { state: adapter };
  });
}
