import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import tarFs from "tar-fs";
import { AssemblyLineError, MAX_TIMER_MS, errorSummary, isAssemblyLineError, isTimerDelay, type DeployTarget, type RuntimeLogger } from "@assemblyline-agents/core";
import { builtAgentId, gatewayChoosesState, stageDeployBundle, waitForReady, type DeployBundle } from "@assemblyline-agents/core/deploy";
import { connectEngine, engineCall, engineError, engineMessage, statusOf } from "../engine.js";
import { removeImageTag } from "../image-removal.js";
import { stderrLogger } from "../stderr-logger.js";
import { renderDockerfile, renderRuntimeDockerfile } from "./dockerfile.js";
import { releaseImageLabels, removeOldReleaseImages, runtimeImageLabels } from "./release-images.js";

/** On a release's container (never on an image: a container a user runs from a release image must not pass for one). */
export const DEPLOY_LABEL = "dev.assembly-line.deploy";
/** Where a release keeps the runs of the default file state: the mount point of the deploy's state volume. */
export const RELEASE_STATE_DIR = "/var/lib/assembly-line/state";
/**
 * How long a release has to drain when it is replaced, in seconds, before the engine kills it: the
 * host's shutdown timeout (30 s by default) and the grace it gives the process to end after it.
 */
export const RELEASE_STOP_GRACE_S = 40;
const DEPLOY_OPTIONS = ["name", "baseImage", "port", "network", "hostIp", "readyTimeoutMs", "startArgs", "packages", "include", "socketPath", "keepReleases"];

export interface DockerDeployOptions {
  /**
   * Image repository, container name prefix and container hostname: lowercase letters and digits
   * in runs joined by one '.', one or two '_', or dashes, at most 63 characters.
   * Default: the agent id made into one (releaseNameFromAgentId).
   */
  name?: string;
  /** Base image with node on PATH. Default "node:22-slim". */
  baseImage?: string;
  /** Port the server listens on inside the container. Default 3000. */
  port?: number;
  /** "bridge" (publish the port on hostIp) or "host" (listen on hostIp, on a free host port). Default "bridge". */
  network?: "bridge" | "host" | (string & {});
  /**
   * The host address the release is reached on: where the published port binds (bridge), or
   * where the release itself listens (host network). Default 127.0.0.1. The returned URL uses
   * it, with 0.0.0.0 (every interface) as 127.0.0.1 and :: as ::1.
   */
  hostIp?: string;
  /** How long the new release has to answer /readyz. Default 60 s. */
  readyTimeoutMs?: number;
  /** Extra arguments after `assembly-line start <artifact>` (e.g. ["--model", "..."]). */
  startArgs?: string[];
  /** Packages to ship beyond the agent's dependencies and the Node host. */
  packages?: string[];
  /** Agent-folder paths to ship that are not sources (e.g. conversations/). */
  include?: string[];
  /** The engine's socket. Default: $DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
  /**
   * Release images kept for rolling back, the one just deployed included; older
   * ones are removed after each deploy, except any a running container uses. Default 3.
   */
  keepReleases?: number;
}

export interface DockerDeployResult {
  id: string;
  url: string;
  image: string;
  /** Containers of earlier releases that were stopped (given time to drain) and removed once this one was ready. */
  replaced: string[];
  /** The volume holding the runs of the default file state, shared by every release of this name; absent when gateway.ts chooses the state. */
  stateVolume?: string;
  /** Images removed after this deploy: releases beyond keepReleases, and runtime images only they were built on. */
  removedImages: string[];
}

/**
 * Deploys a built agent as a container: stage a bundle, build an image from a
 * generated Dockerfile, start it with the given env, wait for /readyz, and only
 * then stop (letting it drain) and remove the previous release's container. Any
 * failure before that leaves the previous release serving and removes what this
 * deploy created.
 *
 * Runs kept in the default file state live in a named volume per deploy name
 * (`assembly-line-<name>-state`), so every release sees the runs of the one
 * before. One process at a time may write that folder: with it, the previous
 * release is stopped before the new one starts, and started again if the new
 * one never gets ready. A state adapter chosen in gateway.ts needs no volume,
 * and the two releases overlap until the new one is ready.
 */
