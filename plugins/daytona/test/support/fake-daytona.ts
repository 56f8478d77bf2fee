import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { posix } from "node:path";
import { Writable } from "node:stream";
import busboy from "busboy";
import type Docker from "dockerode";
import { SandboxState } from "@daytonaio/sdk";
import { killHostTree } from "../../../../test/support/host-process.js";
import { readFrom, writeInto } from "../../../docker/test/support/container-files.js";

/*
 * A local Daytona: the REST API (/api/sandbox...) and the toolbox API
 * (/toolbox/<id>/...) for exactly the calls @daytonaio/sdk makes for what
 * the adapter uses: create, get by name, list by labels (cursor pages), start, stop, delete, execute a
 * command, bulk upload and bulk download, and snapshots (snapshot a sandbox,
 * list, get by name, delete, create a sandbox from one). Each sandbox is a container on the
 * local Docker engine, as on Daytona's runners, and the toolbox does inside it
 * what Daytona's daemon does: commands are split on spaces and quotes (no
 * shell), run with their output combined and killed at their timeout (HTTP 408).
 */

export const FAKE_LABEL = "dev.assembly-line.test.fake-daytona";

interface FakeSandbox {
  id: string;
  name: string;
  state: "started" | "stopped" | "archived" | "destroyed";
  labels: Record<string, string>;
  env: Record<string, string>;
  networkBlockAll: boolean;
  snapshot: string | undefined;
  image: string;
  autoStopInterval: number;
  cpu: number;
  memory: number;
  disk: number;
  /** None for one addArchived recorded: Daytona keeps an archived sandbox's files in object storage, on no runner. */
  container: Docker.Container | undefined;
  createdAt: string;
  updatedAt: string;
}

interface FakeSnapshot {
  id: string;
  name: string;
  imageName: string;
  sourceSandboxId: string;
  createdAt: string;
}

export interface FakeDaytona {
  apiUrl: string;
  apiKey: string;
  /** "METHOD /path" of every request, in order. */
  requests: string[];
  /** Every create request's JSON body. */
  creates: Array<Record<string, unknown>>;
  sandboxes: Map<string, FakeSandbox>;
  snapshots: Map<string, FakeSnapshot>;
  /** Record an archived sandbox (name, labels) without a container, as Daytona keeps one off any runner (listing at scale; it cannot be started here). Its id. */
  addArchived(options: { name: string; labels: Record<string, string> }): string;
  /** Hold every request whose "METHOD /path" matches unanswered, as a hung API does, until the returned function is called. */
  stall(match: RegExp): () => void;
  /** Answer the next `times` requests whose "METHOD /path" matches with 429 and `Retry-After: retryAfter`, as Daytona's rate limiter does, before handling them. */
  rateLimit(match: RegExp, times: number, retryAfter: string): void;
  /** "METHOD /path" of every request answered 429, in order. */
  limited: string[];
  close(): Promise<void>;
}

const KEEP_ALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";
/** A sandbox that runs: one with a container. */
type Running = FakeSandbox & { container: Docker.Container };
/** The sandbox fields GET /api/sandbox sorts by (the SDK's SandboxListSortField), as this fake keeps them. */
const SORT_FIELDS: Record<string, (sandbox: FakeSandbox) => string | number> = {
  name: (sandbox) => sandbox.name,
  cpu: (sandbox) => sandbox.cpu,
  memoryGib: (sandbox) => sandbox.memory,
  diskGib: (sandbox) => sandbox.disk,
  // Daytona's default; here a sandbox's last activity is its last update.
  lastActivityAt: (sandbox) => sandbox.updatedAt,
  createdAt: (sandbox) => sandbox.createdAt,
};
/** States a listing may filter by: all but destroyed, which it never lists. */
const LISTED_STATES = Object.values(SandboxState).filter((state) => state !== SandboxState.DESTROYED && state !== SandboxState.UNKNOWN_DEFAULT_OPEN_API) as string[];

