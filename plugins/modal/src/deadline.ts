import { AssemblyLineError } from "@assemblyline-agents/core";

/**
 * `operation` (one Modal SDK call), failed once `ms` pass without its answer.
 * The SDK sets no deadline on its control-plane calls and ignores its client
 * `timeoutMs`, so a server that stops answering would otherwise hold the run
 * forever. The abandoned call is left to settle on its own.
 */
export async function withinDeadline<T>(action: string, ms: number, option: string, operation: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const pending = operation();
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      pending.catch(() => undefined);
      reject(
        new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Modal: ${action} got no answer within ${ms} ms (${option})`, {
          fix: `Check that Modal is reachable (MODAL_SERVER_URL) and answering; raise ${option.startsWith("the ") ? option : `the sandbox's ${option}`} when its calls are slow but alive.`,
          details: { provider: "Modal", action, timeoutMs: ms },
        }),
      );
    }, ms);
  });
  try {
    return await Promise.race([pending, expired]);
  } finally {
    clearTimeout(timer);
  }
}
