import type { CaptureContent } from "@assemblyline-agents/core";
import { captureBody, capturesBodies } from "./capture.js";

/**
 * A failure's text as a log line may carry it: captureContent decides how verbose
 * logging is, as it decides for spans. A tool's or model's error often quotes what
 * the user sent and what the tool was given (card numbers, keys), so under "usage"
 * and "off" the line names the failure by its code alone; under "content" and
 * "full" the text is there, redacted and cut as span bodies are.
 */
export function loggedErrorText(message: string, mode: CaptureContent | undefined): { err?: string } {
  const resolved = mode ?? "usage";
  return capturesBodies(resolved) ? { err: captureBody(message, resolved) } : {};
}
