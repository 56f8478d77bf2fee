import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type Docker from "dockerode";
import { AssemblyLineError, MAX_TIMER_MS, WORKSPACE, type RuntimeLogger, type Sandbox, type SandboxSnapshot, type SnapshottingSandboxAdapter, SandboxOpenings } from "@assemblyline-agents/core";
import { connectEngine, engineCall, engineError, engineMessage, ensureImage, statusOf, withDeadline } from "../engine.js";
import { removeImageTag } from "../image-removal.js";
import { stderrLogger } from "../stderr-logger.js";
import type { ContainerFate, ContainerKeeper } from "./container-keeper.js";
import { DockerSandbox } from "./docker-sandbox.js";
import { PID_DIR, killLeftoverCommands } from "./exec.js";
import { resolveSandboxOptions, type DockerSandboxOptions, type ResolvedSandboxOptions } from "./options.js";

/**
 * Labels mark what this adapter made, so it finds its containers again after a
 * restart and removes only its own snapshot images. A snapshot image keeps its
 * container's labels and adds its own id.
 */
export const LABELS = {
  sandbox: "dev.assembly-line.sandbox",
  key: "dev.assembly-line.sandbox.key",
  scope: "dev.assembly-line.sandbox.scope",
  snapshot: "dev.assembly-line.sandbox.snapshot",
} as const;

/** One snapshot as the engine lists it: the tag it was committed under, and the image behind it. */
interface SnapshotImage {
  id: string;
  reference: string;
  imageId: string;
  createdMs: number;
  labels: Record<string, string>;
}

/** A commit copies the container's changed files into an image: it gets this many engine deadlines, as a file copy would need more than a control call. */
const COMMIT_DEADLINES = 10;

/** How long the engine has to answer a commit: COMMIT_DEADLINES times engineTimeoutMs, within what a timer can wait. */
function commitTimeoutMs(engineTimeoutMs: number): number {
  return Math.min(engineTimeoutMs * COMMIT_DEADLINES, MAX_TIMER_MS);
}

/** How often a container whose command was killed is looked at while the engine records its stop. */
const SETTLE_POLL_MS = 50;

/*
 * PID 1 of a sandbox container: keep the container alive between commands and
 * exit at once on `docker stop` (a shell as PID 1 ignores SIGTERM without a trap).
 */
const KEEP_ALIVE = `mkdir -p ${WORKSPACE} ${PID_DIR} 2>/dev/null; trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`;

export interface DockerSandboxAdapterOptions extends DockerSandboxOptions {
  /** An engine client to use instead of connecting to socketPath / DOCKER_HOST. */
  docker?: Docker;
  /** The agent folder; the default scope is derived from it. */
  agentDir?: string;
  /** Where an image the adapter could not remove is reported. Default: warnings as JSON lines on stderr. */
  logger?: RuntimeLogger;
}

/**
 * The Docker sandbox: one container per key (a run), created on first acquire
 * from `image` (or the key's latest snapshot), with a physical /workspace, the
 * network mode and resource limits of the options, found again by name after a
 * host restart, and removed with the key's snapshots on release.
 */
export class DockerSandboxAdapter implements SnapshottingSandboxAdapter {
  readonly name = "docker";
  readonly options: ResolvedSandboxOptions;
  private readonly docker: Docker;
  private readonly logger: RuntimeLogger;
  private readonly live = new SandboxOpenings<DockerSandbox>();

  constructor(options: DockerSandboxAdapterOptions) {
    const defaultScope = options.agentDir ? `agent-${digest(options.agentDir).slice(0, 12)}` : "default";
    this.options = resolveSandboxOptions(withoutHostOnly(options), defaultScope);
    // Connecting is lazy in dockerode: nothing touches the engine until a run acquires a sandbox.
    this.docker = options.docker ?? connectEngine(this.options.socketPath ? { socketPath: this.options.socketPath } : {});
    this.logger = options.logger ?? stderrLogger();
  }

