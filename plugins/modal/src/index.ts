export { MODAL_PLUGIN_ID, createModalSandbox, modalSandbox, type ModalSandboxDescriptor } from "./gateway.js";
export { ModalSandboxAdapter, TAGS, type ModalSandboxAdapterOptions } from "./modal-sandbox-adapter.js";
export { type ModalSandboxOptions } from "./options.js";
export { plugin } from "./plugin.js";
