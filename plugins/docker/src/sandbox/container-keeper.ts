import type Docker from "dockerode";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** What became of a sandbox's container: still running, stopped (its files kept), or gone (removed, or it can no longer run). */
export type ContainerFate = "running" | "stopped" | "gone";

/**
 * What a sandbox handle asks its adapter for when the engine stopped or
 * removed its container outside this host (`docker stop` / `docker rm -f`, an
 * engine restart, its main process killed).
 */
export interface ContainerKeeper {
  /** What the next container of a key whose container is gone starts from, for errors ("empty", or from a snapshot). */
  readonly afterLoss: string;
  /** With `settleMs`: a container still running is watched that long (a command killed with the container ends before the engine records the stop). */
  fate(container: Docker.Container, settleMs?: number): Promise<ContainerFate>;
  /** The key's container running again: `container` started again (`kept`: its files with it), or, gone or unable to start, a new one. */
  renew(container: Docker.Container, fate: Exclude<ContainerFate, "running">): Promise<{ container: Docker.Container; kept: boolean }>;
}

/** A call on a container that no longer exists: its files are gone, and the handle's next call runs in a new container. */
export function containerLost(sandbox: string, afterLoss: string, cause?: unknown): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `the container of sandbox ${sandbox} no longer exists (removed outside this host, or it could not start again), and its files with it: the next call starts a new container, ${afterLoss}`, {
    fix: "Write again, in the new container, the files the run still needs.",
    cause,
    details: { sandbox, sandboxGone: true },
  });
}

/** A call its container stopped under: whatever the call ran was killed, the files are kept, and the next call starts the container again. */
export function containerStopped(sandbox: string, cause?: unknown): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `the container of sandbox ${sandbox} stopped while the call ran (stopped or killed outside this host, an engine restart, or its main process killed, e.g. out of memory), and what the call ran was killed with it: /workspace's files are kept, and the next call starts the container again`, {
    fix: "Check what the call had done (its output may be partial) before running it again; `docker inspect` shows why the container stopped (State.OOMKilled, State.ExitCode).",
    cause,
    details: { sandbox, containerStopped: true },
  });
}

/** A call on a handle whose run was released: nothing will release a container made for it again. */
export function handleReleased(sandbox: string): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", `sandbox ${sandbox} was released (its run ended), and its container removed`, {
    fix: "Acquire the sandbox again for a new run instead of keeping a handle past its release.",
    details: { sandbox, released: true },
  });
}
