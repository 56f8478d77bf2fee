import { RE2JS, RE2JSException, RE2JSSyntaxException } from "re2js";

/**
 * The grep tool's patterns: RE2 syntax, matched by re2js in time linear in the line. A model's
 * pattern runs in the host process, beside every other run: with a backtracking engine, `(a+)+$`
 * over a 27-character line held the event loop (every run, every lease renewal) for 18 s.
 */
export interface LinePattern {
  /** Whether the pattern matches somewhere in `line`. */
  test(line: string): boolean;
}

/** What RE2 leaves out on purpose, each found by the fragment its parser refuses, and what to write instead. */
const UNSUPPORTED: ReadonlyArray<{ fragment: RegExp; what: string; instead: string }> = [
  { fragment: /^\\([1-9]|k)/, what: "backreferences (\\1, \\k<name>)", instead: "match the repeated text itself" },
  { fragment: /^\(\?[=!]/, what: "lookahead ((?=...), (?!...))", instead: "match the text that follows as part of the pattern" },
  { fragment: /^\(\?<[=!]/, what: "lookbehind ((?<=...), (?<!...))", instead: "match the text that comes before as part of the pattern" },
  { fragment: /^(\(\?>|([*+?]|\{[\d,]*\})\+$)/, what: "atomic groups and possessive quantifiers ((?>...), a++)", instead: "use a plain group or quantifier (RE2 never backtracks)" },
  { fragment: /^\\u/, what: "\\u escapes", instead: "write \\x{e9} for \\u00e9" },
];

/** `pattern` compiled, or why it cannot be: an error for the model to correct, naming what RE2 does not support. */
export function compileLinePattern(pattern: string): { pattern: LinePattern } | { error: string } {
  try {
    const compiled = RE2JS.compile(pattern);
    return { pattern: { test: (line) => compiled.test(line) } };
  } catch (error) {
    if (error instanceof RE2JSSyntaxException) {
      const fragment = error.getPattern() ?? "";
      const unsupported = UNSUPPORTED.find((candidate) => candidate.fragment.test(fragment));
      if (unsupported) {
        return { error: `invalid pattern: ${unsupported.what} are not supported (at \`${fragment}\`): grep patterns are RE2 syntax, matched in linear time. Instead, ${unsupported.instead}.` };
      }
      return { error: `invalid pattern: ${error.getDescription()}${fragment ? `: \`${fragment}\`` : ""} (grep patterns are RE2 syntax)` };
    }
    if (error instanceof RE2JSException) return { error: `invalid pattern: ${error.message} (grep patterns are RE2 syntax)` };
    throw error;
  }
}
