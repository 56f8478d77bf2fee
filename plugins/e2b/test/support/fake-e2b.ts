import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { posix } from "node:path";
import { Writable } from "node:stream";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import busboy from "busboy";
import type Docker from "dockerode";
import { envdProcessService } from "./envd-process-service.js";
import { killHostTree } from "../../../../test/support/host-process.js";
import { readFrom, writeInto } from "../../../docker/test/support/container-files.js";

/*
 * A local E2B: the REST API (create, list by metadata and state in pages, get one, connect, kill,
 * snapshots: create, list, delete, a sandbox from one) and envd
 * (process.Process/Start over Connect, GET and POST /files, /health) for
 * exactly the calls the e2b SDK makes for what the adapter uses. One origin
 * serves both: the SDK's sandboxUrl setting sends every envd call there with
 * the E2b-Sandbox-Id header, as E2B's own sandbox proxy routes them, and
 * answers 502 ("The sandbox was not found") for one not running, as that proxy
 * does. Each sandbox is a container on the local Docker engine.
 */

export const FAKE_LABEL = "dev.assembly-line.test.fake-e2b";
const ENVD_VERSION = "0.5.7";

interface FakeSandbox {
  id: string;
  templateID: string;
  state: "running" | "paused";
  metadata: Record<string, string>;
  envVars: Record<string, string>;
  allowInternetAccess: boolean | undefined;
  timeoutSeconds: number | undefined;
  onTimeout: "pause" | "kill";
  accessToken: string;
  /** None for one addPaused recorded: E2B keeps a paused sandbox as a snapshot, with no VM running. */
  container: Docker.Container | undefined;
  startedAt: string;
}

interface FakeSnapshot {
  snapshotID: string;
  names: string[];
  image: string;
}

export interface FakeE2b {
  apiUrl: string;
  sandboxUrl: string;
  apiKey: string;
  requests: string[];
  creates: Array<Record<string, unknown>>;
  sandboxes: Map<string, FakeSandbox>;
  snapshots: Map<string, FakeSnapshot>;
  /** What E2B does when a sandbox's lifetime ends with onTimeout "pause". */
  pause(id: string): Promise<void>;
  /** Record a paused sandbox with these metadata, without a container (listing at scale; it cannot be resumed here). Its id. */
  addPaused(metadata: Record<string, string>): string;
  /** The longest sandbox timeout the team's plan allows, in hours (24 on Pro, 1 on Hobby); a longer create or connect is refused with 400, as E2B does. */
  maxLifetimeHours: number;
  /** Cut every client connection, as a host that crashed does (envd keeps the commands they started running). */
  dropConnections(): void;
  /** Hold every request whose "METHOD /path" matches unanswered, as a hung API does, until the returned function is called. */
  stall(match: RegExp): () => void;
  /** Answer the next `times` requests whose "METHOD /path" matches with 429, as E2B's rate limiter does, before handling them. */
  rateLimit(match: RegExp, times: number): void;
  close(): Promise<void>;
}

const KEEP_ALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

