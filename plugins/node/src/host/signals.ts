import type { NodeRuntimeHandle } from "./server.js";

/**
 * How long the process may go on once shutdown completed before it is ended: long enough for the
 * embedder's own code after `await handle.closed` (a final flush), short enough that a handle
 * something left open cannot keep a stopped host alive.
 */
export const EXIT_GRACE_MS = 5_000;

export interface SignalHandlerOptions {
  /** Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /**
   * End the process once shutdown completes: it ends on its own when nothing is left to run (the code
   * after `await handle.closed` included), or EXIT_GRACE_MS later if something holds it open; code 0,
   * or 1 when shutdown failed. A second signal exits at once (code 1). Default true; embedders that
   * own the process pass false.
   */
  exit?: boolean;
}

/**
 * SIGTERM/SIGINT -> handle.shutdown(). Returns a function that removes the
 * handlers again.
 */
export function installSignalHandlers(handle: Pick<NodeRuntimeHandle, "shutdown">, options: SignalHandlerOptions = {}): () => void {
  const signals = options.signals ?? ["SIGTERM", "SIGINT"];
  const exit = options.exit !== false;
  let received = 0;
  const onSignal = () => {
    received += 1;
    if (received > 1) {
      // A second signal means the operator will not wait for the drain.
      if (exit) process.exit(1);
      return;
    }
    const end = (code: number) => {
      if (!exit) return;
      if (code !== 0) process.exitCode = code;
      // Not process.exit() at once: that would cut off the code after `await handle.closed`. Unref'd, the
      // timer keeps nothing alive: the process ends as soon as the rest of its work does.
      // With no code on success: an exit code the embedder set after `await handle.closed` stands.
      setTimeout(() => (code === 0 ? process.exit() : process.exit(code)), EXIT_GRACE_MS).unref();
    };
    void handle.shutdown().then(
      () => end(0),
      () => end(1),
    );
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