  /**
   * The key's sandbox: the live container, a stopped one restarted, or a new one (from the latest snapshot, if any).
   * A live handle's container is checked first: one stopped or removed outside this host since is started again or replaced.
   */
  async acquire(key: string): Promise<Sandbox> {
    checkKey(key);
    const live = this.live.peek(key);
    const sandbox = await this.live.acquire(key, () => this.open(key));
    if (live) await sandbox.verify();
    return sandbox;
  }

  /**
   * Remove the key's container. The runtime releases a run's sandbox only once the run has finished
   * (completed or failed), and a finished run is never resumed; a paused run is not released, and
   * keeps its container and snapshots. So with `auto` the finished run's workspace is committed
   * first and kept (the key's newest `retainLast` snapshots), which is what `auto` is for; otherwise
   * nothing restores from the key's snapshots again, and they go with the container. Releasing an
   * unknown key is a no-op; a snapshot image the engine will not remove is logged and left, never
   * failing the release.
   */
  async release(key: string): Promise<void> {
    checkKey(key);
    const opening = this.live.peek(key);
    this.live.forget(key);
    // An acquire still creating the container would leave it running after the find below; a handle still held must not make it again.
    await opening?.then((sandbox) => sandbox.close(), () => undefined);
    const container = await this.find(key);
    if (this.options.snapshot?.mode === "auto") {
      if (container) {
        await this.commit(key, container, this.options.snapshot.reason ?? "run ended");
        await removeContainer(container, this.options.engineTimeoutMs);
        // The snapshot the container was made from was kept while it ran; past retainLast it goes now.
        await this.pruneSnapshots(key);
      }
      return;
    }
    // The container first: a snapshot it was made from cannot go while it exists.
    if (container) await removeContainer(container, this.options.engineTimeoutMs);
    await this.removeSnapshots(key);
  }

  /**
   * The keys of this scope's sandbox containers, stopped ones too, and of its
   * snapshots but under `auto` (whose snapshots outlive their release on purpose):
   * what a release of each would remove.
   */
  async listKeys(): Promise<string[]> {
    const scope = `${LABELS.scope}=${this.options.scope}`;
    const keys = new Set<string>();
    const containers = await engineCall("listing sandboxes", () => this.docker.listContainers({ all: true, filters: { label: [`${LABELS.sandbox}=1`, scope] } }), this.options.engineTimeoutMs);
    for (const container of containers) {
      const key = container.Labels?.[LABELS.key];
      if (key) keys.add(key);
    }
    if (this.options.snapshot?.mode !== "auto") {
      const images = await engineCall("listing snapshots", () => this.docker.listImages({ filters: { label: [LABELS.snapshot, scope] } }), this.options.engineTimeoutMs);
      for (const image of images) {
        const key = image.Labels?.[LABELS.key];
        if (key) keys.add(key);
      }
    }
    return [...keys].sort();
  }

