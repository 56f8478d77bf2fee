import { posix } from "node:path";
import type { SkillLibrary, SkillWriteGate, SkillWriteResult } from "../skills/skill-library.js";
import { durableSkillChange, type SkillChangeSteps } from "../skills/durable-skill-change.js";
import { checkMemoryFile, holdsLoneSurrogate } from "./memory-file-checks.js";
import {
  AssemblyLineError,
  checkListLimit,
  holdsControlCharacter,
  isAssemblyLineError,
  type BlobStore,
  type ConversationStore,
  type FileIndexStore,
  type FileRecord,
  type MemoryEntry,
  type MemoryStateStore,
  type Sandbox,
} from "@assemblyline-agents/core";

export const RUNTIME_ROOTS = ["/memory", "/history", "/files", "/workspace", "/skills"] as const;
export type RuntimeRoot = (typeof RUNTIME_ROOTS)[number];
const WRITABLE = new Set<RuntimeRoot>(["/memory", "/workspace"]);

export interface FileEntry {
  path: string;
  type: "file" | "directory";
  size: number;
}

/** The stable filesystem contract every model prompt receives, over the run's stores. */
export interface RuntimeFilesystem {
  read(path: string): Promise<string>;
  /**
   * The text of the file at `path` exactly as a change must write it back (the edit tool): a UTF-8
   * byte order mark is kept, and a file whose bytes are not UTF-8 (a Latin-1 /workspace file, say) is
   * `{ notUtf8: true }`, where `read` would hand back its text with U+FFFD for every byte it cannot
   * decode (text that, written back, loses those bytes). The same refusals as `read`.
   */
  readExact(path: string): Promise<{ text: string } | { notUtf8: true }>;
  write(path: string, content: string): Promise<void>;
  /**
   * Refuses a path with nothing at it (AL_ERR_PATH_NOT_FOUND), as it refuses a read of one;
   * with `missing: "done"` (a replay of a delete known to have found the file) such a path is done.
   */
  delete(path: string, options?: { missing?: "refuse" | "done" }): Promise<void>;
  /** Whether a file or folder is at `path`, a path `delete` takes (the same refusals for any other). */
  deletable(path: string): Promise<boolean>;
  /** Files under `path`, recursively, with logical paths; with `except`, none whose path starts with it. */
  list(path: string, options?: { except?: string }): Promise<FileEntry[]>;
  /**
   * The first `limit` files of `list(path, options)` and how many it has in all: under /memory a
   * store with `firstMemoryEntries`, under /files one with `firstFileRecords`, reads only those (the
   * default context shows the first ones at every run start).
   */
  first(path: string, limit: number, options?: { except?: string }): Promise<{ entries: FileEntry[]; total: number }>;
}

export interface RuntimeFilesystemSources {
  memory: MemoryStateStore;
  conversations: ConversationStore;
  conversationId: string | null;
  files: FileIndexStore;
  blob: BlobStore | undefined;
  /** Acquired on first use only: a run that never touches /workspace creates no sandbox. */
  getSandbox(): Promise<Sandbox>;
  /** The agent's skills: /skills/<name>/<file>. */
  skills: SkillLibrary;
  /** Asked before a skill write lands (approval of exactly that change). */
  skillGate?: SkillWriteGate;
  /** Told after a skill write landed: recorded as a `skill.changed` event. */
  onSkillChange?(change: SkillWriteResult): Promise<void>;
  /** The tool call's steps, when the filesystem is one call's: its skill changes are then made durably (durable-skill-change.ts). */
  skillJournal?: SkillChangeSteps;
}


