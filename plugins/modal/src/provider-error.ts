import { AssemblyLineError, redactSecrets } from "@assemblyline-agents/core";

/** gRPC status names for the codes Modal answers with (nice-grpc's ClientError carries the number). */
const GRPC_STATUS: Record<number, string> = {
  1: "CANCELLED",
  2: "UNKNOWN",
  3: "INVALID_ARGUMENT",
  4: "DEADLINE_EXCEEDED",
  5: "NOT_FOUND",
  6: "ALREADY_EXISTS",
  7: "PERMISSION_DENIED",
  8: "RESOURCE_EXHAUSTED",
  9: "FAILED_PRECONDITION",
  12: "UNIMPLEMENTED",
  13: "INTERNAL",
  14: "UNAVAILABLE",
  16: "UNAUTHENTICATED",
};

/**
 * A Modal SDK failure as an AssemblyLineError. Only the message and the gRPC
 * status travel: the SDK's error object can hold call metadata (and the token
 * headers), so it is never attached as a cause, and the secrets are masked in the text.
 */
export function providerError(action: string, error: unknown, secrets: Array<string | undefined>): AssemblyLineError {
  if (error instanceof AssemblyLineError) return error;
  const status = grpcStatusOf(error);
  const message = redactSecrets(error instanceof Error ? error.message : String(error), secrets, { minLength: 1 });
  const denied = status === "UNAUTHENTICATED" || status === "PERMISSION_DENIED";
  return new AssemblyLineError("AL_ERR_SANDBOX_ENGINE", `Modal: ${action} failed${status ? ` (gRPC ${status})` : ""}: ${message}`, {
    fix: denied ? "Check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET in the host's environment." : "Check that Modal is reachable (MODAL_SERVER_URL) and the sandbox still runs.",
    details: { provider: "Modal", action, ...(status ? { status } : {}) },
  });
}

/** The gRPC status name of a nice-grpc ClientError, or the SDK's own error class name (NotFoundError, AlreadyExistsError). */
export function grpcStatusOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "number" && GRPC_STATUS[code]) return GRPC_STATUS[code];
  const name = (error as { name?: unknown } | null)?.name;
  if (name === "NotFoundError") return "NOT_FOUND";
  if (name === "AlreadyExistsError") return "ALREADY_EXISTS";
  return undefined;
}
