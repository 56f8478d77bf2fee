import { MAX_READ_BYTES, isAssemblyLineError } from "@assemblyline-agents/core";
import { InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { constants, existsSync } from "node:fs";
import { mkdtemp, open, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LocalSandboxAdapter, TIMEOUT_EXIT_CODE } from "../src/index.js";
import { fsError } from "../src/sandbox/fs-error.js";
import { stillRunning } from "./support/processes.js";

const folders: string[] = [];
async function tempFolder(prefix: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), prefix));
  folders.push(folder);
  return folder;
}
afterEach(async () => {
  await Promise.all(folders.splice(0).map((folder) => rm(folder, { recursive: true, force: true })));
});

async function sandbox(key = "run-1") {
  const root = await tempFolder("al-sandbox-");
  const adapter = new LocalSandboxAdapter({ root });
  return { adapter, root, box: await adapter.acquire(key) };
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, "expected the call to be refused").toBeDefined();
  return error;
}

async function expectEscape(promise: Promise<unknown>, path: string): Promise<void> {
  const error = await refusal(promise);
  expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
  expect((error as Error).message).toContain(JSON.stringify(path));
}

describe("LocalSandboxAdapter", () => {
  it("keeps sandboxes under <agentDir>/.assembly-line/sandboxes by default", () => {
    const adapter = new LocalSandboxAdapter({ agentDir: "/srv/agent" });
    expect(adapter.name).toBe("local");
    expect(adapter.folderFor("run-1")).toBe("/srv/agent/.assembly-line/sandboxes/run-1");
  });

  it("gives every key its own single folder, even keys with separators", () => {
    const adapter = new LocalSandboxAdapter({ root: "/r" });
    expect(adapter.folderFor("../etc")).toBe("/r/..%2Fetc");
    expect(adapter.folderFor("a/b")).toBe("/r/a%2Fb");
    expect(adapter.folderFor("x".repeat(500)).split("/").pop()!.length).toBeLessThanOrEqual(200);
    for (const key of ["", ".", ".."]) expect(() => adapter.folderFor(key)).toThrow(/AL_ERR_PATH_ESCAPE/);
  });

  it("refuses invalid options with AL_ERR_SANDBOX_DEFINITION", () => {
    expect(() => new LocalSandboxAdapter({ defaultTimeoutMs: 0 })).toThrow(/AL_ERR_SANDBOX_DEFINITION/);
    expect(() => new LocalSandboxAdapter({ maxOutputBytes: -1 })).toThrow(/AL_ERR_SANDBOX_DEFINITION/);
  });

  it("reopens the same files when a fresh adapter acquires the same key", async () => {
    const { root, box } = await sandbox("run-7");
    await box.writeFile("/workspace/notes/todo.txt", "buy milk");
    const reopened = await new LocalSandboxAdapter({ root }).acquire("run-7");
    expect(new TextDecoder().decode(await reopened.readFile("/workspace/notes/todo.txt"))).toBe("buy milk");
    expect(reopened.id).toBe(box.id);
  });

  it("returns the same sandbox for repeated acquires in one process", async () => {
    const { adapter, box } = await sandbox("run-2");
    expect(await adapter.acquire("run-2")).toBe(box);
  });

  it("release removes the folder and stops the sandbox", async () => {
    const { adapter, box } = await sandbox("run-3");
    await box.writeFile("report.txt", "x");
    await adapter.release("run-3");
    expect(existsSync(adapter.folderFor("run-3"))).toBe(false);
    expect(isAssemblyLineError(await refusal(box.readFile("report.txt")), "AL_ERR_SANDBOX_UNAVAILABLE")).toBe(true);
    const fresh = await adapter.acquire("run-3");
    expect(await fresh.listFiles("/workspace")).toEqual([]);
    await adapter.release("never-acquired");
  });

  it("kills a running command on release", async () => {
    const { adapter, box } = await sandbox("run-4");
    const started = Date.now();
    const running = box.exec("sleep 30", { timeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await adapter.release("run-4");
    const result = await running;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(result.exitCode).toBe(137);
  });

  it("runs no command of a released sandbox and leaves none of its folders behind when release comes while exec is still starting", async () => {
    const { adapter, box } = await sandbox("run-release-starting");
    const marker = join(await tempFolder("al-marker-"), "ran-after-release");
    const running = refusal(box.exec(`sleep 1; touch ${marker}`));
    await adapter.release("run-release-starting");
    expect(isAssemblyLineError(await running, "AL_ERR_SANDBOX_UNAVAILABLE"), String(await running)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect({ ranAfterRelease: existsSync(marker), folderLeft: existsSync(adapter.folderFor("run-release-starting")), keys: await adapter.listKeys() }).toEqual({ ranAfterRelease: false, folderLeft: false, keys: [] });
  });

  it("leaves none of its folders behind when release comes while writes are on their way", async () => {
    const { adapter, box } = await sandbox("run-release-writing");
    // A chain of symlinks keeps each write resolving for a while before its mkdir.
    await box.exec("ln -s deep/a/b/c.txt link0 && for i in $(seq 1 39); do ln -s link$((i - 1)) link$i; done");
    const writes = Array.from({ length: 20 }, () => box.writeFile("link39", "x").catch(() => undefined));
    await adapter.release("run-release-writing");
    await Promise.all(writes);
    expect(existsSync(adapter.folderFor("run-release-writing"))).toBe(false);
  });

  it("records the session in a SandboxSessionStore and forgets it on release", async () => {
    const root = await tempFolder("al-sandbox-");
    const sessions = new InMemoryStateAdapter();
    const adapter = new LocalSandboxAdapter({ root, sessions });
    const box = await adapter.acquire("run-5");
    const record = await sessions.getSandboxSession("run-5");
    expect(record).toMatchObject({ key: "run-5", adapter: "local", sessionId: box.id });
    await adapter.release("run-5");
    expect(await sessions.getSandboxSession("run-5")).toBeUndefined();
  });
});

describe("LocalSandbox paths", () => {
  it.each([
    ["../x", "a relative path climbing out"],
    ["/workspace/../../etc/passwd", "a logical path climbing out"],
    ["/workspace/a/../b", "a '..' that would stay inside"],
    ["/etc/passwd", "an absolute host path"],
    ["/workspacefoo/x", "a sibling of /workspace"],
    ["/workspace/a\0b", "a NUL byte"],
    ["/workspace/report.txt\n", "a newline (the Docker sandbox cannot carry one)"],
    ["", "an empty path"],
  ])("refuses %j (%s) for every file method", async (path) => {
    const { box } = await sandbox();
    await expectEscape(box.readFile(path), path);
    await expectEscape(box.writeFile(path, "x"), path);
    await expectEscape(box.deleteFile(path), path);
    await expectEscape(box.listFiles(path), path);
    await expectEscape(box.exec("true", { cwd: path }), path);
  });

  it("refuses to read through a symlink to / made by a command", async () => {
    const { box } = await sandbox();
    expect((await box.exec("ln -s / link")).exitCode).toBe(0);
    await expectEscape(box.readFile("link/etc/hostname"), "link/etc/hostname");
    await expectEscape(box.readFile("/workspace/link/etc/passwd"), "/workspace/link/etc/passwd");
    await expectEscape(box.listFiles("link"), "link");
    await expectEscape(box.exec("pwd", { cwd: "link/tmp" }), "link/tmp");
  });

  it("refuses to write or delete through a symlinked folder pointing outside", async () => {
    const { box } = await sandbox();
    const outside = await tempFolder("al-outside-");
    await writeFile(join(outside, "keep.txt"), "keep");
    expect((await box.exec(`ln -s '${outside}' out`)).exitCode).toBe(0);
    await expectEscape(box.writeFile("out/new.txt", "x"), "out/new.txt");
    await expectEscape(box.writeFile("out/deeper/new.txt", "x"), "out/deeper/new.txt");
    await expectEscape(box.deleteFile("out/keep.txt"), "out/keep.txt");
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
    expect(existsSync(join(outside, "deeper"))).toBe(false);
    expect(await readFile(join(outside, "keep.txt"), "utf8")).toBe("keep");
  });

  it("refuses to write through a file symlink, even a dangling one, that points outside", async () => {
    const { box } = await sandbox();
    const outside = await tempFolder("al-outside-");
    await writeFile(join(outside, "target.txt"), "original");
    await box.exec(`ln -s '${outside}/target.txt' existing && ln -s '${outside}/created.txt' dangling`);
    await expectEscape(box.writeFile("existing", "overwritten"), "existing");
    await expectEscape(box.writeFile("dangling", "created"), "dangling");
    expect(await readFile(join(outside, "target.txt"), "utf8")).toBe("original");
    expect(existsSync(join(outside, "created.txt"))).toBe(false);
  });

  it("writes a hard-linked file as a file of its own, leaving the other name's content (outside) as it was, mode kept", async () => {
    const { box } = await sandbox();
    const outside = join(await tempFolder("al-outside-"), "secret.txt");
    await writeFile(outside, "SECRET\n");
    expect((await box.exec(`ln ${JSON.stringify(outside)} hard.txt && chmod 755 hard.txt`)).exitCode).toBe(0);
    await box.writeFile("hard.txt", "written\n");
    expect(await readFile(outside, "utf8")).toBe("SECRET\n");
    expect(new TextDecoder().decode(await box.readFile("hard.txt"))).toBe("written\n");
    expect((await box.exec("test -x hard.txt && echo executable")).stdout).toBe("executable\n");
    expect((await box.exec("ls -a")).stdout).not.toMatch(/\.al-write-/);
  });

  it("deletes a symlink itself, never what it points at", async () => {
    const { box } = await sandbox();
    const outside = await tempFolder("al-outside-");
    await writeFile(join(outside, "keep.txt"), "keep");
    await box.exec(`ln -s '${outside}' out`);
    await box.deleteFile("out");
    expect(await box.listFiles("/workspace")).toEqual([]);
    expect(await readFile(join(outside, "keep.txt"), "utf8")).toBe("keep");
  });

  it("refuses a write through a symlink to /workspace itself as writing a folder (EISDIR, coded AL_ERR_PATH_NOT_FOUND), as writing /workspace is, not as an escape", async () => {
    const { box, root } = await sandbox();
    await box.exec(`ln -s . here && ln -s "$WORKSPACE" there && ln -s here again && mkdir sub && ln -s .. sub/up`);
    for (const path of ["/workspace", "/workspace/here", "/workspace/there", "/workspace/again", "/workspace/sub/up"]) {
      const error = await refusal(box.writeFile(path, "x"));
      expect(error, path).toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND", message: expect.stringContaining(`cannot write ${path}: it is a folder (EISDIR)`), details: { path, errno: "EISDIR" } });
      expect(String(error)).not.toContain(root);
    }
  });

  it("follows symlinks that stay inside the workspace", async () => {
    const { box } = await sandbox();
    await box.writeFile("real/data.txt", "inside");
    await box.exec("ln -s real alias && ln -s real/data.txt file-link");
    expect(new TextDecoder().decode(await box.readFile("alias/data.txt"))).toBe("inside");
    await box.writeFile("file-link", "rewritten");
    expect(new TextDecoder().decode(await box.readFile("real/data.txt"))).toBe("rewritten");
  });

  it("lists recursively with logical paths, leaving out symlinks that leave the workspace", async () => {
    const { box } = await sandbox();
    await box.writeFile("/workspace/a.txt", "hello");
    await box.writeFile("dir/sub/b.bin", new Uint8Array([1, 2, 3]));
    await box.exec("ln -s / root-link && ln -s a.txt a-link");
    expect(await box.listFiles("/workspace")).toEqual([
      { path: "/workspace/a-link", type: "file", size: 5 },
      { path: "/workspace/a.txt", type: "file", size: 5 },
      { path: "/workspace/dir", type: "directory", size: 0 },
      { path: "/workspace/dir/sub", type: "directory", size: 0 },
      { path: "/workspace/dir/sub/b.bin", type: "file", size: 3 },
    ]);
    expect(await box.listFiles("dir")).toEqual([
      { path: "/workspace/dir/sub", type: "directory", size: 0 },
      { path: "/workspace/dir/sub/b.bin", type: "file", size: 3 },
    ]);
    expect(await box.listFiles("missing")).toEqual([]);
  });

  it("lists a symlinked folder as a folder without descending into it, and what a symlink leads to under the path asked for", async () => {
    const { box } = await sandbox();
    await box.exec("mkdir real && echo x > real/a.txt && ln -s real alias && ln -s real/a.txt one.txt");
    expect(await box.listFiles("/workspace")).toEqual([
      { path: "/workspace/alias", type: "directory", size: 0 },
      { path: "/workspace/one.txt", type: "file", size: 2 },
      { path: "/workspace/real", type: "directory", size: 0 },
      { path: "/workspace/real/a.txt", type: "file", size: 2 },
    ]);
    expect(await box.listFiles("alias")).toEqual([{ path: "/workspace/alias/a.txt", type: "file", size: 2 }]);
    expect(await box.listFiles("one.txt")).toEqual([{ path: "/workspace/one.txt", type: "file", size: 2 }]);
  });

  it("writes through a symlink inside the workspace whose target's folder does not exist yet, creating the folder", async () => {
    const { box } = await sandbox();
    await box.exec('ln -s "$WORKSPACE/newdir/f.txt" abs.txt && ln -s newer/g.txt rel.txt');
    await box.writeFile("abs.txt", "through");
    await box.writeFile("rel.txt", "relative");
    expect(new TextDecoder().decode(await box.readFile("newdir/f.txt"))).toBe("through");
    expect(new TextDecoder().decode(await box.readFile("newer/g.txt"))).toBe("relative");
  });

  it("refuses a write under a file saying a file stands where a folder is needed", async () => {
    const { box } = await sandbox();
    await box.writeFile("plain.txt", "plain");
    const error = await refusal(box.writeFile("/workspace/plain.txt/child.txt", "x"));
    expect(error).toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND", message: expect.stringContaining("cannot write /workspace/plain.txt/child.txt: a file stands where a folder is needed (EEXIST)") });
    const below = await refusal(box.readFile("/workspace/plain.txt/child.txt"));
    expect(below).toMatchObject({ code: "AL_ERR_PATH_NOT_FOUND" });
  });

  it("lists no name holding a newline, which no file call takes", async () => {
    const { box } = await sandbox();
    await box.exec("mkdir \"$(printf 'd\\nx')\" && touch \"$(printf 'd\\nx')/inner.txt\" \"$(printf 'f\\nx')\" ok.txt");
    expect(await box.listFiles("/workspace")).toEqual([{ path: "/workspace/ok.txt", type: "file", size: 0 }]);
  });

  it("reports a missing file as AL_ERR_PATH_NOT_FOUND with the logical path, not the host one", async () => {
    const { box, root } = await sandbox();
    const error = await refusal(box.readFile("nope.txt"));
    expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND")).toBe(true);
    expect((error as Error).message).toContain("/workspace/nope.txt");
    expect((error as Error).message).not.toContain(root);
  });

  it("restates every file error with the logical path and its code, never the host path", async () => {
    const { box, root } = await sandbox();
    const name = `/workspace/${"a".repeat(300)}`;
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["read", () => box.readFile(name)],
      ["write", () => box.writeFile(name, "x")],
      ["delete", () => box.deleteFile(name)],
      ["list", () => box.listFiles(name)],
      ["use as cwd", () => box.exec("true", { cwd: name })],
    ];
    for (const [action, call] of calls) {
      const error = await refusal(call());
      expect(error, action).toMatchObject({ code: "AL_ERR_PATH_TOO_LONG", message: expect.stringContaining(`cannot ${action} ${name}: a name in the path is too long`), details: { path: name, errno: "ENAMETOOLONG" } });
      for (const text of [String(error), (error as Error).stack, JSON.stringify(error)]) expect(text, action).not.toContain(root);
    }
  });

  it("makes /workspace again for the next call when a command removed it", async () => {
    const { adapter, box } = await sandbox();
    await box.writeFile("old.txt", "x");
    expect((await box.exec("cd .. && rm -rf workspace")).exitCode).toBe(0);
    await box.writeFile("a.txt", "after");
    expect((await box.exec("cat a.txt")).stdout).toBe("after");
    expect(await box.listFiles("/workspace")).toEqual([{ path: "/workspace/a.txt", type: "file", size: 5 }]);
    // The sandbox's whole folder too (HOME and TMPDIR with it).
    expect((await box.exec('cd "$WORKSPACE/../.." && rm -rf run-1')).exitCode).toBe(0);
    expect(await box.listFiles("/workspace")).toEqual([]);
    expect((await box.exec('echo hi > "$HOME/h" && cat "$HOME/h"')).stdout).toBe("hi\n");
    expect(await adapter.acquire("run-1")).toBe(box);
  });

  it("says the workspace is gone without naming its host folder when something in its place keeps it from being made again", async () => {
    const { adapter, box, root } = await sandbox();
    const workspace = join(adapter.folderFor("run-1"), "workspace");
    await rm(workspace, { recursive: true });
    await symlink(join(root, "nowhere"), workspace);
    for (const call of [() => box.readFile("a.txt"), () => box.writeFile("a.txt", "x"), () => box.listFiles("/workspace"), () => box.exec("true")]) {
      const error = await refusal(call());
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      for (const text of [String(error), JSON.stringify(error)]) expect(text).not.toContain(root);
    }
    expect(existsSync(join(root, "nowhere")), "nothing made through the symlink").toBe(false);
  });

  it("refuses write content that is neither a string nor a Uint8Array before touching the file, which keeps its bytes", async () => {
    const { box } = await sandbox();
    await box.writeFile("keep.txt", "precious");
    for (const content of [null, undefined, 42, {}, new ArrayBuffer(4), new Uint16Array(2)]) {
      const error = await refusal(box.writeFile("keep.txt", content as never));
      const kind = Object.prototype.toString.call(content);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), `${kind}: ${String(error)}`).toBe(true);
      expect((error as Error).message, kind).toContain("not a string or a Uint8Array");
      expect(new TextDecoder().decode(await box.readFile("keep.txt")), kind).toBe("precious");
    }
    expect(await box.listFiles("/workspace"), "nothing made for a refused write").toEqual([{ path: "/workspace/keep.txt", type: "file", size: 8 }]);
    await box.writeFile("keep.txt", Buffer.from("bytes"));
    expect(new TextDecoder().decode(await box.readFile("keep.txt"))).toBe("bytes");
  });

  it("deletes files and folders, and treats a missing path as already deleted", async () => {
    const { box } = await sandbox();
    await box.writeFile("dir/a.txt", "a");
    await box.writeFile("b.txt", "b");
    await box.deleteFile("dir");
    await box.deleteFile("missing/also-missing.txt");
    expect((await box.listFiles("/workspace")).map((entry) => entry.path)).toEqual(["/workspace/b.txt"]);
    await box.deleteFile("/workspace");
    expect(await box.listFiles("/workspace")).toEqual([]);
  });
});