/** Split a logical path into its root and the part below, refusing anything that leaves its root. */
export function resolveLogicalPath(path: string): { root: RuntimeRoot; relative: string; path: string } {
  const refuse = (why: string): never => {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `path ${JSON.stringify(path)} ${why}`, {
      fix: `Use an absolute logical path under ${RUNTIME_ROOTS.join(", ")}, without '..' or control characters.`,
    });
  };
  if (typeof path !== "string" || path === "") return refuse("is empty");
  if (path.includes("\0")) return refuse("contains a NUL byte");
  // A newline in a name would show as a line of its own wherever paths are listed (the context's memory part).
  if (holdsControlCharacter(path)) return refuse("contains a control character (a newline, say)");
  if (holdsLoneSurrogate(path)) return refuse("contains a lone surrogate (half of a character), which no file name can hold");
  if (!path.startsWith("/")) return refuse("is relative");
  if (path.split("/").includes("..")) return refuse("climbs out with '..'");
  const normalized = posix.normalize(path).replace(/\/+$/, "") || "/";
  const root = RUNTIME_ROOTS.find((candidate) => normalized === candidate || normalized.startsWith(candidate + "/"));
  if (!root) return refuse("is not under a runtime root (it may be a host path)");
  return { root, relative: normalized.slice(root.length + 1), path: normalized };
}

