import { createHash } from "node:crypto";
import { defineTool, holdsControlCharacter, isAssemblyLineError, type Sandbox, type ToolExecutionContext } from "@assemblyline-agents/core";
import { runtimeFilesystemOf } from "../filesystem/context-access.js";
import { compileLinePattern } from "../filesystem/line-pattern.js";
import { resolveLogicalPath } from "../filesystem/runtime-filesystem.js";

// Without a sandbox only /workspace is out of reach: the model can keep working on the other roots.
const MODEL_RECOVERABLE = new Set([
  "AL_ERR_PATH_ESCAPE",
  "AL_ERR_PATH_READ_ONLY",
  "AL_ERR_PATH_NOT_FOUND",
  "AL_ERR_PATH_TOO_LONG",
  "AL_ERR_PATH_DENIED",
  "AL_ERR_MEMORY_TOO_LARGE",
  "AL_ERR_MEMORY_CONTENT_INVALID",
  "AL_ERR_SANDBOX_UNAVAILABLE",
  "AL_ERR_SKILL_READ_ONLY",
  "AL_ERR_SKILL_DEFINITION",
  "AL_ERR_SKILL_NOT_FOUND",
  "AL_ERR_SKILL_CONFLICT",
]);

/**
 * A bad path is the model's mistake, not broken agent code: it comes back as an
 * error-shaped result the model can correct, and the run goes on.
 */
function refusalsAsResults<I, O>(execute: (input: I, ctx: ToolExecutionContext) => Promise<O>) {
  return async (input: I, ctx: ToolExecutionContext): Promise<O> => {
    try {
      return await execute(input, ctx);
    } catch (error) {
      if (isAssemblyLineError(error) && MODEL_RECOVERABLE.has(error.code)) return { error: error.message, code: error.code } as O;
      throw error;
    }
  };
}

/**
 * The filesystem and shell built-ins, over the runtime filesystem roots
 * (/memory, /history, /files, /workspace, /skills). The file tools need no
 * sandbox (only their /workspace paths do, acquired lazily); bash needs one.
 */
const path = { type: "string", description: "Absolute logical path, e.g. /workspace/report.txt or /memory/notes.md" } as const;
const MAX_GREP_MATCHES = 200;

/**
 * The most of a file one read hands the model, in UTF-8 bytes (as bash's output cap): a larger file
 * comes back as its first part, with the offset to read the next from, instead of whole into the
 * model's context.
 */
export const READ_TOOL_MAX_BYTES = 64 * 1024;

type ReadOutput =
  | { path: string; content: string }
  | { path: string; content: string; offset: number; totalBytes: number; nextOffset: number | null; note: string }
  | { path: string; error: string };

export const readTool = defineTool<{ path: string; offset?: number }, ReadOutput>({
  description: `Read a UTF-8 text file from the runtime filesystem (/memory, /history, /files, /workspace, /skills). A file over ${READ_TOOL_MAX_BYTES / 1024} KiB comes back in parts: read again with the nextOffset the result gives for the next one.`,
  inputSchema: {
    type: "object",
    properties: { path, offset: { type: "integer", minimum: 0, description: "UTF-8 byte offset to start at: the nextOffset of the previous part of a long file" } },
    required: ["path"],
    additionalProperties: false,
  },
  sideEffect: "none",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx): Promise<ReadOutput> => {
    // Exact text: encoded again it is the file's own bytes (a byte order mark and all), so offsets and
    // totalBytes count the file as list sizes it; a file that is not UTF-8 has no such text.
    const file = await runtimeFilesystemOf(ctx).readExact(input.path);
    if (!("text" in file)) return { path: input.path, error: notUtf8Text(input.path) };
    const text = file.text;
    const offset = input.offset ?? 0;
    if (offset === 0 && text.length <= READ_TOOL_MAX_BYTES / 3) return { path: input.path, content: withoutByteOrderMark(text) };
    const bytes = Buffer.from(text, "utf8");
    if (offset === 0 && bytes.length <= READ_TOOL_MAX_BYTES) return { path: input.path, content: withoutByteOrderMark(text) };
    const part = partOf(bytes, offset);
    const note =
      part.nextOffset === null
        ? `Bytes ${part.start} to ${part.end} of ${bytes.length}: the end of the file.`
        : `Bytes ${part.start} to ${part.end} of ${bytes.length} (${bytes.length - part.end} more): read again with offset ${part.nextOffset} for the next part.`;
    const content = part.start === 0 ? withoutByteOrderMark(part.text) : part.text;
    return { path: input.path, content, offset: part.start, totalBytes: bytes.length, nextOffset: part.nextOffset, note };
  }),
});

/** The model is shown a file's text without its byte order mark, which says nothing it needs (offsets still count its bytes). */
function withoutByteOrderMark(text: string): string {
  return text.startsWith("\uFEFF") ? text.slice(1) : text;
}

