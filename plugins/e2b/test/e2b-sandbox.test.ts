import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError, isSnapshottingSandboxAdapter, type Sandbox } from "@assemblyline-agents/core";
import { E2bSandboxAdapter, METADATA, e2bSandbox } from "../src/index.js";
import { providerError } from "../src/provider-error.js";
import { IMAGE_MARKER, baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeE2b, type FakeE2b } from "./support/fake-e2b.js";
import { e2bTemplateImage } from "./support/template-image.js";

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

describe("e2bSandbox options", () => {
  it("fills in a provider error that has no message with the error's name, instead of ending in an empty message", () => {
    const error = providerError("E2B", "running a command", Object.assign(new Error(""), { name: "TimeoutError" }), []);
    expect(error.message).toContain("E2B: running a command failed: TimeoutError with no message");
  });

  it("refuses a scope that is no string with a definition error naming the option, not a TypeError", () => {
    const error = refusal(() => e2bSandbox({ scope: 42 } as never));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain("e2bSandbox option scope is 42");
  });

  it("refuses image, which E2B does not take (it starts from templates), naming the option", () => {
    const error = refusal(() => e2bSandbox({ image: "node:22" }));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain("option image is not supported");
  });

  it("checks the snapshot policy where it is written", () => {
    expect(String(refusal(() => e2bSandbox({ snapshot: { mode: "auto", retainLast: 0 } })))).toMatch(/option snapshot\.retainLast/);
    expect(refusal(() => e2bSandbox({ snapshot: { mode: "manual", retainLast: 3, reason: "operator-requested checkpoint" } }))).toBeUndefined();
  });

  it("refuses an API key in the options (they are build artifacts) and unknown options", () => {
    expect(String(refusal(() => e2bSandbox({ apiKey: "e2b_secret" } as never)))).toMatch(/apiKey is not supported.*\n.*E2B_API_KEY/);
    expect(String(refusal(() => e2bSandbox({ templat: "base" } as never)))).toMatch(/option templat/);
    expect(String(refusal(() => e2bSandbox({ onTimeout: "stop" as never })))).toMatch(/option onTimeout/);
  });

  it("refuses a lifetimeMs over E2B's longest sandbox timeout (24 h, on Pro), naming the option and the limit", () => {
    const error = refusal(() => e2bSandbox({ lifetimeMs: 24 * 60 * 60_000 + 1_000 }));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toMatch(/option lifetimeMs.*24 h/);
    expect(refusal(() => e2bSandbox({ lifetimeMs: 24 * 60 * 60_000 }))).toBeUndefined();
  });

  it("fails the first acquire, not the boot, when E2B_API_KEY is missing", async () => {
    const error = await new E2bSandboxAdapter({ hostEnv: {} }).acquire("run-1").catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
    expect(String(error)).toMatch(/E2B_API_KEY/);
  });
});