export function createRuntimeFilesystem(sources: RuntimeFilesystemSources): RuntimeFilesystem {
  const recordSkillChange = async (change: SkillWriteResult) => {
    await sources.onSkillChange?.(change);
  };
  /** One /skills change and its event: journaled in the call's steps when there are any. */
  const changeSkill = (target: { name: string; path: string }, apply: () => Promise<SkillWriteResult>): Promise<SkillWriteResult> =>
    durableSkillChange(sources.skillJournal, sources.skills, target, apply, recordSkillChange);
  const writable = (path: string) => {
    const resolved = resolveLogicalPath(path);
    if (resolved.root === "/skills") {
      const { name, file } = skillPath(resolved.relative);
      if (!sources.skills.writable) {
        throw new AssemblyLineError("AL_ERR_SKILL_READ_ONLY", `skills are manifest-only for this agent; cannot change ${resolved.path}`, {
          fix: "Set selfImprovement: { writable: true } in agent.ts to let the agent author and edit skills.",
        });
      }
      if (!name || !file) {
        throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `${resolved.path} is not a file inside a skill folder`, { fix: "Write /skills/<name>/SKILL.md or /skills/<name>/<resource path>." });
      }
      return resolved;
    }
    if (!WRITABLE.has(resolved.root)) {
      throw new AssemblyLineError("AL_ERR_PATH_READ_ONLY", `${resolved.root} is read-only; cannot change ${resolved.path}`, {
        fix: "Write artifacts under /workspace and durable notes under /memory.",
      });
    }
    if (resolved.relative === "") {
      throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `${resolved.path} is a root folder, not a file: it cannot be written or deleted`, {
        fix: `Name a file inside it, e.g. ${resolved.root}/notes.md.`,
      });
    }
    return resolved;
  };
  const present = async (root: RuntimeRoot, relative: string, logical: string): Promise<boolean> => {
    if (root === "/memory") return Boolean(await sources.memory.readMemory(relative));
    // The skill library refuses a missing skill file itself.
    if (root === "/skills") return true;
    // A sandbox's deleteFile takes a missing path as done, so the filesystem looks first.
    return inWorkspace(await sources.getSandbox(), logical);
  };
  const notFound = (path: string): never => {
    throw new AssemblyLineError("AL_ERR_PATH_NOT_FOUND", `nothing at ${path}`, { fix: "List the directory first and use a path it returns." });
  };

  /** The text at `path`, with a file held as bytes (/files, /workspace) decoded by `decode`. */
  const readWith = async <T>(path: string, text: (text: string) => T, decode: (bytes: Uint8Array) => T): Promise<T> => {
    const { root, relative, path: logical } = resolveLogicalPath(path);
    switch (root) {
      case "/memory": {
        const record = await sources.memory.readMemory(relative);
        return record ? text(record.content) : notFound(logical);
      }
      case "/history":
        if (relative !== "conversation.md" || !sources.conversationId) return notFound(logical);
        return text(await renderHistory(sources));
      case "/files": {
        const record = await sources.files.getFileRecord(logical);
        const blob = record && sources.blob ? await sources.blob.get(record.blobKey) : undefined;
        return blob ? decode(blob.body) : notFound(logical);
      }
      case "/skills": {
        const { name, file } = skillPath(relative);
        const skill = name ? await sources.skills.get(name) : undefined;
        const content = file ? skill?.files[file] : undefined;
        return content !== undefined ? text(content) : notFound(logical);
      }
      case "/workspace":
        return decode(await (await sources.getSandbox()).readFile(logical));
    }
  };

  return {
    read(path) {
      return readWith(path, (text) => text, (bytes) => new TextDecoder().decode(bytes));
    },
    readExact(path) {
      return readWith(path, (text) => ({ text }), exactUtf8);
    },
    async write(path, content) {
      const { root, relative, path: logical } = writable(path);
      if (root === "/memory") {
        checkMemoryFile(relative, content, `write ${logical}`);
        await sources.memory.writeMemory(relative, content);
      }
      else if (root === "/skills") {
        const { name, file } = skillPath(relative);
        await changeSkill({ name: name!, path: file! }, () => sources.skills.writeFile(name!, file!, content, "agent", sources.skillGate));
      } else await (await sources.getSandbox()).writeFile(logical, content);
    },
    async delete(path, options = {}) {
      const { root, relative, path: logical } = writable(path);
      // A path with nothing at it is refused, never reported deleted: a typo must not look like success to the model.
      if (!(await present(root, relative, logical))) {
        if (options.missing === "done") return;
        notFound(logical);
      }
      if (root === "/memory") await sources.memory.deleteMemory(relative);
      else if (root === "/skills") {
        const { name, file } = skillPath(relative);
        try {
          await changeSkill({ name: name!, path: file! }, () => sources.skills.deleteFile(name!, file!, sources.skillGate));
        } catch (error) {
          if (options.missing === "done" && isAssemblyLineError(error, "AL_ERR_PATH_NOT_FOUND")) return;
          throw error;
        }
      } else await (await sources.getSandbox()).deleteFile(logical);
    },
    async deletable(path) {
      const { root, relative, path: logical } = writable(path);
      return present(root, relative, logical);
    },
    list(path, options = {}) {
      return listExcept(path, options.except);
    },
    async first(path, limit, options = {}) {
      checkListLimit(limit, `first("${path}")`);
      const { except } = options;
      const { root, relative, path: logical } = resolveLogicalPath(path);
      // The file at `path` itself sorts before every path under it: it comes first, then the folder's page.
      if (root === "/memory" && except === undefined && sources.memory.firstMemoryEntries) {
        const [self, page] = await Promise.all([memoryFileAt(relative), sources.memory.firstMemoryEntries(memoryFolderPrefix(relative), limit)]);
        return { entries: [...self, ...page.entries].slice(0, limit).map(memoryFileEntry), total: self.length + page.total };
      }
      if (root === "/files" && sources.files.firstFileRecords) {
        const [self, page] = await Promise.all([fileRecordAt(logical, except), sources.files.firstFileRecords({ prefix: logical + "/", ...(except === undefined ? {} : { excludePrefix: except }) }, limit)]);
        return { entries: [...self, ...page.records].slice(0, limit).map(fileEntry), total: self.length + page.total };
      }
      const entries = await listExcept(path, except);
      return { entries: entries.slice(0, limit), total: entries.length };
    },
  };

  /** Files under `path`, none under `except`. */
  async function listExcept(path: string, except: string | undefined): Promise<FileEntry[]> {
    const entries = await listUnder(path, except);
    return except === undefined ? entries : entries.filter((entry) => !entry.path.startsWith(except));
  }

  /** Files under `path`; `except` is only a hint here, which the file index takes to leave those records unread. */
  async function listUnder(path: string, except: string | undefined): Promise<FileEntry[]> {
    const { root, relative, path: logical } = resolveLogicalPath(path);
    switch (root) {
      case "/memory": {
        const prefix = memoryFolderPrefix(relative);
        // One read where the store lists sizes; else a read per file to size it.
        const [self, under] = await Promise.all([
          memoryFileAt(relative),
          sources.memory.listMemoryEntries
            ? sources.memory.listMemoryEntries(prefix)
            : Promise.all((await sources.memory.listMemory(prefix)).map(async (path) => ({ path, size: Buffer.byteLength((await sources.memory.readMemory(path))?.content ?? "") }))),
        ]);
        return [...self, ...under].map(memoryFileEntry);
      }
      case "/history":
        // Its one file is under the root and is itself: any other path below it holds nothing, as read finds.
        if (!sources.conversationId || (relative !== "" && relative !== "conversation.md")) return [];
        return [{ path: "/history/conversation.md", type: "file", size: Buffer.byteLength(await renderHistory(sources)) }];
      case "/files": {
        // The folder's own prefix, slash and all (the root is "/files/", which PostgreSQL counts from its folders' counts).
        const [self, under] = await Promise.all([fileRecordAt(logical, except), sources.files.listFileRecords({ prefix: logical + "/", ...(except === undefined ? {} : { excludePrefix: except }) })]);
        return [...self, ...under].map(fileEntry);
      }
      case "/skills": {
        const entries: FileEntry[] = [];
        for (const skill of await sources.skills.list()) {
          for (const [file, text] of Object.entries(skill.files)) {
            const path = `/skills/${skill.name}/${file}`;
            if (relative === "" || path === logical || path.startsWith(logical + "/")) entries.push({ path, type: "file", size: Buffer.byteLength(text) });
          }
        }
        return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      }
      case "/workspace":
        return (await sources.getSandbox()).listFiles(logical);
    }
  }

  /** The memory file at exactly `relative`, as a listing of a file path shows it: itself. The root is a folder, never a file. */
  async function memoryFileAt(relative: string): Promise<MemoryEntry[]> {
    const record = relative === "" ? undefined : await sources.memory.readMemory(relative);
    return record ? [{ path: relative, size: Buffer.byteLength(record.content) }] : [];
  }

  /** The file record at exactly `logical` (none under `except`), as a listing of a file path shows it: itself. */
  async function fileRecordAt(logical: string, except: string | undefined): Promise<FileRecord[]> {
    const record = logical === "/files" ? undefined : await sources.files.getFileRecord(logical);
    return record && (except === undefined || !record.path.startsWith(except)) ? [record] : [];
  }
}

