import { AssemblyLineError } from "./errors.js";

/** How long a plugin's apply, adapter factory or close may take by default. */
export const DEFAULT_PLUGIN_TIMEOUT_MS = 10_000;

/** Settle `work` within `ms`, or fail naming `what` (a plugin that never settles must not hang a boot). */
export async function withinTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AssemblyLineError("AL_ERR_PLUGIN_TIMEOUT", `${what} did not settle within ${ms} ms`, { fix: "Make it resolve or reject; check for a connection that never opens." })),
      ms,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