const probe = await probeEngine("E2bSandboxAdapter behaviour");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeE2b;
  const adapter = (options: ConstructorParameters<typeof E2bSandboxAdapter>[0] = {}) =>
    new E2bSandboxAdapter({ scope: randomScope("e2b"), hostEnv: { E2B_API_KEY: fake.apiKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl }, ...options });
  beforeAll(async () => {
    const template = await e2bTemplateImage(docker, (await baseImages(docker)).busybox);
    fake = await startFakeE2b({ docker, templates: { base: template, "al-test": template } });
  }, 120_000);
  afterAll(() => fake?.close());

  describe("E2bSandboxAdapter against a local E2B API and envd", () => {
    it("creates nothing until a tool asks, then one sandbox per key tagged with it, offline by default", async () => {
      const made = adapter({ template: "al-test", env: { GREETING: "hello" }, lifetimeMs: 120_000 });
      const before = fake.requests.length;
      await Promise.resolve();
      expect(fake.requests.length).toBe(before);
      const sandbox = await made.acquire("run-lazy");
      expect(fake.creates.at(-1)).toMatchObject({
        templateID: "al-test",
        metadata: { [METADATA.key]: "run-lazy", [METADATA.scope]: made.options.scope },
        allow_internet_access: false,
        timeout: 120,
        autoPause: true,
      });
      const result = await sandbox.exec(`cat ${IMAGE_MARKER}; echo "$GREETING $PWD"; echo "\${HOME_SECRET:-unset}"`);
      expect(result.stdout).toBe(`assembly-line test image: busybox\nhello /workspace\nunset\n`);
      expect(fake.requests).toContain("POST /process.Process/Start");
    });

    it("kills the whole process tree at the timeout: a background child never writes", async () => {
      const sandbox = await adapter().acquire("run-tree");
      const result = await sandbox.exec("(sleep 1; echo late > /workspace/late.txt) & sleep 30", { timeoutMs: 300 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
    }, 20_000);

    it("moves binary files byte for byte through envd's /files", async () => {
      const sandbox = await adapter().acquire("run-binary");
      const bytes = new Uint8Array(300_000).map((_, index) => (index * 7919) % 256);
      await sandbox.writeFile("data/blob.bin", bytes.subarray(1000, 201_000));
      const back = await sandbox.readFile("/workspace/data/blob.bin");
      expect(Buffer.from(back).equals(Buffer.from(bytes.subarray(1000, 201_000)))).toBe(true);
      expect(fake.requests.filter((line) => line === "POST /files" || line === "GET /files").length).toBeGreaterThanOrEqual(2);
    });

    it("refuses to read a file larger than readFile returns, naming its size, instead of loading it whole", async () => {
      const sandbox = await adapter().acquire("run-huge-read");
      await sandbox.exec("head -c 268435457 /dev/zero > huge.bin", { timeoutMs: 60_000 });
      const error = await sandbox.readFile("huge.bin").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/268435457 bytes, more than the 268435456 readFile returns/);
      await sandbox.deleteFile("huge.bin");
    }, 120_000);

    it("after a host restart finds the run's sandbox by its metadata, resuming it when E2B paused it", async () => {
      const scope = randomScope("restart");
      const first = adapter({ scope });
      await (await first.acquire("run-resumed")).writeFile("/workspace/kept.txt", "kept");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-resumed" && entry.metadata[METADATA.scope] === scope)!;
      await fake.pause(remote.id);
      const creates = fake.creates.length;
      const again = await adapter({ scope }).acquire("run-resumed");
      expect(text(await again.readFile("/workspace/kept.txt"))).toBe("kept");
      expect(fake.creates.length).toBe(creates);
      expect(fake.requests).toContain(`POST /v2/sandboxes/${remote.id}/connect`);
      expect(fake.sandboxes.get(remote.id)?.state).toBe("running");
    });

    it("makes /workspace in a sandbox whose create went through at E2B while its host crashed (or gave up waiting), when the next acquire finds it", async () => {
      const scope = randomScope("late-create");
      // The create the crashed host sent: E2B made the sandbox, with the key's metadata, and nothing made its /workspace.
      const response = await fetch(`${fake.apiUrl}/v2/sandboxes`, {
        method: "POST",
        headers: { "x-api-key": fake.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ templateID: "base", metadata: { [METADATA.sandbox]: "1", [METADATA.key]: "run-late", [METADATA.scope]: scope }, timeout: 300, autoPause: true }),
      });
      expect(response.status).toBe(201);
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-late");
      expect(await sandbox.exec("pwd")).toMatchObject({ exitCode: 0, stdout: "/workspace\n" });
      expect(fake.creates.filter((body) => (body.metadata as Record<string, string>)[METADATA.scope] === scope)).toHaveLength(1);
      await made.release("run-late");
    }, 60_000);

    it("resumes the run's sandbox when E2B pauses it mid-run (its lifetime ended), so the same handle's next command and file calls succeed with the files intact, each command run once", async () => {
      const scope = randomScope("paused");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-paused");
      await sandbox.writeFile("notes.txt", "kept while paused");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-paused" && entry.metadata[METADATA.scope] === scope)!;
      // The run waits on an approval longer than lifetimeMs: E2B pauses the sandbox (onTimeout "pause").
      await fake.pause(remote.id);
      expect(await sandbox.exec("echo ran >> counted.txt; cat notes.txt")).toMatchObject({ exitCode: 0, stdout: "kept while paused" });
      expect(remote.state).toBe("running");
      await fake.pause(remote.id);
      expect(text(await sandbox.readFile("notes.txt"))).toBe("kept while paused");
      await fake.pause(remote.id);
      await sandbox.writeFile("later.txt", "written after a pause");
      expect(await sandbox.exec("cat counted.txt later.txt")).toMatchObject({ exitCode: 0, stdout: "ran\nwritten after a pause" });
      expect(fake.requests.filter((request) => request === `POST /v2/sandboxes/${remote.id}/connect`)).toHaveLength(3);
      await made.release("run-paused");
    }, 60_000);

    it("restarts the sandbox's lifetime at each acquire of a live one, resuming it when E2B paused it", async () => {
      const scope = randomScope("lifetime");
      const made = adapter({ scope, lifetimeMs: 120_000 });
      const sandbox = await made.acquire("run-lifetime");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-lifetime" && entry.metadata[METADATA.scope] === scope)!;
      remote.timeoutSeconds = 1;
      expect(await made.acquire("run-lifetime")).toBe(sandbox);
      expect(remote.timeoutSeconds).toBe(120);
      await fake.pause(remote.id);
      const again = await made.acquire("run-lifetime");
      expect(again).toBe(sandbox);
      expect(remote.state).toBe("running");
      expect(fake.requests.filter((request) => request === `POST /v2/sandboxes/${remote.id}/connect`)).toHaveLength(2);
      expect(await again.exec("echo still here")).toMatchObject({ exitCode: 0, stdout: "still here\n" });
      await made.release("run-lifetime");
    }, 60_000);

    it("gives a key a new sandbox at its next acquire once E2B killed its live one (killed, or its lifetime ended with onTimeout kill), instead of failing every acquire", async () => {
      const scope = randomScope("killed");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-killed");
      await sandbox.writeFile("gone.txt", "gone");
      const [remote] = [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-killed" && entry.metadata[METADATA.scope] === scope);
      await fetch(`${fake.apiUrl}/sandboxes/${remote!.id}`, { method: "DELETE", headers: { "x-api-key": fake.apiKey } });
      const fresh = await made.acquire("run-killed");
      expect(fresh).not.toBe(sandbox);
      expect(await fresh.listFiles("/workspace")).toEqual([]);
      expect((await fresh.exec("echo again > again.txt")).exitCode).toBe(0);
      // The handle the run already holds works in the new sandbox too.
      expect(text(await sandbox.readFile("again.txt"))).toBe("again\n");
      await made.release("run-killed");
    }, 60_000);

    it("fails a command in a sandbox E2B killed under a live run; the same handle's next call, and the run's next acquire, get a new one", async () => {
      const scope = randomScope("killed-mid-run");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-killed-mid");
      const [remote] = [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-killed-mid" && entry.metadata[METADATA.scope] === scope);
      await fetch(`${fake.apiUrl}/sandboxes/${remote!.id}`, { method: "DELETE", headers: { "x-api-key": fake.apiKey } });
      const error = await sandbox.exec("echo hi").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/the sandbox no longer exists, and its files with it: the next call starts a new, empty sandbox/);
      // The runtime holds one handle for a whole drive of the run: its next call runs in a new sandbox instead of failing too.
      expect((await sandbox.exec("echo hi > hi.txt && cat hi.txt")).stdout).toBe("hi\n");
      const fresh = await made.acquire("run-killed-mid");
      expect(fresh).not.toBe(sandbox);
      // The failed command already found the sandbox gone: the acquire does not try to connect to it again.
      expect(fake.requests).not.toContain(`POST /v2/sandboxes/${remote!.id}/connect`);
      expect((await fresh.exec("cat hi.txt")).stdout).toBe("hi\n");
      expect(fake.creates.filter((body) => (body.metadata as Record<string, string>)[METADATA.scope] === scope)).toHaveLength(2);
      await made.release("run-killed-mid");
    }, 60_000);

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

    it("keeps a command running after its client disconnects or its connection is cut, as envd does, until the command's own timeout", async () => {
      const scope = randomScope("disconnect");
      const made = adapter({ scope });
      const sandbox = await made.acquire("run-disconnect");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-disconnect" && entry.metadata[METADATA.scope] === scope)!;
      const { Sandbox } = await import("e2b");
      const client = await Sandbox.connect(remote.id, { apiKey: fake.apiKey, apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl });
      const handle = await client.commands.run("sleep 1; echo kept > /workspace/kept.txt; sleep 30; echo late > /workspace/late.txt", { background: true, timeoutMs: 3_000 });
      await handle.disconnect();
      // The SDK may keep the stream open after disconnect(): cut it, as a crashed client does.
      fake.dropConnections();
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const written = (await sandbox.listFiles("/workspace")).map((entry) => entry.path);
      expect(written).toContain("/workspace/kept.txt");
      // The request's timeout still ends it.
      expect((await sandbox.exec("ps -o args | grep -c '[s]leep 30' || true")).stdout.trim()).toBe("0");
      await made.release("run-disconnect");
    }, 30_000);

    it("stops a command a crashed owner left running (its connection gone, the command alive) when another process opens the sandbox", async () => {
      const scope = randomScope("crashed");
      const owner = await adapter({ scope }).acquire("run-crashed");
      const abandoned = owner.exec("sleep 2; echo late > /workspace/late.txt", { timeoutMs: 60_000 }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 700));
      fake.dropConnections();
      await abandoned;
      const second = adapter({ scope });
      const resumed = await second.acquire("run-crashed");
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect((await resumed.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
      await second.release("run-crashed");
    }, 30_000);

    it("kills the sandbox at release, leaves other scopes' sandboxes alone, and a second release is a no-op", async () => {
      const made = adapter();
      const other = adapter();
      await made.acquire("run-released");
      await other.acquire("run-released");
      const ours = () => [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-released" && entry.metadata[METADATA.scope] === made.options.scope);
      const theirs = () => [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-released" && entry.metadata[METADATA.scope] === other.options.scope);
      expect(ours()).toHaveLength(1);
      await made.release("run-released");
      expect(ours()).toHaveLength(0);
      expect(theirs()).toHaveLength(1);
      await made.release("run-released");
    });

    it("makes no new sandbox for a handle kept after its key's release: nothing would release it", async () => {
      const scope = randomScope("kept-after-release");
      const made = adapter({ scope });
      const kept = await made.acquire("run-kept");
      await made.release("run-kept");
      for (let call = 0; call < 2; call += 1) {
        const error = await kept.exec("echo hi").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error), String(error)).toBe(true);
      }
      expect(await kept.exec("echo hi").catch((caught: unknown) => caught)).toMatchObject({ code: "AL_ERR_SANDBOX_UNAVAILABLE", details: { released: true } });
      expect(fake.creates.filter((body) => (body.metadata as Record<string, string>)[METADATA.scope] === scope)).toHaveLength(1);
      // The key itself can be acquired again: a new term, whose handle works.
      const again = await made.acquire("run-kept");
      expect((await again.exec("echo again")).stdout).toBe("again\n");
      await made.release("run-kept");
    });

    it("kills, at a release that overlaps an acquire still creating the sandbox, the sandbox that acquire makes", async () => {
      const made = adapter();
      const ours = () => [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-raced" && entry.metadata[METADATA.scope] === made.options.scope);
      const resume = fake.stall(/^POST \/v2\/sandboxes$/);
      const before = fake.requests.length;
      const acquiring = made.acquire("run-raced").catch((error: unknown) => error);
      let released: Promise<unknown> | undefined;
      try {
        await until(() => fake.requests.slice(before).includes("POST /v2/sandboxes"));
        released = made.release("run-raced");
        // A release that does not wait for the acquire looks the sandbox up now, finds none and returns.
        await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      } finally {
        resume();
      }
      await acquiring;
      await released;
      expect(ours()).toHaveLength(0);
    });

    it("lists the keys of its scope's sandboxes, paused ones too, until each is released, and never another scope's", async () => {
      const made = adapter();
      expect(await made.listKeys()).toEqual([]);
      await made.acquire("run-listed");
      await made.acquire("run-paused");
      const paused = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-paused" && entry.metadata[METADATA.scope] === made.options.scope)!;
      await fake.pause(paused.id);
      await adapter().acquire("run-of-another-scope");
      expect(await made.listKeys()).toEqual(["run-listed", "run-paused"]);
      await made.release("run-paused");
      expect(await made.listKeys()).toEqual(["run-listed"]);
      await made.release("run-listed");
      expect(await made.listKeys()).toEqual([]);
    });

    it("lists every key of its scope across E2B's pages of at most 100, following X-Next-Token", async () => {
      const made = adapter();
      const keys = Array.from({ length: 250 }, (_, index) => `run-${String(index).padStart(3, "0")}`);
      const ids = keys.map((key) => fake.addPaused({ [METADATA.sandbox]: "1", [METADATA.key]: key, [METADATA.scope]: made.options.scope }));
      try {
        const before = fake.requests.length;
        expect(await made.listKeys()).toEqual(keys);
        expect(fake.requests.slice(before).filter((line) => line === "GET /v2/sandboxes")).toHaveLength(3);
      } finally {
        for (const id of ids) fake.sandboxes.delete(id);
      }
    });

    it("reports a listing E2B refuses as an AssemblyLineError, without the API key anywhere in it", async () => {
      const wrongKey = "e2b_wrong_listing_key_0123456789";
      const made = adapter({ hostEnv: { E2B_API_KEY: wrongKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } });
      const error = await made.listKeys().catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/listing sandboxes failed \(HTTP 401\)/);
      expect(inspect(error, { depth: Infinity, showHidden: true })).not.toContain(wrongKey);
      expect((error as Error).cause).toBeUndefined();
    });

    it("reports E2B's refusal of a lifetime over the plan's maximum (1 h on Hobby), saying to lower lifetimeMs", async () => {
      fake.maxLifetimeHours = 1;
      try {
        const error = await adapter({ lifetimeMs: 2 * 60 * 60_000 }).acquire("run-too-long").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
        expect(String(error)).toMatch(/HTTP 400.*Timeout cannot be greater than 1 hours/);
        expect((error as { fix?: string }).fix).toMatch(/lifetimeMs/);
      } finally {
        fake.maxLifetimeHours = 24;
      }
    });

    it("never shows the API key when the adapter or its sandbox is logged, inspected or serialized", async () => {
      const made = adapter();
      const sandbox = await made.acquire("run-inspected");
      for (const shown of [inspect(made, { depth: Infinity, showHidden: true }), inspect(sandbox, { depth: Infinity, showHidden: true }), JSON.stringify(made), JSON.stringify(sandbox)]) {
        expect(shown).not.toContain(fake.apiKey);
      }
      await made.release("run-inspected");
    });

    it("reports a wrong API key as the provider's refusal, without the key in the message", async () => {
      const wrongKey = "e2b_wrong_key_0123456789";
      const made = adapter({ hostEnv: { E2B_API_KEY: wrongKey, E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl } });
      const error = await made.acquire("run-wrong-key").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/HTTP 401/);
      expect(String(error)).not.toContain(wrongKey);
      expect((error as Error).cause).toBeUndefined();
    });
  });

  describe("E2bSandboxAdapter paths through a name ending in a newline", () => {
    // /workspace/nl/d<newline> is a folder, /workspace/nl/d a symlink out, /workspace/nl/l a symlink to the first:
    // every name is inside /workspace, but a shell capture $(readlink -f /workspace/nl/l) drops the newline and names /workspace/nl/d.
    const withNewline = (folder: string) => `nl=$(printf '${folder}\\nX'); nl=\${nl%X}`;
    let sandbox: Sandbox;
    const setUp = async (command: string) => {
      const result = await sandbox.exec(command);
      expect(result.exitCode, result.stderr).toBe(0);
    };
    beforeAll(async () => {
      sandbox = await adapter().acquire("run-newline-names");
    }, 60_000);

    it("never writes outside /workspace through a symlink to such a folder, even over /etc/passwd (envd writes the file as root here)", async () => {
      const passwd = (await sandbox.exec("cat /etc/passwd")).stdout;
      await setUp(`mkdir -p /workspace/nl && ${withNewline("/workspace/nl/d")} && mkdir -- "$nl" && ln -s /etc /workspace/nl/d && ln -s -- "$nl" /workspace/nl/l`);
      const errors = [];
      for (const path of ["/workspace/nl/l/passwd", "/workspace/nl/l/owned.txt"]) errors.push(await sandbox.writeFile(path, "root::0:0:root:/root:/bin/sh\n").catch((caught: unknown) => caught));
      expect((await sandbox.exec("cat /etc/passwd")).stdout).toBe(passwd);
      expect((await sandbox.exec("ls /etc/owned.txt")).exitCode).not.toBe(0);
      for (const error of errors) {
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("newline");
      }
    });

    it("never reads a file outside /workspace through a symlink to such a name", async () => {
      await setUp(`mkdir -p /workspace/nl-read && ${withNewline("/workspace/nl-read/f")} && printf inside > "$nl" && ln -s /etc/passwd /workspace/nl-read/f && ln -s -- "$nl" /workspace/nl-read/r`);
      const outcome = await sandbox.readFile("/workspace/nl-read/r").then(text, (caught: unknown) => caught);
      expect(isAssemblyLineError(outcome, "AL_ERR_PATH_ESCAPE"), `read ${String(outcome)}`).toBe(true);
    });

    it("never deletes a file outside /workspace through a symlink to such a folder", async () => {
      await setUp(`mkdir -p /victim /workspace/nl-delete && echo keep > /victim/keep.txt && ${withNewline("/workspace/nl-delete/v")} && mkdir -- "$nl" && ln -s /victim /workspace/nl-delete/v && ln -s -- "$nl" /workspace/nl-delete/l`);
      const error = await sandbox.deleteFile("/workspace/nl-delete/l/keep.txt").catch((caught: unknown) => caught);
      expect((await sandbox.exec("cat /victim/keep.txt")).stdout).toBe("keep\n");
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    });

    it("refuses a path holding a newline (AL_ERR_PATH_ESCAPE) instead of acting on the file without it", async () => {
      await sandbox.writeFile("/workspace/report.txt", "keep me");
      for (const call of [sandbox.deleteFile("/workspace/report.txt\n"), sandbox.writeFile("report.txt\n", "x"), sandbox.readFile("/workspace/report.txt\n"), sandbox.exec("true", { cwd: "/workspace\n" })]) {
        const error = await call.catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
        expect(String(error)).toContain("contains a newline");
      }
      expect(text(await sandbox.readFile("/workspace/report.txt"))).toBe("keep me");
    });

    it('refuses to run a command in a folder reached through a symlink to "/workspace<newline>", a folder beside /workspace', async () => {
      await setUp(`${withNewline("/workspace")} && mkdir -p -- "$nl" && ln -s -- "$nl" /workspace/to-sibling`);
      const error = await sandbox.exec("echo ran > /workspace/ran.txt", { cwd: "/workspace/to-sibling" }).catch((caught: unknown) => caught);
      expect((await sandbox.exec("ls /workspace/ran.txt")).exitCode).not.toBe(0);
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    });
  });

  describe("E2bSandboxAdapter snapshots (E2B snapshots of the sandbox)", () => {
    it("saves snapshots, keeps only retainLast, restores a chosen one and acquires from the latest", async () => {
      const made = adapter({ snapshot: { mode: "manual", retainLast: 2, reason: "checkpoint" } });
      expect(isSnapshottingSandboxAdapter(made)).toBe(true);
      const sandbox = await made.acquire("run-snap");
      const taken = [];
      for (const version of ["v1", "v2", "v3"]) {
        await sandbox.writeFile("state.txt", version);
        taken.push(await made.snapshot("run-snap", version === "v3" ? { reason: "before deploy" } : {}));
      }
      expect(taken.map((entry) => entry.reason)).toEqual(["checkpoint", "checkpoint", "before deploy"]);
      expect((await made.listSnapshots("run-snap")).map((entry) => entry.id)).toEqual([taken[2]!.id, taken[1]!.id]);
      const ours = [...fake.snapshots.values()].filter((entry) => entry.names.some((name) => name.includes(made.snapshotPrefix("run-snap"))));
      expect(ours).toHaveLength(2);
      await sandbox.writeFile("state.txt", "v4 (not snapshotted)");
      const restored = await made.restore("run-snap", taken[1]!.id);
      expect(text(await restored.readFile("state.txt"))).toBe("v2");
      expect(ours.map((entry) => entry.snapshotID)).toContain(fake.creates.at(-1)!.templateID);
      // After the sandbox is gone, the key comes back from its latest snapshot.
      await made.release("run-snap");
      expect(text(await (await made.acquire("run-snap")).readFile("state.txt"))).toBe("v3");
      const pruned = await made.restore("run-snap", taken[0]!.id).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(pruned, "AL_ERR_SNAPSHOT_NOT_FOUND"), String(pruned)).toBe(true);
      await made.release("run-snap");
    }, 120_000);

    it("auto mode snapshots at release, so the run's files survive the sandbox, even for a restarted host", async () => {
      const scope = randomScope("auto");
      const made = adapter({ scope, snapshot: { mode: "auto", retainLast: 1 } });
      await (await made.acquire("run-auto")).writeFile("notes.md", "kept across release");
      await made.release("run-auto");
      expect(await made.listSnapshots("run-auto")).toHaveLength(1);
      const restarted = adapter({ scope, snapshot: { mode: "auto", retainLast: 1 } });
      expect(text(await (await restarted.acquire("run-auto")).readFile("notes.md"))).toBe("kept across release");
      await restarted.release("run-auto");
      expect(await restarted.listSnapshots("run-auto")).toHaveLength(1);
    }, 120_000);

    it("pauses the sandbox when the auto snapshot at release fails, so it bills no compute, and a later release snapshots and kills it", async () => {
      const made = adapter({ snapshot: { mode: "auto", retainLast: 1 } });
      await (await made.acquire("run-auto-refused")).writeFile("notes.md", "kept through a refused snapshot");
      const [remote] = [...fake.sandboxes.values()].filter((entry) => entry.metadata[METADATA.key] === "run-auto-refused" && entry.metadata[METADATA.scope] === made.options.scope);
      fake.rateLimit(new RegExp(`^POST /sandboxes/${remote!.id}/snapshots$`), 1);
      const error = await made.release("run-auto-refused").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(remote!.state).toBe("paused");
      expect(await made.listKeys()).toEqual(["run-auto-refused"]);
      await made.release("run-auto-refused");
      expect(await made.listKeys()).toEqual([]);
      expect(text(await (await made.acquire("run-auto-refused")).readFile("notes.md"))).toBe("kept through a refused snapshot");
      await made.release("run-auto-refused");
    }, 120_000);

    it("refuses a snapshot when the sandbox has no snapshot policy", async () => {
      const made = adapter();
      await made.acquire("run-nosnap");
      const error = await made.snapshot("run-nosnap").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SNAPSHOT_DISABLED"), String(error)).toBe(true);
    });
  });

  describe("E2bSandboxAdapter writes as the Docker and local sandboxes do", () => {
    it("leaves the other name of a hard-linked file (maybe outside /workspace) as it was, keeping the file's mode", async () => {
      const sandbox = await adapter().acquire("run-hard-link");
      expect((await sandbox.exec("printf shared > /tmp/outside && chmod 640 /tmp/outside && ln /tmp/outside /workspace/linked")).exitCode).toBe(0);
      await sandbox.writeFile("linked", "new");
      expect((await sandbox.exec("cat /workspace/linked; echo; cat /tmp/outside; echo; stat -c %a /workspace/linked")).stdout).toBe("new\nshared\n640\n");
    });
  });

  describe("E2bSandboxAdapter lifetime during a long drive", () => {
    /*
     * E2B's sandbox timeout is absolute: lifetimeMs after the create or connect (or setTimeout) that
     * set it, E2B pauses the sandbox, even mid-command. The fake keeps no such clock, so this test
     * does: lifetimeMs after the acquire, unless a request since renewed it, the sandbox is paused.
     */
    it("renews the lifetime before a command that could outlast it, so a drive longer than lifetimeMs keeps its sandbox", async () => {
      const scope = randomScope("e2b");
      const made = adapter({ scope, lifetimeMs: 5_000 });
      const sandbox = await made.acquire("run-long-drive");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.metadata[METADATA.key] === "run-long-drive" && entry.metadata[METADATA.scope] === scope)!;
      const seen = fake.requests.length;
      const clock = setTimeout(() => {
        const renewed = fake.requests.slice(seen).some((request) => request === `POST /v2/sandboxes/${remote.id}/connect` || request === `POST /sandboxes/${remote.id}/timeout`);
        if (!renewed) void fake.pause(remote.id);
      }, 5_000);
      try {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        // A 7-second build started 1 s into a 5-second lifetime, with a timeout that allows it.
        expect(await sandbox.exec("sleep 7; echo built", { timeoutMs: 30_000 })).toMatchObject({ exitCode: 0, stdout: "built\n" });
      } finally {
        clearTimeout(clock);
        await made.release("run-long-drive");
      }
    }, 60_000);
  });
}
