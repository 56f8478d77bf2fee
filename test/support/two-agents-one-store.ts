import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, onTestFinished } from "vitest";
import type { StateAdapter } from "@assemblyline-agents/core";
import { FileStateAdapter } from "@assemblyline-agents/local";
import { createPostgresState } from "@assemblyline-agents/postgres";
import { InMemoryStateAdapter, buildAgent, loadRuntimeBundle, type RuntimeBundle } from "@assemblyline-agents/runtime";
import { TEST_DATABASE_URL, dropSchema, probeDatabase, randomSchema, testPool } from "../../plugins/postgres/test/support/database.js";

/**
 * Two agents whose runtimes share one state store, as two agents on one database do: their
 * built bundles (set before the file's tests run), the stores to run them on (PostgreSQL when it
 * answers), and `sharedStore`, which opens one and closes it once when the test ends, after the
 * runtimes on it stopped. Everything it makes is removed after the file. `agentFields` are added to
 * both agents' agent.ts (e.g. `{ budgets: { maxConversationTokensPerDay: 100 } }`), as JSON values.
 */
export async function twoAgentsOnOneStore(label: string, prefix: string, [idA, idB]: [string, string], agentFields: Record<string, unknown> = {}) {
  const database = await probeDatabase(label);
  const work = mkdtempSync(join(tmpdir(), `${prefix.replaceAll("_", "-")}-`));
  const schemaPrefix = randomSchema(prefix);
  let schemas = 0;
  const agents = {} as { a: RuntimeBundle; b: RuntimeBundle };

  beforeAll(async () => {
    [agents.a, agents.b] = await Promise.all([agentBundle(idA), agentBundle(idB)]);
  });
  afterAll(async () => {
    rmSync(work, { recursive: true, force: true });
    if (!database.available) return;
    const pool = testPool();
    const { rows } = await pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)", [schemaPrefix]);
    for (const row of rows) await dropSchema(pool, row.nspname);
    await pool.end();
  });

  async function agentBundle(id: string): Promise<RuntimeBundle> {
    const dir = join(work, id);
    mkdirSync(dir, { recursive: true });
    const fields = Object.entries(agentFields)
      .map(([name, value]) => `, ${name}: ${JSON.stringify(value)}`)
      .join("");
    writeFileSync(
      join(dir, "agent.ts"),
      `import { defineAgent } from "@assemblyline-agents/core";\nexport default defineAgent({ id: ${JSON.stringify(id)}, model: "test/model", instructions: "Answer."${fields} });\n`,
    );
    return loadRuntimeBundle((await buildAgent(dir)).artifactRoot);
  }

  const stores: Record<string, () => Promise<StateAdapter>> = {
    "in-memory state": async () => new InMemoryStateAdapter(),
    "file state": async () => FileStateAdapter.open({ directory: mkdtempSync(join(work, "state-")) }),
    ...(database.available ? { "PostgreSQL state": async () => createPostgresState({ connectionString: TEST_DATABASE_URL, schema: `${schemaPrefix}_${++schemas}` }) } : {}),
  };

  async function sharedStore(open: () => Promise<StateAdapter>): Promise<StateAdapter> {
    const state = await open();
    const close = state.close!.bind(state);
    state.close = async () => undefined;
    onTestFinished(close);
    return state;
  }

  return { agents, stores, sharedStore, work };
}
