import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { ModalSandboxAdapter, TAGS, modalSandbox } from "../src/index.js";
import { IMAGE_MARKER, baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeModal, type FakeModal } from "./support/fake-modal.js";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
/** Resolves once `condition` holds (checked every 100 ms), failing after 20 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let checks = 0; !condition(); checks += 1) {
    if (checks >= 200) throw new Error("the condition waited for never held");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe("modalSandbox options", () => {
  it("refuses a scope that is no string with a definition error naming the option, not a TypeError", () => {
    const error = refusal(() => modalSandbox({ scope: 42 } as never));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain("modalSandbox option scope is 42");
  });

  it("refuses snapshot, which this adapter does not keep, naming the option", () => {
    const error = refusal(() => modalSandbox({ snapshot: { mode: "manual", retainLast: 3 } }));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain("option snapshot is not supported");
  });

  it("refuses tokens in the options (they are build artifacts), unknown options and lifetimes Modal cannot take", () => {
    expect(String(refusal(() => modalSandbox({ tokenSecret: "as-secret" } as never)))).toMatch(/tokenSecret is not supported.*\n.*MODAL_TOKEN_SECRET/);
    expect(String(refusal(() => modalSandbox({ imag: "node:22" } as never)))).toMatch(/option imag\b/);
    expect(String(refusal(() => modalSandbox({ lifetimeMs: 1500 })))).toMatch(/option lifetimeMs/);
    expect(String(refusal(() => modalSandbox({ app: "my app" })))).toMatch(/option app/);
    expect(refusal(() => modalSandbox({ image: "node:22", lifetimeMs: 120_000, network: "bridge" }))).toBeUndefined();
  });

  it("fails the first acquire, not the boot, when the Modal token is missing", async () => {
    const error = await new ModalSandboxAdapter({ hostEnv: { MODAL_TOKEN_ID: "ak-1" } }).acquire("run-1").catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
    expect(String(error)).toMatch(/MODAL_TOKEN_SECRET/);
  });
});

const probe = await probeEngine("ModalSandboxAdapter behaviour");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeModal;
  const hostEnv = () => ({ MODAL_TOKEN_ID: fake.tokenId, MODAL_TOKEN_SECRET: fake.tokenSecret, MODAL_SERVER_URL: fake.serverUrl });
  const adapter = (options: ConstructorParameters<typeof ModalSandboxAdapter>[0] = {}) => new ModalSandboxAdapter({ scope: randomScope("modal"), hostEnv: hostEnv(), ...options });
  const ours = (scope: string, key: string) => [...fake.sandboxes.values()].filter((entry) => entry.state === "running" && entry.tags[TAGS.key] === key && entry.tags[TAGS.scope] === scope);
  beforeAll(async () => {
    const busybox = (await baseImages(docker)).busybox;
    fake = await startFakeModal({ docker, images: { "debian:bookworm-slim": busybox, "al-test:1": busybox } });
  }, 120_000);
  afterAll(() => fake?.close());

  describe("ModalSandboxAdapter against a local Modal control plane and command router", () => {
    it("creates nothing until a tool asks, then one named, tagged sandbox per key, offline by default", async () => {
      const made = adapter({ image: "al-test:1", app: "al-tests", env: { GREETING: "hello" }, lifetimeMs: 120_000 });
      const before = fake.calls.length;
      await Promise.resolve();
      expect(fake.calls.length).toBe(before);
      const serverUrl = process.env.MODAL_SERVER_URL;
      const sandbox = await made.acquire("run-lazy");
      // The server the SDK was given for its constructor is not left behind in the host's environment.
      expect(process.env.MODAL_SERVER_URL).toBe(serverUrl);
      const request = fake.creates.at(-1) as { tags: Array<{ tagName: string; tagValue: string }>; definition: Record<string, unknown> };
      expect(request.definition).toMatchObject({ name: made.sandboxName("run-lazy"), timeoutSecs: 120, networkAccess: { networkAccessType: 2 /* BLOCKED */ } });
      expect(request.tags).toEqual(expect.arrayContaining([{ tagName: TAGS.key, tagValue: "run-lazy" }, { tagName: TAGS.scope, tagValue: made.options.scope }]));
      const result = await sandbox.exec(`cat ${IMAGE_MARKER}; echo "$GREETING $PWD"; echo "\${MODAL_TOKEN_SECRET:-unset}"`);
      expect(result.stdout).toBe(`assembly-line test image: busybox\nhello /workspace\nunset\n`);
      expect(fake.calls).toEqual(expect.arrayContaining(["ModalClient/AppGetOrCreate", "ModalClient/ImageGetOrCreate", "ModalClient/SandboxCreateV2", "TaskCommandRouter/TaskExecStart", "TaskCommandRouter/TaskExecStdioRead", "TaskCommandRouter/TaskExecWait"]));
    });

    it("gives a command that reads stdin an end of input instead of a wait", async () => {
      const sandbox = await adapter().acquire("run-stdin");
      const result = await sandbox.exec("cat; echo done", { timeoutMs: 5_000 });
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: "done\n" });
    }, 20_000);

    it("kills the whole process tree at the timeout: a background child never writes", async () => {
      const sandbox = await adapter().acquire("run-tree");
      const result = await sandbox.exec("(sleep 1; echo late > /workspace/late.txt) & sleep 30", { timeoutMs: 300 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
    }, 20_000);

    it("moves binary files byte for byte through exec stdin and stdout", async () => {
      const sandbox = await adapter().acquire("run-binary");
      const bytes = new Uint8Array(300_000).map((_, index) => (index * 7919) % 256);
      await sandbox.writeFile("data/blob.bin", bytes.subarray(1000, 201_000));
      const back = await sandbox.readFile("/workspace/data/blob.bin");
      expect(Buffer.from(back).equals(Buffer.from(bytes.subarray(1000, 201_000)))).toBe(true);
      expect(fake.calls).toContain("TaskCommandRouter/TaskExecStdinWrite");
    });

    it("never writes, reads or deletes outside /workspace through a symlink to a name ending in a newline, nor takes a path with a newline for the one without", async () => {
      // In /workspace/nl, d<newline> is a folder and d a symlink to /etc, f<newline> a file and f a symlink to /etc/passwd; l and r link to
      // the names with the newline: a shell capture $(readlink -f l) would drop the newline and name d, out of the workspace.
      const sandbox = await adapter().acquire("run-newline-names");
      const passwd = (await sandbox.exec("cat /etc/passwd")).stdout;
      const setup = await sandbox.exec(
        `mkdir -p /workspace/nl && cd /workspace/nl && d=$(printf 'd\\nX') && d=\${d%X} && f=$(printf 'f\\nX') && f=\${f%X} && mkdir -- "$d" && ln -s /etc d && ln -s -- "$PWD/$d" l && printf inside > "$f" && ln -s /etc/passwd f && ln -s -- "$PWD/$f" r && echo keep > /workspace/report.txt`,
      );
      expect(setup.exitCode, setup.stderr).toBe(0);
      const calls = [() => sandbox.writeFile("/workspace/nl/l/passwd", "root::0:0:root:/root:/bin/sh\n"), () => sandbox.readFile("/workspace/nl/r").then(text), () => sandbox.deleteFile("/workspace/nl/l/passwd"), () => sandbox.deleteFile("/workspace/report.txt\n")];
      const outcomes = [];
      for (const call of calls) outcomes.push(await call().catch((caught: unknown) => caught));
      expect((await sandbox.exec("cat /etc/passwd")).stdout).toBe(passwd);
      expect((await sandbox.exec("cat /workspace/report.txt")).stdout).toBe("keep\n");
      for (const outcome of outcomes) {
        expect(isAssemblyLineError(outcome, "AL_ERR_PATH_ESCAPE"), String(outcome)).toBe(true);
        expect(String(outcome)).toContain("newline");
      }
    });

    it("refuses to read a file larger than readFile returns, naming its size, instead of loading it whole", async () => {
      const sandbox = await adapter().acquire("run-huge-read");
      await sandbox.exec("head -c 268435457 /dev/zero > huge.bin", { timeoutMs: 60_000 });
      const error = await sandbox.readFile("huge.bin").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/268435457 bytes, more than the 268435456 readFile returns/);
      await sandbox.deleteFile("huge.bin");
    }, 120_000);

    it("after a host restart finds the run's sandbox by its name, files intact, and creates none", async () => {
      const scope = randomScope("restart");
      await (await adapter({ scope }).acquire("run-restart")).writeFile("/workspace/kept.txt", "kept");
      const creates = fake.creates.length;
      const again = await adapter({ scope }).acquire("run-restart");
      expect(text(await again.readFile("/workspace/kept.txt"))).toBe("kept");
      expect(fake.creates.length).toBe(creates);
      expect(fake.calls).toEqual(expect.arrayContaining(["ModalClient/SandboxGetFromNameV2", "ModalClient/SandboxTagsGetV2", "ModalClient/SandboxGetTaskIdV2", "ModalClient/SandboxGetCommandRouterAccess"]));
    });

    it("stops a command the run's earlier owner left running when another process opens the sandbox", async () => {
      const scope = randomScope("leftover");
      const first = adapter({ scope });
      const owner = await first.acquire("run-leftover");
      // The owner stalls (or crashed) while its command still runs, with a long timeout of its own.
      const abandoned = owner.exec("sleep 2; echo late > /workspace/late.txt", { timeoutMs: 60_000 }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 700));
      const second = adapter({ scope });
      const resumed = await second.acquire("run-leftover");
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect((await resumed.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
      expect((await resumed.exec("echo still usable")).stdout).toBe("still usable\n");
      await abandoned;
      await second.release("run-leftover");
    }, 30_000);

    it("makes /workspace in a sandbox whose create was given up past requestTimeoutMs but still finished at Modal, when the next acquire finds it", async () => {
      const scope = randomScope("late-create");
      const resume = fake.stall(/^ModalClient\/SandboxCreateV2$/);
      try {
        const error = await adapter({ scope, requestTimeoutMs: 1_000 }).acquire("run-late").catch((caught: unknown) => caught);
        expect(String(error)).toMatch(/requestTimeoutMs/);
      } finally {
        resume();
      }
      await until(() => ours(scope, "run-late").length === 1);
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-late");
      expect(await sandbox.exec("pwd")).toMatchObject({ exitCode: 0, stdout: "/workspace\n" });
      await made.release("run-late");
    }, 30_000);

    it("gives a key a new sandbox once Modal ended its old one (lifetime over), and releasing it then is a no-op", async () => {
      const scope = randomScope("expired");
      const first = adapter({ scope });
      await (await first.acquire("run-expired")).writeFile("gone.txt", "gone");
      const [remote] = ours(scope, "run-expired");
      await fake.expire(remote!.id);
      await adapter({ scope }).release("run-expired");
      const fresh = await adapter({ scope }).acquire("run-expired");
      expect(await fresh.listFiles("/workspace")).toEqual([]);
      expect(ours(scope, "run-expired").map((entry) => entry.id)).not.toContain(remote!.id);
    });

    it("fails a command in a sandbox Modal ended under a live run; the same handle's next call, and the run's next acquire, get a new one", async () => {
      const scope = randomScope("ended");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-ended");
      const [remote] = ours(scope, "run-ended");
      await fake.expire(remote!.id);
      const error = await sandbox.exec("echo hi").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/gRPC NOT_FOUND/);
      expect(String(error)).toMatch(/the sandbox no longer exists, and its files with it: the next call starts a new, empty sandbox/);
      // The runtime holds one handle for a whole drive of the run: its next call runs in a new sandbox instead of failing too.
      expect((await sandbox.exec("echo hi > hi.txt && cat hi.txt")).stdout).toBe("hi\n");
      const fresh = await made.acquire("run-ended");
      expect(fresh).not.toBe(sandbox);
      expect((await fresh.exec("cat hi.txt")).stdout).toBe("hi\n");
    });

    it("gives a key a new sandbox at its next acquire once Modal ended its live one while the run waited, instead of the dead one", async () => {
      const scope = randomScope("ended-waiting");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-ended-waiting");
      await sandbox.writeFile("gone.txt", "gone");
      const [remote] = ours(scope, "run-ended-waiting");
      // The run waits (an approval, say) past the sandbox's lifetime, making no call: Modal ends it.
      await fake.expire(remote!.id);
      const fresh = await made.acquire("run-ended-waiting");
      expect(fresh).not.toBe(sandbox);
      expect(await fresh.listFiles("/workspace")).toEqual([]);
      expect((await fresh.exec("echo again > again.txt")).exitCode).toBe(0);
      // The handle the run already holds works in the new sandbox too.
      expect(text(await sandbox.readFile("again.txt"))).toBe("again\n");
      // A live one Modal still runs is handed out again as it is.
      expect(await made.acquire("run-ended-waiting")).toBe(fresh);
      await made.release("run-ended-waiting");
    });

    it("terminates the sandbox at release, leaves other scopes' sandboxes alone, and a second release is a no-op", async () => {
      const made = adapter();
      const other = adapter();
      await made.acquire("run-released");
      await other.acquire("run-released");
      expect(ours(made.options.scope, "run-released")).toHaveLength(1);
      await made.release("run-released");
      expect(ours(made.options.scope, "run-released")).toHaveLength(0);
      expect(ours(other.options.scope, "run-released")).toHaveLength(1);
      await made.release("run-released");
      expect(fake.calls).toContain("ModalClient/SandboxTerminateV2");
    });

    it("terminates, at a release that overlaps an acquire still creating the sandbox, the sandbox that acquire makes", async () => {
      const scope = randomScope("raced");
      const made = adapter({ scope });
      const resume = fake.stall(/^ModalClient\/SandboxCreateV2$/);
      const before = fake.calls.length;
      const acquiring = made.acquire("run-raced").catch((error: unknown) => error);
      let released: Promise<unknown> | undefined;
      try {
        await until(() => fake.calls.slice(before).includes("ModalClient/SandboxCreateV2"));
        released = made.release("run-raced");
        // A release that does not wait for the acquire looks the sandbox up now, finds none and returns.
        await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      } finally {
        resume();
      }
      await acquiring;
      await released;
      expect(ours(scope, "run-raced")).toEqual([]);
    });

    it("lists the keys of its scope's running sandboxes in its App until each is released or ended, and never another scope's", async () => {
      const made = adapter({ app: randomScope("app") });
      // No App yet: nothing was ever made.
      expect(await made.listKeys()).toEqual([]);
      await made.acquire("run-listed");
      await made.acquire("run-ended");
      await adapter({ app: made.options.app }).acquire("run-of-another-scope");
      await adapter({ scope: made.options.scope }).acquire("run-in-another-app");
      expect(await made.listKeys()).toEqual(["run-ended", "run-listed"]);
      // Modal keeps no stopped sandbox: one whose lifetime ended is gone, and so is its key.
      await fake.expire(ours(made.options.scope, "run-ended")[0]!.id);
      expect(await made.listKeys()).toEqual(["run-listed"]);
      await made.release("run-listed");
      expect(await made.listKeys()).toEqual([]);
      expect(fake.calls).toContain("ModalClient/SandboxListV2");
    });

    it("lists every key of its scope across Modal's pages, each asked for by the creation time of the last one listed", async () => {
      const made = adapter({ app: randomScope("app") });
      await made.acquire("run-first");
      const { appId } = ours(made.options.scope, "run-first")[0]!;
      const keys = Array.from({ length: 250 }, (_, index) => `run-${String(index).padStart(3, "0")}`);
      const ids = keys.map((key) => fake.addRunning({ appId, name: made.sandboxName(key), tags: { [TAGS.sandbox]: "1", [TAGS.key]: key, [TAGS.scope]: made.options.scope } }));
      try {
        const before = fake.calls.length;
        expect(await made.listKeys()).toEqual([...keys, "run-first"].sort());
        // Three full pages and the empty one that ends the listing.
        expect(fake.calls.slice(before).filter((call) => call === "ModalClient/SandboxListV2")).toHaveLength(4);
      } finally {
        for (const id of ids) fake.sandboxes.delete(id);
      }
      await made.release("run-first");
    }, 30_000);

    it("reports a listing Modal refuses as an AssemblyLineError, without the token secret anywhere in it", async () => {
      const wrongSecret = "as-wrong-listing-secret-0123456789";
      const made = adapter({ hostEnv: { ...hostEnv(), MODAL_TOKEN_SECRET: wrongSecret } });
      const error = await made.listKeys().catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/gRPC UNAUTHENTICATED/);
      expect(inspect(error, { depth: Infinity, showHidden: true })).not.toContain(wrongSecret);
      expect((error as Error).cause).toBeUndefined();
    });

    it("fails a listing Modal never answers after requestTimeoutMs, naming the option", async () => {
      // Only the listing is held to the short timeout: a loaded machine may take longer than that to create the sandbox.
      const made = adapter();
      await made.acquire("run-hung-listing");
      const resume = fake.stall(/SandboxListV2$/);
      try {
        const error = await adapter({ requestTimeoutMs: 1_000 }).listKeys().catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
        expect(String(error)).toMatch(/listing sandboxes.*requestTimeoutMs/s);
      } finally {
        resume();
      }
      await made.release("run-hung-listing");
    }, 30_000);

    it("two hosts acquiring the same run at once share one sandbox: the second create is refused by name and finds the first", async () => {
      const scope = randomScope("race");
      const [first, second] = await Promise.all([adapter({ scope }).acquire("run-race"), adapter({ scope }).acquire("run-race")]);
      await first.writeFile("shared.txt", "one sandbox");
      expect(text(await second.readFile("shared.txt"))).toBe("one sandbox");
      expect(ours(scope, "run-race")).toHaveLength(1);
    });

    it("never uses a same-named sandbox tagged for another run", async () => {
      const scope = randomScope("foreign");
      await adapter({ scope }).acquire("run-foreign");
      const [remote] = ours(scope, "run-foreign");
      remote!.tags[TAGS.key] = "someone-else";
      const error = await adapter({ scope }).acquire("run-foreign").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/was not made for run-foreign/);
      expect(fake.sandboxes.get(remote!.id)?.state).toBe("running");
    });

    it("fails a call to a Modal server that stops answering after requestTimeoutMs, naming the option, instead of holding the run", async () => {
      const made = adapter({ requestTimeoutMs: 1_000 });
      const resume = fake.stall(/^ModalClient\/SandboxGetFromNameV2$/);
      try {
        const started = Date.now();
        const error = await made.acquire("run-hung").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
        expect(String(error)).toMatch(/requestTimeoutMs/);
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        resume();
      }
    }, 30_000);

    it("fails a terminate Modal never answers after requestTimeoutMs too", async () => {
      const scope = randomScope("modal");
      // Made under the default deadline: starting its container can take over 1 s on a busy machine.
      await adapter({ scope }).acquire("run-hung-release");
      const made = adapter({ scope, requestTimeoutMs: 1_000 });
      await made.acquire("run-hung-release");
      const resume = fake.stall(/SandboxTerminateV2$/);
      try {
        const error = await made.release("run-hung-release").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
        expect(String(error)).toMatch(/terminating the sandbox.*requestTimeoutMs/s);
      } finally {
        resume();
      }
      await made.release("run-hung-release");
    }, 30_000);

    it("gives a command as long as its own timeout, not requestTimeoutMs", async () => {
      const scope = randomScope("modal");
      // Made under the default deadline (starting its container can take over 1 s on a busy machine), then found by its name.
      await adapter({ scope }).acquire("run-long-command");
      // Its acquire looks the sandbox up (is it still there?): 2 s leaves that room on a loaded machine.
      const made = adapter({ scope, requestTimeoutMs: 2_000 });
      const sandbox = await made.acquire("run-long-command");
      const result = await sandbox.exec("sleep 3; echo finished", { timeoutMs: 10_000 });
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: "finished\n" });
      await made.release("run-long-command");
    }, 30_000);

    it("checks requestTimeoutMs where it is written", () => {
      expect(String(refusal(() => modalSandbox({ requestTimeoutMs: 0 })))).toMatch(/option requestTimeoutMs/);
    });

    it("never shows the token secret when the adapter or its sandbox is logged, inspected or serialized", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-inspected");
      for (const shown of [inspect(made, { depth: Infinity, showHidden: true }), inspect(sandbox, { depth: Infinity, showHidden: true }), JSON.stringify(made), JSON.stringify(sandbox)]) {
        expect(shown).not.toContain(fake.tokenSecret);
      }
      await made.release("run-inspected");
    });

    it("reports a wrong token as Modal's refusal, without the secret in the message", async () => {
      const wrongSecret = "as-wrong-secret-0123456789";
      const made = adapter({ hostEnv: { ...hostEnv(), MODAL_TOKEN_SECRET: wrongSecret } });
      const error = await made.acquire("run-wrong-token").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/gRPC UNAUTHENTICATED/);
      expect(String(error)).not.toContain(wrongSecret);
      expect((error as Error).cause).toBeUndefined();
    });
  });

  describe("ModalSandboxAdapter writes as the Docker and local sandboxes do", () => {
    it("leaves the other name of a hard-linked file (maybe outside /workspace) as it was, keeping the file's mode", async () => {
      const sandbox = await adapter({ requestTimeoutMs: 5_000 }).acquire("run-hard-link");
      expect((await sandbox.exec("printf shared > /tmp/outside && chmod 640 /tmp/outside && ln /tmp/outside /workspace/linked")).exitCode).toBe(0);
      await sandbox.writeFile("linked", "new");
      expect((await sandbox.exec("cat /workspace/linked; echo; cat /tmp/outside; echo; stat -c %a /workspace/linked")).stdout).toBe("new\nshared\n640\n");
    });

    it("refuses to write over a FIFO instead of waiting for a reader at its other end", async () => {
      const sandbox = await adapter({ requestTimeoutMs: 5_000 }).acquire("run-fifo");
      expect((await sandbox.exec("mkfifo /workspace/fifo")).exitCode).toBe(0);
      const error = await sandbox.writeFile("fifo", "x").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND"), String(error)).toBe(true);
      expect(String(error)).toContain("is not a regular file");
    });
  });

  describe("ModalSandboxAdapter commands near the 64 KiB Modal takes in an exec's arguments", () => {
    it("runs a 65,000-byte command, which wrapped is past that limit", async () => {
      const sandbox = await adapter().acquire("run-long-command");
      const command = `echo ${"x".repeat(64_995)}`;
      expect(await sandbox.exec(command, { maxOutputBytes: 10 })).toMatchObject({ exitCode: 0, stdout: "xxxxxxxxxx", truncated: true });
    });

    it("runs a 40 KB command of single quotes, each four bytes once quoted in the wrapper", async () => {
      const sandbox = await adapter().acquire("run-quoted-command");
      const command = `echo ok ${"'x' ".repeat(10_000)}`;
      expect(await sandbox.exec(command, { maxOutputBytes: 6 })).toMatchObject({ exitCode: 0, stdout: "ok x x", truncated: true });
    });
  });
}
