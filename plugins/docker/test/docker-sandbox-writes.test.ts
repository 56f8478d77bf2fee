import { isAssemblyLineError, type Sandbox } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerSandbox, DockerSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";

const probe = await probeEngine("DockerSandbox writes, a removed workspace and command refusals");

/** Runs argv in the sandbox's container as root, as a `docker exec` from outside would. */
async function asRoot(sandbox: Sandbox, command: string): Promise<void> {
  const exec = await (sandbox as DockerSandbox).container.exec({ Cmd: ["/bin/sh", "-c", command], User: "0", AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  stream.resume();
  await new Promise((done) => (stream.once("end", done), stream.once("close", done)));
  expect((await exec.inspect()).ExitCode, command).toBe(0);
}

async function outcome<T>(promise: Promise<T>): Promise<T | unknown> {
  return promise.then(
    (value) => value,
    (error: unknown) => error,
  );
}

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scope = randomScope("writes");
  const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
  // Commands run as nobody: /etc and / are root's, so only a write done as root could reach them.
  const asNobody = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker, user: "65534" });
  let box: Sandbox;
  let nobody: Sandbox;
  beforeAll(async () => {
    [box, nobody] = await Promise.all([adapter.acquire("writes"), asNobody.acquire("writes-as-nobody")]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([adapter.release("writes"), asNobody.release("writes-as-nobody")]);
    await removeScope(docker, scope);
  }, 60_000);

  describe("DockerSandbox writeFile", () => {
    it("never writes outside /workspace while a command keeps swapping the target's folder for a symlink to /etc", async () => {
      expect((await nobody.exec("touch /etc/mine 2>/dev/null; echo $?")).stdout).toBe("1\n");
      const swapper = nobody.exec("cd /workspace; end=$(( $(date +%s) + 12 )); while [ $(date +%s) -lt $end ]; do rm -rf d; mkdir d; rm -rf d; ln -s /etc d; done", { timeoutMs: 30_000 });
      const started = Date.now();
      for (let i = 0; Date.now() - started < 10_000; i += 1) await nobody.writeFile(`/workspace/d/pwn-${i}`, "root wrote this\n").catch(() => undefined);
      await swapper;
      expect((await nobody.exec("ls /etc | grep pwn-")).stdout, "files written into /etc through the swapped folder").toBe("");
    }, 90_000);

    it("writes as the user commands run as, who may not write a root-owned folder it reaches through a symlink", async () => {
      await nobody.exec("ln -sfn /etc /workspace/to-etc");
      // The symlink leads out: refused before anything is written, as before.
      expect(isAssemblyLineError(await outcome(nobody.writeFile("/workspace/to-etc/x", "x")), "AL_ERR_PATH_ESCAPE")).toBe(true);
      await nobody.writeFile("/workspace/mine.txt", "mine");
      expect((await nobody.exec("stat -c '%u %a' /workspace/mine.txt")).stdout).toBe("65534 644\n");
    }, 60_000);

    it("keeps any bytes exactly: every byte value, an empty file, and 20 MiB", async () => {
      const everyByte = new Uint8Array(256 * 4).map((_, index) => index % 256);
      const large = new Uint8Array(20 * 1024 * 1024).map((_, index) => (index * 31 + 7) % 251);
      for (const [path, content] of [["bytes.bin", everyByte], ["empty.bin", new Uint8Array(0)], ["large.bin", large]] as const) {
        await box.writeFile(path, content);
        expect(Buffer.from(await box.readFile(path)).equals(Buffer.from(content)), path).toBe(true);
      }
      // A view into a larger buffer is written as its own bytes only.
      await box.writeFile("view.bin", everyByte.subarray(10, 20));
      expect([...(await box.readFile("view.bin"))]).toEqual([...everyByte.subarray(10, 20)]);
      await box.writeFile("empty.bin", "");
      expect((await box.readFile("empty.bin")).length).toBe(0);
    }, 120_000);

    it("keeps an existing file's mode, and leaves the other name of a hard link as it was", async () => {
      await box.exec("printf old > /workspace/kept.sh && chmod 750 /workspace/kept.sh && printf shared > /workspace/a && ln /workspace/a /workspace/b");
      await box.writeFile("kept.sh", "#!/bin/sh\n");
      await box.writeFile("a", "new");
      expect((await box.exec("stat -c %a kept.sh; cat a; echo; cat b")).stdout).toBe("750\nnew\nshared");
    }, 60_000);

    it("leaves the file's old content when the write is killed partway, never the part it had written", async () => {
      const size = 32 * 1024 * 1024;
      const old = "o".repeat(size);
      const replacement = "n".repeat(size);
      await box.writeFile("killed.txt", old);
      // Kills the first process named cat it sees: the one the write copies its bytes with (a crash of the write, as far as the file knows).
      const killer = box.exec("while :; do for comm in /proc/[0-9]*/comm; do read -r name < \"$comm\" 2>/dev/null || continue; if [ \"$name\" = cat ]; then pid=${comm#/proc/}; kill -KILL \"${pid%/comm}\"; exit 0; fi; done; done", { timeoutMs: 30_000 });
      const written = await outcome(box.writeFile("killed.txt", replacement));
      await killer;
      const held = new TextDecoder().decode(await box.readFile("killed.txt"));
      // The killer may miss a write that ends first: then the new content is whole, as it must be.
      expect(held === old || held === replacement, `the file holds ${held.length} bytes, starting ${JSON.stringify(held.slice(0, 8))}, after a write that ${written instanceof Error ? `failed: ${written.message}` : "succeeded"}`).toBe(true);
      if (written instanceof Error) expect(held).toBe(old);
      expect((await box.exec("ls -A /workspace | grep -c al-write")).stdout, "a stray temporary file").toBe("0\n");
    }, 60_000);

    it("refuses to write over a FIFO instead of waiting for its other end", async () => {
      await box.exec("mkfifo /workspace/fifo");
      const error = await outcome(box.writeFile("fifo", "x"));
      expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
      expect(String(error)).toContain("is not a regular file");
    }, 60_000);

    it("refuses content that is neither text nor bytes before making any folder", async () => {
      for (const content of [null, 42, { text: "x" }, new ArrayBuffer(4)]) {
        const error = await outcome(box.writeFile("made-by-refused/x.txt", content as unknown as string));
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
        expect((error as { fix?: string }).fix).toMatch(/string .*Uint8Array/);
      }
      expect((await box.exec("[ -e made-by-refused ] && echo made || echo none")).stdout).toBe("none\n");
    }, 60_000);
  });

  describe("DockerSandbox after a command removed /workspace", () => {
    for (const [how, command] of [["rm -rf /workspace", "cd / && rm -rf /workspace"], ["rm -rf ../workspace", "cd .. && rm -rf workspace"]] as const) {
      it(`makes it again for the next file call and command (${how}), instead of calling the missing folder a symlink escape`, async () => {
        await box.writeFile("before.txt", "x");
        expect((await box.exec(command)).exitCode).toBe(0);
        await box.writeFile("after.txt", "y");
        expect(await box.listFiles("/workspace")).toEqual([{ path: "/workspace/after.txt", type: "file", size: 1 }]);
        expect((await box.exec(command)).exitCode).toBe(0);
        const again = await adapter.acquire("writes");
        expect(await again.exec("pwd; ls")).toMatchObject({ exitCode: 0, stdout: "/workspace\n" });
      }, 60_000);
    }

    it("gives the folder made again to the user commands run as", async () => {
      // nobody cannot remove it, nor make it again in root's "/": only the engine can.
      // Emptied as nobody first: the container's root has no CAP_DAC_OVERRIDE, so cannot empty nobody's folder that earlier tests filled.
      await nobody.deleteFile("/workspace");
      await asRoot(nobody, "rm -rf /workspace");
      expect(await nobody.listFiles("/workspace")).toEqual([]);
      expect((await nobody.exec("touch made && stat -c %u /workspace")).stdout).toBe("65534\n");
    }, 60_000);
  });

  describe("DockerSandbox exec", () => {
    it("refuses a command holding a NUL byte instead of reporting the engine's failure to start it as the command's exit", async () => {
      const error = await outcome(box.exec("echo hi\0there"));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
      expect(String(error)).toContain("NUL");
    }, 60_000);

    it("runs a command longer than the kernel lets one process argument be (a 200 KB heredoc), with its env, cwd and an empty stdin", async () => {
      await box.exec("mkdir -p /workspace/long");
      const command = `cat > big.txt <<'EOF'\n${"x".repeat(200_000)}\nEOF\nread -r line; echo "stdin:[$line] $0 $# $GREETING $(pwd) $(wc -c < big.txt)"\necho err >&2; exit 3`;
      expect(await box.exec(command, { cwd: "/workspace/long", env: { GREETING: "hi" } })).toEqual({ exitCode: 3, stdout: "stdin:[] /bin/sh 0 hi /workspace/long 200001\n", stderr: "err\n", timedOut: false, truncated: false });
    }, 60_000);

    it("times out a long command and caps its output as it does a short one", async () => {
      const padding = `: '${"p".repeat(150_000)}'`;
      const timed = await box.exec(`${padding}\nsleep 30`, { timeoutMs: 1_000 });
      expect(timed).toMatchObject({ exitCode: 124, timedOut: true });
      expect(await box.exec(`${padding}\nprintf 0123456789`, { maxOutputBytes: 4 })).toMatchObject({ exitCode: 0, stdout: "0123", truncated: true });
    }, 60_000);

    it("refuses an env value holding a NUL byte (checkExecOptions)", async () => {
      const error = await outcome(box.exec("echo hi", { env: { A: "x\0y" } }));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    }, 60_000);
  });
}
