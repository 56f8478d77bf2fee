import { isAssemblyLineError } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandboxAdapter, LABELS } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";

const probe = await probeEngine("DockerSandboxAdapter (container stopped or removed outside the host)");
const text = (body: Uint8Array) => new TextDecoder().decode(body);

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  const adapter = () => {
    const scope = randomScope("gone");
    scopes.push(scope);
    return new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
  };
  const containersOf = async (made: DockerSandboxAdapter) => docker.listContainers({ all: true, filters: { label: [`${LABELS.scope}=${made.options.scope}`] } });
  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);
  afterAll(async () => {
    for (const scope of scopes) await removeScope(docker, scope);
  });

  describe("DockerSandboxAdapter when the engine stops or removes a run's container", () => {
    it("starts a container stopped outside the host again, files kept, for the same handle's next call and for the key's next acquire", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-stopped");
      await sandbox.writeFile("progress.txt", "step 2");
      await docker.getContainer(made.containerName("run-stopped")).stop({ t: 0 });
      // The call was refused before it ran: it runs once the container is up again.
      expect((await sandbox.exec("cat progress.txt")).stdout).toBe("step 2");
      await docker.getContainer(made.containerName("run-stopped")).kill();
      expect(text(await (await made.acquire("run-stopped")).readFile("progress.txt"))).toBe("step 2");
      expect(await containersOf(made)).toHaveLength(1);
      await made.release("run-stopped");
    }, 60_000);

    it("fails a command its container was killed under, saying the files are kept; the next call runs in the container started again", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-killed");
      await sandbox.writeFile("progress.txt", "step 3");
      const running = failure(sandbox.exec("sleep 20; echo done"));
      await expect.poll(async () => (await docker.getContainer(made.containerName("run-killed")).top()).Processes.some((line: string[]) => line.join(" ").includes("sleep 20")), { timeout: 10_000 }).toBe(true);
      await docker.getContainer(made.containerName("run-killed")).kill();
      const error = await running;
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/stopped while the call ran/);
      expect((error as { details: Record<string, unknown> }).details.containerStopped).toBe(true);
      expect(text(await sandbox.readFile("progress.txt"))).toBe("step 3");
      await made.release("run-killed");
    }, 60_000);

    it("fails a call whose container was removed mid-run, saying its files are gone; the same handle's next call and the key's next acquire run in a new one", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-removed");
      await sandbox.writeFile("progress.txt", "step 4");
      await docker.getContainer(made.containerName("run-removed")).remove({ force: true });
      const error = await failure(sandbox.exec("cat progress.txt"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/no longer exists \(.*\), and its files with it: the next call starts a new container/);
      expect((error as { details: Record<string, unknown> }).details.sandboxGone).toBe(true);
      // The runtime holds one handle for a whole drive of the run: its next call runs in a new container instead of failing too.
      expect(await sandbox.listFiles("/workspace")).toEqual([]);
      expect((await sandbox.exec("echo again > again.txt")).exitCode).toBe(0);
      expect(text(await (await made.acquire("run-removed")).readFile("again.txt"))).toBe("again\n");
      expect(await containersOf(made)).toHaveLength(1);
      await made.release("run-removed");
      expect(await containersOf(made)).toHaveLength(0);
    }, 60_000);

    it("makes a new container at the key's next acquire when the old one was removed between drives of the run", async () => {
      const made = adapter();
      await (await made.acquire("run-between")).writeFile("progress.txt", "step 5");
      await docker.getContainer(made.containerName("run-between")).remove({ force: true });
      const sandbox = await made.acquire("run-between");
      expect((await sandbox.exec("echo fresh")).stdout).toBe("fresh\n");
      expect(await sandbox.listFiles("/workspace")).toEqual([]);
      await made.release("run-between");
    }, 60_000);

    it("replaces a stopped container the engine will not start again (its network was recreated), failing the call that finds it so", async () => {
      const network = randomScope("al-gone-net");
      await docker.createNetwork({ Name: network, Internal: true });
      const scope = randomScope("gone");
      scopes.push(scope);
      const made = new DockerSandboxAdapter({ image: images.busybox, network, scope, docker });
      try {
        const sandbox = await made.acquire("run-unstartable");
        await sandbox.writeFile("progress.txt", "step 6");
        await docker.getContainer(made.containerName("run-unstartable")).stop({ t: 0 });
        // The stopped container names the old network's id: the engine refuses to start it.
        await docker.getNetwork(network).remove();
        await docker.createNetwork({ Name: network, Internal: true });
        const error = await failure(sandbox.exec("cat progress.txt"));
        expect((error as { details?: Record<string, unknown> } | undefined)?.details?.sandboxGone, String(error)).toBe(true);
        expect((await sandbox.exec("echo fresh")).stdout).toBe("fresh\n");
        expect(await sandbox.listFiles("/workspace")).toEqual([]);
        expect(await containersOf(made)).toHaveLength(1);
        await made.release("run-unstartable");
      } finally {
        await removeScope(docker, scope);
        await docker.getNetwork(network).remove().catch(() => undefined);
      }
    }, 60_000);

    it("makes no container again for a handle still held after its run's release", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-released");
      await made.release("run-released");
      // The second call is the one that would run in a new container, were the handle's container merely gone.
      for (const call of [sandbox.exec("true"), sandbox.writeFile("late.txt", "late")]) {
        const error = await failure(call);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
        expect((error as { details: Record<string, unknown> }).details.released, String(error)).toBe(true);
      }
      expect(await containersOf(made)).toHaveLength(0);
    }, 60_000);
  });
}
