import { spawn, type ChildProcess } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { isAssemblyLineError, type AssemblyLineError } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { InMemoryStateAdapter, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { SHUTDOWN_STEPS, listenNodeRuntime } from "../src/index.js";
import { RunWatcher } from "../src/host/run-watcher.js";
import { TELEMETRY_FLUSH_FLOOR_MS, TELEMETRY_FLUSH_GRACE_MS, createShutdown } from "../src/host/shutdown.js";
import { call, captureLogger, fixtureBundle, routedHarness, startHost, tempDir, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

describe("graceful shutdown", () => {
  it("drains in the spec's order, once, however often it is called", async () => {
    const calls: string[] = [];
    const state = Object.assign(new InMemoryStateAdapter(), { close: async () => void calls.push("state.close") });
    const host = await startHost(bundle, {
      state,
      telemetry: { export: () => undefined, flush: async () => void calls.push("telemetry.flush") },
      scheduler: { start: async () => void calls.push("scheduler.start"), stop: async () => void calls.push("scheduler.stop") },
    });
    let readyDuringDrain: number | undefined;
    host.server.prependListener("request", (req) => {
      // Start the drain the moment this probe arrives: it must already see /readyz as 503.
      if (req.url === "/readyz?drain") void host.shutdown();
    });
    readyDuringDrain = (await call(`${host.url}/readyz?drain`)).status;
    const [first, second] = [host.shutdown(), host.shutdown({ timeoutMs: 1 })];
    expect(first).toBe(second);
    await first;
    await host.closed;
    expect(readyDuringDrain).toBe(503);
    expect(host.logger.events("shutdown.step").map((entry) => entry.fields.step)).toEqual([...SHUTDOWN_STEPS]);
    expect(calls).toEqual(["scheduler.start", "scheduler.stop", "telemetry.flush", "state.close"]);
    expect(host.logger.events("shutdown.completed")).toHaveLength(1);
    await expect(call(`${host.url}/healthz`)).rejects.toThrow();
  });

  it("bounds waiting for runs by the timeout, answers waiting callers, and keeps going past a failing step", async () => {
    process.env.HOST_FIXTURE_STEP_MS = "2000";
    try {
      const host = await startHost(bundle);
      const waiting = call(`${host.url}/message?wait=30`, { body: { message: "slow: long" } });
      await waitFor(async () => ((await host.runtime.state.runs.listRuns()).runs[0]?.status === "running" ? true : undefined));
      const started = Date.now();
      await host.shutdown({ timeoutMs: 150 });
      expect(Date.now() - started).toBeLessThan(1_500);
      const reply = await waiting;
      expect(reply.status).toBe(202);
      expect(reply.body.status).toBe("running");
      expect(host.logger.events("shutdown.timeout")).toHaveLength(1);
    } finally {
      process.env.HOST_FIXTURE_STEP_MS = "150";
    }

    const logger = captureLogger();
    const order: string[] = [];
    const shutdown = createShutdown(
      {
        markDraining: () => void order.push("readyz"),
        closeListener: async () => void order.push("listener"),
        stopScheduler: async () => {
          throw new Error("scheduler stuck");
        },
        stopWorkers: async () => void order.push("workers"),
        runtimeIdle: () => new Promise(() => undefined),
        flushTelemetry: async () => void order.push("flush"),
        closeState: async () => void order.push("close"),
        forceClose: () => void order.push("force"),
      },
      logger,
      50,
    );
    await expect(shutdown()).rejects.toMatchObject({ code: "AL_ERR_HOST_SHUTDOWN", details: { steps: ["scheduler"] } });
    expect(order).toEqual(["readyz", "listener", "workers", "flush", "close", "force"]);
    expect(logger.events("shutdown.step_failed")[0]!.fields).toMatchObject({ step: "scheduler", err: "Error: scheduler stuck" });
  });

  it("rejects, once every step ran, naming the step that failed (a state store that cannot close), and still resolves closed", async () => {
    const cannotClose = new Error("the state store could not flush its last writes");
    const state = Object.assign(new InMemoryStateAdapter(), {
      close: async () => {
        throw cannotClose;
      },
    });
    const logger = captureLogger();
    const telemetry = { flushed: 0, export: () => undefined, flush: async () => void (telemetry.flushed += 1) };
    const host = await listenNodeRuntime({ ...bundle, state, agentHarness: routedHarness(), port: 0, host: "127.0.0.1", devMode: true, logger, env: {}, telemetry });
    onTestFinished(() => host.shutdown().catch(() => undefined));

    const error = await host.shutdown().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isAssemblyLineError(error, "AL_ERR_HOST_SHUTDOWN")).toBe(true);
    expect((error as AssemblyLineError).message).toMatch(/state\.close failed/);
    expect((error as AssemblyLineError).details).toEqual({ steps: ["state.close"] });
    expect(((error as Error).cause as AggregateError).errors).toEqual([cannotClose]);
    await host.closed;
    // The steps before it all ran, the listener is closed, and the drain said it failed rather than completed.
    expect(telemetry.flushed).toBe(1);
    await expect(call(`${host.url}/healthz`)).rejects.toThrow();
    expect(logger.events("shutdown.step_failed").map((entry) => entry.fields.step)).toEqual(["state.close"]);
    expect(logger.events("shutdown.failed").map((entry) => entry.fields.steps)).toEqual([["state.close"]]);
    expect(logger.events("shutdown.completed")).toEqual([]);
  });

  it("waits for the runs through a timeoutMs longer than a timer can wait, instead of giving up on them at once", async () => {
    process.env.HOST_FIXTURE_STEP_MS = "600";
    try {
      const host = await startHost(bundle);
      const accepted = await call(`${host.url}/message`, { body: { message: "slow: long" } });
      await waitFor(async () => ((await host.runtime.state.runs.getRun(accepted.body.runId))?.status === "running" ? true : undefined));
      await host.shutdown({ timeoutMs: 3_000_000_000 });
      expect(host.logger.events("shutdown.timeout")).toEqual([]);
      expect((await host.runtime.state.runs.getRun(accepted.body.runId))?.status).toBe("completed");
    } finally {
      process.env.HOST_FIXTURE_STEP_MS = "150";
    }
  });

  it("answers a ?wait= request whose run was still being stored when the shutdown began, instead of dropping it at the deadline", async () => {
    process.env.HOST_FIXTURE_STEP_MS = "6000";
    try {
      // The store takes a moment to write the run: the shutdown releases the waiting requests while it does.
      const state = new InMemoryStateAdapter();
      let arrived = false;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const createRun = state.createRun.bind(state);
      state.createRun = async (...args: Parameters<typeof createRun>) => {
        arrived = true;
        await gate;
        return createRun(...args);
      };
      const host = await startHost(bundle, { state });
      const reply = call(`${host.url}/message?wait=30`, { body: { message: "slow: long", conversationId: "c1" } }).then(
        (value) => ({ status: value.status, runStatus: value.body.status, at: Date.now() }),
        (error: unknown) => ({ error: String((error as Error & { cause?: unknown }).cause ?? error), at: Date.now() }),
      );
      await waitFor(() => arrived || undefined);
      const drain = host.shutdown({ timeoutMs: 4_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stored = Date.now();
      open();
      const answered = await reply;
      await drain;
      // The run was accepted: its caller is told so at once, as callers already waiting are.
      expect((await state.listRuns()).runs).toHaveLength(1);
      expect(answered).toMatchObject({ status: 202 });
      expect(answered.at - stored).toBeLessThan(1_500);
    } finally {
      process.env.HOST_FIXTURE_STEP_MS = "150";
    }
  }, 30_000);

  it("answers every wait at once once released, whichever way it waits, with the run as it stands", async () => {
    const running = { runId: "r1", status: "running" as const };
    const runtime = { hooks: { event: { tap: () => undefined } }, getRun: async () => running } as unknown as ConstructorParameters<typeof RunWatcher>[0];
    const watcher = new RunWatcher(runtime);
    watcher.release();
    const never = new Promise<never>(() => undefined);
    const watch = watcher.watch("r1");
    const answers = Promise.all([watcher.waitForRest("r1", 30_000), watch.rested(30_000), watcher.untilDriven("r1", never, 30_000)]);
    const first = await Promise.race([answers, new Promise((resolve) => setTimeout(() => resolve("still waiting"), 500))]);
    expect(first).toEqual([running, running, running]);
  });

  it("closes the state when telemetry never finishes flushing, after the flush's share of the timeout", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const logger = captureLogger();
      const order: string[] = [];
      const bounds: number[] = [];
      const shutdown = createShutdown(
        {
          markDraining: () => undefined,
          closeListener: async () => undefined,
          stopScheduler: async () => undefined,
          stopWorkers: async () => undefined,
          runtimeIdle: async () => undefined,
          // A sink whose backend never answers, and that ignores the bound it is given.
          flushTelemetry: (timeoutMs) => new Promise(() => void (order.push("flush"), bounds.push(timeoutMs))),
          closeState: async () => void order.push("close"),
          forceClose: () => void order.push("force"),
        },
        logger,
        20_000,
      );
      const done = shutdown();
      // The runs drained at once: the flush is given what is left of the 20 s, and waited for a moment past it.
      await vi.advanceTimersByTimeAsync(20_000 + TELEMETRY_FLUSH_GRACE_MS - 100);
      expect(order).toEqual(["flush"]);
      expect(bounds).toEqual([20_000]);
      await vi.advanceTimersByTimeAsync(200);
      await done;
      expect(order).toEqual(["flush", "close", "force"]);
      expect(logger.events("shutdown.telemetry_flush_timeout")[0]!.fields).toMatchObject({ timeoutMs: 20_000 });

      // Past the deadline, it still gets TELEMETRY_FLUSH_FLOOR_MS.
      const late = createShutdown(
        {
          markDraining: () => undefined,
          closeListener: async () => undefined,
          stopScheduler: async () => undefined,
          stopWorkers: async () => undefined,
          runtimeIdle: () => new Promise(() => undefined),
          flushTelemetry: (timeoutMs) => new Promise(() => void bounds.push(timeoutMs)),
          closeState: async () => void order.push("late close"),
          forceClose: () => undefined,
        },
        logger,
        100,
      );
      const lateDone = late();
      await vi.advanceTimersByTimeAsync(100 + TELEMETRY_FLUSH_FLOOR_MS + TELEMETRY_FLUSH_GRACE_MS - 50);
      expect(order).not.toContain("late close");
      expect(bounds).toEqual([20_000, TELEMETRY_FLUSH_FLOOR_MS]);
      await vi.advanceTimersByTimeAsync(100);
      await lateDone;
      expect(order).toContain("late close");
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("graceful shutdown and the telemetry sinks", () => {
  it("gives each sink's flush what is left of the shutdown's timeout, at least TELEMETRY_FLUSH_FLOOR_MS, as flush({ timeoutMs })", async () => {
    const asked: Array<{ timeoutMs?: number } | undefined> = [];
    const spans: unknown[] = [];
    const host = await startHost(bundle, { telemetry: { export: (span) => void spans.push(span), flush: async (options) => void asked.push(options) } });
    expect((await host.runtime.run({ message: "echo: hi" })).status).toBe("completed");
    await host.shutdown({ timeoutMs: 1_000 });
    expect(spans.length).toBeGreaterThan(0);
    expect(asked).toHaveLength(1);
    // Less than a second was left of the timeout: the floor applies.
    expect(asked[0]).toEqual({ timeoutMs: expect.any(Number) });
    expect(asked[0]!.timeoutMs!).toBeGreaterThan(TELEMETRY_FLUSH_FLOOR_MS - 1_000);
    expect(asked[0]!.timeoutMs!).toBeLessThanOrEqual(TELEMETRY_FLUSH_FLOOR_MS);
  });

  it("closes the state once a sink that honours the bound gives up on its silent backend, without reporting it late or leaving it running", async () => {
    let pending = false;
    const host = await startHost(bundle, {
      telemetry: {
        export: () => undefined,
        flush: (options) =>
          new Promise<void>((resolve) => {
            pending = true;
            // Like the OTLP sink: unbounded, it would wait on the backend; bounded, it gives up at the bound (shortened here).
            if (options?.timeoutMs !== undefined) setTimeout(() => ((pending = false), resolve()), Math.min(options.timeoutMs, 50));
          }),
      },
    });
    expect((await host.runtime.run({ message: "echo: hi" })).status).toBe("completed");
    await host.shutdown({ timeoutMs: 100 });
    expect(host.logger.events("shutdown.telemetry_flush_timeout")).toEqual([]);
    expect(pending).toBe(false);
  });
});

describe("graceful shutdown with a step that never ends", () => {
  it("goes on past a scheduler dispatch or a worker stuck on the store at the timeout, and still closes the state", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      for (const stuck of ["scheduler", "workers"] as const) {
        const logger = captureLogger();
        const order: string[] = [];
        const never = () => new Promise<void>(() => undefined);
        const shutdown = createShutdown(
          {
            markDraining: () => undefined,
            closeListener: async () => undefined,
            // A dispatch or a delivery waiting on a state call that never answers (a partitioned database).
            stopScheduler: stuck === "scheduler" ? never : async () => undefined,
            stopWorkers: stuck === "workers" ? never : async () => void order.push("workers"),
            runtimeIdle: async () => void order.push("idle"),
            flushTelemetry: async () => void order.push("flush"),
            closeState: async () => void order.push("close"),
            forceClose: () => void order.push("force"),
          },
          logger,
          1_000,
        );
        const done = shutdown();
        await vi.advanceTimersByTimeAsync(900);
        expect(order).toEqual([]);
        await vi.advanceTimersByTimeAsync(200);
        await done;
        expect(order).toEqual(stuck === "scheduler" ? ["workers", "idle", "flush", "close", "force"] : ["idle", "flush", "close", "force"]);
        expect(logger.events("shutdown.step_timeout").map((entry) => entry.fields)).toEqual([expect.objectContaining({ step: stuck, timeoutMs: 1_000 })]);
      }
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("SIGTERM under load", () => {
  const childScript = resolve(import.meta.dirname, "fixtures/host-child.mjs");
  // A failed assertion must not leave a host process behind.
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  });

  function spawnHost(stateDir: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; stdout: () => string; stderr: () => string; exited: Promise<number | null> }> {
    const child = spawn(process.execPath, [childScript, bundle.artifactRoot, stateDir], {
      env: { ...process.env, HOST_FIXTURE_STEP_MS: "400", FIXTURE_SECRET: "x", ASSEMBLY_LINE_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
    return new Promise((ready, fail) => {
      let out = "";
      const timer = setTimeout(() => fail(new Error(`host did not start:\n${stderr}`)), 20_000);
      child.stdout!.on("data", (chunk) => {
        out += chunk;
        const match = /READY (\S+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          ready({ child, url: match[1]!, stdout: () => out, stderr: () => stderr, exited });
        }
      });
      child.on("exit", () => fail(new Error(`host exited early:\n${stderr}`)));
    });
  }

  it("loses no accepted event: what was accepted completes, or the next boot resumes and completes it", async () => {
    const stateDir = join(tempDir(), "state");
    const first = await spawnHost(stateDir);
    const accepted: string[] = [];
    const send = (i: number) =>
      call(`${first.url}/message`, { body: { message: `slow: ${i}`, conversationId: i % 3 === 0 ? "shared" : `c${i}` }, headers: { "idempotency-key": `load-${i}` } }).then(
        (reply) => {
          if (reply.status === 202 || reply.status === 200) accepted.push(reply.body.runId);
          else expect([429, 503]).toContain(reply.status);
        },
        () => undefined, // the listener closed under it: not accepted
      );
    // Load, then more load with SIGTERM in the middle of it.
    await Promise.all(Array.from({ length: 30 }, (_, i) => send(i)));
    await waitFor(async () => ((await call(`${first.url}/runs?status=completed`)).body.runs.length >= 4 ? true : undefined), 20_000, "some runs to complete");
    let answered = 0;
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        send(30 + i).finally(() => {
          answered += 1;
          if (answered === 10) first.child.kill("SIGTERM");
        }),
      ),
    );
    expect(await first.exited).toBe(0);
    expect(accepted.length).toBeGreaterThan(10);

    // The first host stopped with accepted work unfinished: queued runs, and runs cut off by the drain timeout.
    const left = await FileStateAdapter.open({ directory: stateDir });
    const statuses = (await Promise.all(accepted.map((runId) => left.getRun(runId)))).map((run) => run!.status);
    await left.close();
    expect(statuses).toContain("completed");
    expect(statuses).toContain("queued");

    const second = await spawnHost(stateDir);
    await waitFor(async () => {
      const statuses = await Promise.all(accepted.map(async (runId) => (await call(`${second.url}/runs/${runId}`)).body.run.status));
      return statuses.every((status) => status === "completed") || undefined;
    }, 30_000, "every accepted run to complete on the second host");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);

    const final = await FileStateAdapter.open({ directory: stateDir });
    try {
      for (const runId of accepted) {
        const events = await final.listEvents(runId);
        expect(events.map((event) => event.seq), runId).toEqual(events.map((_, index) => index + 1));
        expect(events.filter((event) => event.type === "run.completed"), runId).toHaveLength(1);
      }
      // One run per accepted provider event id, however often it was retried.
      expect(new Set(accepted).size).toBe(accepted.length);
    } finally {
      await final.close();
    }
    // The hosts' logs are JSON lines with level, time and msg.
    const lines = first.stderr().trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.find((line) => line.event === "shutdown.completed")).toMatchObject({ level: "info", msg: "graceful shutdown completed", time: expect.any(String) });
    expect(lines.some((line) => line.event === "ingress.accepted")).toBe(true);
  }, 90_000);

  it("lets the embedder's code after `await handle.closed` run before the process ends, with code 0", async () => {
    const host = await spawnHost(join(tempDir(), "state"), { CHILD_AFTER_CLOSED_MS: "300" });
    host.child.kill("SIGTERM");
    expect(await host.exited).toBe(0);
    expect(host.stdout()).toContain("AFTER CLOSED");
  }, 30_000);

  it("ends a process something holds open once the grace after shutdown is over", async () => {
    const host = await spawnHost(join(tempDir(), "state"), { CHILD_AFTER_CLOSED_MS: "100", CHILD_HOLD_OPEN: "1" });
    host.child.kill("SIGTERM");
    expect(await host.exited).toBe(0);
    expect(host.stdout()).toContain("AFTER CLOSED");
  }, 30_000);
});
