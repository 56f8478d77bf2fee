import { IncomingMessage } from "node:http";
import { Socket, connect } from "node:net";
import { afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { scriptedHarness, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { readBody } from "../src/host/http.js";
import { listenNodeRuntime, noopLogger, type NodeRuntimeOptions } from "../src/index.js";
import { fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

interface RawExchange {
  /** Everything the host sent before it closed the connection. */
  answered: Promise<string>;
  /** Sends more bytes on the connection. */
  send(text: string): void;
  close(): void;
}

/** A connection that sends `text` and keeps it open, as a slow or stalled client does, until the host closes it. */
function rawRequest(url: string, text: string): RawExchange {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  let received = "";
  socket.on("data", (chunk) => (received += chunk));
  socket.on("error", () => undefined);
  const answered = new Promise<string>((resolve) => socket.on("close", () => resolve(received)));
  socket.write(text);
  return { answered, send: (more) => socket.write(more), close: () => socket.destroy() };
}

function bodyOf(response: string): any {
  return JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4));
}

/** A provider webhook whose body stops after its first bytes; the route takes it without auth. */
const STALLED_WEBHOOK = 'POST /provider/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{"type":';

describe("slow and stalled requests", () => {
  it("answers a body that stops arriving with 408 and closes its connection", async () => {
    const host = await startHost(bundle, { devMode: false, auth: { bearerToken: "tok" }, bodyIdleTimeoutMs: 200 });
    const stalled = rawRequest(host.url, STALLED_WEBHOOK);
    onTestFinishedClose(stalled);
    const response = await stalled.answered;
    expect(response).toMatch(/^HTTP\/1\.1 408 /);
    expect(response.toLowerCase()).toContain("connection: close");
    expect(bodyOf(response).error).toMatchObject({ code: "AL_ERR_HTTP_BODY_TIMEOUT", message: expect.stringContaining("stopped arriving") });
    // The same limit holds on routes behind auth: a decision's body read by its own handler.
    const decision = rawRequest(host.url, "POST /admin/kill-switch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{");
    onTestFinishedClose(decision);
    const decided = await decision.answered;
    expect(decided).toMatch(/^HTTP\/1\.1 408 /);
    expect(bodyOf(decided).error.code).toBe("AL_ERR_HTTP_BODY_TIMEOUT");
  });

  it("answers headers or a body still arriving when the request timeout is reached with 408, but not a slow answer to a whole request", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const running = new Promise<void>((resolve) => (entered = resolve));
    const engine = scriptedHarness({ turns: [{ text: "late but whole" }] });
    const host = await startHost(bundle, {
      requestTimeoutMs: 400,
      bodyIdleTimeoutMs: 60_000,
      // The run rests only when the test says: its answer comes after the request timeout.
      agentHarness: { name: "scripted", runTurn: async (input, ctx) => (entered(), await gate, engine.runTurn(input, ctx)) },
    });
    const body = JSON.stringify({ message: "hi" });
    const whole = rawRequest(host.url, `POST /message?wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    onTestFinishedClose(whole);
    await running;
    // Started after the whole request arrived, so timed out after it would have been.
    const headersOnly = rawRequest(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const bodyUnfinished = rawRequest(host.url, STALLED_WEBHOOK);
    onTestFinishedClose(headersOnly);
    onTestFinishedClose(bodyUnfinished);
    expect(await headersOnly.answered).toMatch(/^HTTP\/1\.1 408 /);
    expect(await bodyUnfinished.answered).toMatch(/^HTTP\/1\.1 408 /);
    release();
    const answer = await whole.answered;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(bodyOf(answer)).toMatchObject({ status: "completed" });
  });

  it("closes connections beyond maxConnections as they arrive and warns once", async () => {
    const host = await startHost(bundle, { maxConnections: 1 });
    const holder = rawRequest(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    onTestFinishedClose(holder);
    await waitFor(() => countConnections(host.server), 10_000, "the first connection");
    const refused = [rawRequest(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), rawRequest(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")];
    for (const exchange of refused) expect(await exchange.answered).toBe("");
    expect(host.logger.events("http.connections_full")).toHaveLength(1);
    // The connection that was let in is served as ever.
    holder.send("Connection: close\r\n\r\n");
    expect(await holder.answered).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("readBody's pause limit", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A request whose body the test feeds by hand, on the test's clock. */
  function handFedRequest(): IncomingMessage {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    return new IncomingMessage(new Socket());
  }

  /** Lets the stream hand a pushed piece to readBody (on the real event loop; only timeouts are the test's). */
  const delivered = () => new Promise((resolve) => setImmediate(resolve));

  it("counts each pause from the last piece, so a body that keeps arriving is read whole however long it takes", async () => {
    const req = handFedRequest();
    const read = readBody(req, 1024, 100);
    for (const piece of ['{"mess', 'age": ', '"hi"}']) {
      vi.advanceTimersByTime(80);
      req.push(Buffer.from(piece));
      await delivered();
    }
    vi.advanceTimersByTime(80);
    req.push(null);
    expect((await read).toString()).toBe('{"message": "hi"}');
  });

  it("refuses a body that pauses longer with 408", async () => {
    const req = handFedRequest();
    const read = readBody(req, 1024, 100);
    req.push(Buffer.from('{"mess'));
    await delivered();
    vi.advanceTimersByTime(101);
    await expect(read).rejects.toMatchObject({ status: 408, code: "AL_ERR_HTTP_BODY_TIMEOUT" });
  });
});

describe("request limits as options", () => {
  async function refusal(options: Partial<NodeRuntimeOptions>): Promise<unknown> {
    return listenNodeRuntime({ ...bundle, port: 0, host: "127.0.0.1", devMode: true, logger: noopLogger(), env: { FIXTURE_SECRET: "s3cret" }, ...options }).then(
      (handle) => handle.shutdown({ timeoutMs: 2_000 }).then(() => "started"),
      (error: unknown) => error,
    );
  }

  it("refuses values that are not whole milliseconds or counts, and headers allowed longer than the request", async () => {
    for (const [option, value] of [["requestTimeoutMs", 0], ["headersTimeoutMs", 1.5], ["bodyIdleTimeoutMs", "10s"], ["maxConnections", 0], ["requestTimeoutMs", 2 ** 31]] as const) {
      const error = await refusal({ [option]: value });
      expect(isAssemblyLineError(error, "AL_ERR_HOST_CONFIG"), `${option}=${value}: ${String(error)}`).toBe(true);
      expect((error as Error).message).toContain(option);
    }
    const inverted = await refusal({ requestTimeoutMs: 1_000, headersTimeoutMs: 5_000 });
    expect(isAssemblyLineError(inverted, "AL_ERR_HOST_CONFIG")).toBe(true);
    expect((inverted as Error).message).toContain("headersTimeoutMs=5000 is longer than requestTimeoutMs=1000");
  });

  it("sets the server's timeouts and connection bound, the headers' within a shorter request timeout", async () => {
    const defaults = await startHost(bundle);
    expect({ request: defaults.server.requestTimeout, headers: defaults.server.headersTimeout, connections: defaults.server.maxConnections }).toEqual({ request: 30_000, headers: 10_000, connections: 1024 });
    const short = await startHost(bundle, { requestTimeoutMs: 5_000, maxConnections: 50 });
    expect({ request: short.server.requestTimeout, headers: short.server.headersTimeout, connections: short.server.maxConnections }).toEqual({ request: 5_000, headers: 5_000, connections: 50 });
  });

  it("reads each bound from its ASSEMBLY_LINE_* variable when the option is left out, the option winning", async () => {
    const env = { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_REQUEST_TIMEOUT_MS: "8000", ASSEMBLY_LINE_HEADERS_TIMEOUT_MS: "6000", ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS: "200", ASSEMBLY_LINE_MAX_CONNECTIONS: "40" };
    const fromEnv = await startHost(bundle, { env });
    expect({ request: fromEnv.server.requestTimeout, headers: fromEnv.server.headersTimeout, connections: fromEnv.server.maxConnections }).toEqual({ request: 8_000, headers: 6_000, connections: 40 });
    const stalled = rawRequest(fromEnv.url, STALLED_WEBHOOK);
    onTestFinishedClose(stalled);
    expect(await stalled.answered).toMatch(/^HTTP\/1\.1 408 /);
    const given = await startHost(bundle, { env, requestTimeoutMs: 7_000, headersTimeoutMs: 5_000, maxConnections: 30 });
    expect({ request: given.server.requestTimeout, headers: given.server.headersTimeout, connections: given.server.maxConnections }).toEqual({ request: 7_000, headers: 5_000, connections: 30 });
  });

  it("refuses a bad ASSEMBLY_LINE_* value naming the variable, and headers longer than the request naming where each was set", async () => {
    for (const [variable, value] of [["ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", "soon"], ["ASSEMBLY_LINE_HEADERS_TIMEOUT_MS", "0"], ["ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS", "1.5"], ["ASSEMBLY_LINE_MAX_CONNECTIONS", "-3"]] as const) {
      const error = await refusal({ env: { FIXTURE_SECRET: "s3cret", [variable]: value } });
      expect(isAssemblyLineError(error, "AL_ERR_HOST_CONFIG"), `${variable}=${value}: ${String(error)}`).toBe(true);
      expect((error as Error).message).toContain(`${variable}=`);
    }
    const inverted = await refusal({ env: { FIXTURE_SECRET: "s3cret", ASSEMBLY_LINE_HEADERS_TIMEOUT_MS: "5000" }, requestTimeoutMs: 1_000 });
    expect((inverted as Error).message).toContain("ASSEMBLY_LINE_HEADERS_TIMEOUT_MS=5000 is longer than requestTimeoutMs=1000");
  });
});

function countConnections(server: import("node:http").Server): Promise<number | undefined> {
  return new Promise((resolve) => server.getConnections((error, count) => resolve(error || count === 0 ? undefined : count)));
}

function onTestFinishedClose(exchange: RawExchange): void {
  onTestFinished(() => exchange.close());
}
