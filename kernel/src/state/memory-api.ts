import { AssemblyLineError, type MemoryApi, type MemoryStateStore } from "@assemblyline-agents/core";

/** `ctx.memory`: the tool-facing view of the memory facet. */
export function createMemoryApi(store: MemoryStateStore): MemoryApi {
  return {
    async read({ path }) {
      const record = await store.readMemory(normalize(path));
      if (!record) throw new AssemblyLineError("AL_ERR_MEMORY_NOT_FOUND", `no memory at ${path}`, { fix: "Check ctx.memory.list() for existing paths." });
      return record.content;
    },
    write: ({ path, content }) => store.writeMemory(normalize(path), content),
    list: (args) => store.listMemory(args?.prefix ? normalize(args.prefix) : undefined),
    delete: ({ path }) => store.deleteMemory(normalize(path)),
  };
}

/** Memory paths are relative to /memory; `..` segments are refused. */
function normalize(path: string): string {
  const relative = path.replace(/^\/?memory\//, "").replace(/^\/+/, "");
  if (relative.split("/").some((segment) => segment === "..")) {
    throw new AssemblyLineError("AL_ERR_PATH_ESCAPE", `memory path ${path} escapes /memory`, { fix: "Use a path inside /memory without '..'." });
  }
  return relative;
}
