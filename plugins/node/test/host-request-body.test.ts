import { createServer, request, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readBody } from "../src/host/http.js";

const MAX_BYTES = 1024;
let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering each request with what readBody made of its body (after `delayMs`), as hex, or the error's code. */
async function echoServer(delayMs = 0, options: { insecureHTTPParser?: boolean } = {}): Promise<number> {
  server = createServer(options, (req: IncomingMessage, res) => {
    const read = async () => {
      // A wait as the host's own awaits before it reads (auth, kill switch, rate limit).
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      else await null;
      return readBody(req, MAX_BYTES);
    };
    read().then(
      (body) => res.end(JSON.stringify({ hex: body.toString("hex") })),
      (error: { code?: string }) => {
        res.setHeader("connection", "close");
        res.end(JSON.stringify({ error: error.code }));
      },
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server!.address() as AddressInfo).port;
}

/** POST `pieces` one after another, `gapMs` apart, with the headers given. */
function post(port: number, pieces: Buffer[], headers: Record<string, string | number>, gapMs = 0): Promise<{ hex?: string; error?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/", headers }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve(JSON.parse(text)));
    });
    req.on("error", reject);
    let next = 0;
    const send = () => {
      if (next === pieces.length) return req.end();
      req.write(pieces[next++]!, () => (gapMs > 0 ? setTimeout(send, gapMs) : send()));
    };
    req.flushHeaders();
    send();
  });
}

describe("readBody", () => {
  const body = Buffer.from(JSON.stringify({ message: "grüße, 世界" }), "utf8");

  it("returns a body that came whole, byte for byte", async () => {
    // Read once it has all arrived: taken from the stream's buffer at once.
    const port = await echoServer(20);
    expect(await post(port, [body], { "content-length": body.length })).toEqual({ hex: body.toString("hex") });
  });

  it("returns a body that came in pieces, split inside a character, byte for byte", async () => {
    // The server reads after the first piece is in and before the rest arrives.
    const port = await echoServer(20);
    const split = body.indexOf(Buffer.from("世")) + 1;
    const reply = await post(port, [body.subarray(0, split), body.subarray(split)], { "content-length": body.length }, 80);
    expect(reply).toEqual({ hex: body.toString("hex") });
  });

  it("returns a body sent chunked, without a length", async () => {
    const port = await echoServer(20);
    const reply = await post(port, [body.subarray(0, 5), body.subarray(5)], { "transfer-encoding": "chunked" }, 30);
    expect(reply).toEqual({ hex: body.toString("hex") });
  });

  it("reads a chunked body by its chunks even beside a Content-Length a lenient parser let through", async () => {
    const port = await echoServer(20, { insecureHTTPParser: true });
    // The first chunk holds the declared 5 bytes and is all the server has when it reads; the body is the 11 both chunks hold.
    const head = ["POST / HTTP/1.1", "Host: x", "Content-Length: 5", "Transfer-Encoding: chunked", "Connection: close", "", "5", "hello", ""].join("\r\n");
    const rest = ["6", " world", "0", "", ""].join("\r\n");
    const reply = await new Promise<string>((resolve, reject) => {
      // Written without a half-close: the server closes the connection once it has answered (Connection: close).
      const socket = connect(port, "127.0.0.1", () => socket.write(head, () => setTimeout(() => socket.write(rest), 80)));
      let text = "";
      socket.on("data", (chunk) => (text += chunk));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(reply).toMatch(/^HTTP\/1.1 200 /);
    expect(JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4))).toEqual({ hex: Buffer.from("hello world").toString("hex") });
  });

  it("returns an empty body for Content-Length: 0", async () => {
    const port = await echoServer(20);
    expect(await post(port, [], { "content-length": 0 })).toEqual({ hex: "" });
  });

  it("refuses a body over the limit, declared or streamed", async () => {
    const port = await echoServer();
    const large = Buffer.alloc(MAX_BYTES + 1, 120);
    expect(await post(port, [large], { "content-length": large.length })).toEqual({ error: "AL_ERR_HTTP_BODY_TOO_LARGE" });
    expect(await post(port, [large.subarray(0, 600), large.subarray(600)], { "transfer-encoding": "chunked" }, 30)).toEqual({ error: "AL_ERR_HTTP_BODY_TOO_LARGE" });
  });
});
