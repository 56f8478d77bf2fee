/**
 * How an error may show a URL someone wrote: scheme, host and path, with
 * `<credentials>@`, `?<query>` and `#<fragment>` in place of what they hold
 * (each may be a key); undefined when the text cannot be parsed apart from them.
 * Everything before the last `@` counts as credentials, wherever it stands: a
 * password with a `/`, `?` or `#` in it (`user:12/ab@host`) would otherwise be
 * read as a port and a path and shown, and so would `key:secret@host` written
 * without a scheme, which parses as the scheme `key:`. `hidden` says credentials
 * were hidden, for a fix that tells where they belong instead.
 */
export function quotableUrl(text: string): { text: string; hidden: boolean } | undefined {
  const { scheme, credentials, rest } = urlCredentials(text);
  const hidden = credentials !== undefined;
  // A path alone ("/v1"): shown as a path, not read as a host.
  const pathAlone = scheme === "" && /^\/(?!\/)/.test(rest);
  let url: URL;
  try {
    url = pathAlone ? new URL(rest, "http://path.invalid") : new URL(`${scheme || "http://"}${rest}`);
  } catch {
    return undefined;
  }
  // WHATWG adds "/" to an http URL without a path: not shown when it was not written.
  const path = url.pathname === "/" && !/^[^?#]*\//.test(rest) ? "" : url.pathname;
  const query = url.search !== "" || rest.includes("?") ? "?<query>" : "";
  const fragment = url.hash !== "" || rest.includes("#") ? "#<fragment>" : "";
  const host = pathAlone ? "" : url.host;
  return { text: `${scheme}${hidden ? "<credentials>@" : ""}${host}${path}${query}${fragment}`, hidden };
}

/**
 * A written URL split at its credentials, as `quotableUrl` reads them: the
 * scheme (`postgres://`, or "" when none is written), everything before the last
 * `@` after it (undefined without an `@`), and what follows that `@`.
 */
export function urlCredentials(text: string): { scheme: string; credentials: string | undefined; rest: string } {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(text)?.[0] ?? "";
  const written = text.slice(scheme.length);
  const at = written.lastIndexOf("@");
  return at < 0 ? { scheme, credentials: undefined, rest: written } : { scheme, credentials: written.slice(0, at), rest: written.slice(at + 1) };
}

/**
 * A value given where a URL was expected, as an error message may quote it: a
 * string as `quotableUrl` shows it, in double quotes, or a phrase saying it is
 * not quoted; a number, boolean, null or undefined as it is; anything else by its type.
 */
export function quotedUrl(value: unknown): string {
  if (typeof value === "string") {
    const quotable = quotableUrl(value);
    return quotable === undefined ? "(not quoted: it cannot be parsed apart from a user name, password, query or fragment it may hold)" : JSON.stringify(quotable.text);
  }
  if (value === null || value === undefined || typeof value === "number" || typeof value === "boolean") return String(value);
  return `(${Array.isArray(value) ? "an array" : `a${typeof value === "object" ? "n" : ""} ${typeof value}`})`;
}
