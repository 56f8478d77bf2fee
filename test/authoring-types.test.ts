import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");

it("makes wrongly shaped definitions type errors in the user's editor", async () => {
  const result = await promisify(execFile)(process.execPath, [resolve(root, "node_modules/typescript/bin/tsc"), "-p", "test/types/tsconfig.json"], { cwd: root }).then(
    () => ({ code: 0, stdout: "" }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  // An unused @ts-expect-error means a bad definition slipped through; any other error means a good one was refused.
  expect(result.stdout).toBe("");
  expect(result.code).toBe(0);
}, 60_000);
