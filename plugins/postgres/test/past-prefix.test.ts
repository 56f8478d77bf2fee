import { describe, expect, it } from "vitest";
import { pastPrefix } from "../src/facets/past-prefix.js";

describe("pastPrefix", () => {
  it("raises the last character by one: the least string above all that start with the prefix", () => {
    expect(pastPrefix("/files/attachments/")).toBe("/files/attachments0");
    expect(pastPrefix("/files/\u00e9")).toBe("/files/\u00ea");
    for (const under of ["/files/attachments/", "/files/attachments/\uffff", "/files/attachments/zzz"]) expect(under < pastPrefix("/files/attachments/")!).toBe(true);
  });

  it("gives nothing where the raised character would not be one of its own, so the listing filters instead", () => {
    expect(pastPrefix("")).toBeUndefined();
    expect(pastPrefix("/files/\uffff")).toBeUndefined();
    expect(pastPrefix("/files/\ud7ff")).toBeUndefined();
    expect(pastPrefix("/files/\u{1F600}")).toBeUndefined();
  });
});
