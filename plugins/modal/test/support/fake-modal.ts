import { randomBytes } from "node:crypto";
import { EventEmitter, once } from "node:events";
import type { Duplex } from "node:stream";
import { Writable } from "node:stream";
import type Docker from "dockerode";
import { ServerError, Status, createServer, type CallContext } from "nice-grpc";
import { killHostTree } from "../../../../test/support/host-process.js";
import { modalDefinitions, type ServiceDefinition } from "./modal-definitions.js";

/*
 * A local Modal: the control plane (modal.client.ModalClient) and the task
 * command router (modal.task_command_router.TaskCommandRouter) over gRPC,
 * served with nice-grpc from the definitions the installed SDK bundles, for
 * exactly the calls the modal SDK makes for what the adapter uses (listing
 * included, in pages by creation time), on the
 * SDK's default (V2) sandbox path. One plain HTTP/2 port serves both: the SDK
 * dials a localhost control plane without TLS, and then also the router (whose
 * URL must still say https). Each sandbox is a container on the local Docker
 * engine, so commands really run.
 */

export const FAKE_LABEL = "dev.assembly-line.test.fake-modal";
const IMAGE_BUILDER_VERSION = "2025.06";
/** GenericResult statuses. */
const SUCCESS = 1;
const FAILURE = 2;
const TERMINATED = 3;
/**
 * Sandboxes per SandboxListV2 answer. Modal does not document its page size; the
 * SDK asks for the next page (created before the last one listed) until one is
 * empty, so any size pages the same way.
 */
const LIST_PAGE = 100;

interface FakeExec {
  id: string;
  args: string[];
  output: [Buffer[], Buffer[]];
  /** Bytes of stdin accepted so far (TaskExecStdinWrite offsets). */
  stdinOffset: number;
  stdin: Duplex;
  exitCode: number | undefined;
  events: EventEmitter;
}

interface FakeSandbox {
  id: string;
  taskId: string;
  appId: string;
  name: string | undefined;
  tags: Record<string, string>;
  state: "running" | "terminated";
  /** Seconds since the epoch, as SandboxInfo.created_at; distinct per sandbox, as Modal's fine-grained times practically are. */
  createdAt: number;
  jwt: string;
  /** None for one addRunning recorded (listing at scale): commands in it fail. */
  container: Docker.Container | undefined;
  definition: Record<string, unknown>;
  env: Record<string, string>;
  execs: Map<string, FakeExec>;
  lifetime: NodeJS.Timeout | undefined;
}

export interface FakeModal {
  serverUrl: string;
  tokenId: string;
  tokenSecret: string;
  /** "<Service>/<Method>" of every call, in order. */
  calls: string[];
  /** Each SandboxCreateV2 request as the SDK sent it. */
  creates: Array<Record<string, unknown>>;
  sandboxes: Map<string, FakeSandbox>;
  /** What Modal does when a sandbox's lifetime (timeoutSecs) ends: terminate it. */
  expire(sandboxId: string): Promise<void>;
  /** Record a running sandbox of the App with these tags, without a container (listing at scale). Its id. */
  addRunning(options: { appId: string; tags: Record<string, string>; name?: string }): string;
  /** Hold every call whose "<Service>/<Method>" matches unanswered, as a hung server does, until the returned function is called. */
  stall(match: RegExp): () => void;
  close(): Promise<void>;
}

const KEEP_ALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

