import { describe, expect, it } from "vitest";
import { parameters, pastPrefix, underPrefix } from "../src/facets/prefix-range.js";

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

describe("underPrefix", () => {
  const conditions = (prefix: string) => {
    const values: unknown[] = [];
    return { conditions: underPrefix("path", prefix, parameters(values)), values };
  };

  it("is a range of the key with parameters, nothing for an empty prefix", () => {
    expect(conditions("")).toEqual({ conditions: [], values: [] });
    expect(conditions("/files/")).toEqual({ conditions: ["path >= $1::text", "path < $2::text"], values: ["/files/", "/files0"] });
  });

  it("filters with starts_with where the range would have no end of its own", () => {
    expect(conditions("/files/\uffff")).toEqual({ conditions: ["starts_with(path, $1::text)"], values: ["/files/\uffff"] });
  });
});
