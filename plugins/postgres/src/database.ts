import type { AssemblyLineError } from "@assemblyline-agents/core";
import { createHash } from "node:crypto";
import type { Pool, QueryResult, QueryResultRow } from "pg";
import { databaseError, inputInvalid } from "./errors.js";
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
