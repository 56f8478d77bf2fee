import Docker from "dockerode";
import { AssemblyLineError } from "@assemblyline-agents/core";

/** Where the Docker engine is: a socket path, or DOCKER_HOST when unset (dockerode's default). */
export interface DockerEngineOptions {
  /** Default: $DOCKER_HOST, else /var/run/docker.sock. */
  socketPath?: string;
}

export function connectEngine(options: DockerEngineOptions = {}): Docker {
  return new Docker(options.socketPath ? { socketPath: options.socketPath } : undefined);
}

/** The HTTP status dockerode attaches to a refused API call, if any. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** The engine's own message for a refused call, without dockerode's "(HTTP code ...)" prefix. */
export function engineMessage(error: unknown): string {
  const json = (error as { json?: { message?: unknown } } | null)?.json;
  if (json && typeof json.message === "string") return json.message;
  return error instanceof Error ? error.message : String(error);
}

export function engineError(what: string, error: unknown): AssemblyLineError {
  if (error instanceof AssemblyLineError) return error;
  const unreachable = ["ENOENT", "ECONNREFUSED", "EACCES"].includes((error as NodeJS.ErrnoException)?.code ?? "");
  return new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Docker engine ${what} failed: ${engineMessage(error)}`, {
    fix: unreachable
      ? "Start the Docker engine (dockerd) and check that /var/run/docker.sock (or DOCKER_HOST) reaches it."
      : "Read the engine's message above; `docker info` shows the engine's state.",
    cause: error,
  });
}

/**
 * Run an engine call, turning its failure into AL_ERR_SANDBOX_ENGINE naming
 * `what`. With `timeoutMs`, an engine that does not answer in time fails the
 * call too: a hung engine (dockerode has no deadline of its own) would
 * otherwise hold the run, and its lease, forever.
 */
export async function engineCall<T>(what: string, call: () => Promise<T>, timeoutMs?: number): Promise<T> {
  try {
    return await (timeoutMs === undefined ? call() : withDeadline(what, call(), timeoutMs));
  } catch (error) {
    throw engineError(what, error);
  }
}

/** `promise`, or AL_ERR_SANDBOX_ENGINE once `timeoutMs` passes without an answer. */
export function withDeadline<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Docker engine ${what} did not answer within ${timeoutMs} ms`, {
            fix: "The engine is hung or overloaded: check `docker info` and the engine's log, restart dockerd if it stays stuck, or raise the sandbox's engineTimeoutMs.",
            details: { timeoutMs },
          }),
        ),
      timeoutMs,
    );
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** Make sure `image` is on the engine: present, or pulled; otherwise AL_ERR_SANDBOX_IMAGE. */
export async function ensureImage(docker: Docker, image: string, timeoutMs?: number): Promise<void> {
  try {
    const inspected = docker.getImage(image).inspect();
    await (timeoutMs === undefined ? inspected : withDeadline(`inspecting image ${image}`, inspected, timeoutMs));
    return;
  } catch (error) {
    if (statusOf(error) !== 404) throw engineError(`inspecting image ${image}`, error);
  }
  try {
    const stream = await docker.pull(image);
    await new Promise<void>((resolve, reject) => docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve())));
  } catch (error) {
    throw new AssemblyLineError("AL_ERR_SANDBOX_IMAGE", `image ${image} is not on the Docker engine and pulling it failed: ${engineMessage(error)}`, {
      fix: `Build or import ${image} on the engine first (docker build / docker import), or name an image the engine has (docker images).`,
      cause: error,
      details: { image },
    });
  }
}
