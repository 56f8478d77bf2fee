import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShellSandbox, isAssemblyLineError, type SandboxDriver } from "../src/index.js";

/*
 * ShellSandbox, the hosted sandboxes' shared code, over a driver that runs its
 * scripts for real: busybox's sh in a folder of its own made the root (unshare
 * --root, with a private /proc), standing for a provider's sandbox. Its /etc
 * is the folder's, so a write that escapes lands there, where the test sees it.
 * Uploads and downloads go by real path and follow symlinks, as the providers'
 * file APIs do.
 */

const PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n";

/** A root folder with a static busybox and its applets, /dev/null, an /etc/passwd and /workspace. */
function makeRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "shell-sandbox-root-"));
  for (const dir of ["bin", "dev", "etc", "tmp", "proc", "workspace"]) mkdirSync(join(root, dir));
  spawnSync("mknod", ["-m", "666", join(root, "dev", "null"), "c", "1", "3"]);
  const busybox = spawnSync("sh", ["-c", "command -v busybox"], { encoding: "utf8" }).stdout.trim();
  if (busybox) {
    copyFileSync(busybox, join(root, "bin", "busybox"));
    const applets = spawnSync(busybox, ["--list"], { encoding: "utf8" }).stdout.split("\n").filter((name) => name && name !== "busybox");
    for (const applet of applets) symlinkSync("busybox", join(root, "bin", applet));
  }
  writeFileSync(join(root, "etc", "passwd"), PASSWD);
  return root;
}

/** Runs argv with `root` as its root, in its own pid namespace (whatever it leaves running ends with it). */
function inRoot(root: string, argv: string[], input?: Uint8Array): Promise<{ code: number; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("unshare", ["--fork", "--pid", "--mount", "--mount-proc", `--root=${root}`, ...argv], { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }));
    child.stdin.end(input);
  });
}

function rootDriver(root: string): SandboxDriver {
  return {
    runScript: async (script) => (await inRoot(root, ["/bin/sh", "-c", script])).stdout.toString("utf8"),
    downloadFile: async (path) => {
      const result = await inRoot(root, ["/bin/cat", "--", path]);
      if (result.code !== 0) throw new Error(`cat ${path}: ${result.stderr}`);
      return new Uint8Array(result.stdout);
    },
    uploadFile: async (path, content) => {
      const result = await inRoot(root, ["/bin/sh", "-c", 'cat > "$1"', "sh", path], content);
      if (result.code !== 0) throw new Error(`writing ${path}: ${result.stderr}`);
    },
  };
}

