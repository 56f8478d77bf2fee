import { describeSandboxConformance } from "@assemblyline-agents/core/testkit";
import { afterAll } from "vitest";
import { E2bSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeE2b } from "./support/fake-e2b.js";
import { e2bTemplateImage } from "./support/template-image.js";

const probe = await probeEngine("E2bSandboxAdapter conformance");

if (probe.available) {
  const { docker } = probe;
  const fake = await startFakeE2b({ docker, templates: { base: await e2bTemplateImage(docker, (await baseImages(docker)).busybox) } });
  afterAll(() => fake.close());

  describeSandboxConformance("E2bSandboxAdapter (local E2B API and envd)", () => {
    const adapter = new E2bSandboxAdapter({ scope: randomScope("kit"), hostEnv: { E2B_API_KEY: fake.apiKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } });
    return { state: adapter };
  });
}