export async function startFakeDaytona(options: { docker: Docker; image: string; snapshots?: Record<string, string> }): Promise<FakeDaytona> {
  const { docker } = options;
  const apiKey = `dtn_${randomBytes(16).toString("hex")}`;
  const instance = randomBytes(6).toString("hex");
  const sandboxes = new Map<string, FakeSandbox>();
  const requests: string[] = [];
  const creates: Array<Record<string, unknown>> = [];
  const snapshots = new Map<string, FakeSnapshot>();
  const snapshotRepo = `fake-daytona-snapshot-${instance}`;
  let origin = "";
  const stalls = new Map<RegExp, Promise<void>>();
  const limits: Array<{ match: RegExp; left: number; retryAfter: string }> = [];
  const limited: string[] = [];
  const snapshotDto = (snapshot: FakeSnapshot) => ({
    id: snapshot.id,
    organizationId: "org-local",
    general: false,
    name: snapshot.name,
    imageName: snapshot.imageName,
    state: "active",
    size: 0.1,
    entrypoint: null,
    cpu: 1,
    gpu: 0,
    mem: 1,
    disk: 3,
    errorReason: null,
    createdAt: snapshot.createdAt,
    updatedAt: snapshot.createdAt,
    lastUsedAt: null,
    sourceSandboxId: snapshot.sourceSandboxId,
  });
  const snapshotByIdOrName = (idOrName: string) => snapshots.get(idOrName) ?? [...snapshots.values()].find((entry) => entry.id === idOrName);

  const byIdOrName = (idOrName: string) => sandboxes.get(idOrName) ?? [...sandboxes.values()].find((entry) => entry.name === idOrName);
  const dto = (sandbox: FakeSandbox) => ({
    id: sandbox.id,
    organizationId: "org-local",
    name: sandbox.name,
    snapshot: sandbox.snapshot,
    user: "root",
    env: sandbox.env,
    labels: sandbox.labels,
    public: false,
    networkBlockAll: sandbox.networkBlockAll,
    target: "local",
    cpu: sandbox.cpu,
    gpu: 0,
    memory: sandbox.memory,
    disk: sandbox.disk,
    state: sandbox.state,
    desiredState: sandbox.state,
    autoStopInterval: sandbox.autoStopInterval,
    autoArchiveInterval: 10080,
    autoDeleteInterval: -1,
    createdAt: sandbox.createdAt,
    updatedAt: sandbox.updatedAt,
    toolboxProxyUrl: `${origin}/toolbox`,
  });

  async function createSandbox(body: Record<string, unknown>, response: ServerResponse): Promise<void> {
    creates.push(body);
    const name = typeof body.name === "string" && body.name !== "" ? body.name : randomUUID();
    if (byIdOrName(name)) return json(response, 409, { statusCode: 409, message: `Sandbox with name ${name} already exists`, error: "Conflict" });
    const buildInfo = body.buildInfo as { dockerfileContent?: string } | undefined;
    const fromImage = /^FROM\s+(\S+)/m.exec(buildInfo?.dockerfileContent ?? "")?.[1];
    const snapshot = typeof body.snapshot === "string" ? body.snapshot : undefined;
    const snapshotImage = snapshot ? (snapshots.get(snapshot)?.imageName ?? options.snapshots?.[snapshot]) : undefined;
    if (snapshot && !snapshotImage) return json(response, 404, { statusCode: 404, message: `Snapshot ${snapshot} not found`, error: "Not Found" });
    const image = fromImage ?? snapshotImage ?? options.image;
    const id = randomUUID();
    const env = (body.env as Record<string, string> | undefined) ?? {};
    const container = await docker.createContainer({
      name: `fake-daytona-${instance}-${id.slice(0, 8)}`,
      Image: image,
      Entrypoint: ["/bin/sh", "-c"],
      Cmd: [KEEP_ALIVE],
      Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
      Labels: { [FAKE_LABEL]: instance },
      // The engine here has no bridge, so every fake sandbox is offline whatever networkBlockAll says (the request is recorded).
      HostConfig: { NetworkMode: "none", PidsLimit: 256 },
    });
    await container.start();
    const now = new Date().toISOString();
    const sandbox: FakeSandbox = {
      id,
      name,
      state: "started",
      labels: (body.labels as Record<string, string> | undefined) ?? {},
      env,
      networkBlockAll: body.networkBlockAll === true,
      snapshot,
      image,
      autoStopInterval: typeof body.autoStopInterval === "number" ? body.autoStopInterval : 15,
      cpu: typeof body.cpu === "number" ? body.cpu : 1,
      memory: typeof body.memory === "number" ? body.memory : 1,
      disk: typeof body.disk === "number" ? body.disk : 3,
      container,
      createdAt: now,
      updatedAt: now,
    };
    sandboxes.set(id, sandbox);
    json(response, 200, dto(sandbox));
  }

  async function execute(sandbox: Running, body: { command?: string; timeout?: number; cwd?: string }, response: ServerResponse): Promise<void> {
    const argv = parseCommand(body.command ?? "");
    if (argv.length === 0) return json(response, 400, { statusCode: 400, message: "empty command" });
    const exec = await sandbox.container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true, ...(body.cwd ? { WorkingDir: body.cwd } : {}) });
    const stream = await exec.start({ hijack: true, stdin: false });
    const combined: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        combined.push(Buffer.from(chunk));
        done();
      },
    });
    sandbox.container.modem.demuxStream(stream, sink, sink);
    let timedOut = false;
    const timer =
      typeof body.timeout === "number" && body.timeout > 0
        ? setTimeout(() => {
            timedOut = true;
            void exec.inspect().then((info) => killHostTree(info.Pid));
          }, body.timeout * 1000)
        : undefined;
    await new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", resolve);
    });
    if (timer) clearTimeout(timer);
    if (timedOut) return json(response, 408, { statusCode: 408, message: `Command execution timed out after ${body.timeout} seconds. The timeout can be increased by adjusting the timeout parameter in the request.`, code: "PROCESS_EXECUTION_TIMEOUT" });
    const info = await exec.inspect();
    json(response, 200, { exitCode: info.ExitCode ?? -1, result: Buffer.concat(combined).toString("utf8") });
  }

  async function upload(sandbox: Running, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const paths = new Map<string, string>();
    const files: Array<{ path: string; bytes: number }> = [];
    const writes: Array<Promise<void>> = [];
    await new Promise<void>((resolve, reject) => {
      const parser = busboy({ headers: request.headers });
      parser.on("field", (name, value) => {
        const index = /^files\[(\d+)\]\.path$/.exec(name)?.[1];
        // As the daemon reads it (upload_files.go: `dest := strings.TrimSpace(...)`): whitespace at the path's ends is dropped.
        if (index !== undefined) paths.set(index, value.trim());
      });
      parser.on("file", (name, stream) => {
        const index = /^files\[(\d+)\]\.file$/.exec(name)?.[1];
        const destination = index === undefined ? undefined : paths.get(index);
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          if (!destination) return;
          const content = Buffer.concat(chunks);
          files.push({ path: destination, bytes: content.length });
          writes.push(writeInto(sandbox.container, destination, content));
        });
      });
      parser.on("close", resolve);
      parser.on("error", reject);
      request.pipe(parser);
    });
    try {
      await Promise.all(writes);
    } catch (error) {
      return json(response, 400, { errors: [String(error)], files });
    }
    json(response, 200, { files });
  }

  async function download(sandbox: Running, body: { paths?: string[] }, response: ServerResponse): Promise<void> {
    if (!Array.isArray(body.paths) || body.paths.length === 0) return json(response, 400, { error: 'request body must be {"paths": [ ... ]} and non-empty' });
    const boundary = "DAYTONA-FILE-BOUNDARY";
    const parts: Buffer[] = [];
    for (const path of body.paths) {
      const content = await readFrom(sandbox.container, path);
      const field = content === undefined ? "error" : "file";
      const type = content === undefined ? "text/plain; charset=utf-8" : "application/octet-stream";
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${path}"\r\nContent-Type: ${type}\r\n\r\n`));
      parts.push(content ?? Buffer.from(`file not found or invalid: ${path}`));
      parts.push(Buffer.from("\r\n"));
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    response.writeHead(200, { "content-type": `multipart/form-data; boundary=${boundary}` });
    response.end(Buffer.concat(parts));
  }

  /**
   * GET /api/sandbox as Daytona answers it: the organization's sandboxes but
   * destroyed ones, filtered by labels (JSON, every one given must match),
   * states and id or name prefix, sorted (default lastActivityAt, newest first;
   * ties by id), a page of `limit` (1-200, default 100), and the cursor of the
   * next page in `nextCursor` (null on the last). A bad parameter is a 400.
   */
  function listSandboxes(url: URL, response: ServerResponse): void {
    const query = url.searchParams;
    const invalid = (message: string | string[]) => json(response, 400, { statusCode: 400, message, error: "Bad Request" });
    const limit = Number(query.get("limit") ?? 100);
    if (!Number.isInteger(limit)) return invalid(["limit must be an integer number"]);
    if (limit < 1 || limit > 200) return invalid([limit < 1 ? "limit must not be less than 1" : "limit must not be greater than 200"]);
    let labels: Record<string, string> = {};
    try {
      labels = JSON.parse(query.get("labels") ?? "{}") as Record<string, string>;
    } catch {
      return invalid("Invalid labels JSON format");
    }
    const states = query.getAll("states");
    if (states.some((state) => !LISTED_STATES.includes(state))) return invalid([`each value in states must be one of the following values: ${LISTED_STATES.join(", ")}`]);
    const field = query.get("sort") ?? "lastActivityAt";
    const sortBy = SORT_FIELDS[field];
    if (!sortBy) return invalid([`sort must be one of the following values: ${Object.keys(SORT_FIELDS).join(", ")}`]);
    const order = query.get("order") ?? "desc";
    if (order !== "asc" && order !== "desc") return invalid(["order must be one of the following values: asc, desc"]);
    const direction = order === "asc" ? 1 : -1;
    const compare = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
    const position = (sandbox: FakeSandbox) => ({ value: sortBy(sandbox), id: sandbox.id });
    const before = (a: { value: string | number; id: string }, b: { value: string | number; id: string }) => (compare(a.value, b.value) || compare(a.id, b.id)) * direction;
    let cursor: { value: string | number; id: string } | undefined;
    const token = query.get("cursor");
    if (token) {
      try {
        cursor = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { value: string | number; id: string };
        if (typeof cursor?.id !== "string" || (typeof cursor.value !== "string" && typeof cursor.value !== "number")) throw new Error("shape");
      } catch {
        return invalid("Invalid cursor");
      }
    }
    const idPrefix = query.get("id")?.toLowerCase();
    const namePrefix = query.get("name")?.toLowerCase();
    const matching = [...sandboxes.values()]
      .filter(
        (sandbox) =>
          sandbox.state !== "destroyed" &&
          Object.entries(labels).every(([key, value]) => sandbox.labels[key] === value) &&
          (states.length === 0 || states.includes(sandbox.state)) &&
          (!idPrefix || sandbox.id.toLowerCase().startsWith(idPrefix)) &&
          (!namePrefix || sandbox.name.toLowerCase().startsWith(namePrefix)),
      )
      .sort((a, b) => before(position(a), position(b)));
    const rest = cursor ? matching.filter((sandbox) => before(position(sandbox), cursor) > 0) : matching;
    const page = rest.slice(0, limit);
    const last = page.at(-1);
    const nextCursor = rest.length > limit && last ? Buffer.from(JSON.stringify(position(last))).toString("base64url") : null;
    json(response, 200, { items: page.map(dto), nextCursor });
  }

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? "/", origin);
    requests.push(`${request.method} ${url.pathname}`);
    for (const [match, resumed] of stalls) if (match.test(`${request.method} ${url.pathname}`)) await resumed;
    // Daytona's API (NestJS's throttler) refuses before the request is handled, with the wait in Retry-After.
    const limit = limits.find((entry) => entry.left > 0 && entry.match.test(`${request.method} ${url.pathname}`));
    if (limit) {
      limit.left -= 1;
      limited.push(`${request.method} ${url.pathname}`);
      request.resume();
      response.writeHead(429, { "content-type": "application/json", "retry-after": limit.retryAfter });
      return void response.end(JSON.stringify({ statusCode: 429, message: "ThrottlerException: Too Many Requests" }));
    }
    if (request.headers.authorization !== `Bearer ${apiKey}`) return json(response, 401, { statusCode: 401, message: "Invalid credentials", error: "Unauthorized" });
    const api = /^\/api\/sandbox(?:\/([^/]+))?(?:\/([a-z-]+))?$/.exec(url.pathname);
    if (api) {
      const [, idOrName, action] = api;
      if (!idOrName && request.method === "POST") return createSandbox(await readJson(request), response);
      if (!idOrName && !action && request.method === "GET") return listSandboxes(url, response);
      const sandbox = idOrName ? byIdOrName(decodeURIComponent(idOrName)) : undefined;
      if (!sandbox) return json(response, 404, { statusCode: 404, message: `Sandbox with ID or name ${idOrName} not found`, error: "Not Found" });
      if (!action && request.method === "GET") return json(response, 200, dto(sandbox));
      if (!action && request.method === "DELETE") {
        await sandbox.container?.remove({ force: true });
        sandbox.state = "destroyed";
        sandboxes.delete(sandbox.id);
        return json(response, 200, dto(sandbox));
      }
      if (action === "start" && request.method === "POST") {
        if (!sandbox.container) return json(response, 400, { statusCode: 400, message: `the local Daytona cannot restore archived sandbox ${sandbox.id}: it was added without a container`, error: "Bad Request" });
        if (sandbox.state !== "started") await sandbox.container.start();
        sandbox.state = "started";
        return json(response, 200, dto(sandbox));
      }
      if (action === "stop" && request.method === "POST") {
        await sandbox.container?.stop({ t: 1 });
        sandbox.state = "stopped";
        return json(response, 200, dto(sandbox));
      }
      if (action === "toolbox-proxy-url" && request.method === "GET") return json(response, 200, { url: `${origin}/toolbox` });
      if (action === "snapshot" && request.method === "POST") {
        const { name } = (await readJson(request)) as { name?: string };
        if (!name) return json(response, 400, { statusCode: 400, message: "name is required", error: "Bad Request" });
        if (!sandbox.container) return json(response, 400, { statusCode: 400, message: `Sandbox is ${sandbox.state}`, error: "Bad Request" });
        if (snapshots.has(name)) return json(response, 409, { statusCode: 409, message: `Snapshot ${name} already exists`, error: "Conflict" });
        const tag = String(snapshots.size + 1) + randomBytes(3).toString("hex");
        await sandbox.container.commit({ repo: snapshotRepo, tag, pause: false });
        snapshots.set(name, { id: randomUUID(), name, imageName: `${snapshotRepo}:${tag}`, sourceSandboxId: sandbox.id, createdAt: new Date().toISOString() });
        return json(response, 200, dto(sandbox));
      }
    }
    const snapshotRoute = /^\/api\/snapshots(?:\/([^/]+))?$/.exec(url.pathname);
    if (snapshotRoute) {
      const [, idOrName] = snapshotRoute;
      if (!idOrName && request.method === "GET") {
        const page = Number(url.searchParams.get("page") ?? 1);
        const limit = Number(url.searchParams.get("limit") ?? 100);
        const all = [...snapshots.values()];
        return json(response, 200, { items: all.slice((page - 1) * limit, page * limit).map(snapshotDto), total: all.length, page, totalPages: Math.max(1, Math.ceil(all.length / limit)) });
      }
      const snapshot = idOrName ? snapshotByIdOrName(decodeURIComponent(idOrName)) : undefined;
      if (!snapshot) return json(response, 404, { statusCode: 404, message: `Snapshot ${idOrName} not found`, error: "Not Found" });
      if (request.method === "GET") return json(response, 200, snapshotDto(snapshot));
      if (request.method === "DELETE") {
        await docker.getImage(snapshot.imageName).remove({ force: true }).catch(() => undefined);
        snapshots.delete(snapshot.name);
        response.writeHead(200);
        return void response.end();
      }
    }
    const toolbox = /^\/toolbox\/([^/]+)\/(process\/execute|files\/bulk-upload|files\/bulk-download)$/.exec(url.pathname);
    if (toolbox && request.method === "POST") {
      const sandbox = sandboxes.get(toolbox[1]!);
      if (!sandbox) return json(response, 404, { statusCode: 404, message: "Sandbox not found", error: "Not Found" });
      // Daytona's runner refuses a call to a sandbox not running before it reaches the daemon, naming the state in a header (the proxy's wake-on-request reads it).
      if (sandbox.state !== "started" || !sandbox.container) {
        request.resume();
        response.writeHead(503, { "content-type": "application/json", "x-daytona-sandbox-state": sandbox.state });
        return void response.end(JSON.stringify({ statusCode: 503, message: `sandbox is in ${sandbox.state} state`, error: "Service Unavailable" }));
      }
      const running = sandbox as Running;
      if (toolbox[2] === "process/execute") return execute(running, await readJson(request), response);
      if (toolbox[2] === "files/bulk-upload") return upload(running, request, response);
      return download(running, await readJson(request), response);
    }
    json(response, 404, { statusCode: 404, message: `Cannot ${request.method} ${url.pathname}`, error: "Not Found" });
  }

  const server = createServer((request, response) => {
    route(request, response).catch((error: unknown) => {
      if (!response.headersSent) json(response, 500, { statusCode: 500, message: String(error), error: "Internal Server Error" });
      else response.destroy();
    });
  });
  // Daytona's event gateway (socket.io) is not served: the SDK then polls, which these calls never need.
  server.on("upgrade", (_request, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    apiUrl: `${origin}/api`,
    apiKey,
    requests,
    creates,
    sandboxes,
    snapshots,
    limited,
    addArchived({ name, labels }) {
      const id = randomUUID();
      const now = new Date().toISOString();
      sandboxes.set(id, { id, name, state: "archived", labels: { ...labels }, env: {}, networkBlockAll: true, snapshot: undefined, image: options.image, autoStopInterval: 15, cpu: 1, memory: 1, disk: 3, container: undefined, createdAt: now, updatedAt: now });
      return id;
    },
    rateLimit(match, times, retryAfter) {
      limits.push({ match, left: times, retryAfter });
    },
    stall(match) {
      let resume!: () => void;
      stalls.set(match, new Promise<void>((resolve) => (resume = resolve)));
      return () => {
        stalls.delete(match);
        resume();
      };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const left = await docker.listContainers({ all: true, filters: { label: [`${FAKE_LABEL}=${instance}`] } });
      await Promise.all(left.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
      for (const snapshot of snapshots.values()) await docker.getImage(snapshot.imageName).remove({ force: true }).catch(() => undefined);
    },
  };
}

/** Daytona's daemon splits a command like this: on spaces, honouring '' and "" (no escapes, no shell). */
export function parseCommand(command: string): string[] {
  const args: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (const char of command) {
    if (char === '"' || char === "'") {
      if (!quote) quote = char;
      else if (quote === char) quote = undefined;
      else current += char;
    } else if (char === " " && !quote) {
      if (current.length > 0) args.push(current);
      current = "";
    } else current += char;
  }
  if (current.length > 0) args.push(current);
  return args;
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>);
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}
