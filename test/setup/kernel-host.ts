// Suites that load or verify plugins do it against this repository's kernel, as a host would.
import { useKernelHost } from "@assemblyline-agents/registry";
import { kernelHost } from "@assemblyline-agents/runtime";

useKernelHost(kernelHost);
