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

  const SECRET = "sk-SECRETSECRET123";

  it("redacts the user name and password of a URL, and query parameters with secret-looking names", () => {
    const captured = captureBody({ db: `postgres://app:${SECRET}@db:5432/app`, api: `https://api.example.com/v1?access_token=${SECRET}&page=2`, hook: `https://hooks.example.com/x?signature=abc&client_secret=${SECRET}#top` }, "content");
    expect(captured).not.toContain(SECRET);
    expect(JSON.parse(captured)).toEqual({
      db: `postgres://${REDACTED}@db:5432/app`,
      api: `https://api.example.com/v1?access_token=${REDACTED}&page=2`,
      hook: `https://hooks.example.com/x?signature=abc&client_secret=${REDACTED}#top`,
    });
  });

  it("redacts header lists by the header's name: name/value entries and [name, value] pairs", () => {
    const captured = captureBody({ headers: [{ name: "Authorization", value: `Token ${SECRET}` }, { key: "X-Api-Key", value: SECRET }, { name: "accept", value: "json" }], pairs: [["x-api-key", SECRET], ["accept", "json"]] }, "full");
    expect(captured).not.toContain(SECRET);
    expect(JSON.parse(captured)).toEqual({
      headers: [{ name: "Authorization", value: REDACTED }, { key: "X-Api-Key", value: REDACTED }, { name: "accept", value: "json" }],
      pairs: [["x-api-key", REDACTED], ["accept", "json"]],
    });
  });

  it("redacts NAME=value and name: value for secret-looking names in free text, JSON inside prose included", () => {
    const text = [
      `OPENAI_API_KEY=${SECRET}`,
      `export DB_PASSWORD='${SECRET}'`,
      `x-api-key: ${SECRET}`,
      `Authorization: Token ${SECRET}`,
      `response: {"api_key": "${SECRET}", "id": 7}`,
      `{"secret": "${SECRET}"}`,
      "ok",
    ].join("\n");
    const captured = captureBody(text, "content");
    expect(captured).not.toContain(SECRET);
    expect(captured.split("\n")).toEqual([
      `OPENAI_API_KEY=${REDACTED}`,
      `export DB_PASSWORD='${REDACTED}'`,
      `x-api-key: ${REDACTED}`,
      `Authorization: Token ${REDACTED}`,
      `response: {"api_key": "${REDACTED}", "id": 7}`,
      `{"secret": "${REDACTED}"}`,
      "ok",
    ]);
  });

  it("redacts secret-looking keys of JSON held, its quotes escaped, in a JSON string inside prose", () => {
    const response = `response: {"status": 200, "body": "{\\"api_key\\": \\"${SECRET}\\", \\"id\\": 7}"}`;
    expect(captureBody(response, "content")).toBe(`response: {"status": 200, "body": "{\\"api_key\\": \\"${REDACTED}\\", \\"id\\": 7}"}`);
    // JSON lines (a log file a tool read), returned as a tool's { content }: the text as a whole is no JSON.
    const jsonLines = [`{"level":"info","msg":"login","body":"{\\"password\\":\\"${SECRET}\\"}"}`, `{"level":"info","url":"https://x.example?token=${SECRET}\\"}"}`].join("\n");
    const captured = JSON.parse(captureBody({ content: jsonLines }, "content")) as { content: string };
    expect(captured.content.split("\n")).toEqual([
      `{"level":"info","msg":"login","body":"{\\"password\\":\\"${REDACTED}\\"}"}`,
      `{"level":"info","url":"https://x.example?token=${REDACTED}\\"}"}`,
    ]);
  });

  it("withholds a whole object or array given to a secret-looking name in prose, quoted JSON and JSON lines", () => {
    const prose = `upstream said: {"credentials": {"user": "svc", "pin": "4321", "note": "a } inside"}} (200)`;
    expect(captureBody(prose, "content")).toBe(`upstream said: {"credentials": "${REDACTED}"} (200)`);
    // JSON lines a tool read: the text as a whole is no JSON; each line stays JSON.
    const jsonLines = [`{"id":1,"secrets":["hunter2-prod", ["nested"]]}`, `{"id":2,"token":{"value":"tok-2"},"ok":true}`].join("\n");
    const lines = captureBody(jsonLines, "full").split("\n");
    expect(lines).toEqual([`{"id":1,"secrets":"${REDACTED}"}`, `{"id":2,"token":"${REDACTED}","ok":true}`]);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    // Held, its quotes escaped, in a JSON string inside prose; and unquoted, as a config dump writes it.
    expect(captureBody(`response: {"body": "{\\"credentials\\": {\\"pin\\": \\"4321\\"}}"}`, "content")).toBe(`response: {"body": "{\\"credentials\\": \\"${REDACTED}\\"}"}`);
    expect(captureBody("config: api_keys=[k-one, k-two] region=eu", "content")).toBe(`config: api_keys=${REDACTED} region=eu`);
    // A value cut before it closes is withheld to the end: nothing of it is left behind.
    expect(captureBody(`log: {"password": {"old": "pw-1", "new": "pw-2…`, "content")).toBe(`log: {"password": "${REDACTED}"`);
  });

  it("withholds a URL's credentials up to its last @, a password holding / or @ included", () => {
    const text = "primary postgres://app:pa/ss0rd@db:5432/app, replica postgres://app:p@ssw0rd@replica/app";
    const captured = captureBody(text, "content");
    for (const secret of ["pa/ss0rd", "ss0rd", "ssw0rd", "p@ss"]) expect(captured).not.toContain(secret);
    expect(captured).toBe(`primary postgres://${REDACTED}@db:5432/app, replica postgres://${REDACTED}@replica/app`);
  });

  it("redacts long adversarial text in time linear in its length", () => {
    const mebibyte = 1 << 20;
    const adversarial = [
      "token:[".repeat(mebibyte / 7),
      '"secrets": {"a": ['.repeat(mebibyte / 18),
      "password=[]".repeat(mebibyte / 11),
      `postgres://${"a:@".repeat(mebibyte / 3)}`,
      "x://".repeat(mebibyte / 4),
      `${"a".repeat(64)}token`.repeat(mebibyte / 69),
      `{"credential": "${"\\".repeat(mebibyte)}`,
    ];
    for (const text of adversarial) {
      const started = performance.now();
      captureBody(text, "full");
      // A quadratic pass over a mebibyte takes minutes; a linear one, milliseconds. The bound leaves room for a loaded machine.
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });

  it("leaves text without secret-looking names as it is", () => {
    const text = "Visit https://example.com/docs?page=2&lang=en, then set REGION=eu-west-1; the model said: fine.";
    expect(captureBody(text, "content")).toBe(text);
  });
});
