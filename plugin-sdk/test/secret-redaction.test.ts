import { describe, expect, it } from "vitest";
import { redactError, redactSecrets, redactUrlQueries, redactValue, secretRedaction } from "../src/index.js";

/** A secret whose URL, JSON and base64 encodings all differ from it. */
const SECRET = "sk/live+Key=9&x\"y";

/** Whether any base64 run in `text` decodes (at any of the three alignments) to something holding `secret`. */
function decodesTo(text: string, secret: string): boolean {
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}={0,2}/g) ?? []) {
    for (let skip = 0; skip < 4; skip += 1) {
      if (Buffer.from(run.slice(skip), "base64").toString("latin1").includes(secret)) return true;
    }
  }
  return false;
}

describe("redactSecrets", () => {
  it("takes a secret out of text however a service quoted it: verbatim, in a URL, in JSON, in HTML, in hex, and base64 inside a longer value", () => {
    const echoes = [
      `key ${SECRET} refused`,
      `GET /v1?key=${encodeURIComponent(SECRET)}`,
      `GET /v1?key=${encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase())}`,
      `{"headers":${JSON.stringify({ authorization: `Bearer ${SECRET}` })}}`,
      `<p>${SECRET.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}</p>`,
      `hex ${Buffer.from(SECRET).toString("hex")}`,
      `Authorization: Basic ${Buffer.from(`user:${SECRET}`).toString("base64")}`,
      `dump ${Buffer.from(JSON.stringify({ "x-api-key": SECRET })).toString("base64")}`,
    ];
    for (const echo of echoes) {
      const shown = redactSecrets(echo, [SECRET]);
      expect(shown, echo).toContain("[redacted]");
      expect(shown).not.toContain(SECRET);
      expect(shown).not.toContain(encodeURIComponent(SECRET));
      expect(decodesTo(shown, SECRET), shown).toBe(false);
      expect(Buffer.from(shown.replace(/[^0-9a-f]/g, ""), "hex").toString("latin1")).not.toContain(SECRET);
    }
  });

  it("removes a secret that contains another whole, and skips unset and short values (they occur in any text)", () => {
    expect(redactSecrets("token abcd-1234-efgh and abcd-1234", ["abcd-1234", undefined, "abcd-1234-efgh", null, "on"])).toBe("token [redacted] and [redacted]");
    expect(redactSecrets("turn it on", ["on"])).toBe("turn it on");
    expect(redactSecrets("pin 12", ["12"], { minLength: 1 })).toBe("pin [redacted]");
    expect(redactSecrets("nothing to hide", [])).toBe("nothing to hide");
  });
});

describe("secretRedaction", () => {
  const redaction = secretRedaction([{ secret: SECRET, mark: "[grant github]" }]);

  it("marks each secret with its own words, in strings and keys of a value, and in an error's message, stack and causes", () => {
    expect(redactValue({ [SECRET]: [`a ${SECRET}`, 3, null] }, redaction)).toEqual({ "[grant github]": ["a [grant github]", 3, null] });
    const error = new Error(`outer ${SECRET}`, { cause: new Error(`inner ${encodeURIComponent(SECRET)}`) });
    expect(redactError(error, redaction)).toBe(error);
    expect(error.message).toBe("outer [grant github]");
    expect(error.stack).not.toContain(SECRET);
    expect((error.cause as Error).message).toBe("inner [grant github]");
  });

  it("is undefined when no secret is long enough, and then changes nothing", () => {
    expect(secretRedaction([{ secret: "", mark: "[x]" }, { secret: undefined, mark: "[y]" }])).toBeUndefined();
    expect(redactValue({ a: "" }, undefined)).toEqual({ a: "" });
  });

  it("takes the query string out of every URL in running text, and leaves the rest", () => {
    const text = 'POST https://gw.example/v1/chat?api-key=k1&deployment=x failed; see "http://docs.example/errors?code=42" or docs.example?not=a-url';
    expect(redactUrlQueries(text)).toBe('POST https://gw.example/v1/chat?[redacted] failed; see "http://docs.example/errors?[redacted]" or docs.example?not=a-url');
  });
});
