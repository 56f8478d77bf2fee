import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { runInThisContext } from "node:vm";

/*
 * Modal's gRPC services (modal.client.ModalClient, the control plane, and
 * modal.task_command_router.TaskCommandRouter, the per-sandbox exec service),
 * as the very ts-proto definitions (paths, encoders, decoders) the installed
 * SDK calls them with. The SDK bundles them without exporting them, so the
 * fake reads them out of its CommonJS build rather than copying the protos,
 * and serves exactly the messages the SDK sends and expects.
 */
export interface ModalDefinitions {
  ModalClientDefinition: ServiceDefinition;
  TaskCommandRouterDefinition: ServiceDefinition;
}

export interface ServiceDefinition {
  name: string;
  fullName: string;
  methods: Record<string, { name: string; requestStream: boolean; responseStream: boolean; requestType: unknown; responseType: unknown; options: unknown }>;
}

let loaded: ModalDefinitions | undefined;

export function modalDefinitions(): ModalDefinitions {
  if (loaded) return loaded;
  const entry = createRequire(import.meta.url).resolve("modal");
  const bundle = readFileSync(entry, "utf8");
  if (!/\nvar ModalClientDefinition = \{/.test(bundle) || !/\nvar TaskCommandRouterDefinition = \{/.test(bundle)) {
    throw new Error("the installed modal SDK no longer bundles ModalClientDefinition and TaskCommandRouterDefinition where the fake looks for them");
  }
  // The bundle's own module scope, with its own require: the definitions and the codecs they use come from the SDK as installed.
  const source = `(function (exports, require, module, __filename, __dirname) {${bundle}\n;module.exports = { ModalClientDefinition, TaskCommandRouterDefinition };\n})`;
  const wrapper = runInThisContext(source, { filename: entry }) as (...args: unknown[]) => void;
  const module = { exports: {} as ModalDefinitions };
  wrapper(module.exports, createRequire(entry), module, entry, dirname(entry));
  loaded = module.exports;
  return loaded;
}
