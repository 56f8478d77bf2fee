import { AssemblyLineError, redactSecrets } from "@assemblyline-agents/core";

/** HTTP statuses the SDK's error classes stand for (its errors carry a class, not a status). */
const STATUS_BY_ERROR: Record<string, number> = { AuthenticationError: 401, NotFoundError: 404, SandboxNotFoundError: 404, FileNotFoundError: 404, RateLimitError: 429 };

/**
 * A provider SDK's failure as an AssemblyLineError. Only the message and status
 * travel: the SDK's error object can hold the request (and its API key header),
 * so it is never attached as a cause, and the key is masked in the text.
 */
export function providerError(provider: string, action: string, error: unknown, secrets: Array<string | undefined>): AssemblyLineError {
  if (error instanceof AssemblyLineError) return error;
  const status = statusOf(error);
  const given = error instanceof Error ? error.message : String(error);
  // Some SDK errors carry no message (a stream cut when E2B paused the sandbox): their name and status say at least that much.
  const blank = `${String((error as { name?: unknown } | null)?.name || "an error")} with no message`;
  const message = redactSecrets(given.trim() ? given : blank, secrets, { minLength: 1 });
  return new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `${provider}: ${action} failed${status ? ` (HTTP ${status})` : ""}: ${message}`, {
    fix:
      status === 401 || status === 403
        ? `Check the ${provider} API key in the host's environment.`
        : /timeout cannot be greater than/i.test(message)
          ? "Lower the sandbox's lifetimeMs to at most what the E2B plan allows (the hours named above: 1 on Hobby, 24 on Pro)."
          : `Check that the ${provider} API is reachable and the sandbox exists.`,
    details: { provider, action, ...(status ? { status } : {}) },
  });
}

export function statusOf(error: unknown): number | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  const byName = typeof name === "string" ? STATUS_BY_ERROR[name] : undefined;
  if (byName) return byName;
  const status = (error as { statusCode?: unknown; status?: unknown } | null)?.statusCode ?? (error as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}
