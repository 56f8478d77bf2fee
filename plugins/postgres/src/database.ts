import { AssemblyLineError } from "@assemblyline-agents/core";
import { createHash } from "node:crypto";
import type { Pool, QueryResult, QueryResultRow } from "pg";
import { databaseError, inputInvalid, printable } from "./errors.js";
import { quoteIdent } from "./schema/migrate.js";

/**
 * The pool and schema one adapter works in. Every statement goes through
 * `pool.query` (one round trip, its own transaction), after the schema is known
 * to be migrated, as a named prepared statement: each connection parses and
 * plans a statement once, then only binds and executes it.
 */
export class StateDatabase {
  /** The quoted schema name, for interpolating into SQL text. */
  readonly s: string;
  /** Prepared-statement name per SQL text; the text includes the schema, so names never collide across schemas. */
  private readonly names = new Map<string, string>();

  constructor(
    readonly pool: Pool,
    readonly schema: string,
    private readonly ready: () => Promise<unknown>,
    private readonly prepared = true,
  ) {
    this.s = quoteIdent(schema);
  }

  /**
   * Run one statement. `operation` names the call in errors ("appendEvents(run r1)");
   * `mapError` turns errors the caller expects (e.g. a custom SQLSTATE) into coded ones.
   */
  async run<R extends QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[] = [],
    mapError?: (error: unknown) => AssemblyLineError | undefined,
  ): Promise<QueryResult<R>> {
    await this.ready();
    checkStorableText(operation, values);
    try {
      return await this.pool.query<R>(this.prepared ? { name: this.statementName(text), text, values } : { text, values });
    } catch (error) {
      throw mapError?.(error) ?? databaseError(error, operation, this.schema);
    }
  }

  private statementName(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `al_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
      this.names.set(text, name);
    }
    return name;
  }

  async rows<R extends QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[] = [],
    mapError?: (error: unknown) => AssemblyLineError | undefined,
  ): Promise<R[]> {
    return (await this.run<R>(operation, text, values, mapError)).rows;
  }
}

/**
 * Refuse a text parameter PostgreSQL cannot store as given, before it is sent: a NUL
 * character (the server rejects it in text) or a lone UTF-16 surrogate (UTF-8 cannot
 * encode one, so the driver sends U+FFFD instead: the text would change silently, and
 * two different ids or paths would meet in one row). JSON parameters are never
 * affected: JSON.stringify writes both as \u escapes, which `json` keeps as they are.
 */
export function checkStorableText(operation: string, values: readonly unknown[]): void {
  for (const value of values) {
    if (typeof value === "string") checkText(operation, value);
    else if (Array.isArray(value)) for (const item of value) if (typeof item === "string") checkText(operation, item);
  }
}

function checkText(operation: string, text: string): void {
  const nul = text.includes("\u0000");
  // Native in every Node.js this package supports (20.19+); ES2023's lib does not declare it yet.
  if (!nul && (text as unknown as { isWellFormed(): boolean }).isWellFormed()) return;
  const problem = nul ? "a NUL character (U+0000)" : "a lone UTF-16 surrogate (half of a character, e.g. an emoji cut in two)";
  const shown = JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
  throw new AssemblyLineError("AL_ERR_STATE_INPUT_INVALID", `${printable(operation)}: the text ${shown} holds ${problem}, which PostgreSQL cannot store in a text column`, {
    fix: nul
      ? "Remove NUL characters from ids, paths and text before storing them (JSON payloads may hold them)."
      : "Cut text on character boundaries (e.g. with Array.from or Intl.Segmenter, not String.slice), or replace the lone surrogate before storing it.",
    details: { operation: printable(operation), problem: nul ? "nul" : "lone-surrogate" },
  });
}

/**
 * Serialize a JSON value for a `json` parameter ourselves: `pg` would turn a bare
 * array into an SQL array literal and send a bare string unquoted.
 */
export function jsonParam(value: unknown, operation: string, field: string): string | null {
  if (value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw inputInvalid(operation, `${field} is not JSON-serializable (${error instanceof Error ? error.message : String(error)})`, { field });
  }
  return text === undefined ? null : text;
}

/** A `timestamptz` parameter for "now, unless the caller overrides the clock". */
export function clockParam(now: Date | undefined): string | null {
  return now === undefined ? null : now.toISOString();
}
