import { describe, expect, it } from "vitest";
import { quotableUrl, quotedUrl } from "../src/index.js";

describe("quotedUrl", () => {
  it.each([
    ["https://api.example.com/v1", '"https://api.example.com/v1"'],
    ["https://api.example.com", '"https://api.example.com"'],
    ["https://api.example.com/v1?token=SECRET#frag", '"https://api.example.com/v1?<query>#<fragment>"'],
    ["https://user:SECRET@api.example.com/v1", '"https://<credentials>@api.example.com/v1"'],
    // A password with a "/" parses as a port and a path; without a scheme, "key:" parses as one.
    ["https://user:12/SECRET@api.example.com/v1", '"https://<credentials>@api.example.com/v1"'],
    ["AKIA:SECRET@bucket.example.com", '"<credentials>@bucket.example.com"'],
    ["s3://AKIA:SECRET@bucket.example.com", '"s3://<credentials>@bucket.example.com"'],
    ["api.example.com/v1?key=SECRET", '"api.example.com/v1?<query>"'],
    ["/v1?key=SECRET", '"/v1?<query>"'],
  ])("shows %s as %s, never what a secret may be in", (written, shown) => {
    expect(quotedUrl(written)).toBe(shown);
    expect(quotedUrl(written)).not.toContain("SECRET");
  });

  it("does not quote text it cannot parse apart from what it may hide", () => {
    expect(quotableUrl("http://[SECRET")).toBeUndefined();
    expect(quotedUrl("http://[SECRET")).toMatch(/^\(not quoted: /);
  });

  it("says which credentials were hidden, and shows a value that is not a string by its type", () => {
    expect(quotableUrl("https://user:SECRET@api.example.com")).toEqual({ text: "https://<credentials>@api.example.com", hidden: true });
    expect(quotableUrl("https://api.example.com")).toEqual({ text: "https://api.example.com", hidden: false });
    expect([quotedUrl(undefined), quotedUrl(42), quotedUrl({ url: "SECRET" }), quotedUrl(["SECRET"])]).toEqual(["undefined", "42", "(an object)", "(an array)"]);
  });
});
