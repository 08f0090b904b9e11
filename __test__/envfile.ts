// Environments files for tests: one written with the mode asked for, and CLI hosts that
// name it (each call a fresh host, as from a shell).
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, tempDir } from './support.js';

/**
 * Writes an environments file (`content` as JSON, a string as it is) with `mode` into `dir`,
 * by default a temp dir support.ts removes after the test (a `beforeAll` passes its own).
 */
export function configFile(content: unknown, mode = 0o600, dir = tempDir()): string {
  const path = join(dir, 'environments.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content), { mode });
  chmodSync(path, mode);
  return path;
}

/** A CLI host with its own state directory (`stateDir`, removed after the test) and the environments file `path`. */
export function cliHost(path: string) {
  const stateDir = tempDir();
  const run = (...args: string[]) => cli(args, { PROCWARD_STATE_DIR: stateDir, PROCWARD_ENVIRONMENTS: path });
  return Object.assign(run, { stateDir });
}

/** The JSON a CLI call printed; throws with its stderr when it failed. */
export async function cliJson(call: Promise<{ code: number; stdout: string; stderr: string }>): Promise<any> {
  const r = await call;
  if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