describe("LocalSandbox special files", () => {
  it("refuses to read a FIFO instead of waiting for a writer, and other file calls go on", async () => {
    const { box } = await sandbox();
    expect((await box.exec("mkfifo pipe && echo hello > note.txt")).exitCode).toBe(0);
    // More reads than libuv has file threads: one blocked open each would freeze every file call.
    const refusals = await Promise.all([1, 2, 3, 4, 5].map(() => refusal(box.readFile("/workspace/pipe"))));
    for (const error of refusals) {
      expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
      expect((error as Error).message).toContain("/workspace/pipe: it is a FIFO (named pipe), not a regular file");
    }
    expect(new TextDecoder().decode(await box.readFile("note.txt"))).toBe("hello\n");
  });

  it("refuses to write to a FIFO, with or without a reader at its other end", async () => {
    const { adapter, box } = await sandbox();
    expect((await box.exec("mkfifo alone && mkfifo heard")).exitCode).toBe(0);
    const alone = await refusal(box.writeFile("alone", "x"));
    expect(isAssemblyLineError(alone, "AL_ERR_PATH_NOT_FOUND"), String(alone)).toBe(true);
    expect((alone as Error).message).toContain("/workspace/alone: it is a FIFO (named pipe), not a regular file");
    const reader = await open(join(adapter.folderFor("run-1"), "workspace", "heard"), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const heard = await refusal(box.writeFile("heard", "x"));
      expect(isAssemblyLineError(heard, "AL_ERR_PATH_NOT_FOUND"), String(heard)).toBe(true);
      expect((heard as Error).message).toContain("/workspace/heard: it is a FIFO (named pipe), not a regular file");
    } finally {
      await reader.close();
    }
  });

  it("refuses a file past the read limit with AL_ERR_SANDBOX_UNAVAILABLE, and reads one below it whole", async () => {
    const { box } = await sandbox();
    // Sparse: the file takes no disk, and the refusal reads none of it.
    expect((await box.exec(`truncate -s ${MAX_READ_BYTES + 1} big.bin && head -c 100000 /dev/urandom > small.bin`)).exitCode).toBe(0);
    const error = await refusal(box.readFile("big.bin"));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
    expect((error as Error).message).toContain(`/workspace/big.bin in sandbox local:run-1: the file is larger than ${MAX_READ_BYTES} bytes`);
    const small = await box.readFile("small.bin");
    expect(Buffer.from(small).equals(await readFile(join((await box.exec("pwd")).stdout.trim(), "small.bin")))).toBe(true);
  });

  it("codes a permission the system denies, so the file tools hand it to the model", () => {
    // Tests run as root here, which no chmod keeps out: the system's error is made by hand.
    for (const errno of ["EACCES", "EPERM"]) {
      const error = fsError(Object.assign(new Error(`${errno}: open '/host/secret/a.txt'`), { code: errno }), "read", "/workspace/a.txt");
      expect(error, errno).toMatchObject({ code: "AL_ERR_PATH_DENIED", details: { path: "/workspace/a.txt", errno }, fix: expect.stringContaining("chmod") });
      expect(String(error)).not.toContain("/host/secret");
    }
  });

  it("refuses to read a folder as a file", async () => {
    const { box } = await sandbox();
    await box.writeFile("dir/a.txt", "a");
    const error = await refusal(box.readFile("dir"));
    expect((error as Error).message).toContain("cannot read /workspace/dir: it is a folder");
  });
});

