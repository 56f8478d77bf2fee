import { cpSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { devCommand, startCommand } from "../src/cli/commands/serve.js";
import type { NodeRuntimeHandle } from "../src/index.js";
import { tempDir } from "./support/host.js";

// `dev` and `start` take the host's slow-request bounds as flags, and the host reads them from
// ASSEMBLY_LINE_* variables when no flag is given; a bad value is refused naming the flag or variable.

const example = resolve(import.meta.dirname, "../../../examples/notes-agent");
const quiet = { out: () => undefined, err: () => undefined };

function notesAgent(): { agentDir: string; script: string } {
  const agentDir = join(tempDir("al-serve-limits-"), "notes-agent");
  cpSync(example, agentDir, { recursive: true, filter: (source) => !source.includes(`${example}/.assembly-line`) });
  return { agentDir, script: join(agentDir, "conversations/remember-milk.json") };
}

/** `assembly-line dev <agent> <flags>` in this process; resolves with the handle once it listens, shut down when the test ends. */
async function dev(flags: string[]): Promise<NodeRuntimeHandle> {
  const { agentDir, script } = notesAgent();
  let listening!: (handle: NodeRuntimeHandle) => void;
  const listened = new Promise<NodeRuntimeHandle>((resolve) => (listening = resolve));
  const exited = devCommand([agentDir, "--port", "0", "--model", `scripted:${script}`, ...flags], quiet, { installSignals: false, onListening: listening });
  const handle = await Promise.race([listened, exited.then((code) => Promise.reject(new Error(`dev exited ${code} before listening`)))]);
  onTestFinished(async () => {
    await handle.shutdown({ timeoutMs: 2_000 });
    await exited;
  });
  return handle;
}

/** The command's refusal, or a failure of the test when it listened instead. */
async function refusal(run: (control: { installSignals: false; onListening(handle: NodeRuntimeHandle): void }) => Promise<number>): Promise<string> {
  let listened = false;
  const error = await run({ installSignals: false, onListening: (handle) => ((listened = true), void handle.shutdown()) }).catch((caught: unknown) => caught);
  expect(listened, "it listened instead of refusing").toBe(false);
  return String(error);
}

/** Sends the headers of a 64-byte body and its first bytes, then stalls; resolves with what the host sent once it closes the connection. */
function stalledMessage(url: string): Promise<{ answer: string; afterMs: number }> {
  const { port } = new URL(url);
  const socket = connect(Number(port), "127.0.0.1");
  onTestFinished(() => void socket.destroy());
  const started = Date.now();
  let received = "";
  socket.on("data", (chunk) => (received += chunk));
  socket.on("error", () => undefined);
  socket.write('POST /message HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 64\r\n\r\n{"message":');
  return new Promise((resolve) => socket.on("close", () => resolve({ answer: received, afterMs: Date.now() - started })));
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("dev and start request-limit flags", () => {
  it("--body-idle-timeout-ms makes a stalled body answer 408 after that pause, not the 10 s default", async () => {
    const handle = await dev(["--body-idle-timeout-ms", "200"]);
    const { answer, afterMs } = await stalledMessage(handle.url);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).error).toMatchObject({ code: "AL_ERR_HTTP_BODY_TIMEOUT", message: expect.stringContaining("nothing came for 200 ms") });
    expect(afterMs).toBeLessThan(5_000);
  }, 60_000);

  it("passes --request-timeout-ms, --headers-timeout-ms and --max-connections to the server, over their ASSEMBLY_LINE_* variables", async () => {
    vi.stubEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", "9000");
    vi.stubEnv("ASSEMBLY_LINE_MAX_CONNECTIONS", "9");
    const handle = await dev(["--request-timeout-ms", "5000", "--headers-timeout-ms", "4000", "--max-connections", "7"]);
    expect({ request: handle.server.requestTimeout, headers: handle.server.headersTimeout, connections: handle.server.maxConnections }).toEqual({ request: 5_000, headers: 4_000, connections: 7 });
  }, 60_000);

  it("takes the bounds from ASSEMBLY_LINE_* variables when no flag is given", async () => {
    vi.stubEnv("ASSEMBLY_LINE_REQUEST_TIMEOUT_MS", "6000");
    vi.stubEnv("ASSEMBLY_LINE_HEADERS_TIMEOUT_MS", "3000");
    vi.stubEnv("ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS", "200");
    vi.stubEnv("ASSEMBLY_LINE_MAX_CONNECTIONS", "12");
    const handle = await dev([]);
    expect({ request: handle.server.requestTimeout, headers: handle.server.headersTimeout, connections: handle.server.maxConnections }).toEqual({ request: 6_000, headers: 3_000, connections: 12 });
    expect((await stalledMessage(handle.url)).answer).toMatch(/^HTTP\/1\.1 408 /);
  }, 60_000);

  it("refuses a flag that is not a whole number of at least 1, naming it, before building or listening", async () => {
    const { agentDir, script } = notesAgent();
    for (const [flag, value, named] of [
      ["--body-idle-timeout-ms", "10s", "--body-idle-timeout-ms 10s is not a whole number from 1 to 2147483647"],
      ["--request-timeout-ms", "0", "--request-timeout-ms 0 is not a whole number from 1 to 2147483647"],
      ["--headers-timeout-ms", "1e3", "--headers-timeout-ms 1e3 is not a whole number"],
      ["--request-timeout-ms", "2147483648", "--request-timeout-ms 2147483648 is not a whole number from 1 to 2147483647"],
      ["--max-connections", "-1", "--max-connections -1 is not a whole number"],
      ["--max-connections", "", "--max-connections is empty"],
    ] as const) {
      const refused = await refusal((control) => devCommand([agentDir, "--port", "0", "--model", `scripted:${script}`, flag, value], quiet, control));
      expect(refused).toContain(`AL_ERR_CLI_USAGE: ${named}`);
    }
    const inverted = await refusal((control) => startCommand([join(agentDir, ".assembly-line"), "--request-timeout-ms", "1000", "--headers-timeout-ms", "5000"], quiet, control));
    expect(inverted).toContain("AL_ERR_CLI_USAGE: --headers-timeout-ms 5000 is longer than --request-timeout-ms 1000");
  }, 60_000);

  it("refuses a bad ASSEMBLY_LINE_* value naming the variable and what it takes", async () => {
    vi.stubEnv("ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS", "10s");
    const { agentDir, script } = notesAgent();
    const refused = await refusal((control) => devCommand([agentDir, "--port", "0", "--model", `scripted:${script}`], quiet, control));
    expect(refused).toContain('AL_ERR_HOST_CONFIG: ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS="10s" is not an integer in 1..2147483647');
    expect(refused).toContain("Set ASSEMBLY_LINE_BODY_IDLE_TIMEOUT_MS to an integer from 1 to 2147483647");
  }, 60_000);
});
