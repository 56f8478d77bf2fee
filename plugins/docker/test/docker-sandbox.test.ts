import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { isAssemblyLineError, isSnapshottingSandboxAdapter, type Sandbox } from "@assemblyline-agents/core";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandboxAdapter, LABELS, TIMEOUT_EXIT_CODE, createDockerSandbox, dockerSandbox } from "../src/index.js";
import { IMAGE_MARKER, baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";

const probe = await probeEngine("DockerSandboxAdapter");
const text = (body: Uint8Array) => new TextDecoder().decode(body);

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("DockerSandboxAdapter without a working engine", () => {
  it("fails with AL_ERR_SANDBOX_ENGINE saying how to start the engine when nothing listens on its socket", async () => {
    const folder = mkdtempSync(join(tmpdir(), "al-no-engine-"));
    try {
      const adapter = new DockerSandboxAdapter({ image: "busybox", socketPath: join(folder, "docker.sock") });
      const error = await refusal(adapter.acquire("run-no-engine"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect((error as { fix: string }).fix).toContain("Start the Docker engine");
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("fails with AL_ERR_SANDBOX_ENGINE after engineTimeoutMs when the engine accepts and never answers, instead of hanging the run", async () => {
    const folder = mkdtempSync(join(tmpdir(), "al-hung-engine-"));
    const socketPath = join(folder, "docker.sock");
    const sockets = new Set<Socket>();
    const hung = createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => hung.listen(socketPath, resolve));
    try {
      const adapter = new DockerSandboxAdapter({ image: "busybox", socketPath, engineTimeoutMs: 300 });
      const started = Date.now();
      const error = await refusal(adapter.acquire("run-hung-engine"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toContain("did not answer within 300 ms");
      expect((error as { fix: string }).fix).toContain("engineTimeoutMs");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hung.close(resolve));
      rmSync(folder, { recursive: true, force: true });
    }
  }, 15_000);
});

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scopes: string[] = [];
  const scoped = () => {
    const scope = randomScope();
    scopes.push(scope);
    return scope;
  };
  const containersOf = async (scope: string) => docker.listContainers({ all: true, filters: { label: [`${LABELS.scope}=${scope}`] } });
  afterAll(async () => {
    for (const scope of scopes) await removeScope(docker, scope);
  });

  describe("DockerSandboxAdapter", () => {
    it("runs commands in the container, not on the host: a physical /workspace, its own hostname, the image's files", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-physical");
      await sandbox.writeFile("/workspace/from-tool.txt", "written by writeFile");
      const result = await sandbox.exec(`pwd; hostname; cat ${IMAGE_MARKER}; cat /workspace/from-tool.txt`);
      const [pwd, name, marker, file] = result.stdout.trim().split("\n");
      expect(pwd).toBe("/workspace");
      expect(name).not.toBe(hostname());
      expect(marker).toBe("assembly-line test image: busybox");
      expect(file).toBe("written by writeFile");
      await adapter.release("run-physical");
    });

    it("never cuts a multi-byte character in half at the output cap, on stdout or stderr, as the local sandbox does", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-utf8-cap");
      expect(await sandbox.exec("printf 'a\\303\\251'; printf 'ab\\342\\202\\254x' >&2", { maxOutputBytes: 2 })).toMatchObject({ stdout: "a", stderr: "ab", truncated: true });
      expect(await sandbox.exec("printf 'ab\\342\\202\\254'; printf '\\360\\237\\230\\200' >&2", { maxOutputBytes: 4 })).toMatchObject({ stdout: "ab", stderr: "\u{1F600}", truncated: true });
      expect(await sandbox.exec("printf 'a\\303\\251'", { maxOutputBytes: 3 })).toMatchObject({ stdout: "a\u00e9", truncated: false });
      await adapter.release("run-utf8-cap");
    });

    it('honours network "none": the container has only a loopback interface', async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-net");
      expect((await sandbox.exec("ls /sys/class/net")).stdout.trim()).toBe("lo");
      await adapter.release("run-net");
    });

    it("applies cpu, memory and process limits", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", cpus: 0.5, memory: "64m", pidsLimit: 40, scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-limits");
      const read = async (v2: string, v1: string) => (await sandbox.exec(`cat /sys/fs/cgroup/${v2} 2>/dev/null || cat /sys/fs/cgroup/${v1}`)).stdout.trim();
      expect(await read("memory.max", "memory/memory.limit_in_bytes")).toBe(String(64 * 1024 * 1024));
      expect(await read("pids.max", "pids/pids.max")).toBe("40");
      expect(await read("cpu.max", "cpu/cpu.cfs_quota_us")).toMatch(/^50000\b/);
      await adapter.release("run-limits");
    });

    it("kills the whole process tree at the timeout", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-timeout");
      const slow = await sandbox.exec("sleep 31 & sleep 32; echo finished > /workspace/finished", { timeoutMs: 500 });
      expect(slow).toMatchObject({ timedOut: true, exitCode: TIMEOUT_EXIT_CODE });
      const processes = await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '");
      expect(processes.stdout).not.toMatch(/sleep 3[12]/);
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/finished");
      await adapter.release("run-timeout");
    }, 30_000);

    it("stops a command before killing its children at the timeout, so it runs nothing once one of them dies", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-timeout-order");
      // The shell waits on its first child; killed first, it would wake and write while its other twenty children die.
      const command = "sleep 31 & first=$!; for i in $(seq 20); do sleep 40 & done; wait $first; echo after > /workspace/after";
      expect(await sandbox.exec(command, { timeoutMs: 500 })).toMatchObject({ timedOut: true, exitCode: TIMEOUT_EXIT_CODE });
      expect((await sandbox.exec("sleep 1; ls /workspace")).stdout).not.toContain("after");
      expect((await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout).not.toMatch(/sleep (31|40)/);
      await adapter.release("run-timeout-order");
    }, 30_000);

    it("kills what a command started in a session of its own (setsid) when the command ends, so nothing outlives its call", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-setsid-end");
      // Neither in the command's process group nor, once its shell exits, among its descendants.
      const started = await sandbox.exec("setsid sh -c 'sleep 33; echo late > /workspace/late.txt' >/dev/null 2>&1 & echo started");
      expect(started).toMatchObject({ exitCode: 0, stdout: "started\n", timedOut: false });
      expect((await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout).not.toMatch(/sleep 33/);
      await adapter.release("run-setsid-end");
    }, 30_000);

    it("kills what a command started in a session of its own (setsid) at the timeout", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-setsid-timeout");
      // The subshell exits at once: sleep 34 leaves the tree and the group while the command still runs.
      const command = "(setsid sh -c 'sleep 34; echo late > /workspace/late.txt' >/dev/null 2>&1 &); sleep 35";
      expect(await sandbox.exec(command, { timeoutMs: 1_000 })).toMatchObject({ timedOut: true, exitCode: TIMEOUT_EXIT_CODE });
      expect((await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout).not.toMatch(/sleep 3[45]/);
      await adapter.release("run-setsid-timeout");
    }, 30_000);

    it("refuses to follow a symlink out of /workspace", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-link");
      await sandbox.exec("ln -s /etc /workspace/etc");
      expect(isAssemblyLineError(await refusal(sandbox.readFile("/workspace/etc/passwd")), "AL_ERR_PATH_ESCAPE")).toBe(true);
      expect(isAssemblyLineError(await refusal(sandbox.writeFile("/workspace/etc/evil", "x")), "AL_ERR_PATH_ESCAPE")).toBe(true);
      expect(isAssemblyLineError(await refusal(sandbox.readFile("/workspace/missing.txt")), "AL_ERR_PATH_NOT_FOUND")).toBe(true);
      await adapter.release("run-link");
    });

    it("creates no folder outside /workspace when writeFile goes through a symlink a command made", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-link-mkdir");
      await sandbox.exec("mkdir -p /outside && ln -s /outside /workspace/out");
      expect(isAssemblyLineError(await refusal(sandbox.writeFile("out/newdir/sub/x", "x")), "AL_ERR_PATH_ESCAPE")).toBe(true);
      expect((await sandbox.exec("ls -A /outside")).stdout).toBe("");
      await adapter.release("run-link-mkdir");
    });

    it("creates no container until a sandbox is acquired, and none is left after release", async () => {
      const scope = scoped();
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      expect(await containersOf(scope)).toHaveLength(0);
      await (await adapter.acquire("run-lazy")).exec("true");
      expect(await containersOf(scope)).toHaveLength(1);
      await adapter.release("run-lazy");
      expect(await containersOf(scope)).toHaveLength(0);
    });

    it("removes the container of an acquire still in flight when release is called", async () => {
      const scope = scoped();
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      const opening = adapter.acquire("run-racing");
      await adapter.release("run-racing");
      await opening.catch(() => undefined);
      expect(await adapter.listKeys()).toEqual([]);
      expect(await containersOf(scope)).toHaveLength(0);
    }, 60_000);

    it("reconnects to a run's container after a host restart, restarting it if the engine stopped it", async () => {
      const scope = scoped();
      const before = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      await (await before.acquire("run-restart")).writeFile("/workspace/progress.txt", "step 3 of 5");
      // A new process: a fresh adapter with the same options finds the container by name.
      const after = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      expect(text(await (await after.acquire("run-restart")).readFile("progress.txt"))).toBe("step 3 of 5");
      await docker.getContainer(after.containerName("run-restart")).stop({ t: 0 });
      const third = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      expect(text(await (await third.acquire("run-restart")).readFile("progress.txt"))).toBe("step 3 of 5");
      expect(await containersOf(scope)).toHaveLength(1);
      await third.release("run-restart");
    }, 60_000);

    it("stops the command a crashed or stalled owner left running when another process reopens the run's sandbox", async () => {
      const scope = scoped();
      // The first owner starts a long command and is never heard from again (its own timer would fire only after 60 s).
      const crashed = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      const abandoned = (await crashed.acquire("run-orphan")).exec("sleep 4; echo late > /workspace/late.txt", { timeoutMs: 60_000 });
      const sandbox = await crashed.acquire("run-orphan");
      await expect.poll(async () => (await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout, { timeout: 10_000 }).toMatch(/sleep 4/);
      // The run resumes in a new process: a fresh adapter with the same options.
      const resumed = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      const again = await resumed.acquire("run-orphan");
      expect((await again.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout).not.toMatch(/sleep 4/);
      await abandoned;
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect((await again.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
      await resumed.release("run-orphan");
    }, 60_000);

    it("stops what a left-running command started in a session of its own (setsid) when another process reopens the run's sandbox", async () => {
      const scope = scoped();
      const crashed = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      const abandoned = (await crashed.acquire("run-orphan-setsid")).exec("(setsid sleep 36 >/dev/null 2>&1 &); sleep 37", { timeoutMs: 60_000 });
      const sandbox = await crashed.acquire("run-orphan-setsid");
      // Both sleeps run (not merely the wrapper whose arguments name them), so the command's pid file is written.
      const processLines = async (of: Sandbox) => (await of.exec("for line in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$line\"; echo; done")).stdout.split("\n").map((line) => line.trim());
      await expect.poll(() => processLines(sandbox), { timeout: 10_000 }).toEqual(expect.arrayContaining(["sleep 36", "sleep 37"]));
      const resumed = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
      const again = await resumed.acquire("run-orphan-setsid");
      expect((await processLines(again)).filter((line) => /\bsleep 3[67]\b/.test(line))).toEqual([]);
      await abandoned;
      await resumed.release("run-orphan-setsid");
    }, 60_000);

    it("lets commands run as `user` write their workspace and the files writeFile made", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", user: "65534", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-user");
      const own = await sandbox.exec("id -u; echo made > /workspace/by-command.txt && cat by-command.txt");
      expect(own).toMatchObject({ exitCode: 0, stdout: "65534\nmade\n" });
      await sandbox.writeFile("notes/by-tool.txt", "from the tool\n");
      const edited = await sandbox.exec("echo appended >> notes/by-tool.txt && cat notes/by-tool.txt && stat -c '%u:%g' notes/by-tool.txt");
      expect(edited).toMatchObject({ exitCode: 0, stdout: "from the tool\nappended\n65534:65534\n" });
      // Its timeouts still stop its commands.
      expect(await sandbox.exec("sleep 30", { timeoutMs: 500 })).toMatchObject({ timedOut: true, exitCode: TIMEOUT_EXIT_CODE });
      expect((await sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '")).stdout).not.toMatch(/sleep 30/);
      await adapter.release("run-user");
    }, 60_000);

    it("refuses to read a folder or a FIFO, naming what it is, instead of waiting for the FIFO's other end", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-kinds");
      await sandbox.exec("mkdir -p /workspace/dir && mkfifo /workspace/pipe");
      for (const path of ["dir", "pipe"]) {
        const error = await refusal(sandbox.readFile(path));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
        expect(String(error)).toContain(`cannot read /workspace/${path} in sandbox`);
        expect(String(error)).toContain("is not a regular file");
      }
      await adapter.release("run-kinds");
    }, 60_000);

    it("refuses to read a file larger than readFile's 256 MiB instead of returning its beginning", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      const sandbox = await adapter.acquire("run-big");
      await sandbox.exec(`head -c ${256 * 1024 * 1024 + 1} /dev/zero > /workspace/big.bin`);
      const error = await refusal(sandbox.readFile("big.bin"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toContain("/workspace/big.bin");
      expect(String(error)).toContain("larger than");
      await adapter.release("run-big");
    }, 60_000);

    it("fails with AL_ERR_SANDBOX_IMAGE naming an image the engine does not have", async () => {
      const adapter = new DockerSandboxAdapter({ image: "assembly-line-test/missing:none", network: "none", scope: scoped(), docker });
      const error = await refusal(adapter.acquire("run-missing"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_IMAGE"), String(error)).toBe(true);
      expect(String(error)).toContain("assembly-line-test/missing:none");
    });

    it.each([
      [{ image: "" }, "image"],
      [{ image: "x", cpus: -1 }, "cpus"],
      [{ image: "x", memory: "lots" }, "memory"],
      [{ image: "x", snapshot: { mode: "sometimes" } }, "snapshot.mode"],
      [{ image: "x", workingDirectory: "/runtime" }, "workingDirectory"],
      [{ image: "x", gpu: true }, "gpu"],
    ])("refuses the options %j with AL_ERR_SANDBOX_DEFINITION naming %s", (options, named) => {
      let error: unknown;
      try {
        createDockerSandbox(dockerSandbox(options as never), { docker });
      } catch (caught) {
        error = caught;
      }
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
      expect(String(error)).toContain(named);
    });
  });

  describe("DockerSandboxAdapter snapshots", () => {
    it("commits snapshots, keeps only retainLast, restores a chosen one and acquires from the latest", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), snapshot: { mode: "manual", retainLast: 2, reason: "checkpoint" }, docker });
      expect(isSnapshottingSandboxAdapter(adapter)).toBe(true);
      const sandbox = await adapter.acquire("run-snap");
      const taken = [];
      for (const version of ["v1", "v2", "v3"]) {
        await sandbox.writeFile("state.txt", version);
        taken.push(await adapter.snapshot("run-snap", version === "v3" ? { reason: "before deploy" } : {}));
      }
      const kept = await adapter.listSnapshots("run-snap");
      expect(kept.map((entry) => entry.id)).toEqual([taken[2]!.id, taken[1]!.id]);
      expect(kept.map((entry) => entry.reason)).toEqual(["before deploy", "checkpoint"]);
      await sandbox.writeFile("state.txt", "v4 (not snapshotted)");
      const restored = await adapter.restore("run-snap", taken[1]!.id);
      expect(text(await restored.readFile("state.txt"))).toBe("v2");
      // When a paused run's container is lost, its resume comes back from the latest snapshot.
      await docker.getContainer(adapter.containerName("run-snap")).remove({ force: true });
      const resumed = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: adapter.options.scope, snapshot: { mode: "manual", retainLast: 2 }, docker });
      expect(text(await (await resumed.acquire("run-snap")).readFile("state.txt"))).toBe("v3");
      const pruned = isAssemblyLineError(await refusal(resumed.restore("run-snap", taken[0]!.id)), "AL_ERR_SNAPSHOT_NOT_FOUND");
      expect(pruned).toBe(true);
      await resumed.release("run-snap");
    }, 120_000);

    it("auto mode snapshots at release and keeps it, so the finished run's files survive the container", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), snapshot: { mode: "auto", retainLast: 1 }, docker });
      await (await adapter.acquire("run-auto")).writeFile("notes.md", "kept across release");
      await adapter.release("run-auto");
      const [snapshot] = await adapter.listSnapshots("run-auto");
      expect(snapshot?.reason).toBe("run ended");
      expect(text(await (await adapter.acquire("run-auto")).readFile("notes.md"))).toBe("kept across release");
      await adapter.release("run-auto");
      // retainLast bounds what the key keeps: the second release's snapshot replaced the first.
      expect(await adapter.listSnapshots("run-auto")).toHaveLength(1);
      // Kept until removed: a release under a manual policy removes them.
      await new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: adapter.options.scope, snapshot: { mode: "manual" }, docker }).release("run-auto");
      expect(await adapter.listSnapshots("run-auto")).toEqual([]);
    }, 120_000);

    it("manual mode removes the run's snapshots at release: a finished run never resumes", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), snapshot: { mode: "manual", retainLast: 2 }, docker });
      await (await adapter.acquire("run-manual")).writeFile("notes.md", "taken while running");
      await adapter.snapshot("run-manual");
      expect(await adapter.listSnapshots("run-manual")).toHaveLength(1);
      await adapter.release("run-manual");
      expect(await adapter.listSnapshots("run-manual")).toEqual([]);
      // Acquired again, the key starts from the image.
      expect((await (await adapter.acquire("run-manual")).listFiles("/workspace")).map((entry) => entry.path)).toEqual([]);
      await adapter.release("run-manual");
    }, 120_000);

    it("refuses a snapshot when the sandbox has no snapshot policy", async () => {
      const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope: scoped(), docker });
      await adapter.acquire("run-nosnap");
      expect(isAssemblyLineError(await refusal(adapter.snapshot("run-nosnap")), "AL_ERR_SNAPSHOT_DISABLED")).toBe(true);
      await adapter.release("run-nosnap");
    });
  });
}
