import { readFile, writeFile } from "node:fs/promises";
import { isAssemblyLineError } from "@assemblyline-agents/core";
import { REGISTRY_GENERATED_FILE, formatGeneratedRegistry, generateRegistry } from "../registry-data.js";

/*
 * `npm run registry:generate`: rewrite registry/generated.json from the
 * manifests of the packages registry/index.json lists. `--check` only reports
 * whether the committed file is current (exit 1 when stale), for CI.
 */
const check = process.argv.includes("--check");
try {
  const text = formatGeneratedRegistry(await generateRegistry());
  const current = await readFile(REGISTRY_GENERATED_FILE, "utf8").catch(() => "");
  if (check) {
    process.stdout.write(current === text ? `${REGISTRY_GENERATED_FILE} is current\n` : `${REGISTRY_GENERATED_FILE} is stale: run npm run registry:generate\n`);
    process.exitCode = current === text ? 0 : 1;
  } else {
    await writeFile(REGISTRY_GENERATED_FILE, text);
    process.stdout.write(`${current === text ? "unchanged" : "wrote"} ${REGISTRY_GENERATED_FILE}\n`);
  }
} catch (error) {
  if (!isAssemblyLineError(error)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
}
