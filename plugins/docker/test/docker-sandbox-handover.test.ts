import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandboxAdapter, LABELS } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";
import { startFreezableEngineProxy } from "./support/freezable-engine-proxy.js";

const probe = await probeEngine("DockerSandboxAdapter handing /workspace over to a container found again");

const USER = "1000:1000";

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  afterAll(async () => {
    for (const scope of scopes) await removeScope(docker, scope);
  });
  const scoped = () => {
    const scope = randomScope("handover");
    scopes.push(scope);
    return scope;
  };

  /** What a process opening the key's container finds: files and commands work as `user`, in a /workspace that user owns. */
  async function expectUsableAsUser(scope: string, key: string): Promise<void> {
    const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", user: USER, scope, docker });
    const sandbox = await adapter.acquire(key);
    await sandbox.writeFile("notes/by-tool.txt", "from the tool\n");
    expect(new TextDecoder().decode(await sandbox.readFile("notes/by-tool.txt"))).toBe("from the tool\n");
    expect(await sandbox.exec("touch by-command && stat -c '%u:%g' /workspace /tmp/.assembly-line")).toMatchObject({ exitCode: 0, stdout: "1000:1000\n1000:1000\n" });
    await adapter.release(key);
  }

  describe("DockerSandboxAdapter with a non-root user, reopening a container whose /workspace was never handed over", () => {
    it("hands it over when the process that made it stopped between starting it and handing it over", async () => {
      const scope = scoped();
      const proxy = await startFreezableEngineProxy();
      try {
        // The engine stops answering once it has started the container: the hand-over after it never completes,
        // and neither does removing the container, as with a process killed right after the start.
        proxy.freezeWhenEngineSends("204 No Content");
        const stalled = new DockerSandboxAdapter({ image: images.busybox, network: "none", user: USER, scope, socketPath: proxy.socketPath, engineTimeoutMs: 2_000 });
        const error = await stalled.acquire("run-stalled").then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      } finally {
        await proxy.close();
      }
      const left = await docker.getContainer(new DockerSandboxAdapter({ image: images.busybox, scope }).containerName("run-stalled")).inspect();
      expect(left.State.Running).toBe(true);
      await expectUsableAsUser(scope, "run-stalled");
    }, 60_000);

    it("hands it over when the engine created it after the process gave up waiting, and it was never started", async () => {
      const scope = scoped();
      const key = "run-late-create";
      // Made as the adapter makes it (its name and labels, the user, /workspace the working directory the engine makes as root), then left.
      await docker.createContainer({
        name: new DockerSandboxAdapter({ image: images.busybox, scope }).containerName(key),
        Image: images.busybox,
        Entrypoint: ["/bin/sh", "-c"],
        Cmd: ["trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"],
        WorkingDir: "/workspace",
        User: USER,
        Labels: { [LABELS.sandbox]: "1", [LABELS.key]: key, [LABELS.scope]: scope },
        HostConfig: { NetworkMode: "none" },
      });
      await expectUsableAsUser(scope, key);
    }, 60_000);
  });
}
