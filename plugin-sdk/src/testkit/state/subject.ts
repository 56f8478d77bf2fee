import { afterEach, beforeEach } from "vitest";

/** One fresh store for one test, and how to dispose of it. */
export interface StateKitSubject<T> {
  state: T;
  /** Runs after the test: close connections, remove temp folders. */
  cleanup?(): Promise<void>;
}

/**
 * Makes a new, empty store. Called once before every test, so tests never see
 * each other's data; a shared server should hand out a fresh schema or prefix.
 */
export type StateKitFactory<T> = () => Promise<StateKitSubject<T>> | StateKitSubject<T>;

/**
 * Registers beforeEach/afterEach around the current describe block and returns
 * a getter for the store of the running test.
 */
export function useSubject<T>(factory: StateKitFactory<T>): () => T {
  let current: StateKitSubject<T> | undefined;
  beforeEach(async () => {
    current = await factory();
  });
  afterEach(async () => {
    const done = current;
    current = undefined;
    await done?.cleanup?.();
  });
  return () => {
    if (!current) throw new Error("The conformance kit read its store outside a test; call it only inside it().");
    return current.state;
  };
}

/** A base time far from the real clock, so lease tests depend only on `now`. */
export function clockAt(offsetMs = 0, base = Date.parse("2031-03-04T05:06:07.000Z")): Date {
  return new Date(base + offsetMs);
}

let counter = 0;
/** A unique id per call, so ids never collide across tests, even if a factory reuses a database. */
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${process.pid}-${counter}`;
}
