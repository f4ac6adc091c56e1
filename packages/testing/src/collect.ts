// Reading a live subscription in a test: take items until a condition holds, failing with how
// far it got when the deadline passes.

/** Takes items from an async iterable until `done` says so, failing at the deadline. */
export async function collectUntil<T>(source: AsyncIterable<T>, done: (items: T[]) => boolean, timeoutMs = 15_000): Promise<T[]> {
  const items: T[] = [];
  const iterator = source[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`deadline: collected ${items.length} items, condition not met`)), timeoutMs);
  });
  try {
    while (!done(items)) {
      const next = await Promise.race([iterator.next(), deadline]);
      if (next.done === true) break;
      items.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return items;
}