describe("LocalSandbox exec", () => {
  it("runs in the workspace folder, which the file methods write to", async () => {
    const { box } = await sandbox();
    await box.writeFile("/workspace/hello.txt", "hi from writeFile\n");
    const result = await box.exec('cat hello.txt && pwd && printf %s "$WORKSPACE"');
    const [content, pwd, workspace] = result.stdout.split("\n");
    expect(content).toBe("hi from writeFile");
    expect(pwd).toBe(workspace);
    expect(result).toMatchObject({ exitCode: 0, stderr: "", timedOut: false, truncated: false });
    const nested = await box.exec("echo made > made.txt && mkdir -p sub && cd sub && pwd");
    expect(nested.stdout.trim()).toBe(`${workspace}/sub`);
    expect(new TextDecoder().decode(await box.readFile("made.txt"))).toBe("made\n");
  });

  it("starts in a cwd given as a logical path", async () => {
    const { box } = await sandbox();
    await box.writeFile("src/main.ts", "");
    const result = await box.exec("ls && pwd", { cwd: "/workspace/src" });
    expect(result.stdout.split("\n")[0]).toBe("main.ts");
    expect(result.stdout.trim().endsWith("/workspace/src")).toBe(true);
    expect(isAssemblyLineError(await refusal(box.exec("true", { cwd: "nowhere" })), "AL_ERR_PATH_NOT_FOUND")).toBe(true);
  });

  it("reports the exit code and stderr", async () => {
    const { box } = await sandbox();
    const result = await box.exec("echo out; echo oops >&2; exit 3");
    expect(result).toEqual({ exitCode: 3, stdout: "out\n", stderr: "oops\n", timedOut: false, truncated: false });
    expect((await box.exec("kill -TERM $$")).exitCode).toBe(143);
  });

  it("kills a command at its timeout and reports timedOut with exit code 124", async () => {
    const { box } = await sandbox();
    const started = Date.now();
    const result = await box.exec("echo started; sleep 30", { timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result).toMatchObject({ exitCode: TIMEOUT_EXIT_CODE, timedOut: true, stdout: "started\n" });
  });

  it("kills the whole process group on timeout, not only the shell", async () => {
    const { box } = await sandbox();
    const result = await box.exec("sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait", { timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    const pids = new TextDecoder().decode(await box.readFile("pids")).trim().split("\n").map(Number);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(await stillRunning(pid), `sleep ${pid} survived the timeout`).toBe(false);
  });

  it("returns when the shell exits, ending what it left running in the background", async () => {
    const { box } = await sandbox();
    const started = Date.now();
    const result = await box.exec("sleep 30 & echo $! > pid; echo done", { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result).toMatchObject({ exitCode: 0, stdout: "done\n", timedOut: false });
    expect(await stillRunning(Number(new TextDecoder().decode(await box.readFile("pid"))))).toBe(false);
  });

  it("caps stdout and stderr at maxOutputBytes each and says so", async () => {
    const { box } = await sandbox();
    const result = await box.exec("head -c 200000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' b >&2", { maxOutputBytes: 1000 });
    expect(result.stdout).toBe("a".repeat(1000));
    expect(result.stderr).toBe("b".repeat(1000));
    expect(result).toMatchObject({ exitCode: 0, truncated: true });
  });

  it("never cuts a multi-byte character in half at the cap", async () => {
    const { box } = await sandbox();
    const result = await box.exec("printf 'aé'", { maxOutputBytes: 2 });
    expect(result).toMatchObject({ stdout: "a", truncated: true });
  });

  it("refuses a NUL byte in the command or in an env value, which no process can be given, naming the variable", async () => {
    const { box } = await sandbox();
    const command = await refusal(box.exec("echo hi\0there"));
    expect(isAssemblyLineError(command, "AL_ERR_SANDBOX_DEFINITION"), String(command)).toBe(true);
    expect((command as Error).message).toContain("command holds a NUL byte");
    const env = await refusal(box.exec("echo hi", { env: { GREETING: "x\0y" } }));
    expect(isAssemblyLineError(env, "AL_ERR_SANDBOX_DEFINITION"), String(env)).toBe(true);
    expect((env as Error).message).toContain("env.GREETING holds a NUL byte");
  });

  it("gives commands a small environment: no host secrets, its own HOME, plus env", async () => {
    process.env.AL_TEST_SECRET = "do-not-leak";
    try {
      const { box } = await sandbox();
      const result = await box.exec('printf "%s|%s|%s" "${AL_TEST_SECRET:-unset}" "$HOME" "$EXTRA"', { env: { EXTRA: "given" } });
      const [secret, home, extra] = result.stdout.split("|");
      expect(secret).toBe("unset");
      expect(home!.endsWith("/run-1/home")).toBe(true);
      expect(extra).toBe("given");
    } finally {
      delete process.env.AL_TEST_SECRET;
    }
  });
});
