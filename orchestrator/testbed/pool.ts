// Run `fn` over items, at most `limit` at once. After the first failure no new item starts, and
// the call settles only once every started one has: a caller that cleans up on failure (`up`
// removing what it made) must not race work still in flight that would recreate state after it.
export async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  let failed = false;
  const worker = async (): Promise<void> => {
    for (let item = queue.shift(); item !== undefined && !failed; item = queue.shift()) {
      try {
        await fn(item);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  const bad = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (bad) throw bad.reason;
}
