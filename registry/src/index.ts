export {
  readPluginPackage,
  checkKernelRange,
  checkCoreRange,
  declaredCoreRange,
  rangeIncludesKernel,
  describePlugin,
  type PluginManifest,
  type PluginPackage,
  type PluginProvide,
  type PluginEnvVar,
} from "./manifest.js";
export {
  inspectPluginPackage,
  loadPluginPackage,
  describeAdapter,
  materializeProvided,
  checkLiveContract,
  type InspectOptions,
  type InspectedPlugin,
  type LoadPluginOptions,
  type LoadedPlugin,
  type LoadedAdapter,
} from "./load.js";
export { packageEntry, hostCoreVersion } from "./package-main.js";
export { runNpm, type NpmOutput } from "./run-npm.js";
export { checkAdapterOptions, compileConfigSchema, configSchemaPath, type OptionsSource } from "./config-schema.js";
export { scanInstalledPlugins, discoverPackage, findPackageDir, nodeModulesChain, type DiscoveredPlugin } from "./discover.js";
export { checkSandboxAdapterInstalled, composeGateway, gatewayEnvNames, withSandboxFile, type ComposeGatewayOptions, type ComposedGateway, type ComposedSlot, type MissingEnvVar } from "./compose.js";
export {
  REGISTRY_INDEX_FILE,
  REGISTRY_GENERATED_FILE,
  readRegistryIndex,
  readGeneratedRegistry,
  readRegistry,
  generateRegistry,
  formatGeneratedRegistry,
  writeGeneratedRegistry,
  searchRegistry,
  contractExports,
  type RegistryIndex,
  type GeneratedRegistry,
  type GeneratedPluginEntry,
  type RegistryEntry,
  type ContractExport,
} from "./registry-data.js";
export { loadRegistry, REGISTRY_SOURCE_ENV, type LoadRegistryOptions, type LoadedRegistry, type RegistrySnapshot, type RegistrySnapshotEntry } from "./registry-source.js";
export { verifyPluginPackage, CONFORMANCE_KITS, type VerifyOptions, type VerifyReport, type VerifyStep, type KitOutcome } from "./verify.js";
export { conformanceSubjectFactory, type ConformanceSubjectOptions } from "./conformance-subject.js";
export { gatewayUsage } from "./usage.js";
export { PLUGIN_SCHEMA_FILE, REGISTRY_DIR } from "./schemas.js";
export { kernelHost, useKernelHost } from "./kernel-host.js";
