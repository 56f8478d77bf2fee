import { inspect } from "node:util";
import { Daytona } from "@daytonaio/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAssemblyLineError, isSnapshottingSandboxAdapter } from "@assemblyline-agents/core";
import { DaytonaSandboxAdapter, LABELS, daytonaSandbox } from "../src/index.js";
import { providerError } from "../src/provider-error.js";
import { IMAGE_MARKER, baseImages, probeEngine, randomScope } from "../../docker/test/support/engine.js";
import { startFakeDaytona, type FakeDaytona } from "./support/fake-daytona.js";

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

describe("daytonaSandbox options", () => {
  it("refuses a scope that is no string with a definition error naming the option, not a TypeError", () => {
    const error = refusal(() => daytonaSandbox({ scope: 42 } as never));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toContain("daytonaSandbox option scope is 42");
  });

  it("checks the snapshot policy where it is written", () => {
    const error = refusal(() => daytonaSandbox({ image: "node:22", snapshot: { mode: "hourly" as never } }));
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
    expect(String(error)).toMatch(/option snapshot\.mode/);
    expect(refusal(() => daytonaSandbox({ image: "node:22", snapshot: { mode: "manual", retainLast: 3, reason: "operator-requested checkpoint" } }))).toBeUndefined();
  });

  it("refuses an API key in the options (they are build artifacts) and unknown options", () => {
    expect(String(refusal(() => daytonaSandbox({ apiKey: "dtn_secret" } as never)))).toMatch(/apiKey is not accepted.*\n.*DAYTONA_API_KEY/);
    expect(String(refusal(() => daytonaSandbox({ imgae: "node:22" } as never)))).toMatch(/option imgae/);
    expect(String(refusal(() => daytonaSandbox({ network: "host" as never })))).toMatch(/option network/);
  });

  it("refuses cpus, memoryGiB or diskGiB without image, naming them, instead of dropping them (a snapshot brings its own resources)", () => {
    for (const options of [{ cpus: 2 }, { memoryGiB: 4, baseSnapshot: "al-test-snapshot" }, { diskGiB: 10, cpus: 1, baseSnapshot: "al-test-snapshot" }]) {
      const error = refusal(() => daytonaSandbox(options));
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_DEFINITION"), String(error)).toBe(true);
      for (const name of Object.keys(options).filter((key) => key !== "baseSnapshot")) expect(String(error)).toContain(name);
      expect((error as { fix?: string }).fix).toMatch(/image/);
    }
    expect(refusal(() => daytonaSandbox({ image: "node:22", cpus: 2, memoryGiB: 4, diskGiB: 10 }))).toBeUndefined();
  });

  it("masks the API key in a provider error's message and never keeps the SDK error (it holds the request headers)", () => {
    const encoded = Buffer.from("token:dtn_live_secret").toString("base64");
    const sdkError = Object.assign(new Error(`request with Bearer dtn_live_secret (Basic ${encoded}, ${encodeURIComponent("?key=dtn_live_secret")}) was refused`), { statusCode: 403, config: { headers: { Authorization: "Bearer dtn_live_secret" } } });
    const error = providerError("Daytona", "creating the sandbox", sdkError, ["dtn_live_secret"]);
    expect(error.message).toContain("HTTP 403");
    expect(JSON.stringify({ message: error.message, details: error.details, fix: error.fix })).not.toContain("dtn_live_secret");
    expect(error.message).not.toContain(encoded);
    expect(error.cause).toBeUndefined();
  });

  it("fails the first acquire, not the boot, when DAYTONA_API_KEY is missing", async () => {
    const adapter = new DaytonaSandboxAdapter({ hostEnv: {} });
    const error = await adapter.acquire("run-1").catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
    expect(String(error)).toMatch(/DAYTONA_API_KEY/);
  });
});

const probe = await probeEngine("DaytonaSandboxAdapter behaviour");

