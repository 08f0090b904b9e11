/**
 * Brings many sessions up to date at once, a bounded number at a time (`list`,
 * `drainNotifications`). A sandbox session's refresh may wait on its far side (a slow or
 * unreachable environment holds it until the client's timeout): one after another, ten such
 * sessions would hold a `list` for ten timeouts; all at once, a thousand would open a
 * thousand connections. So at most {@link REFRESH_CONCURRENCY} run together, and a refresh
 * that has nothing to wait for (the registry's settled promise) costs no await at all.
 */

/** How many sessions are refreshed together. */
export const REFRESH_CONCURRENCY = 8;

/**
 * Calls `refresh` on every item, at most `limit` (default {@link REFRESH_CONCURRENCY})
 * awaited at a time, in order of the items. `refresh` returns `settled` when the item had
 * nothing to wait for. The first rejection stops new refreshes from starting and is thrown
 * once those under way have settled (none is left running behind the caller's back).
 */
export async function refreshMany<T>(items: readonly T[], refresh: (item: T) => Promise<void>, settled: Promise<void>, limit = REFRESH_CONCURRENCY): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && failure === undefined) {
      const pending = refresh(items[next++] as T);
      if (pending === settled) continue;
      try {
        await pending;
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure) throw failure.error;
}
