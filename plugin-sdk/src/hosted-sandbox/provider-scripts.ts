/*
 * Scripts only a hosted sandbox runs besides the file scripts every sandbox
 * shares (../sandbox-scripts): the provider starts it without /workspace, its
 * file API writes a new file's mode, not the one the file had, and it passes a
 * script as one process argument, which the kernel limits to 128 KiB.
 */
export const PROVIDER_SCRIPTS = {
  /** Give a file the mode it had before an upload replaced it. */
  restoreMode: `chmod "$2" -- "$1"`,
  /** Put the file uploaded as $1 in the place of $2, with the mode $3 (when given); a failure removes the upload. */
  replaceFile: `{ [ -z "$3" ] || chmod "$3" -- "$1"; } && mv -f -- "$1" "$2" || { rm -f -- "$1"; exit 1; }`,
  /*
   * Runs the command uploaded to the file $1, which it removes first, as
   * `sh -c COMMAND sh` would: $0 is "sh" and there are no positional
   * parameters. An eval'd string is no process argument, so has no length limit.
   */
  runCommandFile: 'al_command=$(cat -- "$1") || exit 1; rm -f -- "$1"; set --; eval "unset al_command; $al_command"',
  /** Run once when a sandbox is created: the workspace folder, owned by whoever commands run as. */
  prepareWorkspace: `mkdir -p /workspace 2>/dev/null && [ -w /workspace ] && exit 0
command -v sudo >/dev/null 2>&1 && sudo -n mkdir -p /workspace && sudo -n chown "$(id -u):$(id -g)" /workspace && exit 0
exit 5`,
} as const;