export async function startFakeModal(options: { docker: Docker; images: Record<string, string> }): Promise<FakeModal> {
  const { docker } = options;
  const { ModalClientDefinition, TaskCommandRouterDefinition } = modalDefinitions();
  const tokenId = `ak-${randomBytes(10).toString("hex")}`;
  const tokenSecret = `as-${randomBytes(16).toString("hex")}`;
  const instance = randomBytes(6).toString("hex");
  const calls: string[] = [];
  const creates: Array<Record<string, unknown>> = [];
  const sandboxes = new Map<string, FakeSandbox>();
  const apps = new Map<string, string>();
  const images = new Map<string, string>();
  /** Names being created ("<appId>\0<name>"), settled once the sandbox runs. */
  const creating = new Map<string, Promise<void>>();
  let routerUrl = "";
  const stalls = new Map<RegExp, Promise<void>>();
  const held = async (path: string) => {
    for (const [match, resumed] of stalls) if (match.test(path)) await resumed;
  };
  let lastCreatedAt = 0;
  const createdNow = () => (lastCreatedAt = Math.max(Date.now() / 1000, lastCreatedAt + 0.000_001));

  /** Auth tokens AuthTokenGet handed out; every other call carries one as x-modal-auth-token. */
  const issued = new Set<string>();
  const checkToken = (context: CallContext, authTokenGet = false) => {
    if (context.metadata.get("x-modal-token-id") !== tokenId || context.metadata.get("x-modal-token-secret") !== tokenSecret) {
      throw new ServerError(Status.UNAUTHENTICATED, "Token ID or secret is invalid");
    }
    if (!authTokenGet && !issued.has(context.metadata.get("x-modal-auth-token") ?? "")) throw new ServerError(Status.UNAUTHENTICATED, "missing or unknown x-modal-auth-token");
  };
  const byId = (sandboxId: string | undefined) => {
    const sandbox = sandboxes.get(sandboxId ?? "");
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Sandbox ${sandboxId} not found`);
    return sandbox;
  };

  async function terminate(sandbox: FakeSandbox): Promise<void> {
    if (sandbox.state === "terminated") return;
    sandbox.state = "terminated";
    clearTimeout(sandbox.lifetime);
    await sandbox.container?.remove({ force: true }).catch(() => undefined);
    for (const exec of sandbox.execs.values()) {
      exec.exitCode ??= 137;
      exec.events.emit("change");
    }
  }

  async function startSandbox(
    request: { appId: string; tags: Array<{ tagName: string; tagValue: string }>; secretSources: Array<{ env?: { contents: Record<string, string> } }> },
    definition: Record<string, unknown>,
    image: string,
    name: string | undefined,
  ) {
    const env = Object.assign({}, ...request.secretSources.map((source) => source.env?.contents ?? {})) as Record<string, string>;
    const id = `sb-${randomBytes(14).toString("hex")}`;
    const container = await docker.createContainer({
      name: `fake-modal-${instance}-${id}`,
      Image: image,
      Entrypoint: ["/bin/sh", "-c"],
      Cmd: [KEEP_ALIVE],
      Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
      WorkingDir: (definition.workdir as string | undefined) || undefined,
      Labels: { [FAKE_LABEL]: instance },
      // The engine here has no bridge: every fake sandbox is offline whatever networkAccess says (the request is recorded).
      HostConfig: { NetworkMode: "none", PidsLimit: 256 },
    });
    await container.start();
    const sandbox: FakeSandbox = {
      id,
      taskId: `ta-${randomBytes(11).toString("hex")}`,
      appId: request.appId,
      name,
      tags: Object.fromEntries(request.tags.map((tag) => [tag.tagName, tag.tagValue])),
      state: "running",
      createdAt: createdNow(),
      jwt: randomBytes(24).toString("base64url"),
      container,
      definition,
      env,
      execs: new Map(),
      lifetime: undefined,
    };
    const lifetimeSecs = Number(definition.timeoutSecs ?? 300);
    sandbox.lifetime = setTimeout(() => void terminate(sandbox), lifetimeSecs * 1000);
    sandbox.lifetime.unref();
    sandboxes.set(id, sandbox);
    return { sandboxId: id, taskId: sandbox.taskId, tunnels: [], commandRouterAccess: { url: routerUrl, jwt: sandbox.jwt } };
  }

  const control: Record<string, (request: never, context: CallContext) => unknown> = {
    async authTokenGet(_request: never, context: CallContext) {
      checkToken(context, true);
      const exp = Math.floor(Date.now() / 1000) + 3600;
      const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
      const token = `${part({ alg: "none", typ: "JWT" })}.${part({ exp, sub: tokenId, jti: randomBytes(8).toString("hex") })}.local`;
      issued.add(token);
      return { token };
    },
    async appGetOrCreate(request: { appName: string; environmentName: string; objectCreationType: number }, context: CallContext) {
      checkToken(context);
      const key = `${request.environmentName}\0${request.appName}`;
      let appId = apps.get(key);
      if (!appId) {
        if (request.objectCreationType !== 1) throw new ServerError(Status.NOT_FOUND, `App '${request.appName}' not found`);
        appId = `ap-${randomBytes(11).toString("hex")}`;
        apps.set(key, appId);
      }
      return { appId };
    },
    async environmentGetOrCreate(request: { deploymentName: string }, context: CallContext) {
      checkToken(context);
      return { environmentId: "en-local", metadata: { name: request.deploymentName || "main", settings: { imageBuilderVersion: IMAGE_BUILDER_VERSION, webhookSuffix: "" } } };
    },
    async imageGetOrCreate(request: { image?: { dockerfileCommands: string[]; baseImages: unknown[] } }, context: CallContext) {
      checkToken(context);
      const commands = request.image?.dockerfileCommands ?? [];
      const tag = /^FROM (\S+)$/.exec(commands[0] ?? "")?.[1];
      const local = tag ? options.images[tag] : undefined;
      const imageId = `im-${randomBytes(11).toString("hex")}`;
      // Only a registry image with no further layers is built here; anything else fails its build, as a failed pull does.
      if (!local || commands.length !== 1 || (request.image?.baseImages.length ?? 0) > 0) {
        return { imageId, result: { status: FAILURE, exception: `local Modal builds only known registry images, not ${JSON.stringify(commands)}` } };
      }
      images.set(imageId, local);
      return { imageId, result: { status: SUCCESS } };
    },
    async sandboxCreateV2(request: { appId: string; definition?: Record<string, unknown>; tags: Array<{ tagName: string; tagValue: string }>; secretSources: Array<{ env?: { contents: Record<string, string> } }> }, context: CallContext) {
      checkToken(context);
      creates.push(request as unknown as Record<string, unknown>);
      const definition = request.definition ?? {};
      // A sandbox command (its entrypoint) is not run here: the adapter never sets one.
      if (((definition.entrypointArgs as string[] | undefined) ?? []).length > 0) throw new ServerError(Status.UNIMPLEMENTED, "the local Modal runs no sandbox command (entrypointArgs)");
      const image = images.get(String(definition.imageId));
      if (!image) throw new ServerError(Status.NOT_FOUND, `Image ${String(definition.imageId)} not found`);
      const name = (definition.name as string | undefined) || undefined;
      const nameKey = `${request.appId}\0${name}`;
      if (name && (creating.has(nameKey) || [...sandboxes.values()].some((other) => other.state === "running" && other.appId === request.appId && other.name === name))) {
        throw new ServerError(Status.ALREADY_EXISTS, `Sandbox with name '${name}' already exists in App`);
      }
      // The name is taken from this moment, as Modal registers a sandbox before its container runs.
      let created!: () => void;
      if (name) creating.set(nameKey, new Promise<void>((resolve) => (created = resolve)));
      try {
        return await startSandbox(request, definition, image, name);
      } finally {
        if (name) {
          creating.delete(nameKey);
          created();
        }
      }
    },
    async sandboxGetFromNameV2(request: { sandboxName: string; appName: string; environmentName: string }, context: CallContext) {
      checkToken(context);
      const appId = apps.get(`${request.environmentName}\0${request.appName}`);
      await creating.get(`${appId}\0${request.sandboxName}`);
      const found = [...sandboxes.values()].find((sandbox) => sandbox.state === "running" && sandbox.appId === appId && sandbox.name === request.sandboxName);
      if (!found) throw new ServerError(Status.NOT_FOUND, `Sandbox with name '${request.sandboxName}' not found`);
      return { sandboxId: found.id };
    },
    async sandboxGetFromName(request: { sandboxName: string }, context: CallContext) {
      checkToken(context);
      // Only V1 sandboxes answer here, and this server makes V2 ones.
      throw new ServerError(Status.NOT_FOUND, `Sandbox with name '${request.sandboxName}' not found`);
    },
    async sandboxGetTaskIdV2(request: { sandboxId: string }, context: CallContext) {
      checkToken(context);
      const sandbox = byId(request.sandboxId);
      if (sandbox.state !== "running") return { taskResult: { status: TERMINATED, exception: "Sandbox terminated" } };
      return { taskId: sandbox.taskId };
    },
    async sandboxGetCommandRouterAccess(request: { sandboxId?: string }, context: CallContext) {
      checkToken(context);
      const sandbox = byId(request.sandboxId);
      if (sandbox.state !== "running") throw new ServerError(Status.FAILED_PRECONDITION, "Sandbox is not running");
      return { url: routerUrl, jwt: sandbox.jwt, workerIpv4Address: "127.0.0.1" };
    },
    /**
     * The App's (or, without one, the environment's) sandboxes with every tag
     * asked, running ones only unless includeFinished, newest first, those made
     * before beforeTimestamp when it is set, LIST_PAGE at most.
     */
    async sandboxListV2(request: { appId: string; beforeTimestamp: number; environmentName: string; includeFinished: boolean; tags: Array<{ tagName: string; tagValue: string }> }, context: CallContext) {
      checkToken(context);
      const environmentApps = new Set([...apps].filter(([key]) => key.split("\0")[0] === request.environmentName).map(([, appId]) => appId));
      const listed = [...sandboxes.values()]
        .filter(
          (sandbox) =>
            (request.appId ? sandbox.appId === request.appId : environmentApps.has(sandbox.appId)) &&
            (request.includeFinished || sandbox.state === "running") &&
            request.tags.every((tag) => sandbox.tags[tag.tagName] === tag.tagValue) &&
            (!request.beforeTimestamp || sandbox.createdAt < request.beforeTimestamp),
        )
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, LIST_PAGE);
      return {
        sandboxes: listed.map((sandbox) => ({
          id: sandbox.id,
          createdAt: sandbox.createdAt,
          appId: sandbox.appId,
          tags: Object.entries(sandbox.tags).map(([tagName, tagValue]) => ({ tagName, tagValue })),
          name: sandbox.name ?? "",
          timeoutSecs: Number(sandbox.definition.timeoutSecs ?? 300),
        })),
      };
    },
    async sandboxTagsGetV2(request: { sandboxId: string }, context: CallContext) {
      checkToken(context);
      const sandbox = byId(request.sandboxId);
      return { tags: Object.entries(sandbox.tags).map(([tagName, tagValue]) => ({ tagName, tagValue })) };
    },
    async sandboxTerminateV2(request: { sandboxId: string }, context: CallContext) {
      checkToken(context);
      await terminate(byId(request.sandboxId));
      return {};
    },
  };

  /** The task's sandbox, when the router call carries its JWT. */
  const task = (taskId: string, context: CallContext) => {
    const sandbox = [...sandboxes.values()].find((entry) => entry.taskId === taskId);
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `task ${taskId} not found`);
    if (context.metadata.get("authorization") !== `Bearer ${sandbox.jwt}`) throw new ServerError(Status.UNAUTHENTICATED, "invalid or missing JWT");
    if (sandbox.state !== "running") throw new ServerError(Status.NOT_FOUND, `task ${taskId} has finished`);
    if (!sandbox.container) throw new ServerError(Status.UNIMPLEMENTED, `the local Modal runs no command in sandbox ${sandbox.id}: it was added without a container`);
    return sandbox as FakeSandbox & { container: Docker.Container };
  };
  const execOf = (sandbox: FakeSandbox, execId: string) => {
    const exec = sandbox.execs.get(execId);
    if (!exec) throw new ServerError(Status.NOT_FOUND, `exec ${execId} not found`);
    return exec;
  };

  const router: Record<string, (request: never, context: CallContext) => unknown> = {
    async taskExecStart(
      request: { taskId: string; execId: string; commandArgs: string[]; workdir?: string; timeoutSecs?: number; stdoutConfig: number; stderrConfig: number; secretSources: Array<{ env?: { contents: Record<string, string> } }> },
      context: CallContext,
    ) {
      const sandbox = task(request.taskId, context);
      if (sandbox.execs.has(request.execId)) return {};
      const env = { ...sandbox.env, ...Object.assign({}, ...request.secretSources.map((source) => source.env?.contents ?? {})) } as Record<string, string>;
      const dockerExec = await sandbox.container.exec({
        Cmd: request.commandArgs,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
        ...(request.workdir ? { WorkingDir: request.workdir } : {}),
      });
      const stream = (await dockerExec.start({ hijack: true, stdin: true })) as Duplex;
      const exec: FakeExec = { id: request.execId, args: request.commandArgs, output: [[], []], stdinOffset: 0, stdin: stream, exitCode: undefined, events: new EventEmitter() };
      sandbox.execs.set(request.execId, exec);
      const sink = (index: 0 | 1, piped: boolean) =>
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            if (piped) exec.output[index].push(Buffer.from(chunk));
            exec.events.emit("change");
            done();
          },
        });
      sandbox.container.modem.demuxStream(stream, sink(0, request.stdoutConfig === 1), sink(1, request.stderrConfig === 1));
      const pid = (await dockerExec.inspect()).Pid;
      let timer: NodeJS.Timeout | undefined;
      let timedOut = false;
      if (request.timeoutSecs) {
        timer = setTimeout(() => {
          timedOut = true;
          killHostTree(pid);
        }, request.timeoutSecs * 1000);
        timer.unref();
      }
      const finish = async () => {
        clearTimeout(timer);
        if (exec.exitCode !== undefined) return;
        const code = (await dockerExec.inspect().catch(() => undefined))?.ExitCode;
        exec.exitCode = timedOut ? 137 : (code ?? 137);
        exec.events.emit("change");
      };
      stream.once("end", () => void finish());
      stream.once("close", () => void finish());
      stream.once("error", () => void finish());
      return {};
    },
    async *taskExecStdioRead(request: { taskId: string; execId: string; offset: number; fileDescriptor: number }, context: CallContext) {
      const exec = execOf(task(request.taskId, context), request.execId);
      const chunks = exec.output[request.fileDescriptor === 1 ? 1 : 0];
      let offset = Number(request.offset);
      let index = 0;
      let position = 0;
      for (;;) {
        while (index < chunks.length) {
          const chunk = chunks[index]!;
          const end = position + chunk.length;
          if (end > offset) yield { data: new Uint8Array(chunk.subarray(Math.max(0, offset - position))) };
          offset = Math.max(offset, end);
          position = end;
          index += 1;
        }
        if (exec.exitCode !== undefined && index >= chunks.length) return;
        await once(exec.events, "change", { signal: context.signal });
      }
    },
    async taskExecWait(request: { taskId: string; execId: string }, context: CallContext) {
      const exec = execOf(task(request.taskId, context), request.execId);
      while (exec.exitCode === undefined) await once(exec.events, "change", { signal: context.signal });
      return exec.exitCode >= 128 ? { signal: exec.exitCode - 128 } : { code: exec.exitCode };
    },
    async taskExecStdinWrite(request: { taskId: string; execId: string; offset: number; data: Uint8Array; eof: boolean }, context: CallContext) {
      const exec = execOf(task(request.taskId, context), request.execId);
      const offset = Number(request.offset);
      if (offset > exec.stdinOffset) throw new ServerError(Status.INVALID_ARGUMENT, `stdin offset ${offset} is past the ${exec.stdinOffset} bytes written`);
      // A retried write repeats bytes already taken: only the new tail goes in.
      const fresh = request.data.subarray(exec.stdinOffset - offset);
      if (fresh.length > 0) {
        await new Promise<void>((resolve, reject) => exec.stdin.write(Buffer.from(fresh), (error) => (error ? reject(error) : resolve())));
        exec.stdinOffset += fresh.length;
      }
      if (request.eof) exec.stdin.end();
      return {};
    },
  };

  const implement = (definition: ServiceDefinition, served: Record<string, (request: never, context: CallContext) => unknown>) => {
    const implementation: Record<string, unknown> = {};
    for (const [method, spec] of Object.entries(definition.methods)) {
      const handler = served[method];
      const path = `${definition.name}/${spec.name}`;
      const unimplemented = () => new ServerError(Status.UNIMPLEMENTED, `${path} is not served by the local Modal`);
      if (spec.responseStream) {
        implementation[method] = async function* (request: never, context: CallContext) {
          calls.push(path);
          await held(path);
          if (!handler) throw unimplemented();
          yield* handler(request, context) as AsyncIterable<unknown>;
        };
      } else {
        implementation[method] = async (request: never, context: CallContext) => {
          calls.push(path);
          await held(path);
          if (!handler) throw unimplemented();
          return handler(request, context);
        };
      }
    }
    return implementation;
  };

  const server = createServer({ "grpc.max_receive_message_length": 100 * 1024 * 1024, "grpc.max_send_message_length": 100 * 1024 * 1024 });
  server.add(ModalClientDefinition as never, implement(ModalClientDefinition, control) as never);
  server.add(TaskCommandRouterDefinition as never, implement(TaskCommandRouterDefinition, router) as never);
  const port = await server.listen("127.0.0.1:0");
  routerUrl = `https://127.0.0.1:${port}`;

  return {
    serverUrl: `http://127.0.0.1:${port}`,
    tokenId,
    tokenSecret,
    calls,
    creates,
    sandboxes,
    async expire(sandboxId) {
      await terminate(sandboxes.get(sandboxId)!);
    },
    addRunning({ appId, tags, name }) {
      const id = `sb-${randomBytes(14).toString("hex")}`;
      const sandbox: FakeSandbox = {
        id,
        taskId: `ta-${randomBytes(11).toString("hex")}`,
        appId,
        name,
        tags: { ...tags },
        state: "running",
        createdAt: createdNow(),
        jwt: randomBytes(24).toString("base64url"),
        container: undefined,
        definition: { timeoutSecs: 300 },
        env: {},
        execs: new Map(),
        lifetime: undefined,
      };
      sandboxes.set(id, sandbox);
      return id;
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
      for (const sandbox of sandboxes.values()) clearTimeout(sandbox.lifetime);
      server.forceShutdown();
      const left = await docker.listContainers({ all: true, filters: { label: [`${FAKE_LABEL}=${instance}`] } });
      await Promise.all(left.map((info) => docker.getContainer(info.Id).remove({ force: true }).catch(() => undefined)));
    },
  };
}
