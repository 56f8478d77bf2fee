import { isAssemblyLineError, isStateAdapter } from "@assemblyline-agents/core";
import { describeStateConformance } from "@assemblyline-agents/core/testkit";
import { appendFile, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { crc32 } from "node:zlib";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { FileStateAdapter } from "../src/index.js";
import { logLine, tempFolders } from "./support/state-folders.js";

const folders = tempFolders("al-file-state-");
const tempFolder = () => folders.make();
afterEach(() => folders.removeAll());

describeStateConformance("FileStateAdapter", async () => {
  const directory = await mkdtemp(join(tmpdir(), "al-file-state-kit-"));
  const state = await FileStateAdapter.open({ directory });
  return {
    state,
    cleanup: async () => {
      await state.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
});

// The same kits again with a tiny compaction threshold, so most writes cross a snapshot.
describeStateConformance("FileStateAdapter compacting on every write", async () => {
  const directory = await mkdtemp(join(tmpdir(), "al-file-state-kit-"));
  const state = await FileStateAdapter.open({ directory, compactAfterBytes: 1, compactWhenSuperseded: 0 });
  return {
    state,
    cleanup: async () => {
      await state.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
});

/** The pid of a process that has exited and been reaped. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString());
}

const newRun = (id: string) => ({
  id,
  agentId: "agent",
  agentRevision: "rev",
  modelSpec: "scripted/test",
  input: { message: "hi", metadata: {} },
});

describe("FileStateAdapter", () => {
  it("implements the whole StateAdapter", () => {
    expect(isStateAdapter(new FileStateAdapter({ directory: "/nonexistent" }))).toBe(true);
  });

  it("refuses options it would ignore or misread, naming them", () => {
    const refused = (options: unknown) => {
      try {
        new FileStateAdapter(options as never);
      } catch (error) {
        expect(isAssemblyLineError(error, "AL_ERR_STATE_CONFIG"), String(error)).toBe(true);
        return (error as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(options)}`);
    };
    expect(refused({ dir: "/tmp/state" })).toContain('option "dir" unknown');
    // "8MB" was compared as NaN: the log was never folded into a snapshot.
    expect(refused({ directory: "/tmp/state", compactAfterBytes: "8MB" })).toContain('compactAfterBytes is "8MB"');
    expect(refused({ directory: "/tmp/state", compactAfterBytes: Number.NaN })).toContain("compactAfterBytes");
    expect(refused({ directory: "/tmp/state", compactWhenSuperseded: "0.5" })).toContain("compactWhenSuperseded");
    expect(refused({ directory: 42 })).toContain("option directory is 42");
    expect(new FileStateAdapter({ directory: "/tmp/state", compactAfterBytes: 0, compactWhenSuperseded: 1 }).directory).toBe("/tmp/state");
  });

  it("defaults to .assembly-line/state under the agent folder", () => {
    expect(new FileStateAdapter({ agentDir: "/srv/agent" }).directory).toBe("/srv/agent/.assembly-line/state");
  });

  it("brings back every facet after close and reopen", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun({ ...newRun("r1"), idempotencyKey: "evt-1" });
    await first.appendEvents("r1", [{ type: "run.completed" }], {
      run: { status: "completed", output: { ok: true } },
      step: { runId: "r1", key: "s", result: 1, metadata: {}, createdAt: new Date().toISOString() },
      delivery: { id: "d1", channel: "http", payload: { text: "done" } },
    });
    await first.appendConversationMessages("c1", [{ role: "user", content: "hello", runId: null, createdAt: new Date().toISOString() }]);
    await first.writeMemory("notes/a.md", "remember caf\u00e9 \u{1F600}");
    await first.putSetting("model", "x", { actor: "ops" });
    await first.recordUsage({
      id: "u1", runId: "r1", conversationId: null, provider: "p", model: "m",
      inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, createdAt: new Date().toISOString(),
    });
    await first.close();

    const second = await FileStateAdapter.open({ directory });
    expect(await second.getRun("r1")).toMatchObject({ status: "completed", output: { ok: true }, lastSeq: 2 });
    expect((await second.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "run.completed"]);
    expect(await second.getStep("r1", "s")).toMatchObject({ result: 1 });
    expect(await second.listDeliveries("r1")).toHaveLength(1);
    expect(await second.listConversationMessages("c1")).toHaveLength(1);
    expect(await second.readMemory("notes/a.md")).toMatchObject({ content: "remember caf\u00e9 \u{1F600}" });
    expect(await second.getSetting("model")).toBe("x");
    expect(await second.listUsage({ runId: "r1" })).toHaveLength(1);
    expect((await second.createRun({ ...newRun("r2"), idempotencyKey: "evt-1" })).created).toBe(false);
    await second.close();
  });

  it("keeps state across snapshots and the log written after them", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory, compactAfterBytes: 2_000, compactWhenSuperseded: 0 });
    await first.createRun(newRun("r1"));
    for (let index = 0; index < 40; index += 1) await first.appendEvents("r1", [{ type: "tick", data: { index } }]);
    await first.close();
    const files = await readdir(directory);
    expect(files).toContain("snapshot.json");
    expect(files.filter((name) => name.endsWith(".wal"))).toHaveLength(1);

    const second = await FileStateAdapter.open({ directory });
    const events = await second.listEvents("r1");
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 41 }, (_, index) => index + 1));
    await second.close();
  });

  for (const [label, compactAfterBytes] of [["the log", undefined], ["a snapshot", 1]] as const) {
    it(`replays usage a log of an earlier version wrote (no agent) into every agent's conversation budgets, beside agents' own, from ${label}`, async () => {
      const directory = await tempFolder();
      const created = await FileStateAdapter.open({ directory });
      await created.close();
      const record = (id: string) => ({
        id,
        runId: `run-${id}`,
        conversationId: "c1",
        provider: "p",
        model: "m",
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        costUsd: 0,
        createdAt: "2030-01-01T00:00:00.000Z",
      });
      // The op as versions before agentId wrote it.
      await appendFile(join(directory, "log-0.wal"), logLine({ ops: [{ op: "usage.put", record: record("old") }] }, { startsWrite: true }));
      const first = await FileStateAdapter.open({ directory, ...(compactAfterBytes ? { compactAfterBytes, compactWhenSuperseded: 0 } : {}) });
      await first.recordUsage({ ...record("mine"), agentId: "support" });
      await first.recordUsage({ ...record("sub"), agentId: "support/researcher" });
      await first.recordUsage({ ...record("theirs"), agentId: "support-eu" });
      await first.close();
      if (compactAfterBytes) expect(await readdir(directory)).toContain("snapshot.json");

      const second = await FileStateAdapter.open({ directory });
      const of = async (agentId?: string) =>
        (await second.listUsage({ conversationId: "c1", ...(agentId ? { agentId } : {}) })).map((u) => [u.id, u.agentId ?? null]);
      expect(await of("support")).toEqual([["old", null], ["mine", "support"], ["sub", "support/researcher"]]);
      expect(await of("support-eu")).toEqual([["old", null], ["theirs", "support-eu"]]);
      expect(await of()).toEqual([["old", null], ["mine", "support"], ["sub", "support/researcher"], ["theirs", "support-eu"]]);
      await second.close();
    });
  }

  for (const [label, compactAfterBytes] of [["the log", undefined], ["a snapshot", 1]] as const) {
    it(`replays conversation messages a log of an earlier version wrote (no agent) to every agent, beside agents' own, from ${label}`, async () => {
      const directory = await tempFolder();
      const created = await FileStateAdapter.open({ directory });
      await created.close();
      // The op as versions before agentId wrote it.
      const legacy = { op: "conversation.append", conversationId: "c1", messages: [{ role: "user", content: "old", runId: "r0", createdAt: "2030-01-01T00:00:00.000Z" }] };
      await appendFile(join(directory, "log-0.wal"), logLine({ ops: [legacy] }, { startsWrite: true }));
      const first = await FileStateAdapter.open({ directory, ...(compactAfterBytes ? { compactAfterBytes, compactWhenSuperseded: 0 } : {}) });
      await first.appendConversationMessages("c1", [{ role: "user", content: "mine", runId: "r1", createdAt: "2030-01-01T00:00:01.000Z" }], { agentId: "support" });
      await first.appendConversationMessages("c1", [{ role: "user", content: "theirs", runId: "r2", createdAt: "2030-01-01T00:00:02.000Z" }], { agentId: "sales" });
      await first.close();
      if (compactAfterBytes) expect(await readdir(directory)).toContain("snapshot.json");

      const second = await FileStateAdapter.open({ directory });
      const of = async (agentId?: string) => (await second.listConversationMessages("c1", agentId ? { agentId } : {})).map((m) => [m.content, m.agentId]);
      expect(await of("support")).toEqual([["old", null], ["mine", "support"]]);
      expect(await of("sales")).toEqual([["old", null], ["theirs", "sales"]]);
      expect(await of()).toEqual([["old", null], ["mine", "support"], ["theirs", "sales"]]);
      await second.close();
    });
  }

  for (const [label, compactAfterBytes] of [["the log", undefined], ["a snapshot", 1]] as const) {
    it(`claims the pending deliveries, and only those, after a reopen from ${label}`, async () => {
      const directory = await tempFolder();
      const first = await FileStateAdapter.open({ directory, ...(compactAfterBytes ? { compactAfterBytes, compactWhenSuperseded: 0 } : {}) });
      for (const id of ["r1", "r2", "r3", "r4"]) {
        await first.createRun(newRun(id));
        await first.appendEvents(id, [{ type: "run.completed" }], { run: { status: "completed" }, delivery: { id: `d-${id}`, channel: "http", payload: {} } });
      }
      // r2 delivered, r3 failed for good, r4 failed once and due again: r1 and r4 stay pending.
      const claimed = await first.claimDeliveries({ owner: "w", ttlMs: 60_000 });
      expect(claimed.map((delivery) => delivery.id)).toEqual(["d-r1", "d-r2", "d-r3", "d-r4"]);
      await first.completeDelivery("d-r2", "w");
      await first.failDelivery("d-r3", "w", "gone");
      const due = new Date(Date.now() - 1_000);
      await first.failDelivery("d-r4", "w", "busy", due);
      await first.failDelivery("d-r1", "w", "busy", due);
      await first.close();
      if (compactAfterBytes) expect(await readdir(directory)).toContain("snapshot.json");

      const second = await FileStateAdapter.open({ directory });
      expect((await second.claimDeliveries({ owner: "v", ttlMs: 60_000 })).map((delivery) => delivery.id)).toEqual(["d-r1", "d-r4"]);
      expect(await second.claimDeliveries({ owner: "v", ttlMs: 60_000 })).toEqual([]);
      await second.close();
    });
  }

  it("drops a torn last record and keeps everything before it", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun(newRun("r1"));
    await first.appendEvents("r1", [{ type: "one" }]);
    await first.close();
    const log = join(directory, "log-0.wal");
    const intact = (await stat(log)).size;
    await appendFile(log, '0badc0de {"ops":[{"op":"events.app');

    const second = await FileStateAdapter.open({ directory });
    expect((await second.getRun("r1"))?.lastSeq).toBe(2);
    expect((await stat(log)).size).toBe(intact);
    await second.appendEvents("r1", [{ type: "two" }]);
    await second.close();
    const third = await FileStateAdapter.open({ directory });
    expect((await third.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "one", "two"]);
    await third.close();
  });

  it("refuses a log whose damaged record records written after it follow, and cuts nothing", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun(newRun("r1"));
    // Each call waited for: each record its own synced write.
    for (const type of ["one", "two", "three"]) await first.appendEvents("r1", [{ type }]);
    await first.close();
    const log = join(directory, "log-0.wal");
    const text = await readFile(log, "utf8");
    // Each write's first record is marked in a way a reader of any version takes as a line like the rest.
    const lines = text.split("\n").slice(0, -1);
    expect(lines.filter((line) => line.startsWith(" ", 9)).length).toBeGreaterThanOrEqual(4);
    for (const line of lines) expect(line.slice(0, 9)).toBe(`${crc32(Buffer.from(line.slice(9))).toString(16).padStart(8, "0")} `);
    const damagedAt = text.indexOf("\n", text.indexOf('"one"')) + 1;
    const damaged = text.replace('"two"', '"owt"');
    await writeFile(log, damaged);

    const error = await FileStateAdapter.open({ directory }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_ROW_INVALID")).toBe(true);
    expect((error as Error).message).toContain(`the record at byte ${damagedAt} is damaged`);
    expect((error as { fix?: string }).fix).toContain(`truncate -s ${damagedAt} ${log}`);
    expect(await readFile(log, "utf8")).toBe(damaged);

    // Cut where the fix says, the folder opens with the records before the damage.
    await truncate(log, damagedAt);
    const cut = await FileStateAdapter.open({ directory });
    expect((await cut.listEvents("r1")).map((event) => event.type)).toEqual(["run.created", "one"]);
    await cut.close();
  });

  it("cuts a damaged record of the last synced write, and that write's records after it", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun(newRun("r1"));
    await first.createRun(newRun("r2"));
    // Called together: one synced write holds both records, as a write a power cut tore could.
    await Promise.all([first.appendEvents("r1", [{ type: "one" }]), first.appendEvents("r2", [{ type: "two" }])]);
    await first.close();
    const log = join(directory, "log-0.wal");
    await writeFile(log, (await readFile(log, "utf8")).replace('"one"', '"eno"'));

    const second = await FileStateAdapter.open({ directory });
    expect((await second.listEvents("r1")).map((event) => event.type)).toEqual(["run.created"]);
    expect((await second.listEvents("r2")).map((event) => event.type)).toEqual(["run.created"]);
    await second.close();
  });

  it("ignores a last record whose checksum does not match", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun(newRun("r1"));
    await first.appendEvents("r1", [{ type: "one" }]);
    await first.close();
    const log = join(directory, "log-0.wal");
    const lines = (await readFile(log, "utf8")).split("\n");
    lines[1] = lines[1]!.replace('"one"', '"six"');
    await writeFile(log, lines.join("\n"));

    const second = await FileStateAdapter.open({ directory });
    expect((await second.listEvents("r1")).map((event) => event.type)).toEqual(["run.created"]);
    await second.close();
  });

  it("refuses a second open of a folder held in this process, naming the folder and pid", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    const error = await FileStateAdapter.open({ directory }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(error, "AL_ERR_STATE_LOCKED")).toBe(true);
    expect((error as Error).message).toContain(directory);
    expect((error as Error).message).toContain(String(process.pid));
    await first.close();
    const again = await FileStateAdapter.open({ directory });
    await again.close();
  });

  it("takes over a lock left by a process that no longer exists", async () => {
    const directory = await tempFolder();
    const { hostname } = await import("node:os");
    await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: deadPid(), host: hostname(), token: "old" }));
    const adapter = await FileStateAdapter.open({ directory });
    expect(JSON.parse(await readFile(join(directory, "LOCK"), "utf8")).pid).toBe(process.pid);
    await adapter.close();
    expect(await readdir(directory)).not.toContain("LOCK");
  });

  it("refuses a second live process with the folder and the holder's pid, and takes over once it dies", async () => {
    const directory = await tempFolder();
    const { spawn } = await import("node:child_process");
    const holder = spawn(process.execPath, [fileURLToPath(new URL("./fixtures/hold-lock.mjs", import.meta.url)), directory], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise((resolve) => holder.on("exit", resolve));
    try {
      await new Promise((resolve) => holder.stdout.once("data", resolve));
      const error = await FileStateAdapter.open({ directory }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ name: "AssemblyLineError", code: "AL_ERR_STATE_LOCKED" });
      expect((error as Error).message).toContain(directory);
      expect((error as Error).message).toContain(`pid ${holder.pid}`);
    } finally {
      holder.kill("SIGKILL");
      await exited;
    }
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.close();
  });

  it("takes over a lock of an earlier process that had this process's pid (a restarted container), but not one of this process", async () => {
    const directory = await tempFolder();
    const { hostname } = await import("node:os");
    // What a container killed and restarted on the same folder finds: its own pid and host, written by the process before.
    await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: process.pid, host: hostname(), token: "old", process: "an-earlier-process" }));
    const adapter = await FileStateAdapter.open({ directory });
    const written = JSON.parse(await readFile(join(directory, "LOCK"), "utf8"));
    expect(written).toMatchObject({ pid: process.pid, host: hostname() });
    expect(written.process).not.toBe("an-earlier-process");
    const second = await FileStateAdapter.open({ directory }).catch((caught: unknown) => caught);
    expect(isAssemblyLineError(second, "AL_ERR_STATE_LOCKED")).toBe(true);
    await adapter.close();
  });

  it.skipIf(process.platform !== "linux")("takes over a lock whose pid now belongs to another process, started later", async () => {
    const directory = await tempFolder();
    const { hostname } = await import("node:os");
    const { spawn } = await import("node:child_process");
    const other = spawn(process.execPath, ["-e", "setTimeout(() => undefined, 60_000)"], { stdio: "ignore" });
    const exited = new Promise((resolve) => other.on("exit", resolve));
    try {
      // The pid is alive, but its start time is not the one the holder recorded: the pid was reused.
      await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: other.pid, host: hostname(), token: "old", process: "gone", started: "boot:1" }));
      const adapter = await FileStateAdapter.open({ directory });
      expect(JSON.parse(await readFile(join(directory, "LOCK"), "utf8")).pid).toBe(process.pid);
      await adapter.close();
    } finally {
      other.kill("SIGKILL");
      await exited;
    }
  });

  it("takes over a stale lock past a takeover guard left by an opener killed mid-takeover, empty or naming it", async () => {
    const { hostname } = await import("node:os");
    for (const guard of ["", JSON.stringify({ pid: deadPid(), host: hostname(), token: "guard" })]) {
      const directory = await tempFolder();
      await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: deadPid(), host: hostname(), token: "old" }));
      await writeFile(join(directory, "LOCK.takeover"), guard);
      const adapter = await FileStateAdapter.open({ directory });
      expect(JSON.parse(await readFile(join(directory, "LOCK"), "utf8")).pid).toBe(process.pid);
      expect(await readdir(directory)).not.toContain("LOCK.takeover");
      await adapter.close();
    }
  });

  it("lets exactly one of 5 openers racing for a stale lock take it over", async () => {
    const directory = await tempFolder();
    const { hostname } = await import("node:os");
    await writeFile(join(directory, "LOCK"), JSON.stringify({ pid: deadPid(), host: hostname(), token: "old" }));
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => FileStateAdapter.open({ directory })));
    const opened = outcomes.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    expect(opened).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ code: "AL_ERR_STATE_LOCKED" });
    }
    await opened[0]!.close();
  });

  it("refuses calls after close", async () => {
    const directory = await tempFolder();
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.close();
    await expect(adapter.getRun("x")).rejects.toMatchObject({ code: "AL_ERR_STATE_LOCKED" });
  });

  it("brings back text outside ASCII after a reopen, checksummed over its UTF-8 bytes", async () => {
    const directory = await tempFolder();
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.createRun(newRun("r1"));
    const text = "café, 東京, 🚀 and a lone \u00ff";
    await adapter.appendEvents("r1", [{ type: "model.response", data: { text } }]);
    await adapter.close();
    const log = await readFile(join(directory, "log-0.wal"), "utf8");
    expect(log).toContain(text);
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.listEvents("r1")).at(-1)?.data).toEqual({ text });
    await reopened.close();
  });

  it("finishes writes that were started before close", async () => {
    const directory = await tempFolder();
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.createRun(newRun("r1"));
    const writes = Array.from({ length: 10 }, () => adapter.appendEvents("r1", [{ type: "tick" }]));
    await adapter.close();
    await Promise.all(writes);
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.getRun("r1"))?.lastSeq).toBe(11);
    await reopened.close();
  });

  it("rejects a value that is not JSON without writing anything", async () => {
    const directory = await tempFolder();
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.createRun(newRun("r1"));
    await expect(adapter.appendEvents("r1", [{ type: "bad", data: { n: 1n as never } }])).rejects.toMatchObject({
      code: "AL_ERR_STATE_INPUT_INVALID",
    });
    expect((await adapter.getRun("r1"))?.lastSeq).toBe(1);
    await adapter.close();
  });

  it("answers with what a reopen rebuilds, also for values JSON changes (Date, undefined, NaN, -0, toJSON)", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    await first.createRun(newRun("r1"));
    // Each in a write of its own: one such value in a record is enough to change how the record is kept.
    const odd: Array<[unknown, unknown]> = [
      [new Date("2026-01-02T03:04:05.000Z"), "2026-01-02T03:04:05.000Z"],
      [[undefined, 1], [null, 1]],
      [{ gone: undefined, kept: 1 }, { kept: 1 }],
      [Number.NaN, null],
      [-0, 0],
      [{ toJSON: () => "as text" }, "as text"],
      [{ nested: ["a", { b: true }] }, { nested: ["a", { b: true }] }],
    ];
    const returned = [];
    for (const [index, [value]] of odd.entries()) {
      const appended = await first.appendEvents("r1", [{ type: "odd", data: { value } as never }], {
        toolCall: {
          runId: "r1", callId: `c${index}`, toolName: "t", input: { value } as never, inputDigest: "d", status: "completed", output: value as never,
          modelOutput: null, error: null, approvalId: null, question: null, createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z",
        },
      });
      returned.push(...appended);
    }
    const read = async (adapter: FileStateAdapter) => ({ events: await adapter.listEvents("r1"), calls: await adapter.listToolCalls("r1") });
    const before = await read(first);
    await first.close();
    const second = await FileStateAdapter.open({ directory });
    const after = await read(second);
    await second.close();
    // Compared as JSON-free structures: toEqual would let { gone: undefined } pass for {}.
    const shape = (value: unknown) => JSON.stringify(value, (_key, item) => (item === undefined ? "<undefined>" : Object.is(item, -0) ? "<-0>" : Number.isNaN(item) ? "<NaN>" : item));
    expect(shape(before)).toBe(shape(after));
    // appendEvents answers with the events as a read gives them back, not as the caller passed them.
    expect(shape(returned)).toBe(shape(before.events.slice(1)));
    expect(before.events.slice(1).map((event) => event.data.value)).toStrictEqual(odd.map(([, kept]) => kept));
    expect(before.calls.map((call) => call.output)).toStrictEqual(odd.map(([, kept]) => kept));
  });

  it("reads a log written before run patches and events without their ids, and writes on after it", async () => {
    const directory = await tempFolder();
    const at = "2026-01-01T00:00:00.000Z";
    const run = { id: "r1", agentId: "agent", agentRevision: "rev", conversationId: null, status: "queued", modelSpec: "scripted/test", input: { message: "hi", metadata: {} }, output: null, error: null, lastSeq: 1, observedSeq: 0, lease: null, createdAt: at, updatedAt: at };
    const created = { id: "r1:1", runId: "r1", seq: 1, type: "run.created", data: {}, createdAt: at };
    const records = [
      { ops: [{ op: "run.create", run, ordinal: 1, idempotencyKey: null, event: created }] },
      { ops: [
        { op: "events.append", runId: "r1", events: [{ id: "r1:2", runId: "r1", seq: 2, type: "run.started", data: { n: 2 }, createdAt: at }] },
        { op: "run.put", run: { ...run, status: "running", lastSeq: 2, lease: { owner: "w", expiresAt: at, token: 3 } } },
      ] },
    ];
    await writeFile(join(directory, "log-0.wal"), records.map((record) => logLine(record)).join(""));
    const adapter = await FileStateAdapter.open({ directory });
    expect(await adapter.getRun("r1")).toMatchObject({ status: "running", lastSeq: 2 });
    await adapter.appendEvents("r1", [{ type: "later", data: { n: 3 } }], { run: { status: "completed" } });
    await adapter.close();
    const reopened = await FileStateAdapter.open({ directory });
    expect((await reopened.listEvents("r1")).map(({ id, runId, seq, type, data }) => ({ id, runId, seq, type, data }))).toEqual([
      { id: "r1:1", runId: "r1", seq: 1, type: "run.created", data: {} },
      { id: "r1:2", runId: "r1", seq: 2, type: "run.started", data: { n: 2 } },
      { id: "r1:3", runId: "r1", seq: 3, type: "later", data: { n: 3 } },
    ]);
    expect(await reopened.getRun("r1")).toMatchObject({ status: "completed", lastSeq: 3, lease: { owner: "w", token: 3 } });
    await reopened.close();
  });

  it("reads a log whose tool calls were patched (as earlier versions wrote them), and hands out its own copies", async () => {
    const directory = await tempFolder();
    const at = "2026-01-01T00:00:00.000Z";
    const run = { id: "r1", agentId: "agent", agentRevision: "rev", conversationId: null, status: "running", modelSpec: "scripted/test", input: { message: "hi", metadata: {} }, output: null, error: null, lastSeq: 1, observedSeq: 0, lease: null, createdAt: at, updatedAt: at };
    const call = { runId: "r1", callId: "c1", toolName: "t", input: { value: "alpha" }, inputDigest: "d1", status: "requested", output: null, modelOutput: null, error: null, approvalId: null, question: null, createdAt: at, updatedAt: at };
    const records = [
      { ops: [{ op: "run.create", run, ordinal: 1, idempotencyKey: null }] },
      { ops: [{ op: "toolCall.put", call }, { op: "step.put", step: { runId: "r1", key: "s1", result: { n: 1 }, createdAt: at } }] },
      { ops: [{ op: "toolCall.patch", runId: "r1", callId: "c1", set: { status: "completed", output: { n: 5 }, updatedAt: "2026-01-01T00:00:01.000Z" } }] },
    ];
    await writeFile(join(directory, "log-0.wal"), records.map((record) => logLine(record)).join(""));
    const adapter = await FileStateAdapter.open({ directory });
    const completed = { ...call, status: "completed", output: { n: 5 }, updatedAt: "2026-01-01T00:00:01.000Z" };
    expect(await adapter.getToolCall("r1", "c1")).toStrictEqual(completed);
    // What a read hands out is the caller's: changing it changes nothing stored.
    const [listed] = await adapter.listToolCalls("r1");
    (listed!.output as { n: number }).n = 6;
    const step = await adapter.getStep("r1", "s1");
    (step!.result as { n: number }).n = 2;
    expect(await adapter.listToolCalls("r1")).toStrictEqual([completed]);
    expect(await adapter.getStep("r1", "s1")).toStrictEqual({ runId: "r1", key: "s1", result: { n: 1 }, createdAt: at });
    await adapter.close();
  });

  it("logs a run's created event and its events' shared time once each, a tool call's every write whole, and a reopen rebuilds what was answered", async () => {
    const directory = await tempFolder();
    const first = await FileStateAdapter.open({ directory });
    const { createdEvent } = await first.createRun(newRun("r1"));
    const call = (status: "requested" | "completed", output: { n: number } | null) => ({
      runId: "r1", callId: "c1", toolName: "t", input: { value: "alpha" }, inputDigest: "d1", status, output, modelOutput: output,
      error: null, approvalId: null, question: null, createdAt: "2026-01-01T00:00:00.000Z", updatedAt: `2026-01-01T00:00:0${output ? 1 : 0}.000Z`,
    });
    await first.appendEvents("r1", [{ type: "a", data: { n: 1 } }, { type: "b", data: { n: 2 } }], { toolCall: call("requested", null) });
    await first.appendEvents("r1", [{ type: "c", data: { n: 3 } }], { toolCall: call("completed", { n: 5 }) });
    // A later write without a field the stored call has replaces the call, as an upsert does.
    const { modelOutput: _dropped, ...withoutModelOutput } = call("completed", { n: 6 });
    await first.appendEvents("r1", [], { toolCall: withoutModelOutput as never });
    const read = async (adapter: FileStateAdapter) => ({ run: await adapter.getRun("r1"), events: await adapter.listEvents("r1"), calls: await adapter.listToolCalls("r1") });
    const before = await read(first);
    await first.close();

    const ops = (await readFile(join(directory, "log-0.wal"), "utf8")).trim().split("\n").flatMap((line) => JSON.parse(line.slice(9)).ops);
    expect(ops.find((op) => op.op === "run.create")).not.toHaveProperty("event");
    const appends = ops.filter((op) => op.op === "events.append");
    expect(appends.map((op) => typeof op.createdAt)).toEqual(["string", "string"]);
    expect(appends.flatMap((op) => op.events).some((event: object) => "createdAt" in event)).toBe(false);
    expect(ops.filter((op) => op.op.startsWith("toolCall.")).map((op) => [op.op, Object.keys(op.set ?? op.call).sort()])).toEqual([
      ["toolCall.put", Object.keys({ ...call("requested", null), runId: "r1" }).sort()],
      ["toolCall.put", Object.keys({ ...call("completed", { n: 5 }), runId: "r1" }).sort()],
      ["toolCall.put", Object.keys({ ...withoutModelOutput, runId: "r1" }).sort()],
    ]);

    const second = await FileStateAdapter.open({ directory });
    const after = await read(second);
    await second.close();
    expect(after).toStrictEqual(before);
    expect(before.events[0]).toStrictEqual(createdEvent);
    // What the log leaves out is what the record says: the event is the one the state kit expects.
    expect(createdEvent!.data).toStrictEqual({ agentId: "agent", agentRevision: "rev", conversationId: null, modelSpec: "scripted/test", status: "queued", input: { message: "hi", metadata: {} } });
    expect(createdEvent!.createdAt).toBe(before.run!.createdAt);
    expect(before.events.map(({ seq, type, createdAt }) => [seq, type, typeof createdAt])).toEqual([
      [1, "run.created", "string"], [2, "a", "string"], [3, "b", "string"], [4, "c", "string"],
    ]);
    expect(before.calls).toStrictEqual([{ ...withoutModelOutput, runId: "r1" }]);
  });

  it("keeps what it stored apart from the caller's objects, which the caller may change after the write", async () => {
    const directory = await tempFolder();
    const adapter = await FileStateAdapter.open({ directory });
    await adapter.createRun(newRun("r1"));
    const data = { list: ["a"], nested: { n: 1 } };
    const [returned] = await adapter.appendEvents("r1", [{ type: "plain", data }]);
    data.list.push("b");
    data.nested.n = 2;
    expect(returned!.data).toEqual({ list: ["a"], nested: { n: 1 } });
    (returned!.data as { list: string[] }).list.push("c");
    expect((await adapter.listEvents("r1"))[1]!.data).toEqual({ list: ["a"], nested: { n: 1 } });
    await adapter.close();
  });
});
