import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "../errors.js";
import { MAX_TIMER_MS } from "../timeout.js";
import type { SandboxAdapter } from "../sandbox.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

const text = (body: Uint8Array) => new TextDecoder().decode(body);

/** "3×a 2×b": how `content` runs, its first runs, for a failure message. */
function runsOf(content: string, most = 12): string {
  const runs: string[] = [];
  for (let start = 0; start < content.length && runs.length < most; ) {
    let end = start + 1;
    while (end < content.length && content[end] === content[start]) end += 1;
    runs.push(`${end - start}×${JSON.stringify(content[start])}`);
    start = end;
  }
  return runs.join(" ");
}

/** What an adapter claims beyond the contract every adapter keeps; each claim adds the cases that check it. */
export interface SandboxConformanceClaims {
  /**
   * writeFile replaces a file whole (written beside it, then renamed over it): two writes of the
   * same file at once leave one of them, never a mix. An adapter whose provider uploads into the
   * file in place does not claim it.
   */
  wholeFileWrites?: boolean;
}

/**
 * The SandboxAdapter contract: one workspace per key, files under logical
 * `/workspace` paths that cannot escape it, a shell that starts in the
 * workspace with a timeout and an output cap, and (optional) `listKeys` naming
 * the keys it holds; and the `claims` the adapter makes.
 */