export async function startFakeE2b(options: { docker: Docker; templates: Record<string, string> }): Promise<FakeE2b> {
  const { docker } = options;
  const apiKey = `e2b_${randomBytes(20).toString("hex")}`;
  const instance = randomBytes(6).toString("hex");
  const sandboxes = new Map<string, FakeSandbox>();
  const requests: string[] = [];
  const creates: Array<Record<string, unknown>> = [];
  const snapshots = new Map<string, FakeSnapshot>();
  const snapshotRepo = `fake-e2b-snapshot-${instance}`;
  let origin = "";
  let maxLifetimeHours = 24;
  const stalls = new Map<RegExp, Promise<void>>();
  const limits: Array<{ match: RegExp; left: number }> = [];
  /** E2B's refusal of a timeout (seconds) over the plan's maximum, or undefined when it fits. */
  const overLimit = (timeout: unknown) => (typeof timeout === "number" && timeout > maxLifetimeHours * 3600 ? { code: 400, message: `Timeout cannot be greater than ${maxLifetimeHours} hours` } : undefined);

  const created = (sandbox: FakeSandbox) => ({
    sandboxID: sandbox.id,
    templateID: sandbox.templateID,
    clientID: "local",
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.accessToken,
    trafficAccessToken: null,
    domain: null,
  });
  const listed = (sandbox: FakeSandbox) => ({
    sandboxID: sandbox.id,
    templateID: sandbox.templateID,
    clientID: "local",
    startedAt: sandbox.startedAt,
    endAt: new Date(Date.parse(sandbox.startedAt) + (sandbox.timeoutSeconds ?? 300) * 1000).toISOString(),
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 512,
    metadata: sandbox.metadata,
    state: sandbox.state,
    envdVersion: ENVD_VERSION,
    volumeMounts: [],
  });

  async function create(body: Record<string, unknown>, response: ServerResponse): Promise<void> {
    creates.push(body);
    const refused = overLimit(body.timeout);
    if (refused) return json(response, 400, refused);
    const templateID = typeof body.templateID === "string" ? body.templateID : "";
    // A snapshot is addressed by its id or its qualified name, like a template.
    const snapshot = snapshots.get(templateID) ?? [...snapshots.values()].find((entry) => entry.names.some((name) => name === templateID || name.split(":")[0] === templateID));
    const image = snapshot?.image ?? options.templates[templateID];
    if (!image) return json(response, 404, { code: 404, message: `template '${templateID}' not found` });
    const id = `i${randomBytes(10).toString("hex")}`;
    const envVars = (body.envVars as Record<string, string> | undefined) ?? {};
    const container = await docker.createContainer({
      name: `fake-e2b-${instance}-${id}`,
      Image: image,
      Entrypoint: ["/bin/sh", "-c"],
      Cmd: [KEEP_ALIVE],
      Env: Object.entries(envVars).map(([key, value]) => `${key}=${value}`),
      Labels: { [FAKE_LABEL]: instance },
      // The engine here has no bridge: every fake sandbox is offline whatever allow_internet_access says (the request is recorded).
      HostConfig: { NetworkMode: "none", PidsLimit: 256 },
    });
    await container.start();
    const sandbox: FakeSandbox = {
      id,
      templateID,
      state: "running",
      metadata: (body.metadata as Record<string, string> | undefined) ?? {},
      envVars,
      allowInternetAccess: body.allow_internet_access as boolean | undefined,
      timeoutSeconds: body.timeout as number | undefined,
      onTimeout: body.autoPause === true ? "pause" : "kill",
      accessToken: randomBytes(16).toString("hex"),
      container,
      startedAt: new Date().toISOString(),
    };
    sandboxes.set(id, sandbox);
    json(response, 201, created(sandbox));
  }

  /**
   * GET /v2/sandboxes as E2B answers it: filtered by state and metadata, sorted
   * by start time (newest first unless order=asc, ties by id), a page of at most
   * `limit` (1-100, default 100), and an X-Next-Token header (base64 of
   * "<startedAt>__<id>" of the page's last sandbox) when more follow.
   */
  function list(url: URL, response: ServerResponse): void {
    const query = url.searchParams;
    // The SDK sends metadata as a query-string of URI-encoded pairs, itself one query parameter.
    const pairs = (query.get("metadata") ?? "").split("&").filter((pair) => pair !== "");
    if (pairs.some((pair) => pair.split("=").length !== 2)) return json(response, 400, { code: 400, message: "Error parsing metadata" });
    const wanted = [...new URLSearchParams(query.get("metadata") ?? "").entries()].map(([key, value]) => [decodeURIComponent(key), decodeURIComponent(value)] as const);
    // An array parameter the SDK sends comma-separated (form style, not exploded).
    const states = (query.get("state") ?? "running,paused").split(",");
    if (states.some((state) => state !== "running" && state !== "paused")) return json(response, 400, { code: 400, message: `invalid state: ${query.get("state")}` });
    const limit = Number(query.get("limit") ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) return json(response, 400, { code: 400, message: "limit must be a whole number from 1 to 100" });
    const order = query.get("order") ?? "desc";
    if (order !== "asc" && order !== "desc") return json(response, 400, { code: 400, message: `invalid order: ${order}` });
    const direction = order === "asc" ? 1 : -1;
    const token = query.get("nextToken");
    const cursor = token ? parseNextToken(token) : undefined;
    if (token && !cursor) return json(response, 400, { code: 400, message: "Invalid next token" });
    const after = (sandbox: FakeSandbox) => {
      if (!cursor) return true;
      const time = Date.parse(sandbox.startedAt);
      return (time - cursor.time) * direction > 0 || (time === cursor.time && sandbox.id > cursor.id);
    };
    const matches = [...sandboxes.values()]
      .filter((sandbox) => states.includes(sandbox.state) && wanted.every(([key, value]) => sandbox.metadata[key] === value))
      .sort((a, b) => (Date.parse(a.startedAt) - Date.parse(b.startedAt)) * direction || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const rest = matches.filter(after);
    const page = rest.slice(0, limit);
    const last = page.at(-1);
    const headers: Record<string, string> = { "x-total-running": String(matches.filter((sandbox) => sandbox.state === "running").length) };
    if (rest.length > limit && last) headers["x-next-token"] = Buffer.from(`${last.startedAt}__${last.id}`).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
    json(response, 200, page.map(listed), headers);
  }

  const processHandler = connectNodeAdapter({
    routes(router) {
      router.service(envdProcessService(), {
        async *start(request: { process?: { cmd: string; args: string[]; envs: Record<string, string>; cwd?: string } }, context: { requestHeader: Headers }) {
          const sandbox = envdSandbox(context.requestHeader);
          const spec = request.process!;
          const user = basicUser(context.requestHeader.get("authorization"));
          const exec = await sandbox.container.exec({
            Cmd: [spec.cmd, ...spec.args],
            Env: Object.entries(spec.envs ?? {}).map(([key, value]) => `${key}=${value}`),
            AttachStdout: true,
            AttachStderr: true,
            ...(spec.cwd ? { WorkingDir: spec.cwd } : {}),
            ...(user && user !== "root" ? { User: user } : {}),
          });
          const stream = await exec.start({ hijack: true, stdin: false });
          const queue: Array<{ stdout?: Buffer; stderr?: Buffer }> = [];
          let wake: (() => void) | undefined;
          let ended = false;
          const push = (item: { stdout?: Buffer; stderr?: Buffer }) => {
            queue.push(item);
            wake?.();
          };
          const sink = (field: "stdout" | "stderr") =>
            new Writable({
              write(chunk: Buffer, _encoding, done) {
                push({ [field]: Buffer.from(chunk) });
                done();
              },
            });
          sandbox.container.modem.demuxStream(stream, sink("stdout"), sink("stderr"));
          const info = await exec.inspect();
          // envd runs the process on a context of its own: a client that goes away (disconnect(), a crash) leaves it
          // running, and only the request's Connect-Timeout-Ms (the SDK's timeoutMs) kills it.
          const limitMs = Number(context.requestHeader.get("connect-timeout-ms") ?? 0);
          // The pid, read when the deadline comes: the engine may not know it yet right after the start.
          const deadline = limitMs > 0 ? setTimeout(() => void exec.inspect().then((latest) => killHostTree(latest.Pid), () => undefined), limitMs) : undefined;
          deadline?.unref();
          const finish = () => {
            clearTimeout(deadline);
            ended = true;
            wake?.();
          };
          stream.once("end", finish);
          stream.once("close", finish);
          stream.once("error", finish);
          yield { event: { event: { case: "start", value: { pid: info.Pid } } } };
          while (!ended || queue.length > 0) {
            const item = queue.shift();
            if (!item) {
              await new Promise<void>((resolve) => (wake = resolve));
              wake = undefined;
              continue;
            }
            const output = item.stdout ? { case: "stdout" as const, value: new Uint8Array(item.stdout) } : { case: "stderr" as const, value: new Uint8Array(item.stderr!) };
            yield { event: { event: { case: "data", value: { output } } } };
          }
          const exitCode = (await exec.inspect()).ExitCode ?? -1;
          yield { event: { event: { case: "end", value: { exitCode, exited: true, status: `exit status ${exitCode}` } } } };
        },
      } as never);
    },
  });

  function envdSandbox(headers: Headers | IncomingMessage["headers"]): FakeSandbox & { container: Docker.Container } {
    const get = (name: string) => (headers instanceof Headers ? headers.get(name) : (headers[name] as string | undefined)) ?? undefined;
    const sandbox = sandboxes.get(get("e2b-sandbox-id") ?? "");
    if (!sandbox || sandbox.state !== "running" || !sandbox.container) throw Object.assign(new Error("sandbox not found"), { status: 502 });
    if (get("x-access-token") !== sandbox.accessToken) throw Object.assign(new Error("invalid access token"), { status: 401 });
    return sandbox as FakeSandbox & { container: Docker.Container };
  }

  async function files(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const sandbox = envdSandbox(request.headers);
    if (request.method === "GET") {
      const path = url.searchParams.get("path") ?? "";
      const content = await readFrom(sandbox.container, path);
      if (content === undefined) return json(response, 404, { code: 404, message: `path '${path}' does not exist` });
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(content.length) });
      return void response.end(content);
    }
    const written: Array<{ name: string; type: string; path: string }> = [];
    const writes: Array<Promise<void>> = [];
    await new Promise<void>((resolve, reject) => {
      const parser = busboy({ headers: request.headers, preservePath: true });
      parser.on("file", (_name, stream, info) => {
        const path = url.searchParams.get("path") || info.filename;
        if (!path) {
          stream.resume();
          return reject(Object.assign(new Error("a file part needs a path: the path parameter or the part's filename"), { status: 400 }));
        }
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          written.push({ name: posix.basename(path), type: "file", path });
          writes.push(writeInto(sandbox.container, path, Buffer.concat(chunks)));
        });
      });
      parser.on("close", resolve);
      parser.on("error", reject);
      request.pipe(parser);
    });
    await Promise.all(writes);
    json(response, 200, written);
  }

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", origin);
    requests.push(`${request.method} ${url.pathname}`);
    for (const [match, resumed] of stalls) if (match.test(`${request.method} ${url.pathname}`)) await resumed;
    const limit = limits.find((entry) => entry.left > 0 && entry.match.test(`${request.method} ${url.pathname}`));
    if (limit) {
      limit.left -= 1;
      request.resume();
      return json(response, 429, { code: 429, message: "Rate limit exceeded, please try again later." });
    }
    if (url.pathname.startsWith("/process.Process/") || url.pathname === "/files" || url.pathname === "/health") {
      // E2B's edge proxy answers for a sandbox that is not running (paused, killed, unknown) before envd sees the request.
      const id = String(request.headers["e2b-sandbox-id"] ?? "");
      const target = sandboxes.get(id);
      if (!target || target.state !== "running" || !target.container) {
        request.resume();
        return json(response, 502, { sandboxId: id, message: "The sandbox was not found", code: 502 });
      }
    }
    if (url.pathname.startsWith("/process.Process/")) return processHandler(request, response);
    if (url.pathname === "/files") return files(request, response, url);
    if (url.pathname === "/health") {
      response.writeHead(204);
      return void response.end();
    }
    if (request.headers["x-api-key"] !== apiKey) return json(response, 401, { code: 401, message: "Invalid API key" });
    if (url.pathname === "/v2/sandboxes" && request.method === "POST") return create(await readJson(request), response);
    if (url.pathname === "/v2/sandboxes" && request.method === "GET") return list(url, response);
    if (url.pathname === "/snapshots" && request.method === "GET") return json(response, 200, [...snapshots.values()].map(({ snapshotID, names }) => ({ snapshotID, names })));
    const template = /^\/templates\/([^/]+)$/.exec(url.pathname);
    if (template && request.method === "DELETE") {
      const snapshot = snapshots.get(decodeURIComponent(template[1]!));
      if (!snapshot) return json(response, 404, { code: 404, message: `template '${template[1]}' not found` });
      await docker.getImage(snapshot.image).remove({ force: true }).catch(() => undefined);
      snapshots.delete(snapshot.snapshotID);
      response.writeHead(204);
      return void response.end();
    }
    const one = /^\/(?:v2\/)?sandboxes\/([^/]+)(\/connect|\/snapshots|\/pause|\/timeout)?$/.exec(url.pathname);
    const sandbox = one ? sandboxes.get(one[1]!) : undefined;
    if (one && !sandbox) return json(response, 404, { code: 404, message: `sandbox "${one[1]}" not found` });
    if (sandbox && one![2] === "/connect" && request.method === "POST") {
      const body = await readJson(request);
      const refused = overLimit(body.timeout);
      if (refused) return json(response, 400, refused);
      if (typeof body.timeout === "number") sandbox.timeoutSeconds = body.timeout;
      const resumed = sandbox.state === "paused";
      if (resumed) {
        if (!sandbox.container) return json(response, 500, { code: 500, message: `the local E2B cannot resume sandbox "${sandbox.id}": it was added without a container` });
        await sandbox.container.start();
        sandbox.state = "running";
      }
      return json(response, resumed ? 201 : 200, created(sandbox));
    }
    if (sandbox && one![2] === "/snapshots" && request.method === "POST") {
      if (sandbox.state !== "running" || !sandbox.container) return json(response, 409, { code: 409, message: `sandbox "${sandbox.id}" is not running` });
      const { name } = (await readJson(request)) as { name?: string };
      const names = name ? [`local-team/${name}:default`] : [];
      if (names.length && [...snapshots.values()].some((entry) => entry.names.includes(names[0]!))) return json(response, 409, { code: 409, message: `snapshot '${name}' already exists` });
      const snapshotID = randomUUID();
      // Not frozen while committing: freezing a container can hang the engine here.
      await sandbox.container.commit({ repo: snapshotRepo, tag: snapshotID, pause: false });
      snapshots.set(snapshotID, { snapshotID, names, image: `${snapshotRepo}:${snapshotID}` });
      return json(response, 201, { snapshotID, names });
    }
    // setTimeout: the sandbox's lifetime, from now (this fake keeps no clock of it).
    if (sandbox && one![2] === "/timeout" && request.method === "POST") {
      const body = await readJson(request);
      const refused = overLimit(body.timeout);
      if (refused) return json(response, 400, refused);
      if (sandbox.state !== "running") return json(response, 404, { code: 404, message: `sandbox "${sandbox.id}" is not running` });
      if (typeof body.timeout === "number") sandbox.timeoutSeconds = body.timeout;
      response.writeHead(204);
      return void response.end();
    }
    if (sandbox && one![2] === "/pause" && request.method === "POST") {
      if (sandbox.state === "paused") return json(response, 409, { code: 409, message: `sandbox "${sandbox.id}" is already paused` });
      await sandbox.container?.stop({ t: 1 });
      sandbox.state = "paused";
      response.writeHead(204);
      return void response.end();
    }
    if (sandbox && !one![2] && request.method === "GET") return json(response, 200, { ...listed(sandbox), envdAccessToken: sandbox.accessToken, domain: null });
    if (sandbox && !one![2] && request.method === "DELETE") {
      await sandbox.container?.remove({ force: true });
      sandboxes.delete(sandbox.id);
      response.writeHead(204);
      return void response.end();
    }
    json(response, 404, { code: 404, message: `no route ${request.method} ${url.pathname}` });
  }

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      const status = (error as { status?: number }).status ?? 500;
      if (!response.headersSent) json(response, status, { code: status, message: String((error as Error).message ?? error) });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    apiUrl: origin,
    sandboxUrl: origin,
    apiKey,
    requests,
    creates,
    sandboxes,
    snapshots,
    get maxLifetimeHours() {
      return maxLifetimeHours;
    },
    set maxLifetimeHours(hours: number) {
      maxLifetimeHours = hours;
    },
    dropConnections() {
      server.closeAllConnections();
    },
    rateLimit(match, times) {
      limits.push({ match, left: times });
    },
    stall(match) {
      let resume!: () => void;
      stalls.set(match, new Promise<void>((resolve) => (resume = resolve)));
      return () => {
        stalls.delete(match);
        resume();
      };
    },
    async pause(id) {
      const sandbox = sandboxes.get(id)!;
      await sandbox.container?.stop({ t: 1 });
      sandbox.state = "paused";
    },
    addPaused(metadata) {
      const id = `i${randomBytes(10).toString("hex")}`;
      // Sandboxes added within one millisecond share a start time: E2B pages such ties by id.
      const startedAt = new Date().toISOString();
      sandboxes.set(id, { id, templateID: "base", state: "paused", metadata: { ...metadata }, envVars: {}, allowInternetAccess: false, timeoutSeconds: 300, onTimeout: "pause", accessToken: randomBytes(16).toString("hex"), container: undefined, startedAt });
      return id;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const left = await docker.listContainers({ all: true, filters: { label: [`${FAKE_LABEL}=${instance}`] } });
      await Promise.all(left.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
      for (const snapshot of snapshots.values()) await docker.getImage(snapshot.image).remove({ force: true }).catch(() => undefined);
    },
  };
}

function basicUser(header: string | null): string | undefined {
  const encoded = /^Basic (.+)$/.exec(header ?? "")?.[1];
  return encoded ? Buffer.from(encoded, "base64").toString("utf8").split(":")[0] : undefined;
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** The start time and id an X-Next-Token holds (base64 of "<RFC 3339 time>__<id>"), or undefined when it holds none. */
function parseNextToken(token: string): { time: number; id: string } | undefined {
  const parts = Buffer.from(token.replace(/-/g, "+").replace(/_/g, "/"), "base64").toString("utf8").split("__");
  const time = Date.parse(parts[0] ?? "");
  return parts.length === 2 && !Number.isNaN(time) ? { time, id: parts[1]! } : undefined;
}

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}
