import MiniSearch from "minisearch";
import type { ToolTableEntry } from "./tool-table.js";

export interface ToolSearchHit {
  name: string;
  namespace: string | null;
  description: string;
  tags: string[];
  score: number;
}

interface IndexedTool {
  id: string;
  name: string;
  aliases: string;
  namespace: string;
  tags: string;
  description: string;
}

/** Name words weigh most, then aliases, tags and namespace, then the description. */
const BOOST = { name: 4, aliases: 3, tags: 2, namespace: 2, description: 1 };

/** Tool names are snake_case (`billing__create_invoice`): search their words. */
const words = (text: string) => text.replace(/_+/g, " ");

/**
 * BM25 ranking (minisearch) over the deferred tools' names, aliases, namespace,
 * tags and descriptions, with prefix and light fuzzy matching so "invoic" or
 * "recievables" still find their tool.
 */
export class ToolSearchIndex {
  private readonly index = new MiniSearch<IndexedTool>({
    fields: ["name", "aliases", "namespace", "tags", "description"],
    storeFields: [],
    searchOptions: { boost: BOOST, prefix: true, fuzzy: 0.2, combineWith: "OR" },
  });

  constructor(private readonly entries: ReadonlyMap<string, ToolTableEntry>) {
    this.index.addAll(
      [...entries.values()].map((entry) => ({
        id: entry.name,
        name: `${entry.name} ${words(entry.name)}`,
        aliases: entry.aliases.map(words).join(" "),
        namespace: entry.namespace ? words(entry.namespace) : "",
        tags: entry.tags.map(words).join(" "),
        description: entry.definition.description,
      })),
    );
  }

  search(query: string, limit: number): ToolSearchHit[] {
    return this.index
      .search(words(query))
      .slice(0, limit)
      .map((result) => {
        const entry = this.entries.get(result.id as string)!;
        return {
          name: entry.name,
          namespace: entry.namespace,
          description: firstLine(entry.definition.description),
          tags: entry.tags,
          score: Math.round(result.score * 1000) / 1000,
        };
      });
  }
}

export function firstLine(text: string): string {
  return text.split("\n")[0] ?? "";
}