/** Whether this host can run the driver: root (for unshare) and a static busybox. */
async function probeRoot(): Promise<boolean> {
  const root = makeRoot();
  try {
    const result = await inRoot(root, ["/bin/sh", "-c", "echo ok"]).catch((error: unknown) => ({ code: -1, stdout: Buffer.alloc(0), stderr: String(error) }));
    if (result.stdout.toString() === "ok\n") return true;
    const reason = `busybox sh does not run in a root of its own here (${result.stderr.trim() || `exit ${result.code}`}); it needs root, unshare and a static busybox`;
    if (process.env.CI) throw new Error(`ShellSandbox file calls: ${reason}`);
    console.log(`skipping ShellSandbox file calls: ${reason}`);
    return false;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

const text = (body: Uint8Array) => new TextDecoder().decode(body);

/** Makes `$nl`, the folder path given with a newline at its end, in a setup command. */
const withNewline = (folder: string) => `nl=$(printf '${folder}\\nX'); nl=\${nl%X}`;

if (await probeRoot()) {
  let root: string;
  let box: ShellSandbox;
  /** Runs a setup command in the sandbox, failing the test with its stderr when it fails. */
  const setUp = async (command: string) => {
    const result = await box.exec(command);
    expect(result.exitCode, result.stderr).toBe(0);
  };
  beforeAll(() => {
    root = makeRoot();
    box = new ShellSandbox("files", rootDriver(root), { timeoutMs: 30_000, maxOutputBytes: 1024 * 1024, env: {} }, "Test");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  describe("ShellSandbox paths through a name ending in a newline", () => {
    // /workspace/nl/d<newline> is a folder, /workspace/nl/d a symlink out, /workspace/nl/l a symlink to the first:
    // every name is inside /workspace, but a shell capture $(readlink -f /workspace/nl/l) drops the newline and names /workspace/nl/d.
    it("never writes outside /workspace through a symlink to such a folder, even over /etc/passwd", async () => {
      await setUp(`mkdir -p /workspace/nl && ${withNewline("/workspace/nl/d")} && mkdir -- "$nl" && ln -s /etc /workspace/nl/d && ln -s -- "$nl" /workspace/nl/l`);
      const errors = [];
      for (const path of ["/workspace/nl/l/passwd", "/workspace/nl/l/owned.txt"]) errors.push(await refusal(box.writeFile(path, "root::0:0:root:/root:/bin/sh\n")));
      expect(readFileSync(join(root, "etc", "passwd"), "utf8")).toBe(PASSWD);
      expect(existsSync(join(root, "etc", "owned.txt"))).toBe(false);
      for (const error of errors) {
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("newline");
      }
    });

    it("never reads a file outside /workspace through a symlink to such a name", async () => {
      await setUp(`mkdir -p /workspace/nl-read && ${withNewline("/workspace/nl-read/f")} && printf inside > "$nl" && ln -s /etc/passwd /workspace/nl-read/f && ln -s -- "$nl" /workspace/nl-read/r`);
      const outcome = await box.readFile("/workspace/nl-read/r").then(text, (error: unknown) => error);
      expect(isAssemblyLineError(outcome, "AL_ERR_PATH_ESCAPE"), `read ${String(outcome)}`).toBe(true);
    });

    it("never deletes a file outside /workspace through a symlink to such a folder", async () => {
      await setUp(`mkdir -p /victim /workspace/nl-delete && echo keep > /victim/keep.txt && ${withNewline("/workspace/nl-delete/v")} && mkdir -- "$nl" && ln -s /victim /workspace/nl-delete/v && ln -s -- "$nl" /workspace/nl-delete/l`);
      const error = await refusal(box.deleteFile("/workspace/nl-delete/l/keep.txt"));
      expect(existsSync(join(root, "victim", "keep.txt"))).toBe(true);
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    });

    it("refuses a path holding a newline (AL_ERR_PATH_ESCAPE) instead of acting on the file without it", async () => {
      await box.writeFile("/workspace/report.txt", "keep me");
      const calls = [box.deleteFile("/workspace/report.txt\n"), box.writeFile("report.txt\n", "x"), box.readFile("/workspace/report.txt\n"), box.listFiles("/workspace/report.txt\n"), box.exec("true", { cwd: "/workspace\n" })];
      for (const call of calls) {
        const error = await refusal(call);
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("contains a newline");
      }
      expect(text(await box.readFile("/workspace/report.txt"))).toBe("keep me");
    });

    it('refuses to run a command in a folder reached through a symlink to "/workspace<newline>", a folder beside /workspace', async () => {
      await setUp(`${withNewline("/workspace")} && mkdir -p -- "$nl" && ln -s -- "$nl" /workspace/to-sibling`);
      const error = await refusal(box.exec("echo ran > /workspace/ran.txt", { cwd: "/workspace/to-sibling" }));
      expect(existsSync(join(root, "workspace", "ran.txt"))).toBe(false);
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    });

    it("lists no name holding a newline, so a name cannot pass for other entries", async () => {
      // A listing line is "kind|size|path": this file's name would read as two entries, /workspace/nl-list/a and the folder itself.
      await setUp(`mkdir -p /workspace/nl-list && ${withNewline("/workspace/nl-list/a")} && printf 1 > "$nl"'regular file|7|.'`);
      await setUp(`${withNewline("/workspace/nl-list/x")} && mkdir -- "$nl" && printf 1 > "$nl/inner.txt" && ln -s -- "$nl" /workspace/nl-list/to-x && echo ok > /workspace/nl-list/ok.txt`);
      expect(await box.listFiles("/workspace/nl-list")).toEqual([{ path: "/workspace/nl-list/ok.txt", type: "file", size: 3 }]);
    });
  });

  describe("ShellSandbox listFiles and symlinks, as the Docker and local sandboxes list", () => {
    it("lists a symlink that points inside as its target's kind, under its own name, without descending into it, and leaves out one leading out or nowhere", async () => {
      await setUp("mkdir -p list/real && cd list && echo hello > target.txt && echo x > real/a.txt && ln -s target.txt link.txt && ln -s real alias && ln -s /etc out && ln -s nowhere dangling");
      expect(await box.listFiles("/workspace/list")).toEqual([
        { path: "/workspace/list/alias", type: "directory", size: 0 },
        { path: "/workspace/list/link.txt", type: "file", size: 6 },
        { path: "/workspace/list/real", type: "directory", size: 0 },
        { path: "/workspace/list/real/a.txt", type: "file", size: 2 },
        { path: "/workspace/list/target.txt", type: "file", size: 6 },
      ]);
      expect(await box.listFiles("/workspace/list/alias")).toEqual([{ path: "/workspace/list/alias/a.txt", type: "file", size: 2 }]);
    });

    it("refuses to list through a symlink out of the workspace (AL_ERR_PATH_ESCAPE), even a path missing below it", async () => {
      await setUp("ln -s /etc etc-link");
      for (const path of ["/workspace/etc-link", "/workspace/etc-link/missing/deeper"]) {
        const error = await refusal(box.listFiles(path));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), `${path}: ${String(error)}`).toBe(true);
      }
    });
  });

  describe("ShellSandbox writeFile through symlinks and past files, as the Docker and local sandboxes write", () => {
    it("writes through a symlink inside the workspace whose target's folder does not exist yet, creating the folder", async () => {
      await setUp("mkdir -p links && ln -s /workspace/links/newdir/f.txt links/abs.txt && ln -s newer/g.txt links/rel.txt");
      await box.writeFile("/workspace/links/abs.txt", "through");
      await box.writeFile("/workspace/links/rel.txt", "relative");
      expect(text(await box.readFile("/workspace/links/newdir/f.txt"))).toBe("through");
      expect(text(await box.readFile("/workspace/links/newer/g.txt"))).toBe("relative");
    });

    it("refuses a write through a symlink whose missing target is outside, creating no folder there", async () => {
      await setUp("mkdir -p links-out && ln -s /opt/made-by-write/f.txt links-out/abs.txt && ln -s missing/../../../made-by-climb/f.txt links-out/climb.txt");
      for (const path of ["/workspace/links-out/abs.txt", "/workspace/links-out/climb.txt"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), `${path}: ${String(error)}`).toBe(true);
      }
      for (const made of ["opt/made-by-write", "made-by-climb", "workspace/links-out/missing"]) expect(existsSync(join(root, made)), made).toBe(false);
    });

    it("refuses a write under a file as a path error saying a file stands where a folder is needed", async () => {
      await box.writeFile("/workspace/plain.txt", "plain");
      for (const path of ["/workspace/plain.txt/child.txt", "/workspace/plain.txt/sub/child.txt"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
        expect(String(error)).toContain(`cannot write ${path} in sandbox files: a file stands where a folder is needed`);
      }
      expect(text(await box.readFile("/workspace/plain.txt"))).toBe("plain");
    });

    it("refuses a write through a symlink to /workspace itself as writing a folder, not as an escape", async () => {
      await setUp("ln -s . here && ln -s /workspace there");
      for (const path of ["/workspace/here", "/workspace/there"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), `${path}: ${String(error)}`).toBe(true);
        expect(String(error)).toContain("is a folder");
      }
    });
  });

  /** A sandbox of its own, for tests that remove its /workspace; `uploads` records what reached the provider's upload. */
  function ownSandbox(): { root: () => string; box: () => ShellSandbox; uploads: unknown[] } {
    let ownRoot: string;
    let ownBox: ShellSandbox;
    const uploads: unknown[] = [];
    beforeAll(() => {
      ownRoot = makeRoot();
      const driver = rootDriver(ownRoot);
      const uploadFile: SandboxDriver["uploadFile"] = async (path, content) => {
        uploads.push(content);
        return driver.uploadFile(path, content);
      };
      ownBox = new ShellSandbox("own", { ...driver, uploadFile }, { timeoutMs: 30_000, maxOutputBytes: 1024 * 1024, env: {} }, "Test");
    });
    afterAll(() => rmSync(ownRoot, { recursive: true, force: true }));
    return { root: () => ownRoot, box: () => ownBox, uploads };
  }

  describe("ShellSandbox writeFile content, as the Docker and local sandboxes check it", () => {
    const own = ownSandbox();

    it("refuses content neither text nor bytes (AL_ERR_SANDBOX_DEFINITION) before making a folder or uploading anything", async () => {
      own.uploads.length = 0;
      for (const content of [null, 42, { text: "x" }, new ArrayBuffer(4)]) {
        const error = await refusal(own.box().writeFile("/workspace/made-by-refused/x.txt", content as unknown as string));
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), `${String(content)}: ${String(error)}`).toBe(true);
      }
      expect(existsSync(join(own.root(), "workspace", "made-by-refused"))).toBe(false);
      expect(own.uploads).toEqual([]);
    });

    it("leaves an existing file as it was when given null content", async () => {
      await own.box().writeFile("/workspace/kept.txt", "keep me");
      await refusal(own.box().writeFile("/workspace/kept.txt", null as unknown as string));
      expect(readFileSync(join(own.root(), "workspace", "kept.txt"), "utf8")).toBe("keep me");
    });
  });

  describe("ShellSandbox after a command removed /workspace, as the Docker sandbox does", () => {
    const own = ownSandbox();

    it("makes it again for the next command", async () => {
      expect((await own.box().exec("cd / && rm -rf /workspace")).exitCode).toBe(0);
      expect(await own.box().exec("pwd")).toMatchObject({ exitCode: 0, stdout: "/workspace\n" });
    });

    it("makes it again for the next file call", async () => {
      await own.box().writeFile("before.txt", "x");
      expect((await own.box().exec("cd .. && rm -rf workspace")).exitCode).toBe(0);
      await own.box().writeFile("after.txt", "y");
      expect(await own.box().listFiles("/workspace")).toEqual([{ path: "/workspace/after.txt", type: "file", size: 1 }]);
    });

    it("says /workspace is missing (details.workspaceMissing) when it cannot be made again, not that the command's folder should be created", async () => {
      expect((await own.box().exec("cd / && rm -rf /workspace && echo x > /workspace")).exitCode).toBe(0);
      try {
        for (const call of [() => own.box().exec("pwd"), () => own.box().writeFile("a.txt", "a"), () => own.box().listFiles("/workspace")]) {
          const error = await refusal(call());
          expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
          expect((error as { details?: { workspaceMissing?: boolean } }).details?.workspaceMissing, String(error)).toBe(true);
          expect(String(error)).toContain("/workspace itself is missing");
        }
      } finally {
        rmSync(join(own.root(), "workspace"));
        mkdirSync(join(own.root(), "workspace"));
      }
    });
  });

  describe("ShellSandbox exec of a command longer than a process argument may be", () => {
    const own = ownSandbox();
    const commandFiles = () => readdirSync(join(own.root(), "tmp")).filter((name) => name.startsWith("al-command-"));

    it("runs a 200 KB heredoc as sh -c would, with its env, cwd and an empty stdin, and leaves no file of it behind", async () => {
      await own.box().exec("mkdir -p long");
      const command = `cat > big.txt <<'EOF'\n${"x".repeat(200_000)}\nEOF\nread -r line; echo "stdin:[$line] $0 $# $GREETING $(pwd) $(wc -c < big.txt)"\necho err >&2; exit 3`;
      expect(await own.box().exec(command, { cwd: "/workspace/long", env: { GREETING: "hi" } })).toEqual({ exitCode: 3, stdout: "stdin:[] sh 0 hi /workspace/long 200001\n", stderr: "err\n", timedOut: false, truncated: false });
      expect(commandFiles()).toEqual([]);
    });

    it("leaves no file of it behind when its folder is refused", async () => {
      const error = await refusal(own.box().exec(`: '${"p".repeat(100_000)}'`, { cwd: "/workspace/no-such-folder" }));
      expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
      expect(commandFiles()).toEqual([]);
    });
  });

  describe("ShellSandbox output cut at its cap", () => {
    it("ends on a whole UTF-8 character, as utf8Boundary cuts the Docker and local sandboxes' output, never in half of one", async () => {
      const sample = "aé€😀b";
      const bytes = new TextEncoder().encode(sample);
      await setUp(`printf '${sample}' > /workspace/utf8.txt`);
      for (let cap = 0; cap <= bytes.length; cap += 1) {
        let whole = cap;
        while (whole > 0 && whole < bytes.length && ((bytes[whole] ?? 0) & 0xc0) === 0x80) whole -= 1;
        const expected = text(bytes.subarray(0, whole));
        const result = await box.exec("cat utf8.txt; cat utf8.txt >&2", { maxOutputBytes: cap });
        expect({ cap, stdout: result.stdout, stderr: result.stderr, truncated: result.truncated }).toEqual({ cap, stdout: expected, stderr: expected, truncated: cap < bytes.length });
      }
    });
  });
}
