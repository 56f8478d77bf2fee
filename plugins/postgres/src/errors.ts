import { AssemblyLineError } from "@assemblyline-agents/core";

/** The fields of a `pg` DatabaseError this package reads. */
interface PgErrorFields {
  code?: unknown;
  detail?: unknown;
  message?: unknown;
}

/** SQLSTATEs raised by this package's own SQL functions. */
export const SQLSTATE_RUN_NOT_FOUND = "ALNF1";
export const SQLSTATE_SEQ_MISMATCH = "ALSEQ";
export const SQLSTATE_STALE_FENCE = "ALFEN";
/** `append_events` was given an observer position past the run's log (schema version 12). */
export const SQLSTATE_OBSERVED_PAST_LOG = "ALOBS";

export function sqlState(error: unknown): string | undefined {
  const code = (error as PgErrorFields | null)?.code;
  return typeof code === "string" ? code : undefined;
}

export function pgDetail(error: unknown): string | undefined {
  const detail = (error as PgErrorFields | null)?.detail;
  return typeof detail === "string" ? detail : undefined;
}

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "EHOSTUNREACH"]);

/**
 * Whether the error means the connection is gone (as opposed to the statement
 * being refused): the server shut the session down, the socket broke, or the
 * client gave up connecting.
 */
export function isConnectionError(error: unknown): boolean {
  const code = sqlState(error);
  if (code !== undefined) {
    // 08: connection exception; 57P01-03: admin/crash shutdown, cannot connect now.
    if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true;
    if (CONNECTION_CODES.has(code)) return true;
  }
  const message = error instanceof Error ? error.message : "";
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message);
}

/**
 * Whether the server refused for a passing reason (too many connections, out of
 * resources, a lock or serialization conflict, a statement timeout) or the pool
 * was shut down: the state is intact and the run should be resumed, not failed.
 */
export function isTransientError(error: unknown): boolean {
  const code = sqlState(error);
  if (code !== undefined && (code.startsWith("53") || code === "40001" || code === "40P01" || code === "55P03" || code === "57014")) return true;
  const message = error instanceof Error ? error.message : "";
  return /Cannot use a pool after calling end on the pool/i.test(message);
}

/** Turn a driver error into a coded error that says what was being done. */
export function databaseError(error: unknown, raw: string, schema: string): AssemblyLineError {
  if (error instanceof AssemblyLineError) return error;
  const operation = printable(raw);
  const reason = error instanceof Error ? error.message : String(error);
  if (isConnectionError(error) || isTransientError(error)) {
    return new AssemblyLineError(
      "AL_ERR_STATE_UNAVAILABLE",
      `${operation} could not complete on PostgreSQL (${isConnectionError(error) ? "connection lost" : "transient refusal"}): ${reason}`,
      {
        fix: "Check that the database is up and reachable. The operation was not committed unless a retry shows its effect; writes are safe to retry after reading the current state.",
        cause: error,
        details: { operation, schema, sqlState: sqlState(error) },
      },
    );
  }
  const code = sqlState(error);
  // 28xxx: the user or password was refused; 3D000: no such database. A setting to fix, not a schema.
  if (code !== undefined && (code.startsWith("28") || code === "3D000")) {
    return new AssemblyLineError("AL_ERR_STATE_CONFIG", `${operation}: PostgreSQL refused the connection: ${reason}`, {
      fix: "Check the user, password and database name in the connection string (DATABASE_URL), and that the user may connect to that database.",
      cause: error,
      details: { operation, schema, sqlState: code },
    });
  }
  return new AssemblyLineError("AL_ERR_STATE_QUERY", `${operation} was rejected by PostgreSQL: ${reason}`, {
    fix: `Check the state schema "${schema}" (has it been altered by hand?) and the database logs; the error's cause carries the SQLSTATE.`,
    cause: error,
    details: { operation, schema, sqlState: sqlState(error) },
  });
}

/** A stored row breaks the contract; the message names the row so it can be repaired. */
export function rowInvalid(schema: string, where: string, problem: string, details: Record<string, unknown>): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_STATE_ROW_INVALID", `${where} in PostgreSQL schema "${schema}" ${problem}`, {
    fix: "The row was written outside Assembly Line or by an incompatible version. Repair the row by hand (or delete the run), then retry.",
    details: { schema, ...details },
  });
}

/** A caller passed a value the contract does not allow. */
export function inputInvalid(operation: string, problem: string, details: Record<string, unknown> = {}): AssemblyLineError {
  return new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${operation}: ${problem}`, {
    fix: "Pass values shaped as the state contract in @assemblyline-agents/core describes.",
    details: { operation, ...details },
  });
}

/** `text` with control characters and lone surrogates written as \u escapes, for messages and logs. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

