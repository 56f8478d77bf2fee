/**
 * The keys of `options` that are not in `known`, for a class built directly (a gateway slot's
 * options are checked against the package's schema): a typo (`defaultTimeout`, `dir`) would
 * otherwise be ignored without a word and the default used.
 */
export function unknownOptions(options: object, known: readonly string[]): string[] {
  return Object.keys(options).filter((key) => !known.includes(key));
}

/** "option "x"" or "options "x", "y"", for the refusal's message. */
export function describeOptions(keys: readonly string[]): string {
  return `option${keys.length === 1 ? "" : "s"} ${keys.map((key) => JSON.stringify(key)).join(", ")}`;
}