/** Why read shows no text for a file that is not UTF-8: shown as U+FFFD for each byte, it would tell the model nothing. */
function notUtf8Text(path: string): string {
  const what = `${path} is not UTF-8 text (a binary file, or text in another encoding), so read cannot show it.`;
  const { root, relative } = resolveLogicalPath(path);
  // bash starts in /workspace, where a relative path names the same file on every sandbox.
  return root === "/workspace"
    ? `${what} Inspect it with bash (file '${relative}'; head -c 256 '${relative}' | xxd), or convert it to UTF-8 (iconv -f <its encoding> -t UTF-8).`
    : `${what} list shows its size.`;
}

/** At most READ_TOOL_MAX_BYTES of `bytes` from `offset`, both ends moved back to a character's first byte so no character is split. */
function partOf(bytes: Buffer, offset: number): { text: string; start: number; end: number; nextOffset: number | null } {
  const boundary = (at: number) => {
    let index = Math.min(at, bytes.length);
    while (index > 0 && index < bytes.length && (bytes[index]! & 0xc0) === 0x80) index -= 1;
    return index;
  };
  const start = boundary(offset);
  const end = boundary(start + READ_TOOL_MAX_BYTES);
  return { text: bytes.subarray(start, end).toString("utf8"), start, end, nextOffset: end < bytes.length ? end : null };
}

export const writeTool = defineTool<{ path: string; content: string }, { path: string; bytes: number }>({
  description: "Create or replace a text file under /workspace (artifacts), /memory (durable notes) or, when self-improvement allows, /skills/<name>/ (SKILL.md and resources).",
  inputSchema: { type: "object", properties: { path, content: { type: "string" } }, required: ["path", "content"], additionalProperties: false },
  sideEffect: "idempotent",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx) => {
    await runtimeFilesystemOf(ctx).write(input.path, input.content);
    return { path: input.path, bytes: Buffer.byteLength(input.content) };
  }),
});

/** What one edit call works out before it writes: the file's new text, or why the edit is refused. */
/** What an edit call decided, recorded once per call: the file's digest before and after, or why it refused. */
type EditDecision = { before: string; after: string } | { error: string };

export const editTool = defineTool<{ path: string; oldText: string; newText: string }, { path: string; replaced: number } | { path: string; error: string }>({
  description: "Replace exactly one occurrence of oldText with newText in a UTF-8 text file under /workspace, /memory or, when self-improvement allows, /skills/<name>/.",
  inputSchema: {
    type: "object",
    properties: { path, oldText: { type: "string", minLength: 1 }, newText: { type: "string" } },
    required: ["path", "oldText", "newText"],
    additionalProperties: false,
  },
  sideEffect: "idempotent",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx) => {
    const fs = runtimeFilesystemOf(ctx);
    // Read exactly as it will be written back: a byte order mark kept, a file that is not UTF-8 left alone
    // (decoded leniently, every byte of it that is not UTF-8 would be written back as U+FFFD).
    const file = await fs.readExact(input.path);
    const text = "text" in file ? file.text : undefined;
    const notUtf8 = `${input.path} is not UTF-8 text, so edit cannot change it without changing its other bytes; it was left as it was. Convert it to UTF-8 first (with bash: iconv -f <its encoding> -t UTF-8), or change it with bash.`;
    const decide = (): EditDecision => {
      if (text === undefined) return { error: notUtf8 };
      const count = occurrences(text, input.oldText);
      // The model can fix an ambiguous edit itself: an error-shaped result, not a throw.
      if (count !== 1) return { error: `oldText occurs ${count} times in ${input.path}; it must occur exactly once` };
      return { before: textDigest(text), after: textDigest(replaced(text, input)) };
    };
    // Decided once per call and recorded before the write, as digests (not the text: a /workspace file
    // may be large): when the process dies after the write and before this call's result is recorded,
    // the call runs again and finds the file already edited, instead of editing the edited file (the
    // edit applied twice, or refused as "occurs 0 times" when it landed). A call of an older journal
    // has no such step and decides then, as it always did.
    const decision = await ctx.step<EditDecision>(`edit:${ctx.idempotencyKey("edited")}`, async () => decide());
    if ("error" in decision) return { path: input.path, error: decision.error };
    const now = text === undefined ? undefined : textDigest(text);
    if (now === decision.after) {
      // A /skills edit made before a crash may lack its skill.changed event: writing the same text again
      // goes through the skill change's journal, which records that event once (and nothing if it was).
      if (resolveLogicalPath(input.path).root === "/skills") await fs.write(input.path, text!);
      return { path: input.path, replaced: 1 };
    }
    // The file is not as the decision found it (changed since, outside this call): decided again on what it holds now.
    const again = now === decision.before ? decision : decide();
    if ("error" in again) return { path: input.path, error: again.error };
    await fs.write(input.path, replaced(text!, input));
    return { path: input.path, replaced: 1 };
  }),
});

function replaced(text: string, edit: { oldText: string; newText: string }): string {
  return text.replace(edit.oldText, () => edit.newText);
}

function textDigest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** How many times `part` occurs in `text`, overlapping ones counted ("}\n}" twice in "}\n}\n}"): each is an edit the model may mean. */
function occurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) count += 1;
  return count;
}

