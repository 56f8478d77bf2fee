import { createRequire } from "node:module";
import type pino from "pino";
import { LOG_LEVELS as LEVELS, readLogLevel, type LogLevel, type RuntimeLogger } from "@assemblyline-agents/core";

export { readLogLevel, type LogLevel };

/**
 * Structured JSON logs (level, time, msg, fields) on stderr, so stdout stays
 * free for a command's own output. Level from options.level, else
 * ASSEMBLY_LINE_LOG_LEVEL (options.env's, then the process's; see readLogLevel).
 * A level option that is not one of LEVELS is a TypeError, as the runtime's other
 * option checks are; a bad variable is AL_ERR_HOST_CONFIG, which hosts report as a fix.
 */
export function createRuntimeLogger(options: { level?: string; env?: Record<string, string | undefined> } = {}): RuntimeLogger {
  if (options.level !== undefined && !(LEVELS as readonly string[]).includes(options.level)) {
    throw new TypeError(`createRuntimeLogger's level option is ${JSON.stringify(options.level)}, not one of ${LEVELS.join(", ")}; pass level: "info" (or leave it out to follow ASSEMBLY_LINE_LOG_LEVEL)`);
  }
  const level = options.level ?? readLogLevel(nonEmpty(options.env?.ASSEMBLY_LINE_LOG_LEVEL) ?? process.env.ASSEMBLY_LINE_LOG_LEVEL);
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

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
