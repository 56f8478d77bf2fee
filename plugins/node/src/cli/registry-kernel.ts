// The registry loads, composes and verifies plugins against this host's kernel. Commands
// load lazily, so each command module that reaches the registry imports this first.
import { useKernelHost } from "@assemblyline-agents/registry";
import { kernelHost } from "@assemblyline-agents/runtime";

useKernelHost(kernelHost);