export const deleteTool = defineTool<{ path: string }, { path: string; deleted: true }>({
  description: "Delete a file under /workspace, /memory or, when self-improvement allows, /skills/<name>/.",
  inputSchema: { type: "object", properties: { path }, required: ["path"], additionalProperties: false },
  sideEffect: "idempotent",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx) => {
    const fs = runtimeFilesystemOf(ctx);
    // Whether the file was there is recorded before it goes: when the process dies after the delete and
    // before this call's result is recorded, the call runs again and must report the delete done, not
    // refuse a path with nothing at it, while a path that was never there is refused on every run.
    const found = await ctx.step(`delete:${ctx.idempotencyKey("found")}`, () => fs.deletable(input.path));
    await fs.delete(input.path, { missing: found ? "done" : "refuse" });
    return { path: input.path, deleted: true };
  }),
});

/** The most entries one list hands the model (an agent's memory can hold thousands of files); only those are read where the store can page. */
export const MAX_LIST_ENTRIES = 500;

type ListEntry = { path: string; type: string; size: number };
type ListOutput = { entries: ListEntry[]; truncated: false } | { entries: ListEntry[]; truncated: true; total: number; note: string };

export const listTool = defineTool<{ path: string }, ListOutput>({
  description: `List files under a directory of the runtime filesystem, recursively. At most ${MAX_LIST_ENTRIES} entries: list a narrower folder for the rest.`,
  inputSchema: { type: "object", properties: { path }, required: ["path"], additionalProperties: false },
  sideEffect: "none",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx): Promise<ListOutput> => {
    const { entries, total } = await runtimeFilesystemOf(ctx).first(input.path, MAX_LIST_ENTRIES);
    if (total <= entries.length) return { entries, truncated: false };
    const note = `The first ${entries.length} of ${total} entries under ${input.path}: list a folder inside it (the paths show which) to see the rest.`;
    return { entries, truncated: true, total, note };
  }),
});

type GrepOutput = { matches: string[]; truncated: boolean } | { matches: []; truncated: false; error: string };

export const grepTool = defineTool<{ pattern: string; path: string }, GrepOutput>({
  description:
    "Search files under a directory for a regular expression, line by line; returns path:line:text matches. The pattern is RE2 syntax: no backreferences or lookaround; (?i) makes it case-insensitive.",
  inputSchema: {
    type: "object",
    properties: { pattern: { type: "string", minLength: 1 }, path },
    required: ["pattern", "path"],
    additionalProperties: false,
  },
  sideEffect: "none",
  capability: { execution: "both" },
  execute: refusalsAsResults(async (input, ctx) => {
    const fs = runtimeFilesystemOf(ctx);
    // Linear-time matching: a model's pattern runs in this process, beside every other run (line-pattern.ts).
    const compiled = compileLinePattern(input.pattern);
    if ("error" in compiled) return { matches: [], truncated: false, error: compiled.error };
    const regex = compiled.pattern;
    const matches: string[] = [];
    for (const entry of await fs.list(input.path)) {
      // A name with a control character (made by a shell command, or stored before such paths were refused) cannot be read by its path.
      if (entry.type !== "file" || holdsControlCharacter(entry.path)) continue;
      const lines = (await fs.read(entry.path)).split("\n");
      for (const [index, line] of lines.entries()) {
        if (!regex.test(line)) continue;
        if (matches.length === MAX_GREP_MATCHES) return { matches, truncated: true };
        matches.push(`${entry.path}:${index + 1}:${line}`);
      }
    }
    return { matches, truncated: false };
  }),
});

/** The most of each of stdout and stderr a `bash` call hands the model, whatever the sandbox would keep. */
const MAX_BASH_OUTPUT_BYTES = 64 * 1024;

/** What `bash` keeps of each output stream: the sandbox's own cap (`maxOutputBytes` of dockerSandbox, localSandbox, ...) when it is smaller. */
function bashOutputCap(sandbox: Sandbox): number {
  const own = sandbox.maxOutputBytes;
  return typeof own === "number" && Number.isInteger(own) && own >= 0 ? Math.min(own, MAX_BASH_OUTPUT_BYTES) : MAX_BASH_OUTPUT_BYTES;
}

export const bashTool = defineTool<{ command: string; timeoutMs?: number }, { exitCode: number; stdout: string; stderr: string; timedOut: boolean; truncated: boolean }>({
  description: "Run a shell command in the workspace (cwd /workspace; prefer relative paths). Returns exit code, stdout and stderr.",
  inputSchema: {
    type: "object",
    properties: { command: { type: "string", minLength: 1 }, timeoutMs: { type: "integer", minimum: 1, maximum: 600000 } },
    required: ["command"],
    additionalProperties: false,
  },
  sideEffect: "external",
  capability: { execution: "sandbox" },
  async execute(input, ctx) {
    const sandbox = await ctx.getSandbox();
    // Without the model's timeoutMs, the sandbox's own default applies (its defaultTimeoutMs: 60 s unless the host set another).
    return sandbox.exec(input.command, { cwd: "/workspace", ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}), maxOutputBytes: bashOutputCap(sandbox) });
  },
});
