import pc from "picocolors";
import type { CommandIO } from "./io.js";

/** The one shape `--json` prints on stdout for success; errors use `errorEnvelope`. */
export function envelope(data: unknown): string {
  return JSON.stringify({ ok: true, data });
}

export interface ErrorBody {
  code: string;
  message: string;
  fix: string | null;
}

export function errorEnvelope(error: ErrorBody): string {
  return JSON.stringify({ ok: false, error });
}

/** Colour functions for stdout or stderr of this IO; plain text when the stream takes no colour. */
export function colors(io: CommandIO, stream: "out" | "err") {
  return pc.createColors(stream === "out" ? io.outColor === true : io.errColor === true);
}

/**
 * Progress of long work (building, installing, deploying) on stderr. It is for a
 * person watching a terminal: silent when stderr is not a TTY or output is --json.
 */
export function progress(io: CommandIO, json: boolean): (step: string) => void {
  if (json || io.errTTY !== true) return () => {};
  const paint = colors(io, "err");
  return (step) => io.err(paint.dim(`› ${step}`));
}
