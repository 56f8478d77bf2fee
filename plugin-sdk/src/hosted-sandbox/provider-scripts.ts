/*
 * Scripts only a hosted sandbox runs besides the file scripts every sandbox
 * shares (../sandbox-scripts): the provider starts it without /workspace, and
 * its file API writes a new file's mode, not the one the file had.
 */
export const PROVIDER_SCRIPTS = {
  /** Give a file the mode it had before an upload replaced it. */
  restoreMode: `chmod "$2" -- "$1"`,
  /** Run once when a sandbox is created: the workspace folder, owned by whoever commands run as. */
  prepareWorkspace: `mkdir -p /workspace 2>/dev/null && [ -w /workspace ] && exit 0
command -v sudo >/dev/null 2>&1 && sudo -n mkdir -p /workspace && sudo -n chown "$(id -u):$(id -g)" /workspace && exit 0
exit 5`,
} as const;