export class DockerDeployTarget implements DeployTarget {
  readonly name = "docker";
  private readonly docker: Docker;
  private readonly logger: RuntimeLogger;

  constructor(
    private readonly options: DockerDeployOptions = {},
    docker?: Docker,
    logger?: RuntimeLogger,
  ) {
    const port = options.port ?? 3000;
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy port ${JSON.stringify(options.port)} is not a port number`, { fix: "Use 1-65535, e.g. 3000." });
    }
    if (options.name !== undefined && !isReleaseName(options.name)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy name ${JSON.stringify(options.name)} is not an image name the Docker engine takes that is also a hostname: ${RELEASE_NAME_RULE}`, {
        fix: "Pass a name such as my-agent, my.agent or my_agent (--name).",
        details: { option: "name", name: options.name },
      });
    }
    const unknown = Object.keys(options).filter((key) => !DEPLOY_OPTIONS.includes(key));
    if (unknown.length > 0) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy has no option ${unknown.join(", ")}`, { fix: `Remove it; the options are ${DEPLOY_OPTIONS.join(", ")}.`, details: { options: unknown } });
    }
    for (const key of ["baseImage", "hostIp", "socketPath"] as const) {
      const value: unknown = options[key];
      if (value !== undefined && (typeof value !== "string" || value === "")) {
        throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy ${key} ${JSON.stringify(value)} is not a non-empty string`, { fix: `Pass ${key} as a string, or omit it.`, details: { option: key } });
      }
    }
    for (const key of ["startArgs", "packages", "include"] as const) {
      const value: unknown = options[key];
      // A string would be spread letter by letter (startArgs "--x" became CMD [..., "-", "-", "x"]).
      if (value !== undefined && !(Array.isArray(value) && value.every((item) => typeof item === "string"))) {
        throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy ${key} ${JSON.stringify(value)} is not a list of strings`, { fix: `Pass ${key} as an array, e.g. ${key}: ["--flag", "value"], or omit it.`, details: { option: key } });
      }
    }
    // A release on "none" can never answer /readyz: refused now, not after readyTimeoutMs of waiting.
    if (options.network !== undefined && (typeof options.network !== "string" || options.network === "none" || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(options.network))) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy network ${JSON.stringify(options.network)} cannot serve a release`, {
        fix: 'Use "bridge" (publishes the port on hostIp), "host", or the name of a network the engine has.',
        details: { option: "network" },
      });
    }
    if (options.readyTimeoutMs !== undefined && !(Number.isInteger(options.readyTimeoutMs) && isTimerDelay(options.readyTimeoutMs))) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy readyTimeoutMs ${JSON.stringify(options.readyTimeoutMs)} is not a positive whole number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`, { fix: "Use e.g. 60000, or omit it.", details: { option: "readyTimeoutMs" } });
    }
    if (options.keepReleases !== undefined && !(Number.isInteger(options.keepReleases) && options.keepReleases >= 1)) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy keepReleases ${JSON.stringify(options.keepReleases)} is not a whole number of at least 1`, {
        fix: "Use e.g. 3 (the release just deployed counts as one), or omit it.",
        details: { option: "keepReleases" },
      });
    }
    this.docker = docker ?? connectEngine(options.socketPath ? { socketPath: options.socketPath } : {});
    this.logger = logger ?? stderrLogger();
  }

  async deploy(args: { artifactRoot: string; env: Record<string, string | undefined> }): Promise<DockerDeployResult> {
    // Refused before the bundle is staged and images are built when the agent id gives no name.
    const agentId = this.options.name === undefined ? await builtAgentId(args.artifactRoot) : undefined;
    let name = this.options.name ?? (agentId === undefined ? undefined : defaultReleaseName(agentId));
    const work = await mkdtemp(join(tmpdir(), "al-docker-deploy-"));
    try {
      const bundle = await stageDeployBundle({
        artifactRoot: args.artifactRoot,
        outDir: join(work, "context"),
        ...(this.options.packages ? { packages: this.options.packages } : {}),
        ...(this.options.include ? { include: this.options.include } : {}),
      });
      name ??= defaultReleaseName(bundle.agentId);
      const port = this.options.port ?? 3000;
      const baseImage = this.options.baseImage ?? "node:22-slim";
      const runtimeImage = `assembly-line-runtime:${createHash("sha256").update(`${baseImage}\0${bundle.modules.digest}`).digest("hex").slice(0, 16)}`;
      if (!(await this.hasImage(runtimeImage))) {
        await writeFile(join(bundle.modules.dir, "Dockerfile"), renderRuntimeDockerfile(baseImage, runtimeImageLabels(runtimeImage, baseImage)));
        await this.build(bundle.modules.dir, runtimeImage);
      }
      const image = `${name}:${bundle.revision.toLowerCase().replace(/[^a-z0-9_.-]/g, "-").slice(0, 100)}-${bundle.digest}`;
      const stateVolume = (await gatewayChoosesState(join(bundle.dir, bundle.artifactDir))) ? undefined : `assembly-line-${name}-state`;
      await writeFile(
        join(bundle.dir, "Dockerfile"),
        renderDockerfile(bundle, { runtimeImage, port, startArgs: this.options.startArgs ?? [], ...(stateVolume ? { stateDir: RELEASE_STATE_DIR } : {}), labels: releaseImageLabels(name, image, runtimeImage) }),
      );
      const builtBefore = await this.hasImage(image);
      await this.build(bundle.dir, image);
      const released = await this.release(name, image, port, args.env, stateVolume).catch(async (error: unknown) => {
        // A release that never got ready served nothing: its image goes with its container, so it takes no rollback slot.
        if (!builtBefore) await removeImageTag(this.docker, image, this.logger, { deploy: name });
        throw error;
      });
      const removedImages = await removeOldReleaseImages(this.docker, { name, keep: this.options.keepReleases ?? 3, current: image, logger: this.logger });
      return { ...released, removedImages };
    } catch (error) {
      throw asDeployError(error);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  private async hasImage(image: string): Promise<boolean> {
    try {
      await this.docker.getImage(image).inspect();
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw engineError(`inspecting image ${image}`, error);
    }
  }

  private async build(context: string, image: string): Promise<void> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.docker.buildImage(tarFs.pack(context) as unknown as NodeJS.ReadableStream, { t: image, rm: true, forcerm: true });
    } catch (error) {
      throw buildError(image, engineMessage(error), error);
    }
    const output: string[] = [];
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (error, results: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
          const failed = error ?? results.find((entry) => entry.error || entry.errorDetail);
          if (failed) reject(buildError(image, (failed as { error?: string }).error ?? (failed as Error).message ?? "build failed", error, output));
          else resolve();
        },
        (event: { stream?: string }) => {
          if (event.stream) output.push(event.stream);
        },
      );
    });
  }

  private async release(name: string, image: string, port: number, env: Record<string, string | undefined>, stateVolume: string | undefined): Promise<Omit<DockerDeployResult, "removedImages">> {
    const network = this.options.network ?? "bridge";
    const host = network === "host";
    // On the host network nothing is published: the release listens on hostIp itself.
    const listenAddress = host ? (this.options.hostIp ?? "127.0.0.1") : "0.0.0.0";
    const listenPort = host ? await freePort(listenAddress) : port;
    const containerName = `${name}-${randomBytes(4).toString("hex")}`;
    const variables = Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[0] !== "PORT" && entry[0] !== "HOST");
    const container = await engineCall(`creating container ${containerName}`, () =>
      this.docker.createContainer({
        name: containerName,
        Image: image,
        Env: [...variables.map(([variable, value]) => `${variable}=${value}`), `PORT=${listenPort}`, `HOST=${listenAddress}`],
        Labels: { [DEPLOY_LABEL]: name },
        ExposedPorts: { [`${listenPort}/tcp`]: {} },
        // `docker stop` by hand gives the release the same time to drain as a redeploy does.
        StopTimeout: RELEASE_STOP_GRACE_S,
        // One hostname for every release of this name (the host network has the machine's): the state
        // folder's lock names its holder by host and pid, so a release killed without releasing it is
        // seen as gone by the next one, instead of as alive on a host this container cannot check.
        ...(host ? {} : { Hostname: name }),
        HostConfig: {
          NetworkMode: network,
          RestartPolicy: { Name: "unless-stopped" },
          ...(stateVolume ? { Mounts: [{ Type: "volume", Source: stateVolume, Target: RELEASE_STATE_DIR }] } : {}),
          ...(host ? {} : { PortBindings: { [`${listenPort}/tcp`]: [{ HostIp: this.options.hostIp ?? "127.0.0.1", HostPort: "" }] } }),
        },
      }),
    );
    const stopped: string[] = [];
    try {
      // The state folder takes one writer: the previous release drains and stops before this one opens it.
      if (stateVolume) await this.stopOthers(name, containerName, stopped);
      await engineCall(`starting container ${containerName}`, () => container.start());
      const url = await this.urlOf(container);
      const readiness = await this.waitReady(container, url, env);
      if (readiness !== "ready") {
        const logs = await container.logs({ stdout: true, stderr: true, tail: 40 }).then((buffer) => demuxedText(buffer), () => "");
        const why = readiness === "exited" ? "exited before it answered" : `did not answer within ${(this.options.readyTimeoutMs ?? 60_000) / 1000} s`;
        throw new AssemblyLineError("AL_ERR_DEPLOY_UNHEALTHY", `release ${containerName} (${image}) ${why} ${url}/readyz; the previous release keeps serving.\n${logs}`, {
          fix: "Read the release's log lines above (a missing environment variable is the usual cause), fix, and deploy again.",
          details: { image, container: containerName },
        });
      }
      const replaced = await this.removeOthers(name, containerName);
      return { id: containerName, url, image, replaced, ...(stateVolume ? { stateVolume } : {}) };
    } catch (error) {
      await container.remove({ force: true }).catch(() => undefined);
      // The previous release serves again, on the runs it left.
      for (const previous of stopped) await this.startAgain(name, previous);
      throw error;
    }
  }

  /** Where a started release answers: its port published on hostIp, or, on the host network, the address and port it listens on. */
  private async urlOf(container: Docker.Container): Promise<string> {
    const info = await engineCall(`inspecting container ${container.id}`, () => container.inspect());
    const variable = (name: string) => info.Config.Env?.find((entry) => entry.startsWith(`${name}=`))?.slice(name.length + 1);
    // PORT, as release() set it: the image also exposes its default port, which a release on the host network does not use.
    const listenPort = variable("PORT") ?? "";
    const host = info.HostConfig.NetworkMode === "host";
    const hostPort = host ? Number(listenPort) : Number(info.NetworkSettings.Ports?.[`${listenPort}/tcp`]?.[0]?.HostPort);
    // An engine whose default bridge is off (dockerd --bridge=none), or a network that does not apply port
    // bindings, publishes nothing: say so now instead of probing a port that does not exist until the timeout.
    if (!Number.isInteger(hostPort) || hostPort <= 0 || hostPort > 65_535) {
      throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `the Docker engine published no host port for the release's ${listenPort}/tcp on network "${info.HostConfig.NetworkMode ?? "?"}", so nothing outside the container can reach it`, {
        fix: "Deploy on the host network (`--network host`, dockerDeploy({ network: \"host\" })), or enable the engine's default bridge (dockerd without --bridge=none) or name a network that publishes ports.",
        details: { container: container.id, port: listenPort, network: info.HostConfig.NetworkMode ?? null },
      });
    }
    // HOST as release() set it, so a previous release started again is probed where it listens.
    const address = reachableAddress(host ? (variable("HOST") ?? "127.0.0.1") : (this.options.hostIp ?? "127.0.0.1"));
    return `http://${address.includes(":") ? `[${address}]` : address}:${hostPort}`;
  }

  /**
   * "exited" as soon as the release's process ended once: the restart policy would start it again
   * and again (Docker counts a container waiting to restart as running), each time failing the same way.
   */
  private async waitReady(container: Docker.Container, url: string, env: Record<string, string | undefined>): Promise<"ready" | "exited" | "timeout"> {
    const token = env.ASSEMBLY_LINE_BEARER_TOKEN;
    let exited = false;
    const ready = await waitForReady({
      url: `${url}/readyz`,
      // A production host with a bearer token guards its probes too.
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
      timeoutMs: this.options.readyTimeoutMs ?? 60_000,
      alive: async () => {
        const info = await container.inspect().catch(() => undefined);
        exited = info === undefined || !info.State.Running || info.State.Restarting || info.RestartCount > 0;
        return !exited;
      },
    });
    return ready ? "ready" : exited ? "exited" : "timeout";
  }

  /** Start a release this deploy stopped, and wait until it answers again; a failure is logged, the deploy's own error stands. */
  private async startAgain(name: string, id: string): Promise<void> {
    const container = this.docker.getContainer(id);
    try {
      await container.start();
      // Probed with its own token, which this deploy may have changed.
      const token = (await container.inspect()).Config.Env?.find((entry) => entry.startsWith("ASSEMBLY_LINE_BEARER_TOKEN="))?.slice("ASSEMBLY_LINE_BEARER_TOKEN=".length);
      const readiness = await this.waitReady(container, await this.urlOf(container), { ASSEMBLY_LINE_BEARER_TOKEN: token });
      if (readiness !== "ready") throw new Error(readiness === "exited" ? "it exited before it answered /readyz" : "it did not answer /readyz");
    } catch (cause) {
      this.logger.warn({ event: "docker.release_restart_failed", deploy: name, container: id, reason: engineMessage(cause) }, `could not start the previous release ${id} again: ${engineMessage(cause)}`);
    }
  }

  /** The releases of `name` other than `keep`. */
  private async others(name: string, keep: string): Promise<Array<{ id: string; name: string; running: boolean }>> {
    const containers = await engineCall("listing releases", () => this.docker.listContainers({ all: true, filters: { label: [`${DEPLOY_LABEL}=${name}`] } }));
    return containers.map((info) => ({ id: info.Id, name: (info.Names[0] ?? "").replace(/^\//, ""), running: info.State === "running" })).filter((other) => other.name !== keep);
  }

  /**
   * Stop the running releases of `name` other than `keep` with SIGTERM and RELEASE_STOP_GRACE_S to
   * drain (the host finishes or parks its runs and closes the state); adds the ids it stopped to `stopped`.
   */
  private async stopOthers(name: string, keep: string, stopped: string[] = []): Promise<void> {
    for (const other of await this.others(name, keep)) {
      if (!other.running) continue;
      await this.docker
        .getContainer(other.id)
        .stop({ t: RELEASE_STOP_GRACE_S })
        .then(() => stopped.push(other.id))
        .catch((error: unknown) => {
          // 304: it stopped by itself meanwhile; 404: it is gone.
          if (statusOf(error) !== 304 && statusOf(error) !== 404) throw engineError(`stopping the previous release ${other.name}`, error);
        });
    }
  }

  private async removeOthers(name: string, keep: string): Promise<string[]> {
    await this.stopOthers(name, keep);
    const removed: string[] = [];
    for (const { id, name: containerName } of await this.others(name, keep)) {
      await this.docker
        .getContainer(id)
        .remove({ force: true })
        .then(() => removed.push(containerName))
        .catch((error: unknown) => {
          if (statusOf(error) !== 404) throw engineError(`removing the previous release ${containerName}`, error);
        });
    }
    return removed;
  }
}

/** Docker's grammar for a repository path component: the engine refuses any other image name ("invalid reference format"). */
const RELEASE_NAME = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;
/** The name is also the release containers' hostname, which a DNS label limits to 63 characters. */
const RELEASE_NAME_MAX = 63;
const RELEASE_NAME_RULE = `lowercase letters and digits in runs joined by one '.', one or two '_', or dashes, not starting or ending with one, at most ${RELEASE_NAME_MAX} characters`;

function isReleaseName(name: string): boolean {
  return name.length <= RELEASE_NAME_MAX && RELEASE_NAME.test(name);
}

/**
 * The default release name: the agent id as earlier versions derived it (lowercased, each
 * character other than letters, digits, '.', '_' and '-' a dash), so an existing release keeps
 * its name, its images and its state volume; when that is no name the engine takes, the id
 * lowercased with every run of other characters one dash, dashes at either end trimmed, cut to
 * 63 characters. Undefined when nothing is left (an id of symbols alone).
 */
export function releaseNameFromAgentId(agentId: string): string | undefined {
  const earlier = agentId.toLowerCase().replace(/[^a-z0-9_.-]/g, "-").replace(/^[^a-z0-9]+/, "");
  if (isReleaseName(earlier)) return earlier;
  const name = agentId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+/, "")
    .slice(0, RELEASE_NAME_MAX)
    .replace(/-+$/, "");
  return isReleaseName(name) ? name : undefined;
}

function defaultReleaseName(agentId: string): string {
  const name = releaseNameFromAgentId(agentId);
  if (name !== undefined) return name;
  throw new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `agent id ${JSON.stringify(agentId)} gives no docker release name (${RELEASE_NAME_RULE})`, {
    // Before names were checked such an id deployed as "agent".
    fix: "Pass the release's name with --name (dockerDeploy({ name })), e.g. --name agent to keep the releases an earlier version deployed for it.",
    details: { agentId },
  });
}

/**
 * The engine helpers are shared with the sandbox and fail with AL_ERR_SANDBOX_ENGINE; in a deploy
 * the engine is the target the release goes to, so its refusal is a failed deploy step.
 */
function asDeployError(error: unknown): unknown {
  if (!isAssemblyLineError(error, "AL_ERR_SANDBOX_ENGINE")) return error;
  return new AssemblyLineError("AL_ERR_DEPLOY_TRANSPORT", `the docker deploy stopped: ${errorSummary(error)}`, {
    ...(error.fix ? { fix: error.fix } : {}),
    ...(error.details ? { details: error.details } : {}),
    cause: error,
  });
}

function buildError(image: string, message: string, cause: unknown, output: string[] = []): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_DEPLOY_BUILD", `building ${image} failed: ${message}\n${output.slice(-20).join("")}`, {
    fix: "Fix the cause above and deploy again; the running release was not touched.",
    cause,
    details: { image },
  });
}

/** Container logs without the engine's 8-byte stream headers. */
function demuxedText(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const size = buffer.readUInt32BE(offset + 4);
    parts.push(buffer.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8");
}

/** An address to connect to: a listener on every interface (0.0.0.0, ::) is reached on loopback. */
function reachableAddress(address: string): string {
  if (address === "0.0.0.0") return "127.0.0.1";
  if (/^[0:]+$/.test(address) && address.includes("::")) return "::1";
  return address;
}

/** A port free on `address` (the host network's listen address) a moment ago. */
function freePort(address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "EADDRNOTAVAIL" || error.code === "EINVAL"
          ? new AssemblyLineError("AL_ERR_DEPLOY_CONFIG", `dockerDeploy hostIp ${JSON.stringify(address)} is no address of this machine, where a release on the host network listens`, {
              fix: 'Use an address of the machine the engine runs on (127.0.0.1, the default; 0.0.0.0 for every interface), or network "bridge" to publish the port on it.',
              details: { option: "hostIp" },
            })
          : error,
      );
    });
    server.listen(0, address, () => {
      const bound = server.address();
      server.close(() => (typeof bound === "object" && bound ? resolve(bound.port) : reject(new Error("no port"))));
    });
  });
}
