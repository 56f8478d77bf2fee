import { createRequire } from "node:module";
import type pino from "pino";
import type { RuntimeLogger } from "@assemblyline-agents/core";

const LEVELS = ["debug", "info", "warn", "error"] as const;

/**
 * Structured JSON logs (level, time, msg, fields) on stderr, so stdout stays
 * free for a command's own output. Level from ASSEMBLY_LINE_LOG_LEVEL, default info.
 */
export function createRuntimeLogger(options: { level?: string; env?: Record<string, string | undefined> } = {}): RuntimeLogger {
  const level = options.level ?? options.env?.ASSEMBLY_LINE_LOG_LEVEL ?? process.env.ASSEMBLY_LINE_LOG_LEVEL ?? "info";
  if (!(LEVELS as readonly string[]).includes(level)) {
    throw new TypeError(`ASSEMBLY_LINE_LOG_LEVEL=${level} is not one of ${LEVELS.join(", ")}`);
  }
  // Required here, not imported: a runtime given its own logger (or none) never loads pino.
  const create = createRequire(import.meta.url)("pino") as typeof pino;
  const logger = create(
    { level, base: undefined, timestamp: create.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
    create.destination({ fd: 2, sync: true }),
  );
  return {
    debug: (fields, msg) => logger.debug(fields, msg),
    info: (fields, msg) => logger.info(fields, msg),
    warn: (fields, msg) => logger.warn(fields, msg),
    error: (fields, msg) => logger.error(fields, msg),
  };
}