/**
 * The store prefix of the memory files under the folder `relative`: with its slash, so that a
 * sibling sharing the start of its name (notes-archive.md beside notes/) is not under it.
 */
function memoryFolderPrefix(relative: string): string | undefined {
  return relative === "" ? undefined : relative + "/";
}

/**
 * Whether anything is at `logical` in the sandbox's workspace: a file lists itself and a folder its
 * contents; an empty folder lists nothing, so only its parent's listing shows it.
 */
async function inWorkspace(sandbox: Sandbox, logical: string): Promise<boolean> {
  if ((await sandbox.listFiles(logical)).length > 0) return true;
  return (await sandbox.listFiles(posix.dirname(logical))).some((entry) => entry.path === logical);
}

/** A file record as the filesystem lists it. */
function fileEntry(record: FileRecord): FileEntry {
  return { path: record.path, type: "file", size: record.size };
}

/** A memory file as the filesystem lists it: under /memory. */
function memoryFileEntry(entry: MemoryEntry): FileEntry {
  return { path: `/memory/${entry.path}`, type: "file", size: entry.size };
}

async function renderHistory(sources: RuntimeFilesystemSources): Promise<string> {
  const messages = await sources.conversations.listConversationMessages(sources.conversationId!);
  return messages.map((message) => `## ${message.role} (${message.createdAt})\n\n${message.content}\n`).join("\n");
}

/** `/skills/<name>/<file>` below the root: the skill's name and the file's path inside its folder. */
function skillPath(relative: string): { name: string | undefined; file: string | undefined } {
  const [name, ...rest] = relative.split("/");
  return { name: name || undefined, file: rest.length ? rest.join("/") : undefined };
}

/**
 * `bytes` as UTF-8 text, strictly: a byte order mark is kept (written back, the text puts it back),
 * and bytes that are not UTF-8 are `{ notUtf8: true }` rather than text with U+FFFD in their place.
 */
function exactUtf8(bytes: Uint8Array): { text: string } | { notUtf8: true } {
  try {
    return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes) };
  } catch (error) {
    // A fatal decoder throws a TypeError (ERR_ENCODING_INVALID_ENCODED_DATA) at the first byte it cannot decode.
    if (error instanceof TypeError) return { notUtf8: true };
    throw error;
  }
}
