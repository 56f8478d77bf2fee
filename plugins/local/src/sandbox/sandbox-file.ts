import { LocalSandboxAdapter, type LocalSandboxAdapterOptions } from "./local-sandbox-adapter.js";

/**
 * The local sandbox sandbox.ts asks for: `defineSandbox({ adapter: "local", ... })` or
 * `localSandbox({...})`, whose own options (`env`, `defaultTimeoutMs`, `maxOutputBytes`, `root`)
 * were otherwise dropped. `image` is taken and not used: commands run with this machine's tools,
 * as the spec's local example allows (the build refuses `network` and `snapshot` for the local
 * sandbox); any other key is refused by the adapter as an unknown option.
 */
export function localSandboxFromFile(options: Record<string, unknown>, context: Pick<LocalSandboxAdapterOptions, "agentDir" | "sessions">): LocalSandboxAdapter {
  const { adapter: _adapter, workingDirectory: _workingDirectory, image: _image, ...own } = options;
  return new LocalSandboxAdapter({ ...(own as LocalSandboxAdapterOptions), ...context });
}
