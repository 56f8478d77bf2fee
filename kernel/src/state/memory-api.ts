import { AssemblyLineError, checkMemoryWrite, describeStateValue, type MemoryApi, type MemoryStateStore } from "@assemblyline-agents/core";
import { posix } from "node:path";
import { checkMemoryFile } from "../filesystem/memory-file-checks.js";
import { RUNTIME_ROOTS, resolveLogicalPath } from "../filesystem/runtime-filesystem.js";

/** `ctx.memory`: the tool-facing view of the memory facet. */
export function createMemoryApi(store: MemoryStateStore): MemoryApi {
  return {
    async read({ path }) {
      const relative = memoryFilePath(path, "read");
      const record = await store.readMemory(relative);
      if (!record) throw new AssemblyLineError("AL_ERR_MEMORY_NOT_FOUND", `no memory at /memory/${relative}`, { fix: "Check ctx.memory.list() for existing paths." });
      return record.content;
    },
    async write({ path, content }) {
      const relative = memoryFilePath(path, "write");
      const caller = `ctx.memory.write(/memory/${relative})`;
      checkMemoryWrite(relative, content, caller);
      checkMemoryFile(relative, content, caller);
      await store.writeMemory(relative, content);
    },
    list: async (args) => store.listMemory(memoryPrefix(args?.prefix)),
    async delete({ path }) {
      await store.deleteMemory(memoryFilePath(path, "delete"));
    },
  };
}

/**
 * `path` as the memory store keys it: the same resolution the /memory file tools use (`a//b.md`,
 * `./b.md` and `b.md/` are `b.md` there), so every file ctx.memory writes is one the tools can read
 * and delete, and the reverse. Taken relative to /memory, or absolute as `/memory/...`.
 */
function memoryFilePath(path: unknown, method: "read" | "write" | "delete"): string {
  const { relative } = resolveMemoryPath(path, method);
  if (relative === "") {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `ctx.memory.${method}: path ${JSON.stringify(path)} names the /memory folder itself, not a file in it`, {
      fix: "Name a file inside /memory, e.g. notes/todo.md.",
    });
  }
  return relative;
}

/** A list prefix in store terms; a trailing `/` is kept, as it means "inside this folder" (`notes/` is not `notes-old/`). */
function memoryPrefix(prefix: unknown): string | undefined {
  if (prefix === undefined || prefix === "") return undefined;
  const { relative } = resolveMemoryPath(prefix, "list");
  if (relative === "") return undefined;
  return (prefix as string).endsWith("/") ? `${relative}/` : relative;
}

function resolveMemoryPath(path: unknown, method: string): { relative: string } {
  if (typeof path !== "string") {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `ctx.memory.${method}: path must be a string, got ${describeStateValue(path)}`, {
      fix: "Pass a path inside /memory as a string, e.g. { path: \"notes/todo.md\" }.",
    });
  }
  refuseOtherRoot(path, method);
  // Relative paths (and the older `memory/...` and `/...` spellings) are under /memory.
  const logical = path === "/memory" || path.startsWith("/memory/") ? path : `/memory/${path.replace(/^memory\//, "").replace(/^\/+/, "")}`;
  return resolveLogicalPath(logical);
}

/**
 * `/workspace/report.txt` names a file of the workspace, not of memory: taken as relative it would be
 * stored as /memory/workspace/report.txt, where the caller would never look for it.
 */
function refuseOtherRoot(path: string, method: string): void {
  if (!path.startsWith("/")) return;
  const normalized = posix.normalize(path).replace(/\/+$/, "");
  const root = RUNTIME_ROOTS.find((candidate) => candidate !== "/memory" && (normalized === candidate || normalized.startsWith(`${candidate}/`)));
  if (root === undefined) return;
  const inMemory = `/memory${normalized.slice(root.length) || "/notes.md"}`;
  throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `ctx.memory.${method}: path ${JSON.stringify(path)} is under ${root}, not /memory`, {
    fix: `ctx.memory keeps files under /memory only: pass a path inside it, e.g. "${inMemory}". Files under ${root} are reached with the runtime's file tools${root === "/workspace" ? " or ctx.getSandbox()" : ""}.`,
  });
}
