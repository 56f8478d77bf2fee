/**
 * One delivery attempt's signal: aborted when the host stops waiting (`host`) or `budgetMs` from now, whichever
 * comes first; call `clear()` when the attempt is over. Not `AbortSignal.any([host, AbortSignal.timeout(ms)])`:
 * Node holds the timeout signal there only weakly, and once garbage collected it never fires.
 */
export function attemptSignal(host: AbortSignal, budgetMs: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const onHostAbort = () => controller.abort(host.reason);
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${budgetMs} ms`, "TimeoutError")), budgetMs);
  if (host.aborted) onHostAbort();
  else host.addEventListener("abort", onHostAbort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      host.removeEventListener("abort", onHostAbort);
    },
  };
}

/**
 * `request`, or the signal's reason as soon as it aborts. @discordjs/rest sleeps out some rate-limit waits without
 * looking at the signal; what it still holds then is aborted before it reaches Discord, so nothing is sent late.
 */
export function untilAborted<T>(request: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    request.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", abort, { once: true });
    request.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}
