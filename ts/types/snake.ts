/** Results as the LLM tool writes them: snake_case keys. */

/** `timeoutMs` → `timeout_ms`: a camelCase key as the tool surface writes it. */
type SnakeKey<K extends string> = K extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeKey<T>}` : K;

/**
 * A result as the LLM tool gives it (see `surfaces/tool/handler.ts`): every key snake_case, at every
 * depth, and a session's `id` named `session_id`.
 */
export type Snake<T> = T extends readonly (infer E)[]
  ? Snake<E>[]
  : T extends object
    ? { [K in keyof T as K extends 'id' ? 'session_id' : K extends string ? SnakeKey<K> : never]: Snake<T[K]> }
    : T;
