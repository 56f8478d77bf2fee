export { WORKSPACE, pathEscape, workspacePath } from "./workspace-path.js";
export { FILE_SCRIPTS, FILE_SCRIPT_EXIT, type FileScript } from "./file-scripts.js";
export { checkedRealPath, fileKindError, fileScriptRefusal, listedEntries, preparedWrite, type WorkspaceEntry, type FileCall } from "./file-script-output.js";