export function describeSandboxConformance(name: string, factory: StateKitFactory<SandboxAdapter>, claims: SandboxConformanceClaims = {}): void {
  describe(`${name}: SandboxAdapter conformance`, () => {
    const adapter = useSubject(factory);
    const key = () => `kit-${randomUUID()}`;

    it("writes, reads, lists and deletes files under /workspace, relative paths included", async () => {
      const sandbox = await adapter().acquire(key());
      await sandbox.writeFile("/workspace/notes/a.txt", "alpha");
      await sandbox.writeFile("notes/b.txt", new TextEncoder().encode("beta"));
      expect(text(await sandbox.readFile("/workspace/notes/b.txt"))).toBe("beta");
      const files = (await sandbox.listFiles("/workspace")).filter((entry) => entry.type === "file").map((entry) => entry.path).sort();
      expect(files).toEqual(["/workspace/notes/a.txt", "/workspace/notes/b.txt"]);
      await sandbox.deleteFile("/workspace/notes/a.txt");
      expect((await sandbox.listFiles("/workspace")).some((entry) => entry.path === "/workspace/notes/a.txt")).toBe(false);
    });

    it.each(["/workspace/../etc/passwd", "../outside.txt", "/etc/passwd", "/workspace/a\u0000b"])("refuses the escaping path %j with AL_ERR_PATH_ESCAPE", async (path) => {
      const sandbox = await adapter().acquire(key());
      const refusal = await sandbox.readFile(path).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isAssemblyLineError(refusal, "AL_ERR_PATH_ESCAPE"), String(refusal)).toBe(true);
      const writeRefusal = await sandbox.writeFile(path, "x").then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isAssemblyLineError(writeRefusal, "AL_ERR_PATH_ESCAPE"), String(writeRefusal)).toBe(true);
    });

    it("runs commands in the workspace and reports exit code, stdout and stderr", async () => {
      const sandbox = await adapter().acquire(key());
      await sandbox.writeFile("/workspace/hello.txt", "hi there");
      const result = await sandbox.exec("cat hello.txt && echo warn >&2 && exit 7", { cwd: "/workspace" });
      expect(result).toMatchObject({ exitCode: 7, stdout: "hi there", stderr: "warn\n", timedOut: false, truncated: false });
    });

    it("passes a command the env it is given, and refuses exec options it would ignore or misread", async () => {
      const sandbox = await adapter().acquire(key());
      expect((await sandbox.exec('printf %s "$KIT_VALUE"', { env: { KIT_VALUE: "given" } })).stdout).toBe("given");
      const refusals = [
        { timeout: 5 },
        { env: "KIT=1" },
        { env: { "KIT=X": "y" } },
        { env: { "KIT VALUE": "y" } },
        { env: { KIT: 5 } },
        { timeoutMs: 0 },
        { timeoutMs: "500" },
        { maxOutputBytes: -1 },
        { maxOutputBytes: 1.5 },
        { cwd: 7 },
      ];
      for (const options of refusals) {
        const refusal = await sandbox.exec("true", options as never).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(isAssemblyLineError(refusal, "AL_ERR_SANDBOX_DEFINITION"), `${JSON.stringify(options)}: ${String(refusal)}`).toBe(true);
      }
    });

    it("stops a command at its timeout and caps its output", async () => {
      const sandbox = await adapter().acquire(key());
      const slow = await sandbox.exec("sleep 30", { timeoutMs: 300 });
      expect(slow.timedOut).toBe(true);
      expect(slow.exitCode).not.toBe(0);
      const loud = await sandbox.exec("head -c 100000 /dev/zero | tr '\\0' x", { maxOutputBytes: 1000 });
      expect(loud.truncated).toBe(true);
      expect(loud.stdout.length).toBeLessThanOrEqual(1000);
      expect(loud.stdout).toMatch(/^x+$/);
    }, 20_000);

    it("runs a command given the longest timeout exec takes and an output cap past any output (Number.MAX_VALUE)", async () => {
      const sandbox = await adapter().acquire(key());
      // A timer past Node's limit fires at once, and a cap printed as 1e+308 is no number to a shell tool: neither may fail or empty the call.
      expect(await sandbox.exec("echo out; echo err >&2", { timeoutMs: MAX_TIMER_MS, maxOutputBytes: Number.MAX_VALUE })).toMatchObject({ exitCode: 0, stdout: "out\n", stderr: "err\n", timedOut: false, truncated: false });
    }, 20_000);

    it("keeps no output at maxOutputBytes 0 and says it was cut", async () => {
      const sandbox = await adapter().acquire(key());
      expect(await sandbox.exec("echo out; echo err >&2", { maxOutputBytes: 0 })).toMatchObject({ exitCode: 0, stdout: "", stderr: "", truncated: true });
    });

    it("refuses to run a command in a folder that is missing, a file, or outside /workspace through a symlink", async () => {
      const sandbox = await adapter().acquire(key());
      await sandbox.writeFile("/workspace/plain.txt", "x");
      expect((await sandbox.exec("ln -s / out")).exitCode).toBe(0);
      const refusalOf = (cwd: string) =>
        sandbox.exec("touch ran-here", { cwd }).then(
          () => undefined,
          (error: unknown) => error,
        );
      for (const cwd of ["/workspace/missing", "/workspace/plain.txt"]) {
        const refusal = await refusalOf(cwd);
        expect(isAssemblyLineError(refusal, "AL_ERR_PATH_NOT_FOUND"), `${cwd}: ${String(refusal)}`).toBe(true);
      }
      const escape = await refusalOf("/workspace/out");
      expect(isAssemblyLineError(escape, "AL_ERR_PATH_ESCAPE"), String(escape)).toBe(true);
      expect((await sandbox.exec("[ ! -e /ran-here ] && [ ! -e ran-here ]")).exitCode).toBe(0);
    });

    it("writes through a symlink inside the workspace to its target, and keeps an existing file's mode", async () => {
      const sandbox = await adapter().acquire(key());
      expect((await sandbox.exec("printf old > tool.sh && chmod 750 tool.sh && ln -s tool.sh link.sh")).exitCode).toBe(0);
      await sandbox.writeFile("/workspace/link.sh", "new");
      expect(text(await sandbox.readFile("/workspace/tool.sh"))).toBe("new");
      expect((await sandbox.exec("[ -L link.sh ] && stat -c %a tool.sh")).stdout.trim()).toBe("750");
    });

    it.runIf(claims.wholeFileWrites === true)("leaves one whole write of several made at once to the same file, never a mix, and no other file", async () => {
      const sandbox = await adapter().acquire(key());
      // Large enough that each write takes many chunks: written in place, they interleave (or one sees the file cut short by another).
      const size = 4 * 1024 * 1024;
      const contents = ["a", "b", "c", "d"].map((letter) => letter.repeat(size));
      for (let round = 1; round <= 10; round += 1) {
        const written = await Promise.allSettled(contents.map((content) => sandbox.writeFile("/workspace/raced.txt", content)));
        expect(written.map((outcome) => (outcome.status === "rejected" ? String(outcome.reason) : outcome.status)), `round ${round}`).toEqual(contents.map(() => "fulfilled"));
        const held = text(await sandbox.readFile("/workspace/raced.txt"));
        // Any may win: only a mix fails.
        expect(contents.includes(held), `round ${round}: the file holds ${held.length} bytes: ${runsOf(held)}`).toBe(true);
      }
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).toEqual(["/workspace/raced.txt"]);
    }, 120_000);

    it("keeps the spaces at the ends of a folder's or file's name", async () => {
      const sandbox = await adapter().acquire(key());
      await sandbox.writeFile("/workspace/dir /name ", "spaced");
      expect(text(await sandbox.readFile("/workspace/dir /name "))).toBe("spaced");
      const files = (await sandbox.listFiles("/workspace")).filter((entry) => entry.type === "file").map((entry) => entry.path);
      expect(files).toEqual(["/workspace/dir /name "]);
    });

    it("ends what a command started in the background, at its timeout and when it ends", async () => {
      const sandbox = await adapter().acquire(key());
      // Gone, or a zombie no one reaped: either way it runs no more.
      const ended = (pidFile: string) => `pid=$(cat ${pidFile}); state=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -c1); [ -z "$state" ] || [ "$state" = Z ]`;
      const timedOut = await sandbox.exec("(sleep 60 & echo $! > orphan.pid); sleep 60", { timeoutMs: 500 });
      expect(timedOut.timedOut).toBe(true);
      expect((await sandbox.exec(ended("orphan.pid"))).exitCode).toBe(0);
      const finished = await sandbox.exec("sleep 60 > /dev/null 2>&1 & echo $! > left.pid");
      expect(finished).toMatchObject({ exitCode: 0, timedOut: false });
      expect((await sandbox.exec(ended("left.pid"))).exitCode).toBe(0);
    }, 20_000);

    it("gives the same key the same files, other keys their own, and forgets them on release", async () => {
      const first = key();
      await (await adapter().acquire(first)).writeFile("/workspace/kept.txt", "kept");
      expect(text(await (await adapter().acquire(first)).readFile("/workspace/kept.txt"))).toBe("kept");
      const other = await adapter().acquire(key());
      expect((await other.listFiles("/workspace")).some((entry) => entry.path === "/workspace/kept.txt")).toBe(false);
      await adapter().release(first);
      const again = await adapter().acquire(first);
      expect((await again.listFiles("/workspace")).some((entry) => entry.path === "/workspace/kept.txt")).toBe(false);
    });

    it("lists a key it holds a sandbox for until the key is released, when it lists keys at all", async (context) => {
      const subject = adapter();
      if (!subject.listKeys) return context.skip("the adapter has no listKeys (optional)");
      const held = key();
      await subject.acquire(held);
      expect(await subject.listKeys()).toContain(held);
      await subject.release(held);
      expect(await subject.listKeys()).not.toContain(held);
    }, 20_000);
  });
}
