import { createRequire } from "node:module";
import type pino from "pino";
import type { RuntimeLogger } from "@assemblyline-agents/core";

const LEVELS = ["debug", "info", "warn", "error"] as const;

/**
 * Structured JSON logs (level, time, msg, fields) on stderr, so stdout stays
 * free for a command's own output. Level from options.level, else
 * ASSEMBLY_LINE_LOG_LEVEL (options.env's, then the process's), default info; an
 * empty variable counts as unset, as the OTEL_EXPORTER_OTLP_* variables do.
 * A level that is not one of LEVELS is refused as a TypeError naming where it
 * came from, as the runtime's other option and variable checks are.
 */
export function createRuntimeLogger(options: { level?: string; env?: Record<string, string | undefined> } = {}): RuntimeLogger {
  const variable = nonEmpty(options.env?.ASSEMBLY_LINE_LOG_LEVEL) ?? nonEmpty(process.env.ASSEMBLY_LINE_LOG_LEVEL);
  const level = options.level ?? variable ?? "info";
  if (!(LEVELS as readonly string[]).includes(level)) {
    const source = options.level !== undefined ? `createRuntimeLogger's level option is ${JSON.stringify(level)}` : `ASSEMBLY_LINE_LOG_LEVEL=${level}`;
    const fix = options.level !== undefined ? `pass level: "info" (or leave it out to follow ASSEMBLY_LINE_LOG_LEVEL)` : "set ASSEMBLY_LINE_LOG_LEVEL to one of them, or unset it (or leave it empty) for info";
    throw new TypeError(`${source}, not one of ${LEVELS.join(", ")}; ${fix}`);
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

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
