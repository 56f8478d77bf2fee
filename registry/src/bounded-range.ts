import semver from "semver";

/*
 * A plugin must say which kernels it was tested with: its `kernel` range has
 * to be a semver range whose every alternative has a ceiling. The loader
 * refuses any other manifest, and the registry files and snapshots are held
 * to the same rule, so a listing never offers a plugin its loader refuses.
 */

/** A comparator that caps the versions a set admits: "<", "<=" or an exact version ("" with a version, not the "any" comparator). */
const hasCeiling = (comparator: semver.Comparator): boolean =>
  comparator.operator === "<" || comparator.operator === "<=" || (comparator.operator === "" && comparator.value !== "");

/** Whether `range` parses as a semver range other than "any version" (validRange turns "x" and "*" into "*", "latest" into null). */
export function isRangeOfSomeVersions(range: string): boolean {
  const normalized = semver.validRange(range);
  return normalized !== null && normalized !== "*";
}

/** The first alternative of `range` without an upper bound, as text (">=0.1.0" includes every later major), or undefined. */
export function openAlternative(range: string): string | undefined {
  return new semver.Range(range).set
    .find((comparators) => !comparators.some(hasCeiling))
    ?.map((comparator) => comparator.value)
    .join(" ");
}

/** Whether `range` names a bounded set of versions: "^0.1.0", ">=0.1.0 <0.3.0"; not "*", "latest" or ">=0.1.0". */
export function isBoundedRange(range: string): boolean {
  return isRangeOfSomeVersions(range) && openAlternative(range) === undefined;
}
