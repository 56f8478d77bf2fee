import { beforeAll, describe, expect, it } from "vitest";
import { FileStateAdapter } from "@assemblyline-agents/local";
import type { RuntimeBundle, StateAdapter } from "@assemblyline-agents/runtime";
import { postgresSchemas } from "./support/postgres-schemas.js";
import { call, fixtureBundle, startHost, tempDir } from "./support/host.js";

let bundle: RuntimeBundle;
beforeAll(async () => {
  bundle = await fixtureBundle();
});

/** One PostgreSQL schema per test when the test database answers, all dropped after the file. */
const postgres = await postgresSchemas("odd run ids on PostgreSQL state", "al_host_odd_ids");

/** Run ids a store cannot hold or a path could misread: a NUL byte, a path climbing out, a newline. */
const ODD_RUN_IDS = ["%00", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "a%0Ab"];
/** Filters a store cannot read: a NUL byte, a cursor it never wrote. */
const ODD_FILTERS = ["/runs?conversationId=%00", "/runs?cursor=%00", "/runs?cursor=eyJiZWZvcmUiOiIxMjMifQ"];

const stores: Array<[string, () => Promise<StateAdapter>, boolean]> = [
  ["file", async () => FileStateAdapter.open({ directory: tempDir("al-odd-ids-") }), true],
  ["PostgreSQL", async () => postgres.state(), postgres.available],
];

describe("run ids and filters a state store cannot hold", () => {
  for (const [name, open, available] of stores) {
    it.skipIf(!available)(`are answered as unknown or refused on ${name} state, in the JSON error shape, never a 500`, async () => {
      const host = await startHost(bundle, { state: await open() });
      const requests: Array<[string, string]> = [
        ...ODD_FILTERS.map((path): [string, string] => ["GET", path]),
        ...ODD_RUN_IDS.flatMap((id): Array<[string, string]> => [
          ["GET", `/runs/${id}`],
          ["GET", `/runs/${id}/events`],
          ["GET", `/inspector/api/runs/${id}`],
          ["POST", `/runs/${id}/approve`],
          ["POST", `/runs/${id}/answer`],
        ]),
      ];
      for (const [method, path] of requests) {
        const answer = await call(`${host.url}${path}`, method === "POST" ? { body: path.endsWith("/answer") ? { answer: "yes" } : {} } : {});
        const seen = `${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`;
        expect(answer.status, seen).toBeLessThan(500);
        // A filter no run matches may be an empty page; anything refused is refused in the JSON error shape.
        if (path.startsWith("/runs?")) expect([200, 400], seen).toContain(answer.status);
        else expect(answer.status, seen).toBeGreaterThanOrEqual(400);
        if (answer.status >= 400) expect(answer.body.error, seen).toMatchObject({ code: expect.stringMatching(/^AL_ERR_/), requestId: expect.any(String) });
      }
    });
  }
});
