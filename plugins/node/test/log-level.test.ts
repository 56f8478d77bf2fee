import { afterEach, describe, expect, it, vi } from "vitest";
import { createRuntimeLogger } from "@assemblyline-agents/runtime";
import { readableLogger } from "@assemblyline-agents/node";

afterEach(() => void vi.unstubAllEnvs());

/** What a logger does with the process's ASSEMBLY_LINE_LOG_LEVEL: the error's text, or the lines it lets through of debug and info. */
function outcome(make: (write: (line: string) => void) => { debug(fields: Record<string, unknown>, msg?: string): void; info(fields: Record<string, unknown>, msg?: string): void }): string {
  const lines: string[] = [];
  try {
    const logger = make((line) => lines.push(line));
    logger.debug({}, "a debug line");
    logger.info({}, "an info line");
  } catch (error) {
    return `${(error as { code?: string }).code}: ${(error as Error).message}`;
  }
  return lines.map((line) => line.replace(/^.*?(a debug|an info).*$/, "$1")).join(",");
}

describe("ASSEMBLY_LINE_LOG_LEVEL, read alike by the readable logs (dev, run, approve...) and the JSON logs (serve --json-logs, start)", () => {
  it("takes an empty or blank value as unset (info) and reads a value trimmed", () => {
    for (const [value, expected] of [["", "an info"], ["  ", "an info"], ["debug ", "a debug,an info"], [" warn", ""]] as const) {
      vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", value);
      expect(outcome((write) => readableLogger(write)), JSON.stringify(value)).toBe(expected);
      expect(() => createRuntimeLogger(), JSON.stringify(value)).not.toThrow();
    }
  });

  it("refuses a value that is not a level with one error, whichever logger reads it", () => {
    vi.stubEnv("ASSEMBLY_LINE_LOG_LEVEL", "WARNING");
    const readable = outcome((write) => readableLogger(write));
    expect(readable).toMatch(/^AL_ERR_HOST_CONFIG: AL_ERR_HOST_CONFIG: ASSEMBLY_LINE_LOG_LEVEL=WARNING is not one of debug, info, warn, error/);
    expect(outcome(() => createRuntimeLogger())).toBe(readable);
  });
});
