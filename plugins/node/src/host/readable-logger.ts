import { AssemblyLineError, type RuntimeLogger } from "@assemblyline-agents/core";

const LEVELS = ["debug", "info", "warn", "error"] as const;
type Level = (typeof LEVELS)[number];

/**
 * Dev-mode logs for a terminal: `12:03:04 INFO  turn accepted  channel=message runId=run_...`.
 * Same fields as the JSON logs, one line each, written through `write`.
 */
export function readableLogger(write: (line: string) => void, level: string = process.env.ASSEMBLY_LINE_LOG_LEVEL ?? "info"): RuntimeLogger {
  if (!(LEVELS as readonly string[]).includes(level)) {
    throw new AssemblyLineError("AL_ERR_HOST_CONFIG", `ASSEMBLY_LINE_LOG_LEVEL=${level} is not one of ${LEVELS.join(", ")}`, { fix: "Set it to debug, info, warn or error." });
  }
  const threshold = LEVELS.indexOf(level as Level);
  const line = (at: Level) => (fields: Record<string, unknown>, msg?: string) => {
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
