import { onTestFinished } from "vitest";

/** The process warnings emitted from now until the test ends (the file state reports a failed fold as one). */
export function collectWarnings(): Error[] {
  const warnings: Error[] = [];
  const listener = (warning: Error) => warnings.push(warning);
  process.on("warning", listener);
  onTestFinished(() => {
    process.off("warning", listener);
  });
  return warnings;
}

/** Process warnings are emitted on the next tick: let them arrive. */
export const warningsDelivered = () => new Promise((resolve) => setImmediate(resolve));
