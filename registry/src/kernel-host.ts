import { AssemblyLineError, type KernelHost } from "@assemblyline-agents/core";

/**
 * The registry applies plugins to a kernel without depending on the kernel
 * package: the host installs its kernel once (`useKernelHost(kernelHost)` with
 * `kernelHost` from @assemblyline-agents/runtime) before loading or verifying plugins.
 */
let installed: KernelHost | undefined;

export function useKernelHost(host: KernelHost): void {
  installed = host;
}

export function kernelHost(): KernelHost {
  if (!installed) {
    throw new AssemblyLineError("AL_ERR_KERNEL_HOST_MISSING", "the registry has no kernel to apply plugins to", {
      fix: 'Call useKernelHost(kernelHost) (kernelHost from "@assemblyline-agents/runtime") before loading, composing or verifying plugins.',
    });
  }
  return installed;
}
