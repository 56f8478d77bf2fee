import { readLogLevel, type LogLevel, type RuntimeLogger } from "@assemblyline-agents/core";

const LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/**
 * Dev-mode logs for a terminal: `12:03:04 INFO  turn accepted  channel=message runId=run_...`.
 * Same fields as the JSON logs, one line each, written through `write`. `level`
 * defaults to ASSEMBLY_LINE_LOG_LEVEL, read as the JSON logger reads it (empty is info).
 */
export function readableLogger(write: (line: string) => void, level: string | undefined = process.env.ASSEMBLY_LINE_LOG_LEVEL): RuntimeLogger {
  const threshold = LEVELS.indexOf(readLogLevel(level));
  const line = (at: LogLevel) => (fields: Record<string, unknown>, msg?: string) => {
    if (LEVELS.indexOf(at) < threshold) return;
    const time = new Date().toISOString().slice(11, 19);
    const details = Object.entries(fields)
      .filter(([key, value]) => key !== "event" && value !== undefined)
      .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
      .join(" ");
    const event = typeof fields.event === "string" ? ` [${fields.event}]` : "";
    write(`${time} ${at.toUpperCase().padEnd(5)} ${msg ?? ""}${event}${details ? `  ${details}` : ""}`);
  };
  return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
}
