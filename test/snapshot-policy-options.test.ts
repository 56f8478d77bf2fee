import { describe, expect, it } from "vitest";
import { checkSnapshotPolicy } from "@assemblyline-agents/core";
import { DockerSandboxAdapter } from "@assemblyline-agents/docker";
import { E2bSandboxAdapter } from "@assemblyline-agents/e2b";
import { DaytonaSandboxAdapter } from "@assemblyline-agents/daytona";

/** A misspelt key of `snapshot` would leave its default in place without a word: every adapter refuses it, naming it. */
const adapters: Array<[string, (snapshot: unknown) => unknown]> = [
  ["dockerSandbox", (snapshot) => new DockerSandboxAdapter({ image: "busybox", snapshot: snapshot as never })],
  ["e2bSandbox", (snapshot) => new E2bSandboxAdapter({ snapshot: snapshot as never })],
  ["daytonaSandbox", (snapshot) => new DaytonaSandboxAdapter({ snapshot: snapshot as never })],
];

describe("a sandbox's snapshot policy", () => {
  for (const [name, make] of adapters) {
    it(`${name} refuses an unknown key of snapshot, and a policy that is not an object, naming them`, () => {
      expect(() => make({ mode: "auto", retainlast: 9 })).toThrow(new RegExp(`AL_ERR_SANDBOX_DEFINITION: ${name} option snapshot\\.retainlast is 9, not a known option of snapshot \\(mode, retainLast, reason\\)`));
      expect(() => make(null)).toThrow(new RegExp(`${name} option snapshot is null`));
      expect(() => make({ mode: "auto", retainLast: 0 })).toThrow(/snapshot\.retainLast is 0, not a whole number of at least 1/);
      expect(() => make({ mode: "auto", retainLast: 5, reason: "nightly" })).not.toThrow();
    });
  }

  it("takes retainLast 3 when left out", () => {
    expect(checkSnapshotPolicy({ mode: "manual" })).toEqual({ policy: { mode: "manual", retainLast: 3, reason: undefined } });
  });
});