  /** Commit the key's container to a snapshot image, then prune beyond retainLast. */
  async snapshot(key: string, options: { reason?: string } = {}): Promise<SandboxSnapshot> {
    checkKey(key);
    const policy = this.requirePolicy();
    const container = await this.find(key);
    if (!container) {
      throw new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `sandbox ${key} has no container to snapshot`, {
        fix: "Acquire the sandbox (run a command in it) before taking a snapshot.",
        details: { key },
      });
    }
    return this.commit(key, container, options.reason ?? policy.reason);
  }

  /** The key's snapshots, newest first. */
  async listSnapshots(key: string): Promise<SandboxSnapshot[]> {
    checkKey(key);
    const snapshots: SandboxSnapshot[] = [];
    for (const image of await this.snapshotImages(key)) {
      const comment = await withDeadline(`inspecting snapshot ${image.reference}`, this.docker.getImage(image.reference).inspect(), this.options.engineTimeoutMs).then(
        (info) => info.Comment,
        (error: unknown) => {
          // Refused (say, removed since it was listed): listed without its reason. No answer at all is the engine's failure.
          if (statusOf(error) === undefined) throw engineError(`inspecting snapshot ${image.reference}`, error);
          return "";
        },
      );
      snapshots.push({ id: image.id, key, createdAt: new Date(image.createdMs).toISOString(), reason: comment === "" ? undefined : comment });
    }
    return snapshots;
  }

  /** Replace the key's container with a new one made from a snapshot (default: the latest). */
  async restore(key: string, snapshotId?: string): Promise<Sandbox> {
    checkKey(key);
    const snapshots = await this.listSnapshots(key);
    const chosen = snapshotId === undefined ? snapshots[0] : snapshots.find((entry) => entry.id === snapshotId);
    if (!chosen) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_NOT_FOUND", `sandbox ${key} has no snapshot ${snapshotId === undefined ? "at all" : JSON.stringify(snapshotId)}`, {
        fix: `Restore one of: ${snapshots.map((entry) => entry.id).join(", ") || "(none; take a snapshot first)"}.`,
        details: { key, snapshotId },
      });
    }
    this.live.forget(key);
    const existing = await this.find(key);
    if (existing) await removeContainer(existing, this.options.engineTimeoutMs);
    const sandbox = await this.live.replace(key, this.create(key, `${this.snapshotRepo(key)}:${chosen.id}`).then((container) => this.wrap(key, container)));
    // The container just removed may have been made from a snapshot pruning kept for it.
    if (this.options.snapshot) await this.pruneQuietly(key);
    return sandbox;
  }

  /**
   * Delete the key's snapshots beyond the newest `retainLast` (default: the
   * policy's); returns the ids deleted. The snapshot the key's container was
   * made from (after a restore) is kept while that container exists, and
   * deleted by the cleanup after it goes (the next snapshot, restore or release):
   * untagging it now would leave an image no cleanup could name again.
   */
  async pruneSnapshots(key: string, retainLast = this.options.snapshot?.retainLast ?? 3): Promise<string[]> {
    checkKey(key);
    const images = await this.snapshotImages(key);
    const inUse = await this.containerImageId(key);
    const removed: string[] = [];
    for (const old of images.slice(retainLast)) {
      if (old.imageId === inUse) continue;
      if (await this.removeSnapshotImage(key, old)) removed.push(old.id);
    }
    return removed;
  }

  /** The container name a key maps to (stable across processes, so a restarted host finds it). */
  containerName(key: string): string {
    return `al-sandbox-${this.options.scope}-${digest(key).slice(0, 24)}`;
  }

  private async open(key: string): Promise<DockerSandbox> {
    return this.wrap(key, await this.openContainer(key));
  }

  /**
   * The key's container, running: the existing one (started again if stopped), or, when there is none or it cannot start, a new one.
   * `leftovers`: stop the commands an earlier owner left running in an existing one (at this process's first opening).
   * An existing one is handed to the user commands run as, as a new one is: whoever made it may not have got that far.
   */
  private async openContainer(key: string, leftovers = true): Promise<Docker.Container> {
    const existing = await this.find(key);
    const state = existing && (await this.startAgain(key, existing));
    if (existing && state) {
      // Opened by this process for the first time: any command still running was left by the run's earlier owner.
      // Restarted: nothing runs, but the pid files of the commands the stop killed are left, naming numbers a new command may get.
      if (leftovers || state === "started") await killLeftoverCommands(existing, this.options.engineTimeoutMs);
      // The process that made it may have died (or given up on a late engine answer) before handing /workspace over.
      await this.giveWorkspaceTo(this.wrap(key, existing));
      return existing;
    }
    const [latest] = this.options.snapshot ? await this.listSnapshots(key) : [];
    return this.create(key, latest ? `${this.snapshotRepo(key)}:${latest.id}` : this.options.image);
  }

  /**
   * Start a stopped container again, its files kept ("started"; "running" when it already was); undefined (and the container
   * removed) when the engine refuses to run it any more (dead, or its start refused): it is of no use to the run, and its name is the key's.
   */
  private async startAgain(key: string, container: Docker.Container): Promise<"started" | "running" | undefined> {
    const info = await engineCall(`inspecting sandbox ${key}`, () => container.inspect(), this.options.engineTimeoutMs);
    if (unusable(info)) {
      await removeContainer(container, this.options.engineTimeoutMs);
      return undefined;
    }
    if (info.State.Running) return "running";
    try {
      await engineCall(`restarting sandbox ${key}`, () => container.start(), this.options.engineTimeoutMs).catch(ignoreStatus(304));
    } catch (error) {
      // No answer is not a refusal: the container may start yet, and its files are worth the run failing this once.
      if (statusOf((error as { cause?: unknown }).cause) === undefined) throw error;
      await removeContainer(container, this.options.engineTimeoutMs);
      return undefined;
    }
    return "started";
  }

  private async create(key: string, image: string): Promise<Docker.Container> {
    await ensureImage(this.docker, image, this.options.engineTimeoutMs);
    const name = this.containerName(key);
    const { options } = this;
    let container: Docker.Container;
    try {
      container = await withDeadline(`creating the sandbox container for ${key}`, this.docker.createContainer({
        name,
        Image: image,
        Entrypoint: ["/bin/sh", "-c"],
        Cmd: [KEEP_ALIVE],
        WorkingDir: WORKSPACE,
        Labels: { [LABELS.sandbox]: "1", [LABELS.key]: key, [LABELS.scope]: options.scope },
        Env: Object.entries(options.env).map(([variable, value]) => `${variable}=${value}`),
        ...(options.user ? { User: options.user } : {}),
        HostConfig: {
          NetworkMode: options.network,
          PidsLimit: options.pidsLimit,
          SecurityOpt: ["no-new-privileges"],
          ...(options.nanoCpus ? { NanoCpus: options.nanoCpus } : {}),
          ...(options.memoryBytes ? { Memory: options.memoryBytes, MemorySwap: options.memoryBytes } : {}),
        },
      }), options.engineTimeoutMs);
    } catch (error) {
      // Another process created it first: use theirs.
      if (statusOf(error) === 409) {
        const raced = await this.find(key);
        if (raced) return this.openContainer(key);
      }
      throw engineError(`creating the sandbox container for ${key}`, error);
    }
    await engineCall(`starting sandbox ${key}`, () => container.start(), options.engineTimeoutMs).catch(async (error: unknown) => {
      await removeContainer(container, this.options.engineTimeoutMs).catch(() => undefined);
      throw error;
    });
    await this.giveWorkspaceTo(this.wrap(key, container)).catch(async (error: unknown) => {
      await removeContainer(container, this.options.engineTimeoutMs).catch(() => undefined);
      throw error;
    });
    return container;
  }

  /*
   * The engine makes /workspace (the working directory) as root, and commands
   * running as another user (the `user` option, or the image's USER) have no
   * right to create it or to chown it: the engine hands it over instead, by
   * extracting folder entries owned by that user over it.
   */
  private async giveWorkspaceTo(sandbox: DockerSandbox): Promise<void> {
    if ((await sandbox.fileOwner()).uid === 0) return;
    await sandbox.makeWorkspace();
  }

  private wrap(key: string, container: Docker.Container): DockerSandbox {
    return new DockerSandbox(
      key,
      container,
      {
        timeoutMs: this.options.defaultTimeoutMs,
        maxOutputBytes: this.options.maxOutputBytes,
        env: this.options.env,
        user: this.options.user,
        engineTimeoutMs: this.options.engineTimeoutMs,
      },
      this.keeper(key),
    );
  }

  /** How a handle of `key` learns what became of its container, and gets it running again. */
  private keeper(key: string): ContainerKeeper {
    return {
      afterLoss: this.options.snapshot ? "from the key's latest snapshot if it has one" : "with an empty /workspace",
      fate: (container, settleMs) => this.fate(key, container, settleMs),
      renew: async (container, fate) => {
        if (fate === "stopped") {
          const state = await this.startAgain(key, container);
          // The handle's calls wait for this: nothing of this process runs in it yet but what the stop left behind.
          if (state === "started") await killLeftoverCommands(container, this.options.engineTimeoutMs);
          if (state) return { container, kept: true };
        }
        // A dead container still holds the key's name.
        if (fate === "gone") await removeContainer(container, this.options.engineTimeoutMs);
        // Another container of the key (a restore, another process) may run commands of its own: not leftovers to stop.
        return { container: await this.openContainer(key, false), kept: false };
      },
    };
  }

  /** What became of the container; with `settleMs`, a running one is watched that long for the stop its killed command may be the first sign of. */
  private async fate(key: string, container: Docker.Container, settleMs = 0): Promise<ContainerFate> {
    const until = Date.now() + settleMs;
    for (;;) {
      let fate: ContainerFate;
      try {
        const info = await withDeadline(`inspecting sandbox ${key}`, container.inspect(), this.options.engineTimeoutMs);
        fate = unusable(info) ? "gone" : info.State.Running ? "running" : "stopped";
      } catch (error) {
        if (statusOf(error) === 404) return "gone";
        throw engineError(`inspecting sandbox ${key}`, error);
      }
      if (fate !== "running" || Date.now() >= until) return fate;
      await sleep(SETTLE_POLL_MS);
    }
  }

  private async find(key: string): Promise<Docker.Container | undefined> {
    const container = this.docker.getContainer(this.containerName(key));
    try {
      const info = await withDeadline(`looking up sandbox ${key}`, container.inspect(), this.options.engineTimeoutMs);
      // A same-named container this adapter did not make is never used or removed.
      if (info.Config.Labels?.[LABELS.key] !== key) {
        throw new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `container ${this.containerName(key)} exists but is not the sandbox of ${key}`, {
          fix: "Remove that container, or give this sandbox another scope.",
        });
      }
      // By id from here on: a handle must notice its container was removed, not reach a new one made under the name.
      return this.docker.getContainer(info.Id);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      if (error instanceof AssemblyLineError) throw error;
      throw engineError(`looking up sandbox ${key}`, error);
    }
  }

  private async commit(key: string, container: Docker.Container, reason: string | undefined): Promise<SandboxSnapshot> {
    const now = Date.now();
    const id = `s${now}-${randomBytes(3).toString("hex")}`;
    // Committed without pausing: freezing a container's cgroup (v1) to pause it can hang the whole engine,
    // which is worse than a file a still-running command is writing being caught half written.
    // The id label is what later cleanups check before removing the image (see isOwnSnapshot).
    await engineCall(
      `snapshotting sandbox ${key}`,
      () => container.commit({ repo: this.snapshotRepo(key), tag: id, comment: reason ?? "", pause: false, changes: `LABEL ${LABELS.snapshot}=${id}` }),
      commitTimeoutMs(this.options.engineTimeoutMs),
    );
    await this.pruneQuietly(key);
    return { id, key, createdAt: new Date(now).toISOString(), reason };
  }

  /** The key's snapshot images, newest first. */
  private async snapshotImages(key: string): Promise<SnapshotImage[]> {
    const repo = this.snapshotRepo(key);
    const images = await engineCall("listing snapshots", () => this.docker.listImages({ filters: { reference: [`${repo}:*`] } }), this.options.engineTimeoutMs);
    const found: SnapshotImage[] = [];
    for (const image of images) {
      for (const tag of image.RepoTags ?? []) {
        if (!tag.startsWith(`${repo}:`)) continue;
        const id = tag.slice(repo.length + 1);
        const createdMs = Number(/^s(\d+)-/.exec(id)?.[1] ?? image.Created * 1000);
        found.push({ id, reference: tag, imageId: image.Id, createdMs, labels: image.Labels ?? {} });
      }
    }
    // Ids start with a millisecond timestamp and a random tail: newest first, ties broken by id.
    return found.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  }

  /**
   * Whether this adapter committed `image` as the key's snapshot: it carries the
   * key and scope of the container it was made from, and its own id (images
   * committed before the id label existed have none). An image merely tagged
   * into the snapshot repository, or built from a snapshot under another tag,
   * fails this and is never removed.
   */
  private isOwnSnapshot(key: string, image: SnapshotImage): boolean {
    const { labels } = image;
    return labels[LABELS.key] === key && labels[LABELS.scope] === this.options.scope && (labels[LABELS.snapshot] ?? image.id) === image.id;
  }

  private async removeSnapshotImage(key: string, image: SnapshotImage): Promise<boolean> {
    if (!this.isOwnSnapshot(key, image)) {
      this.logger.warn({ event: "docker.image_left", image: image.reference, key }, `left image ${image.reference}: it is in the snapshot repository of sandbox ${key} but lacks the labels of a snapshot this sandbox took, so it is not this plugin's to remove`);
      return false;
    }
    return removeImageTag(this.docker, image.reference, this.logger, { key, snapshot: image.id }, this.options.engineTimeoutMs);
  }

  /** Every snapshot of a released key; a failure is logged, never thrown (the run is over either way). */
  private async removeSnapshots(key: string): Promise<void> {
    let images: SnapshotImage[];
    try {
      images = await this.snapshotImages(key);
    } catch (error) {
      this.logger.warn({ event: "docker.image_left", key, reason: engineMessage(error) }, `could not list the snapshots of released sandbox ${key}; they are left: ${engineMessage(error)}`);
      return;
    }
    for (const image of images) await this.removeSnapshotImage(key, image);
  }

  /** pruneSnapshots after a snapshot or a restore, which a failed cleanup must not fail. */
  private async pruneQuietly(key: string): Promise<void> {
    await this.pruneSnapshots(key).catch((error: unknown) => {
      this.logger.warn({ event: "docker.image_left", key, reason: engineMessage(error) }, `could not prune the snapshots of sandbox ${key}; older ones are left until the next cleanup: ${engineMessage(error)}`);
    });
  }

  /** The image the key's container runs on, if it has one. */
  private async containerImageId(key: string): Promise<string | undefined> {
    const container = await this.find(key);
    if (!container) return undefined;
    return (await engineCall(`inspecting sandbox ${key}`, () => container.inspect(), this.options.engineTimeoutMs)).Image;
  }

  private snapshotRepo(key: string): string {
    return `assembly-line-snapshot/${this.options.scope}-${digest(key).slice(0, 24)}`;
  }

  private requirePolicy(): NonNullable<ResolvedSandboxOptions["snapshot"]> {
    if (!this.options.snapshot) {
      throw new AssemblyLineError("AL_ERR_SNAPSHOT_DISABLED", "this docker sandbox has no snapshot policy", {
        fix: 'Add snapshot: { mode: "manual", retainLast: 3 } to dockerSandbox({...}).',
      });
    }
    return this.options.snapshot;
  }
}

function withoutHostOnly(options: DockerSandboxAdapterOptions): DockerSandboxOptions {
  const { docker: _docker, agentDir: _agentDir, logger: _logger, ...rest } = options;
  return rest;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function checkKey(key: string): void {
  if (typeof key !== "string" || key === "") {
    throw new AssemblyLineError("AL_ERR_SANDBOX_DEFINITION", `sandbox key ${JSON.stringify(key)} is not a non-empty string`, { fix: "Key sandboxes by the run id." });
  }
}

/** A container the engine will not run again: dead (a removal that failed) or being removed. */
function unusable(info: Docker.ContainerInspectInfo): boolean {
  return info.State.Dead || info.State.Status === "removing";
}

function ignoreStatus(status: number): (error: unknown) => void {
  return (error) => {
    if (statusOf((error as { cause?: unknown }).cause) !== status) throw error;
  };
}

async function removeContainer(container: Docker.Container, timeoutMs?: number): Promise<void> {
  await engineCall("removing a sandbox container", () => container.remove({ force: true, v: true }), timeoutMs).catch((error: unknown) => {
    if (statusOf((error as { cause?: unknown }).cause) !== 404) throw error;
  });
}
