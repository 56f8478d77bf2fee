/**
 * The index of the first item of `items` from `start` on that `isBefore` refuses, where every item
 * it accepts comes before every item it refuses (as in a list sorted by the key it compares): where
 * an item goes in a sorted list, or where a run of items sharing a prefix ends. Binary search, so a
 * store's sorted lists stay cheap to keep at hundreds of thousands of entries.
 */
export function partitionPoint<T>(items: readonly T[], isBefore: (item: T) => boolean, start = 0): number {
  let low = start;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (isBefore(items[middle]!)) low = middle + 1;
    else high = middle;
  }
  return low;
}
