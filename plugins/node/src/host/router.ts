import type { IncomingMessage, ServerResponse } from "node:http";
import type { RouteKind } from "./auth.js";
import { HttpError } from "./http.js";

/** One request as handlers see it. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  params: Record<string, string>;
  headers: Record<string, string | undefined>;
  remoteAddress: string | undefined;
  requestId: string;
}

export interface Route {
  method: string;
  /** A path with `:name` segments, e.g. `/runs/:runId/approve`. */
  pattern: string;
  /** What the auth gate checks; `provider` routes verify themselves (normalizeHttp); `public` ones serve no run data. */
  auth: RouteKind | "provider" | "public";
  /** The channel a channel route belongs to. */
  channel?: string;
  handle(ctx: RequestContext): Promise<void>;
}

interface CompiledRoute extends Route {
  segments: string[];
}

/**
 * Exact-segment matching; `:name` captures one segment. Unknown path 404, known path with another method 405.
 * HEAD reaches a host route's GET, never a channel route's.
 */
export class Router {
  private readonly routes: CompiledRoute[] = [];

  add(route: Route): void {
    this.routes.push({ ...route, segments: split(route.pattern) });
  }

  /** Reserved paths channels may not take. */
  has(path: string): boolean {
    const segments = split(path);
    return this.routes.some((route) => matchSegments(route.segments, segments) !== undefined);
  }

  match(method: string, path: string): { route: Route; params: Record<string, string> } {
    const segments = split(path);
    // Made only for a path that has routes, none of them for this method: most requests never need it.
    let allowed: Set<string> | undefined;
    for (const route of this.routes) {
      const params = matchSegments(route.segments, segments);
      if (!params) continue;
      // HEAD is a GET without its body on the host's own routes; a channel route serves only the methods its
      // channel declared, as its normalizeHttp may start a run whatever the method.
      if (route.method === method || (method === "HEAD" && route.method === "GET" && route.channel === undefined)) return { route, params };
      (allowed ??= new Set()).add(route.method);
    }
    if (allowed) {
      throw new HttpError(405, "AL_ERR_HTTP_METHOD", `${method} is not allowed on ${path}`, {
        fix: `Use ${[...allowed].join(" or ")}.`,
        headers: { allow: [...allowed].join(", ") },
      });
    }
    throw new HttpError(404, "AL_ERR_HTTP_NOT_FOUND", `no route ${path}`, { fix: "Use a channel route from the manifest, or /runs, /healthz, /readyz, /admin/kill-switch." });
  }
}

function split(path: string): string[] {
  return path.split("/").filter((segment) => segment !== "");
}

function matchSegments(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  // Compared before anything is decoded or allocated: most patterns a request meets differ in a fixed segment.
  for (let index = 0; index < pattern.length; index += 1) {
    const expected = pattern[index]!;
    if (!expected.startsWith(":") && expected !== segments[index]) return undefined;
  }
  const params: Record<string, string> = {};
  for (let index = 0; index < pattern.length; index += 1) {
    const expected = pattern[index]!;
    if (!expected.startsWith(":")) continue;
    try {
      params[expected.slice(1)] = decodeURIComponent(segments[index]!);
    } catch {
      return undefined;
    }
  }
  return params;
}
