import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isAssemblyLineError } from "../errors.js";
import type { DeployTarget } from "../infrastructure.js";
import { useSubject, type StateKitFactory } from "./state/subject.js";

/**
 * The DeployTarget contract, the part every target shares whatever it ships
 * to: it names itself, and it checks its input before shipping anything: a
 * folder with no built manifest is refused with AL_ERR_MANIFEST_MISSING, not
 * uploaded half-made or failed with a raw error.
 */
export function describeDeployConformance(name: string, factory: StateKitFactory<DeployTarget>): void {
  describe(`${name}: DeployTarget conformance`, () => {
    const target = useSubject(factory);

    it("has a name", () => {
      expect(typeof target().name).toBe("string");
      expect(target().name.length).toBeGreaterThan(0);
    });

    it("refuses a folder that holds no built manifest with AL_ERR_MANIFEST_MISSING", async () => {
      const empty = await mkdtemp(join(tmpdir(), "al-deploy-kit-"));
      try {
        const refusal = await target()
          .deploy({ artifactRoot: empty, env: {} })
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        expect(isAssemblyLineError(refusal, "AL_ERR_MANIFEST_MISSING"), String(refusal)).toBe(true);
      } finally {
        await rm(empty, { recursive: true, force: true });
      }
    });
  });
}
