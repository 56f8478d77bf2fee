import { connect } from "node:net";
import { beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { RuntimeBundle } from "@assemblyline-agents/runtime";
import { fixtureBundle, startHost, waitFor } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

interface RawConnection {
  /** Everything the host sent before the connection closed. */
  closed: Promise<string>;
  /** What the host has sent so far. */
  received(): string;
  send(text: string): void;
  reset(): void;
}

/** A connection speaking raw bytes, as a broken client or proxy does: Node's parser sees them before any route. */
function rawConnection(url: string, text: string): RawConnection {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  let received = "";
  socket.on("data", (chunk) => (received += chunk));
  socket.on("error", () => undefined);
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(received)));
  if (text) socket.write(text);
  onTestFinished(() => void socket.destroy());
  return { closed, received: () => received, send: (more) => socket.write(more), reset: () => socket.resetAndDestroy() };
}

/** The status line, headers (lower-cased names) and JSON body of one raw answer. */
function parseAnswer(answer: string): { statusLine: string; headers: Record<string, string>; body: any } {
  const split = answer.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = answer.slice(0, split).split("\r\n");
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  return { statusLine: statusLine!, headers, body: JSON.parse(answer.slice(split + 4)) };
}

function expectJsonRefusal(answer: string, status: string, code: string): any {
  const { statusLine, headers, body } = parseAnswer(answer);
  expect(statusLine).toBe(`HTTP/1.1 ${status}`);
  expect(headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(headers.connection).toBe("close");
  expect(headers["x-request-id"]).toMatch(/^[\w-]{36}$/);
  expect(body.error).toMatchObject({ code, message: expect.any(String), fix: expect.any(String), requestId: headers["x-request-id"] });
  return body.error;
}

describe("requests Node's HTTP parser refuses", () => {
  it("answers a malformed header line with 400, the JSON error shape and an x-request-id, and closes the connection", async () => {
    const host = await startHost(bundle, { devMode: false, auth: { bearerToken: "tok" } });
    const answer = await rawConnection(host.url, "GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nthis is not a header\r\n\r\n").closed;
    const error = expectJsonRefusal(answer, "400 Bad Request", "AL_ERR_HTTP_MALFORMED");
    expect(error.message).toMatch(/^the request is not HTTP\/1\.1 this host can read: .+/);
    expect(host.logger.events("http.client_error")).toEqual([
      expect.objectContaining({ level: "info", fields: expect.objectContaining({ status: 400, code: "AL_ERR_HTTP_MALFORMED", requestId: error.requestId }) }),
    ]);
  });

  it("answers headers over Node's limit with 431 and the JSON error shape", async () => {
    const host = await startHost(bundle, { devMode: false, auth: { bearerToken: "tok" } });
    const answer = await rawConnection(host.url, `GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`).closed;
    const error = expectJsonRefusal(answer, "431 Request Header Fields Too Large", "AL_ERR_HTTP_HEADERS_TOO_LARGE");
    expect(error.message).toBe("the request's headers exceed 16384 bytes");
  });

  it("answers a malformed request that follows a whole answer on a keep-alive connection", async () => {
    const host = await startHost(bundle);
    const connection = rawConnection(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await waitFor(() => connection.received().includes('{"status":"ok"}'), 5_000, "the first answer");
    connection.send("GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n");
    const answers = await connection.closed;
    expect(answers).toMatch(/^HTTP\/1\.1 200 OK/);
    expectJsonRefusal(answers.slice(answers.indexOf("HTTP/1.1 400")), "400 Bad Request", "AL_ERR_HTTP_MALFORMED");
  });

  it("closes without a word a connection whose answer has begun (a live stream), rather than writing into it", async () => {
    const host = await startHost(bundle);
    const connection = rawConnection(host.url, "GET /inspector/api/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    await waitFor(() => connection.received().startsWith("HTTP/1.1 200"), 5_000, "the stream's headers");
    connection.send("this is not a request\r\n\r\n");
    const answer = await connection.closed;
    expect(answer).not.toContain("HTTP/1.1 400");
    expect(answer).not.toContain("AL_ERR_HTTP_MALFORMED");
  });

  it("closes a connection the client reset mid-request, answering nothing and logging no refusal", async () => {
    const host = await startHost(bundle);
    const connection = rawConnection(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    await waitFor(async () => (await new Promise<number>((resolve) => host.server.getConnections((_error, count) => resolve(count)))) === 1, 5_000, "the connection");
    connection.reset();
    await waitFor(async () => (await new Promise<number>((resolve) => host.server.getConnections((_error, count) => resolve(count)))) === 0, 5_000, "the host closing it");
    expect(host.logger.events("http.client_error")).toEqual([]);
  });
});

describe("connections that stall before their request arrives", () => {
  it("closes one that never sends a byte within the request timeout", async () => {
    const host = await startHost(bundle, { requestTimeoutMs: 400, headersTimeoutMs: 200 });
    const idle = rawConnection(host.url, "");
    const started = Date.now();
    await idle.closed;
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("answers a keep-alive connection whose next request stalls with 408 and the JSON error shape, and closes it", async () => {
    const host = await startHost(bundle, { requestTimeoutMs: 400, headersTimeoutMs: 200 });
    const answers = await rawConnection(host.url, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nG").closed;
    expect(answers).toMatch(/^HTTP\/1\.1 200 OK/);
    const error = expectJsonRefusal(answers.slice(answers.indexOf("HTTP/1.1 408")), "408 Request Timeout", "AL_ERR_HTTP_REQUEST_TIMEOUT");
    expect(error.message).toContain("headers take at most 200 ms, the whole request 400 ms");
  });
});
