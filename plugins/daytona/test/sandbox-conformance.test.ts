import { describeSandboxConformance } from "@assemblyline-agents/core/testkit";
import { afterAll } from "vitest";
import { DaytonaSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeDaytona } from "./support/fake-daytona.js";

const probe = await probeEngine("DaytonaSandboxAdapter conformance");

if (probe.available) {
  const { docker } = probe;
  const fake = await startFakeDaytona({ docker, image: (await baseImages(docker)).busybox });
  const adapters: DaytonaSandboxAdapter[] = [];
  afterAll(async () => {
    for (const adapter of adapters) await adapter.close();
    await fake.close();
  });

  describeSandboxConformance("DaytonaSandboxAdapter (local Daytona API)", () => {
    const adapter = new DaytonaSandboxAdapter({ scope: randomScope("kit"), hostEnv: { DAYTONA_API_KEY: fake.apiKey, DAYTONA_API_URL: fake.apiUrl } });
    adapters.push(adapter);
    return { state: adapter };
  });
}
