import { describe, expect, it } from "vitest";
import { captureBody, REDACTED } from "@assemblyline-agents/runtime";

describe("captured bodies under content and full", () => {
  it("redacts Bearer and Basic credentials in free text whatever their case, as HTTP reads the scheme", () => {
    const text = [
      "curl -H 'authorization: bearer abcdefghijklmnop' https://api.example.com",
      "Authorization: Bearer QRSTUVWXYZ012345",
      "proxy said BASIC dXNlcjpodW50ZXIy",
    ].join("\n");
    for (const mode of ["content", "full"] as const) {
      const captured = captureBody(text, mode);
      for (const secret of ["abcdefghijklmnop", "QRSTUVWXYZ012345", "dXNlcjpodW50ZXIy"]) expect(captured).not.toContain(secret);
      expect(captured).toContain(`bearer ${REDACTED}`);
      expect(captured).toContain(`Bearer ${REDACTED}`);
      expect(captured).toContain(`BASIC ${REDACTED}`);
    }
  });
});
