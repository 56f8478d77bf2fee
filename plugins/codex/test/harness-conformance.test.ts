import { describeHarnessConformance } from "@assemblyline-agents/core/testkit";
import { describe } from "vitest";
import { codexHarnessKitSubject, codexRuns } from "../src/testkit/index.js";

const binary = codexRuns();
if (!binary.ok) {
  if (process.env.CI === "true") throw new Error(`the codex binary must run in CI: ${binary.why}`);
  console.warn(`skipping the Codex harness kit: ${binary.why}`);
}

// What `plugins verify` runs on this package.
describe.skipIf(!binary.ok)(`the codex engine on the real app-server (${binary.why})`, () => {
  describeHarnessConformance("codex", codexHarnessKitSubject);
});