if (probe.available) {
  const { docker } = probe;
  let fake: FakeDaytona;
  let image: string;
  const adapters: DaytonaSandboxAdapter[] = [];
  const adapter = (options: ConstructorParameters<typeof DaytonaSandboxAdapter>[0] = {}) => {
    const made = new DaytonaSandboxAdapter({ scope: randomScope("dt"), hostEnv: { DAYTONA_API_KEY: fake.apiKey, DAYTONA_API_URL: fake.apiUrl }, ...options });
    adapters.push(made);
    return made;
  };
  beforeAll(async () => {
    image = (await baseImages(docker)).busybox;
    fake = await startFakeDaytona({ docker, image: "no-default-image", snapshots: { "al-test-snapshot": image } });
  }, 120_000);
  afterAll(async () => {
    for (const made of adapters) await made.close();
    await fake?.close();
  });

  describe("DaytonaSandboxAdapter against a local Daytona API", () => {
    it("creates nothing until a tool asks, then one named, labelled sandbox per key, offline by default", async () => {
      const made = adapter({ image, env: { GREETING: "hello" } });
      const before = fake.requests.length;
      await Promise.resolve();
      expect(fake.requests.length).toBe(before);
      const sandbox = await made.acquire("run-lazy");
      expect(fake.creates.at(-1)).toMatchObject({
        name: made.sandboxName("run-lazy"),
        labels: { [LABELS.key]: "run-lazy", [LABELS.scope]: made.options.scope },
        networkBlockAll: true,
        buildInfo: { dockerfileContent: `FROM ${image}\n` },
      });
      const result = await sandbox.exec(`cat ${IMAGE_MARKER}; echo "$GREETING $PWD"; echo "\${HOME_SECRET:-unset}"`);
      expect(result.stdout).toBe(`assembly-line test image: busybox\nhello /workspace\nunset\n`);
    });

    it("starts from a Daytona snapshot by name when baseSnapshot is given", async () => {
      const sandbox = await adapter({ baseSnapshot: "al-test-snapshot" }).acquire("run-snapshot");
      expect(fake.creates.at(-1)).toMatchObject({ snapshot: "al-test-snapshot" });
      expect((await sandbox.exec(`cat ${IMAGE_MARKER}`)).stdout).toMatch(/busybox/);
    });

    it("kills the whole process tree at the timeout: a background child never writes", async () => {
      const sandbox = await adapter({ image }).acquire("run-tree");
      const result = await sandbox.exec("(sleep 1; echo late > /workspace/late.txt) & sleep 30", { timeoutMs: 300 });
      expect(result).toMatchObject({ timedOut: true, exitCode: 124 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await sandbox.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
    }, 20_000);

    it("moves binary files byte for byte through the toolbox's upload and download", async () => {
      const sandbox = await adapter({ image }).acquire("run-binary");
      const bytes = new Uint8Array(300_000).map((_, index) => (index * 7919) % 256);
      await sandbox.writeFile("data/blob.bin", bytes);
      expect(Buffer.from(await sandbox.readFile("/workspace/data/blob.bin")).equals(Buffer.from(bytes))).toBe(true);
      expect(await sandbox.listFiles("/workspace/data")).toEqual([{ path: "/workspace/data/blob.bin", type: "file", size: 300_000 }]);
      expect(fake.requests.some((line) => line.endsWith("/files/bulk-upload"))).toBe(true);
      expect(fake.requests.some((line) => line.endsWith("/files/bulk-download"))).toBe(true);
    });

    it("refuses to read a file larger than readFile returns, naming its size, instead of loading it whole", async () => {
      const sandbox = await adapter({ image }).acquire("run-huge-read");
      await sandbox.exec("head -c 268435457 /dev/zero > huge.bin", { timeoutMs: 60_000 });
      const error = await sandbox.readFile("huge.bin").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/268435457 bytes, more than the 268435456 readFile returns/);
      await sandbox.deleteFile("huge.bin");
    }, 120_000);

    it("refuses a listing larger than listFiles returns (16 MiB), naming the folder, instead of returning it cut short", async () => {
      const made = adapter({ image });
      const sandbox = await made.acquire("run-huge-listing");
      // About 6,000 files under a 3,000-character path: a listing of some 18 MiB.
      const deep = Array.from({ length: 12 }, (_, index) => `${String(index).padStart(2, "0")}${"d".repeat(248)}`).join("/");
      const setup = await sandbox.exec(`mkdir -p ${deep} && cd ${deep} && seq 1 6000 | xargs touch && echo ok`, { timeoutMs: 60_000 });
      expect(setup.stdout).toBe("ok\n");
      const error = await sandbox.listFiles("/workspace").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_UNAVAILABLE"), Array.isArray(error) ? `listed ${error.length} entries` : String(error)).toBe(true);
      expect(String(error)).toMatch(/listing of \/workspace .*more than the 16 MiB/);
      // A smaller folder still lists whole.
      expect(await sandbox.listFiles(`/workspace/${deep}/1`)).toEqual([{ path: `/workspace/${deep}/1`, type: "file", size: 0 }]);
      await made.release("run-huge-listing");
    }, 120_000);

    it("refuses a symlink that leads out of /workspace", async () => {
      const sandbox = await adapter({ image }).acquire("run-symlink");
      await sandbox.exec("ln -s /etc /workspace/etc-link");
      const error = await sandbox.readFile("/workspace/etc-link/passwd").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_PATH_ESCAPE"), String(error)).toBe(true);
    });

    it("never writes, reads or deletes outside /workspace through a symlink to a name ending in a newline, nor takes a path with a newline for the one without", async () => {
      // In /workspace/nl, d<newline> is a folder and d a symlink to /etc, f<newline> a file and f a symlink to /etc/passwd; l and r link to
      // the names with the newline: a shell capture $(readlink -f l) would drop the newline and name d, out of the workspace.
      const sandbox = await adapter({ image }).acquire("run-newline-names");
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

    it("after a host restart finds the run's sandbox again, starting it when Daytona stopped it", async () => {
      const scope = randomScope("restart");
      const first = adapter({ image, scope });
      await (await first.acquire("run-resumed")).writeFile("/workspace/kept.txt", "kept");
      await first.close();
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === first.sandboxName("run-resumed"))!;
      await remote.container!.stop({ t: 1 });
      remote.state = "stopped";
      const creates = fake.creates.length;
      const second = adapter({ image, scope });
      const again = await second.acquire("run-resumed");
      expect(text(await again.readFile("/workspace/kept.txt"))).toBe("kept");
      expect(fake.creates.length).toBe(creates);
      expect(fake.requests).toContain(`POST /api/sandbox/${remote.id}/start`);
    });

    it("starts the run's sandbox again when Daytona stops it mid-run (auto-stop), so the same handle's next command and file calls succeed with the files intact, each command run once", async () => {
      const made = adapter({ image });
      const sandbox = await made.acquire("run-auto-stopped");
      await sandbox.writeFile("notes.txt", "kept while stopped");
      const client = new Daytona({ apiKey: fake.apiKey, apiUrl: fake.apiUrl });
      const stop = async () => (await client.get(made.sandboxName("run-auto-stopped"))).stop();
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-auto-stopped"))!;
      try {
        // The run waits on an approval longer than autoStopMinutes: Daytona stops the sandbox.
        await stop();
        expect(await sandbox.exec("echo ran >> counted.txt; cat notes.txt")).toMatchObject({ exitCode: 0, stdout: "kept while stopped" });
        expect(remote.state).toBe("started");
        await stop();
        expect(text(await sandbox.readFile("notes.txt"))).toBe("kept while stopped");
        await stop();
        await sandbox.writeFile("later.txt", "written after a stop");
        expect(await (await made.acquire("run-auto-stopped")).exec("cat counted.txt later.txt")).toMatchObject({ exitCode: 0, stdout: "ran\nwritten after a stop" });
        expect(fake.requests.filter((request) => request === `POST /api/sandbox/${remote.id}/start`)).toHaveLength(3);
      } finally {
        await client[Symbol.asyncDispose]();
      }
      await made.release("run-auto-stopped");
    }, 60_000);

    it("gives a key a new sandbox at its next acquire once its live one was deleted at Daytona (elsewhere, or by auto-delete), instead of the dead one", async () => {
      const made = adapter({ image });
      const sandbox = await made.acquire("run-deleted");
      await sandbox.writeFile("gone.txt", "gone");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-deleted"))!;
      await fetch(`${fake.apiUrl}/sandbox/${remote.id}`, { method: "DELETE", headers: { authorization: `Bearer ${fake.apiKey}` } });
      const fresh = await made.acquire("run-deleted");
      expect(fresh).not.toBe(sandbox);
      expect(await fresh.listFiles("/workspace")).toEqual([]);
      expect((await fresh.exec("echo again > again.txt")).exitCode).toBe(0);
      // The handle the run already holds works in the new sandbox too.
      expect(text(await sandbox.readFile("again.txt"))).toBe("again\n");
      await made.release("run-deleted");
    }, 60_000);

    it("fails a command in a sandbox deleted at Daytona under a live run; the same handle's next call, and the run's next acquire, get a new one", async () => {
      const made = adapter({ image });
      const sandbox = await made.acquire("run-deleted-mid");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-deleted-mid"))!;
      await fetch(`${fake.apiUrl}/sandbox/${remote.id}`, { method: "DELETE", headers: { authorization: `Bearer ${fake.apiKey}` } });
      const error = await sandbox.exec("echo hi").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      const lookups = fake.requests.filter((request) => request === `GET /api/sandbox/${remote.id}`).length;
      expect(String(error)).toMatch(/the sandbox no longer exists, and its files with it: the next call starts a new, empty sandbox/);
      // The runtime holds one handle for a whole drive of the run: its next call runs in a new sandbox instead of failing too.
      expect((await sandbox.exec("echo hi > hi.txt && cat hi.txt")).stdout).toBe("hi\n");
      const fresh = await made.acquire("run-deleted-mid");
      expect(fresh).not.toBe(sandbox);
      // The failed command already found the sandbox gone: nothing looks it up again.
      expect(fake.requests.filter((request) => request === `GET /api/sandbox/${remote.id}`)).toHaveLength(lookups);
      expect((await fresh.exec("cat hi.txt")).stdout).toBe("hi\n");
      await made.release("run-deleted-mid");
    }, 60_000);

    it("makes /workspace in a sandbox whose create timed out but still finished at Daytona, when the next acquire finds it", async () => {
      const made = adapter({ image, createTimeoutMs: 1_000 });
      const name = made.sandboxName("run-late");
      const resume = fake.stall(/^POST \/api\/sandbox$/);
      try {
        const error = await made.acquire("run-late").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      } finally {
        resume();
      }
      await until(() => [...fake.sandboxes.values()].some((entry) => entry.name === name && entry.state === "started"));
      const sandbox = await made.acquire("run-late");
      expect(await sandbox.exec("pwd")).toMatchObject({ exitCode: 0, stdout: "/workspace\n" });
      await made.release("run-late");
    }, 30_000);

    it("stops a command the run's earlier owner left running when another process opens the sandbox", async () => {
      const scope = randomScope("leftover");
      const first = adapter({ image, scope });
      const owner = await first.acquire("run-leftover");
      // The owner stalls (or crashed) while its command still runs, with a long timeout of its own.
      const abandoned = owner.exec("sleep 2; echo late > /workspace/late.txt", { timeoutMs: 60_000 }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 700));
      const second = adapter({ image, scope });
      const resumed = await second.acquire("run-leftover");
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect((await resumed.listFiles("/workspace")).map((entry) => entry.path)).not.toContain("/workspace/late.txt");
      expect((await resumed.exec("echo still usable")).stdout).toBe("still usable\n");
      await abandoned;
      await second.release("run-leftover");
    }, 30_000);

    it("deletes the sandbox at release, and a second release is a no-op", async () => {
      const made = adapter({ image });
      await made.acquire("run-released");
      const name = made.sandboxName("run-released");
      expect([...fake.sandboxes.values()].some((entry) => entry.name === name)).toBe(true);
      await made.release("run-released");
      expect([...fake.sandboxes.values()].some((entry) => entry.name === name)).toBe(false);
      await made.release("run-released");
    });

    it("deletes, at a release that overlaps an acquire still creating the sandbox, the sandbox that acquire makes", async () => {
      const made = adapter({ image });
      const name = made.sandboxName("run-raced");
      const resume = fake.stall(/^POST \/api\/sandbox$/);
      const before = fake.requests.length;
      const acquiring = made.acquire("run-raced").catch((error: unknown) => error);
      let released: Promise<unknown> | undefined;
      try {
        await until(() => fake.requests.slice(before).includes("POST /api/sandbox"));
        released = made.release("run-raced");
        // A release that does not wait for the acquire looks the sandbox up now, finds none and returns.
        await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 1_000))]);
      } finally {
        resume();
      }
      await acquiring;
      await released;
      expect([...fake.sandboxes.values()].some((entry) => entry.name === name)).toBe(false);
    });

    it("lists the keys of its scope's sandboxes, stopped and archived ones too, until each is released, and never another scope's", async () => {
      const made = adapter({ image });
      expect(await made.listKeys()).toEqual([]);
      await made.acquire("run-listed");
      await made.acquire("run-stopped");
      const stopped = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-stopped"))!;
      await stopped.container!.stop({ t: 1 });
      stopped.state = "stopped";
      fake.addArchived({ name: made.sandboxName("run-archived"), labels: { [LABELS.sandbox]: "1", [LABELS.key]: "run-archived", [LABELS.scope]: made.options.scope } });
      await adapter({ image }).acquire("run-of-another-scope");
      expect(await made.listKeys()).toEqual(["run-archived", "run-listed", "run-stopped"]);
      await made.release("run-archived");
      await made.release("run-stopped");
      expect(await made.listKeys()).toEqual(["run-listed"]);
      await made.release("run-listed");
      expect(await made.listKeys()).toEqual([]);
    });

    it("lists every key of its scope across Daytona's pages, following nextCursor", async () => {
      const made = adapter({ image });
      const keys = Array.from({ length: 250 }, (_, index) => `run-${String(index).padStart(3, "0")}`);
      const ids = keys.map((key) => fake.addArchived({ name: made.sandboxName(key), labels: { [LABELS.sandbox]: "1", [LABELS.key]: key, [LABELS.scope]: made.options.scope } }));
      try {
        const before = fake.requests.length;
        expect(await made.listKeys()).toEqual(keys);
        expect(fake.requests.slice(before).filter((line) => line === "GET /api/sandbox")).toHaveLength(3);
      } finally {
        for (const id of ids) fake.sandboxes.delete(id);
      }
    });

    it("lists again once Daytona's rate limit lets it, instead of failing the sweep", async () => {
      const made = adapter({ image });
      fake.addArchived({ name: made.sandboxName("run-limited-listing"), labels: { [LABELS.sandbox]: "1", [LABELS.key]: "run-limited-listing", [LABELS.scope]: made.options.scope } });
      const limited = fake.limited.length;
      fake.rateLimit(/^GET \/api\/sandbox$/, 1, "1");
      expect(await made.listKeys()).toEqual(["run-limited-listing"]);
      expect(fake.limited.slice(limited)).toEqual(["GET /api/sandbox"]);
      await made.release("run-limited-listing");
    });

    it("reports a listing Daytona refuses as an AssemblyLineError, without the API key anywhere in it", async () => {
      const wrongKey = "dtn_wrong_listing_key_0123456789";
      const made = adapter({ image, hostEnv: { DAYTONA_API_KEY: wrongKey, DAYTONA_API_URL: fake.apiUrl } });
      const error = await made.listKeys().catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/listing sandboxes failed \(HTTP 401\)/);
      expect(inspect(error, { depth: Infinity, showHidden: true })).not.toContain(wrongKey);
      expect((error as Error).cause).toBeUndefined();
    });

    it("never uses a same-named sandbox that another key owns", async () => {
      const made = adapter({ image });
      await made.acquire("run-owner");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-owner"))!;
      remote.labels[LABELS.key] = "someone-else";
      const other = adapter({ image, scope: made.options.scope });
      const error = await other.acquire("run-owner").catch((caught: unknown) => caught);
      expect(String(error)).toMatch(/is not the sandbox of run-owner/);
    });

    it("fails a call to a Daytona API that stops answering after requestTimeoutMs, naming the option, instead of holding the run", async () => {
      const made = adapter({ image, requestTimeoutMs: 1_000 });
      const resume = fake.stall(new RegExp(`^GET /api/sandbox/${made.sandboxName("run-hung")}$`));
      try {
        const started = Date.now();
        const error = await made.acquire("run-hung").catch((caught: unknown) => caught);
        expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
        expect(String(error)).toMatch(/requestTimeoutMs/);
        expect(Date.now() - started).toBeLessThan(15_000);
      } finally {
        resume();
      }
    }, 30_000);

    it("waits out Daytona's rate limit for the time Retry-After says and tries again, instead of failing the run", async () => {
      const made = adapter({ image });
      fake.rateLimit(new RegExp(`^GET /api/sandbox/${made.sandboxName("run-limited")}$`), 2, "1");
      const started = Date.now();
      const sandbox = await made.acquire("run-limited");
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      expect(fake.limited.filter((line) => line.endsWith(made.sandboxName("run-limited")))).toHaveLength(2);
      // A command refused by the rate limiter never ran, so it is tried again too.
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-limited"))!;
      fake.rateLimit(new RegExp(`^POST /toolbox/${remote.id}/process/execute$`), 1, "1");
      expect((await sandbox.exec("echo after the limit")).stdout).toBe("after the limit\n");
      await made.release("run-limited");
    }, 30_000);

    it("fails a rate-limited call at once, as Daytona's 429, when Retry-After asks for longer than it waits", async () => {
      const made = adapter({ image });
      fake.rateLimit(new RegExp(`^GET /api/sandbox/${made.sandboxName("run-limited-long")}$`), 1, "600");
      const started = Date.now();
      const error = await made.acquire("run-limited-long").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/HTTP 429/);
      expect((error as { fix?: string }).fix).toMatch(/rate limit/);
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it("stops retrying a rate-limited call after three tries", async () => {
      const made = adapter({ image });
      fake.rateLimit(new RegExp(`^GET /api/sandbox/${made.sandboxName("run-limited-often")}$`), 5, "0");
      const error = await made.acquire("run-limited-often").catch((caught: unknown) => caught);
      expect(String(error)).toMatch(/HTTP 429/);
      expect(fake.limited.filter((line) => line.endsWith(made.sandboxName("run-limited-often")))).toHaveLength(3);
    });

    it("checks requestTimeoutMs where it is written", () => {
      expect(String(refusal(() => daytonaSandbox({ requestTimeoutMs: 0 })))).toMatch(/option requestTimeoutMs/);
    });

    it("never shows the API key when the adapter or its sandbox is logged, inspected or serialized", async () => {
      const made = adapter({ image });
      const sandbox = await made.acquire("run-inspected");
      for (const shown of [inspect(made, { depth: Infinity, showHidden: true }), inspect(sandbox, { depth: Infinity, showHidden: true }), JSON.stringify(made), JSON.stringify(sandbox)]) {
        expect(shown).not.toContain(fake.apiKey);
      }
      await made.release("run-inspected");
    });

    it("reports a wrong API key as the provider's refusal, without the key in the message", async () => {
      const wrongKey = "dtn_wrong_key_0123456789";
      const made = adapter({ image, hostEnv: { DAYTONA_API_KEY: wrongKey, DAYTONA_API_URL: fake.apiUrl } });
      const error = await made.acquire("run-wrong-key").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE"), String(error)).toBe(true);
      expect(String(error)).toMatch(/HTTP 401/);
      expect(String(error)).not.toContain(wrongKey);
      expect((error as Error).cause).toBeUndefined();
    });
  });

  describe("DaytonaSandboxAdapter snapshots (Daytona snapshots of the sandbox)", () => {
    it("saves snapshots, keeps only retainLast, restores a chosen one and acquires from the latest", async () => {
      const made = adapter({ image, snapshot: { mode: "manual", retainLast: 2, reason: "checkpoint" } });
      expect(isSnapshottingSandboxAdapter(made)).toBe(true);
      const sandbox = await made.acquire("run-snap");
      const taken = [];
      for (const version of ["v1", "v2", "v3"]) {
        await sandbox.writeFile("state.txt", version);
        taken.push(await made.snapshot("run-snap", version === "v3" ? { reason: "before deploy" } : {}));
      }
      expect(taken.map((entry) => entry.reason)).toEqual(["checkpoint", "checkpoint", "before deploy"]);
      const kept = await made.listSnapshots("run-snap");
      expect(kept.map((entry) => entry.id)).toEqual([taken[2]!.id, taken[1]!.id]);
      expect([...fake.snapshots.keys()].filter((name) => name.startsWith(made.sandboxName("run-snap")))).toHaveLength(2);
      await sandbox.writeFile("state.txt", "v4 (not snapshotted)");
      const restored = await made.restore("run-snap", taken[1]!.id);
      expect(text(await restored.readFile("state.txt"))).toBe("v2");
      expect(fake.creates.at(-1)).toMatchObject({ snapshot: made.snapshotName("run-snap", taken[1]!.id) });
      // After the sandbox is gone, the key comes back from its latest snapshot.
      await made.release("run-snap");
      expect(text(await (await made.acquire("run-snap")).readFile("state.txt"))).toBe("v3");
      const pruned = await made.restore("run-snap", taken[0]!.id).catch((caught: unknown) => caught);
      expect(isAssemblyLineError(pruned, "AL_ERR_SNAPSHOT_NOT_FOUND"), String(pruned)).toBe(true);
      await made.release("run-snap");
    }, 120_000);

    it("auto mode snapshots at release, so the run's files survive the sandbox, even for a restarted host", async () => {
      const scope = randomScope("auto");
      const made = adapter({ image, scope, snapshot: { mode: "auto", retainLast: 1 } });
      await (await made.acquire("run-auto")).writeFile("notes.md", "kept across release");
      await made.release("run-auto");
      expect(await made.listSnapshots("run-auto")).toHaveLength(1);
      const restarted = adapter({ image, scope, snapshot: { mode: "auto", retainLast: 1 } });
      expect(text(await (await restarted.acquire("run-auto")).readFile("notes.md"))).toBe("kept across release");
      await restarted.release("run-auto");
      expect(await restarted.listSnapshots("run-auto")).toHaveLength(1);
    }, 120_000);

    it("stops the sandbox when the auto snapshot at release fails, so it bills no compute, and a later release snapshots and deletes it", async () => {
      const made = adapter({ image, snapshot: { mode: "auto", retainLast: 1 } });
      await (await made.acquire("run-auto-refused")).writeFile("notes.md", "kept through a refused snapshot");
      const remote = [...fake.sandboxes.values()].find((entry) => entry.name === made.sandboxName("run-auto-refused"))!;
      // Daytona refuses the snapshot (its rate limiter, asking for longer than the adapter waits).
      fake.rateLimit(new RegExp(`^POST /api/sandbox/${remote.id}/snapshot$`), 1, "600");
      const error = await made.release("run-auto-refused").catch((caught: unknown) => caught);
      expect(String(error)).toMatch(/snapshotting sandbox .*HTTP 429/);
      expect(remote.state).toBe("stopped");
      expect(await made.listKeys()).toEqual(["run-auto-refused"]);
      await made.release("run-auto-refused");
      expect(await made.listKeys()).toEqual([]);
      expect(text(await (await made.acquire("run-auto-refused")).readFile("notes.md"))).toBe("kept through a refused snapshot");
      await made.release("run-auto-refused");
    }, 120_000);

    it("refuses a snapshot when the sandbox has no snapshot policy", async () => {
      const made = adapter({ image });
      await made.acquire("run-nosnap");
      const error = await made.snapshot("run-nosnap").catch((caught: unknown) => caught);
      expect(isAssemblyLineError(error, "AL_ERR_SNAPSHOT_DISABLED"), String(error)).toBe(true);
    });
  });

  describe("DaytonaSandboxAdapter writes as the Docker and local sandboxes do", () => {
    it("leaves the other name of a hard-linked file (maybe outside /workspace) as it was, keeping the file's mode", async () => {
      const sandbox = await adapter({ image }).acquire("run-hard-link");
      expect((await sandbox.exec("printf shared > /tmp/outside && chmod 640 /tmp/outside && ln /tmp/outside /workspace/linked")).exitCode).toBe(0);
      await sandbox.writeFile("linked", "new");
      expect((await sandbox.exec("cat /workspace/linked; echo; cat /tmp/outside; echo; stat -c %a /workspace/linked")).stdout).toBe("new\nshared\n640\n");
    });
  });
}
