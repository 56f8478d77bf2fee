import { describeSandboxConformance } from "@assemblyline-agents/core/testkit";
import { afterAll } from "vitest";
import { DockerSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";

const probe = await probeEngine("DockerSandboxAdapter conformance");

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  afterAll(async () => {
    for (const scope of scopes) await removeScope(docker, scope);
  });

  describeSandboxConformance("DockerSandboxAdapter", () => {
    const scope = randomScope("kit");
    scopes.push(scope);
    const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
    return { state: adapter, cleanup: () => removeScope(docker, scope) };
  }, { wholeFileWrites: true });
}
