/** A session's output as `readLog` pages it, and the disk its durable logs take. */
import type { SessionStatus } from '../session/record.js';

/** Options of `ProcessRegistry.readLog`. */
export interface ReadLogOptions {
  /** First line, 0-based. Default: the last `limit` lines. */
  offset?: number;
  /** Lines in the page. Default 200. */
  limit?: number;
  /** `plain` (escape sequences removed, the default) or `raw`. */
  view?: 'plain' | 'raw';
  /** Byte cap of the page's text (UTF-8), at least 256. Default 1 MiB. */
  maxBytes?: number;
}

/** What `ProcessRegistry.readLog` returns. */
export interface LogResult {
  id: string;
  status: SessionStatus;
  /** The page's lines joined with `\n`. */
  text: string;
  lines: string[];
  totalLines: number;
  offset: number;
  showing: string;
  /**
   * Bytes of output dropped before the first line: by the in-memory cap (`maxOutputChars`),
   * or for durable jobs by the log cap (`logMaxBytes`, plus bytes the disk refused).
   * `showing` says so too.
   */
  droppedChars: number;
  /** Durable jobs: lines in the output dropped by the log cap. */
  droppedLines?: number;
  /**
   * The durable log was evicted by the disk budget (`maxTotalLogBytes`): the page is empty,
   * `showing` says when, and `droppedChars` is the output the log held (0 when unknown).
   */
  logEvicted?: true;
}

/** What `ProcessRegistry.logDiskUsage` returns: the durable logs of the state directory, in bytes on disk (`st_blocks × 512`). */
export interface LogDiskUsage {
  /** Disk the logs of the sessions this registry lists take, as last measured (running logs just now). */
  usedBytes: number;
  /** `maxTotalLogBytes`. */
  budgetBytes: number;
  /** Of `usedBytes`, the logs of running jobs (never evicted). */
  runningBytes: number;
  /** Listed sessions whose log was evicted. */
  evictedSessions: number;
  /** Still over the budget after eviction: what is left is running, undelivered, another live host's, or still written by a supervisor. */
  overBudget: boolean;
}
