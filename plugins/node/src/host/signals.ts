import type { NodeRuntimeHandle } from "./server.js";

export interface SignalHandlerOptions {
  /** Default SIGTERM and SIGINT. */
  signals?: NodeJS.Signals[];
  /**
   * Exit the process once shutdown completes (code 0), and at once on a second
   * signal (code 1). Default true; embedders that own the process pass false.
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
    void handle.shutdown().then(
      () => {
        if (exit) process.exit(0);
      },
      () => {
        if (exit) process.exit(1);
      },
    );
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
