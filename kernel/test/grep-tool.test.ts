import { describe, expect, it } from "vitest";
import type { ToolExecutionContext } from "@assemblyline-agents/core";
import { builtInToolDefaults, InMemoryStateAdapter } from "@assemblyline-agents/runtime";
import { filesystemOver, toolContextOver } from "./support/tool-filesystem.js";

/** A tool context over memory holding `files` (no sandbox). */
async function memoryWith(files: Record<string, string>) {
  const state = new InMemoryStateAdapter();
  for (const [path, content] of Object.entries(files)) await state.writeMemory(path, content);
  return toolContextOver(filesystemOver(state));
}

const grep = (ctx: ToolExecutionContext, pattern: string) => builtInToolDefaults.grep.execute({ pattern, path: "/memory" }, ctx);

describe("grep built-in with a model-supplied pattern", () => {
  it("does not block the runtime's event loop on a backtracking pattern: (a+)+$ over a 26-character line answers at once", async () => {
    const ctx = await memoryWith({ "log.md": `${"a".repeat(25)}!\n${"a".repeat(5000)}\n` });
    // The timers of every other run (lease renewals, timeouts) wait while a grep runs: it must answer at once.
    const started = Date.now();
    const result = await grep(ctx, "(a+)+$");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(result).toEqual({ matches: [`/memory/log.md:2:${"a".repeat(5000)}`], truncated: false });
  });

  it("matches line by line as before: anchors at the line's ends, classes, alternation, and (?i)", async () => {
    const ctx = await memoryWith({ "notes.md": "Milk 2\nbread\nEggs 12\n  eggs\n" });
    expect(await grep(ctx, "^eggs|\\d{2}$")).toEqual({ matches: ["/memory/notes.md:3:Eggs 12"], truncated: false });
    expect(await grep(ctx, "(?i)^\\s*eggs")).toEqual({ matches: ["/memory/notes.md:3:Eggs 12", "/memory/notes.md:4:  eggs"], truncated: false });
  });

  it.each([
    ["(\\w)\\1", /^invalid pattern: backreferences \(\\1, \\k<name>\) are not supported \(at `\\1`\): grep patterns are RE2 syntax, matched in linear time\. Instead, /],
    ["(?<w>a)\\k<w>", /^invalid pattern: backreferences .* are not supported \(at `\\k`\)/],
    ["milk(?= 2)", /^invalid pattern: lookahead \(\(\?=\.\.\.\), \(\?!\.\.\.\)\) are not supported/],
    ["milk(?!s)", /^invalid pattern: lookahead .* are not supported/],
    ["(?<=buy )milk", /^invalid pattern: lookbehind \(\(\?<=\.\.\.\), \(\?<!\.\.\.\)\) are not supported/],
    ["(?<!no )milk", /^invalid pattern: lookbehind .* are not supported/],
    ["a++", /^invalid pattern: atomic groups and possessive quantifiers .* are not supported/],
    ["(?>a)", /^invalid pattern: atomic groups and possessive quantifiers .* are not supported/],
    ["caf\\u00e9", /^invalid pattern: \\u escapes are not supported .* Instead, write \\x\{e9\} for \\u00e9\.$/],
    ["[milk", /^invalid pattern: missing closing \]: `\[milk` \(grep patterns are RE2 syntax\)$/],
  ])("refuses %s with a recoverable error naming what RE2 does not support", async (pattern, message) => {
    const ctx = await memoryWith({ "notes.md": "milk 2\n" });
    expect(await grep(ctx, pattern)).toEqual({ matches: [], truncated: false, error: expect.stringMatching(message) });
  });

  it("searches the files it can read by path, passing over a name that holds a control character", async () => {
    // Stored directly: a name an older runtime let through, which read now refuses.
    const ctx = await memoryWith({ "a.md": "milk\n", "b.md\n# heading": "milk\n", "c.md": "milk\n" });
    expect(await grep(ctx, "milk")).toEqual({ matches: ["/memory/a.md:1:milk", "/memory/c.md:1:milk"], truncated: false });
  });

  it("says in its description which regular expressions it takes", () => {
    expect(builtInToolDefaults.grep.description).toMatch(/RE2 syntax: no backreferences or lookaround/);
  });
});
