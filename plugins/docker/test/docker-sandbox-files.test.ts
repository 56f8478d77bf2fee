import { isAssemblyLineError, type Sandbox } from "@assemblyline-agents/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerSandboxAdapter } from "../src/index.js";
import { baseImages, probeEngine, randomScope, removeScope } from "./support/engine.js";

const probe = await probeEngine("DockerSandbox file calls");
const text = (body: Uint8Array) => new TextDecoder().decode(body);

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** Runs a setup command, failing the test with its stderr when it fails. */
async function setUp(box: Sandbox, command: string): Promise<void> {
  const result = await box.exec(command);
  expect(result.exitCode, result.stderr).toBe(0);
}

/** Makes `$nl`, the folder path given with a newline at its end, in a setup command. */
const withNewline = (folder: string) => `nl=$(printf '${folder}\\nX'); nl=\${nl%X}`;

if (probe.available) {
  const { docker } = probe;
  const images = await baseImages(docker);
  const scope = randomScope("files");
  const adapter = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker });
  // Commands, and writeFile, run as nobody here: only the checks keep a write in /workspace, not the rights of root.
  const asNobody = new DockerSandboxAdapter({ image: images.busybox, network: "none", scope, docker, user: "65534" });
  let box: Sandbox;
  let nobody: Sandbox;
  beforeAll(async () => {
    [box, nobody] = await Promise.all([adapter.acquire("files"), asNobody.acquire("files-as-nobody")]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([adapter.release("files"), asNobody.release("files-as-nobody")]);
    await removeScope(docker, scope);
  }, 60_000);

  describe("DockerSandbox paths through a name ending in a newline", () => {
    // /workspace/nl/d<newline> is a folder, /workspace/nl/d a symlink out, /workspace/nl/l a symlink to the first:
    // every name is inside /workspace, but a shell capture $(readlink -f /workspace/nl/l) drops the newline and names /workspace/nl/d.
    it("never writes outside /workspace through a symlink to such a folder, even over a root-owned file (/etc/passwd)", async () => {
      await setUp(nobody, `mkdir -p /workspace/nl && ${withNewline("/workspace/nl/d")} && mkdir -- "$nl" && ln -s /etc /workspace/nl/d && ln -s -- "$nl" /workspace/nl/l`);
      for (const path of ["/workspace/nl/l/passwd", "/workspace/nl/l/owned.txt"]) {
        const error = await refusal(nobody.writeFile(path, "root::0:0:root:/root:/bin/sh\n"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("newline");
      }
      const etc = await nobody.exec("grep -c nobody:x:65534 /etc/passwd; ls /etc/owned.txt 2>&1");
      expect(etc.stdout).toMatch(/^1\n.*No such file/);
    }, 60_000);

    it("never reads a file outside /workspace through a symlink to such a name", async () => {
      await setUp(box, `mkdir -p /workspace/nl-read && ${withNewline("/workspace/nl-read/f")} && printf inside > "$nl" && ln -s /etc/passwd /workspace/nl-read/f && ln -s -- "$nl" /workspace/nl-read/r`);
      const error = await refusal(box.readFile("/workspace/nl-read/r"));
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    }, 60_000);

    it("never deletes a file outside /workspace through a symlink to such a folder", async () => {
      await setUp(box, `mkdir -p /victim /workspace/nl-delete && echo keep > /victim/keep.txt && ${withNewline("/workspace/nl-delete/v")} && mkdir -- "$nl" && ln -s /victim /workspace/nl-delete/v && ln -s -- "$nl" /workspace/nl-delete/l`);
      const error = await refusal(box.deleteFile("/workspace/nl-delete/l/keep.txt"));
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
      expect((await box.exec("cat /victim/keep.txt")).stdout).toBe("keep\n");
    }, 60_000);

    it("refuses a path holding a newline (AL_ERR_PATH_ESCAPE) instead of acting on the file without it", async () => {
      await box.writeFile("/workspace/report.txt", "keep me");
      for (const call of [box.deleteFile("/workspace/report.txt\n"), box.writeFile("report.txt\n", "x"), box.readFile("/workspace/report.txt\n"), box.exec("true", { cwd: "/workspace\n" })]) {
        const error = await refusal(call);
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("contains a newline");
      }
      expect(text(await box.readFile("/workspace/report.txt"))).toBe("keep me");
    }, 60_000);

    it('refuses to run a command in a folder reached through a symlink to "/workspace<newline>", a folder beside /workspace', async () => {
      await setUp(box, `${withNewline("/workspace")} && mkdir -p -- "$nl" && ln -s -- "$nl" /workspace/to-sibling`);
      const error = await refusal(box.exec("pwd", { cwd: "/workspace/to-sibling" }));
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    }, 60_000);

    it("lists no name holding a newline, so a name cannot pass for other entries", async () => {
      // A listing line is "kind|size|path": this file's name would read as two entries, /workspace/nl-list/a and the folder itself.
      await setUp(box, `mkdir -p /workspace/nl-list && ${withNewline("/workspace/nl-list/a")} && printf 1 > "$nl"'regular file|7|.'`);
      await setUp(box, `${withNewline("/workspace/nl-list/x")} && mkdir -- "$nl" && printf 1 > "$nl/inner.txt" && ln -s -- "$nl" /workspace/nl-list/to-x && echo ok > /workspace/nl-list/ok.txt`);
      expect(await box.listFiles("/workspace/nl-list")).toEqual([{ path: "/workspace/nl-list/ok.txt", type: "file", size: 3 }]);
    }, 60_000);
  });

  describe("DockerSandbox listFiles and symlinks, as the local sandbox lists", () => {
    it("lists a symlink that points inside as its target's kind, under its own name, without descending into it", async () => {
      await setUp(box, "mkdir -p list/real && cd list && echo hello > target.txt && echo x > real/a.txt && ln -s target.txt link.txt && ln -s real alias && ln -s /etc out && ln -s nowhere dangling");
      expect(await box.listFiles("/workspace/list")).toEqual([
        { path: "/workspace/list/alias", type: "directory", size: 0 },
        { path: "/workspace/list/link.txt", type: "file", size: 6 },
        { path: "/workspace/list/real", type: "directory", size: 0 },
        { path: "/workspace/list/real/a.txt", type: "file", size: 2 },
        { path: "/workspace/list/target.txt", type: "file", size: 6 },
      ]);
    }, 60_000);

    it("lists a folder or a file reached through a symlink under the path asked for, not the link's target", async () => {
      await setUp(box, "mkdir -p alias-list/real && cd alias-list && echo x > real/a.txt && ln -s real alias && ln -s real/a.txt one.txt");
      expect(await box.listFiles("/workspace/alias-list/alias")).toEqual([{ path: "/workspace/alias-list/alias/a.txt", type: "file", size: 2 }]);
      expect(await box.listFiles("alias-list/one.txt")).toEqual([{ path: "/workspace/alias-list/one.txt", type: "file", size: 2 }]);
    }, 60_000);

    it("lists files it wrote whose names hold CR, U+2028 or U+2029, and what is under such a folder", async () => {
      const names = ["cr\rname.txt", "ls\u2028name.txt", "ps\u2029name.txt", "plain.txt"];
      for (const name of names) await box.writeFile(`/workspace/odd-names/${name}`, "x");
      await box.writeFile("/workspace/odd-names/sub\rfolder/inner.txt", "yz");
      expect(await box.listFiles("/workspace/odd-names")).toEqual(
        [
          ...names.map((name) => ({ path: `/workspace/odd-names/${name}`, type: "file", size: 1 })),
          { path: "/workspace/odd-names/sub\rfolder", type: "directory", size: 0 },
          { path: "/workspace/odd-names/sub\rfolder/inner.txt", type: "file", size: 2 },
        ].sort((a, b) => (a.path < b.path ? -1 : 1)),
      );
    }, 60_000);

    it("refuses to list through a symlink out of the workspace (AL_ERR_PATH_ESCAPE), even a path missing below it, instead of listing nothing", async () => {
      await setUp(box, "ln -s /etc etc-link");
      for (const path of ["/workspace/etc-link", "/workspace/etc-link/missing/deeper"]) {
        const error = await refusal(box.listFiles(path));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), `${path}: ${String(error)}`).toBe(true);
      }
    }, 60_000);
  });

  describe("DockerSandbox writeFile through symlinks and past files", () => {
    it("writes through a symlink inside the workspace whose target's folder does not exist yet, creating the folder", async () => {
      await setUp(box, "mkdir -p links && ln -s /workspace/links/newdir/f.txt links/abs.txt && ln -s newer/g.txt links/rel.txt");
      await box.writeFile("/workspace/links/abs.txt", "through");
      await box.writeFile("/workspace/links/rel.txt", "relative");
      expect(text(await box.readFile("/workspace/links/newdir/f.txt"))).toBe("through");
      expect(text(await box.readFile("/workspace/links/newer/g.txt"))).toBe("relative");
    }, 60_000);

    it("still refuses a write through a symlink whose missing target is outside, creating no folder there", async () => {
      await setUp(box, "mkdir -p links-out && ln -s /opt/made-by-write/f.txt links-out/abs.txt && ln -s missing/../../../made-by-climb/f.txt links-out/climb.txt");
      for (const path of ["/workspace/links-out/abs.txt", "/workspace/links-out/climb.txt"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), `${path}: ${String(error)}`).toBe(true);
      }
      expect((await box.exec("ls -d /opt/made-by-write /made-by-climb /workspace/links-out/missing 2>/dev/null; true")).stdout).toBe("");
    }, 60_000);

    it("refuses a write under a file as a path error saying a file stands where a folder is needed, not as an engine failure", async () => {
      await box.writeFile("/workspace/plain.txt", "plain");
      for (const path of ["/workspace/plain.txt/child.txt", "/workspace/plain.txt/sub/child.txt"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
        expect(String(error)).toContain(`cannot write ${path} in sandbox files: a file stands where a folder is needed`);
      }
      expect(isAssemblyLineError(await refusal(box.deleteFile("/workspace/plain.txt/child.txt")), "AL_ERR_PATH_NOT_FOUND")).toBe(true);
      expect(text(await box.readFile("/workspace/plain.txt"))).toBe("plain");
    }, 60_000);

    it("refuses a write through a symlink to /workspace itself as writing a folder, not as an escape", async () => {
      await setUp(box, "ln -s . here && ln -s /workspace there");
      for (const path of ["/workspace/here", "/workspace/there"]) {
        const error = await refusal(box.writeFile(path, "x"));
        expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), `${path}: ${String(error)}`).toBe(true);
        expect(String(error)).toContain("is a folder");
      }
    }, 60_000);
  });
}
