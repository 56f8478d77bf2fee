import { AssemblyLineError, redactSecrets } from "@assemblyline-agents/core";
import { retryAfterMs } from "./rate-limit.js";

/**
 * A provider SDK's failure as an AssemblyLineError. Only the message and status
 * travel: the SDK's error object can hold the request (and its Authorization
 * header), so it is never attached as a cause, and the key is masked in the text.
 */
export function providerError(provider: string, action: string, error: unknown, secrets: Array<string | undefined>): AssemblyLineError {
  if (error instanceof AssemblyLineError) return error;
  const status = statusOf(error);
  const message = redactSecrets(error instanceof Error ? error.message : String(error), secrets, { minLength: 1 });
  return new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `${provider}: ${action} failed${status ? ` (HTTP ${status})` : ""}: ${message}`, {
    fix:
      status === 401 || status === 403
        ? `Check the ${provider} API key in the host's environment.`
        : status === 429
          ? `${provider} refused the call for its rate limit${waitAsked(error)}: space out the runs that use it, or ask ${provider} for higher limits.`
          : timedOut(error)
            ? `The ${provider} API did not answer in time: check its status, or raise the sandbox's requestTimeoutMs.`
            : `Check that the ${provider} API is reachable and the sandbox exists.`,
    details: { provider, action, ...(status ? { status } : {}) },
  });
}

export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown; status?: unknown } | null)?.statusCode ?? (error as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}

/** The SDK's request deadline passed (axios reports it as ECONNABORTED or ETIMEDOUT). */
function timedOut(error: unknown): boolean {
  const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
  return name === "DaytonaConnectionTimeoutError" || code === "ECONNABORTED" || code === "ETIMEDOUT";
}

/** ", asking to wait N s" when a 429 said how long. */
function waitAsked(error: unknown): string {
  const ms = retryAfterMs(error);
  return ms === undefined ? "" : `, asking to wait ${Math.ceil(ms / 1000)} s`;
}
