import { describe, expect, it } from "vitest";
import { splitMessage } from "../src/index.js";

/** A reply with a long code block, as a model writes one. */
const script = `Here is the script:\n\`\`\`python\n${Array.from({ length: 120 }, (_, index) => `# step ${index}: x = y * ${index} * z`).join("\n")}\n\`\`\`\nDone.`;

describe("splitMessage", () => {
  it("cuts at line breaks, then spaces, then the limit, and loses nothing", () => {
    expect(splitMessage("aaaa\nbbbb\ncc", 10)).toEqual(["aaaa\nbbbb\n", "cc"]);
    expect(splitMessage("aaaa bbbb cc", 10)).toEqual(["aaaa bbbb ", "cc"]);
    expect(splitMessage("a".repeat(25), 10)).toEqual(["a".repeat(10), "a".repeat(10), "a".repeat(5)]);
    expect(splitMessage("", 10)).toEqual([]);
  });

  it("never splits a surrogate pair", () => {
    const chunks = splitMessage("a".repeat(9) + "😀" + "b", 10);
    expect(chunks).toEqual(["a".repeat(9), "😀b"]);
  });

  it("closes a code block cut between parts and opens it again, language tag and all, at the start of the next", () => {
    expect(splitMessage("Run:\n```sh\nnpm install\nnpm test\nnpm run build\n```\nDone.", 30)).toEqual([
      "Run:\n```sh\nnpm install\n```",
      "```sh\nnpm test\n```",
      "```sh\nnpm run build\n```\nDone.",
    ]);
    const parts = splitMessage(script, 2000);
    expect(parts).toHaveLength(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect((part.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(parts[1]).toMatch(/^```python\n# step \d+/);
    // Without the fences added at the cut, the parts are the text.
    expect(parts[0]!.replace(/```$/, "") + parts[1]!.replace(/^```python\n/, "")).toBe(script);
  });

  it("opens no empty block: a cut right before the block's closing fence or right after its opening one moves past or before it", () => {
    const text = "Run:\n```\nnpm install\n``` and it is done";
    expect(splitMessage(text, 25)).toEqual(["Run:\n```\nnpm install\n```", " and it is done"]);
    expect(splitMessage(text, 20)).toEqual(["Run:\n", "```\nnpm install\n```", " and it is done"]);
  });

  it("never cuts between the backticks of a fence", () => {
    expect(splitMessage(`${"x".repeat(18)}\`\`\`js\ncode\n\`\`\``, 20)).toEqual(["x".repeat(18), "```js\ncode\n```"]);
  });

  it("keeps every part within the limit, down to limits too small to close and reopen a block", () => {
    for (const limit of [2, 3, 10, 16, 17, 40, 100, 2000]) {
      const parts = splitMessage(script, limit);
      for (const part of parts) expect(part.length).toBeLessThanOrEqual(limit);
      // Too small for the fences: cut as plain text, so nothing is added.
      if (limit < 16) expect(parts.join("")).toBe(script);
    }
  });
});
