import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileDesc, serviceDesc, type GenService } from "@bufbuild/protobuf/codegenv2";

/*
 * envd's process.Process service, described by the very descriptor the e2b SDK
 * was generated from: the SDK bundles it without exporting it, so it is read
 * out of the installed SDK rather than copied, and the fake serves exactly the
 * messages the SDK sends and expects.
 */
export function envdProcessService(): GenService<never> {
  // The ESM build next to the resolved CommonJS entry keeps the descriptor inline.
  const bundle = readFileSync(createRequire(import.meta.url).resolve("e2b").replace(/index\.js$/, "index.mjs"), "utf8");
  const encoded = /const Process = \/\*@__PURE__\*\/ serviceDesc\(\/\* @__PURE__ \*\/ fileDesc\("([A-Za-z0-9+/=]+)"\), 0\)/.exec(bundle)?.[1];
  if (!encoded) throw new Error("the installed e2b SDK no longer bundles envd's process.Process descriptor where the fake looks for it");
  return serviceDesc(fileDesc(encoded), 0) as GenService<never>;
}
