/**
 * Parsers of the CLI's option values. Each refuses bad input with a message that names the
 * option and, where a likely intent is clear, the fix (`give a unit: 30s or 30ms?`).
 */
import { InvalidArgumentError } from 'commander';

/** An integer option from `min` to `max` (decimal digits only: no sign, hex or exponent). */
export function int(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer ${range}, got ${JSON.stringify(value)}`);
    return n;
  };
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration with a unit (`500ms`, `2s`, `1.5m`, `1h`) in whole milliseconds, at least
 * `minMs`. `0` needs no unit; any other bare number is refused with a hint: `--timeout 30` once meant 30 ms, and a
 * script must not silently change meaning.
 */
export function duration(name: string, minMs: number) {
  return (value: string): number => {
    // Zero needs no unit: 0s and 0ms are the same.
    if (/^0+$/.test(value) && minMs <= 0) return 0;
    if (/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError(`give a unit: ${value}s or ${value}ms? (${name} takes 500ms, 2s, 1m, 1h)`);
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value);
    const ms = m ? Math.round(Number(m[1]) * (DURATION_UNITS[m[2] as string] as number)) : Number.NaN;
    if (!Number.isSafeInteger(ms) || ms < minMs) {
      throw new InvalidArgumentError(`${name} must be a duration of at least ${minMs}ms with a unit (500ms, 2s, 1m, 1h), got ${JSON.stringify(value)}`);
    }
    return ms;
  };
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kib: 1024, m: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gib: 1024 ** 3 };

/** A size in bytes: a bare integer is bytes; `64KiB`, `10MiB`, `1GiB` (or `K`, `M`, `G`) are binary units. */
export function size(name: string, min: number) {
  return (value: string): number => {
    const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value);
    const unit = SIZE_UNITS[(m?.[2] ?? 'x').toLowerCase()];
    const n = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be a size of at least ${min} bytes (65536, 64KiB, 10MiB, 1GiB), got ${JSON.stringify(value)}`);
    return n;
  };
}

/** A portable environment variable name (letters, digits, `_`, not starting with a digit). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `--env NAME=VALUE`, repeatable: collected into one object (a later NAME wins). */
export function envPair(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const eq = value.indexOf('=');
  const name = eq < 0 ? value : value.slice(0, eq);
  if (eq < 0 || !ENV_NAME.test(name)) throw new InvalidArgumentError(`--env takes NAME=VALUE with NAME of letters, digits and _, got ${JSON.stringify(value.slice(0, 80))}`);
  return { ...previous, [name]: value.slice(eq + 1) };
}

/** `--allow-env NAME`, repeatable (comma-separated names also work). */
export function envNames(value: string, previous: string[] | undefined): string[] {
  const names = value.split(',').filter((n) => n !== '');
  const bad = names.find((n) => !ENV_NAME.test(n));
  if (bad !== undefined || names.length === 0) throw new InvalidArgumentError(`--allow-env takes variable names, got ${JSON.stringify(value.slice(0, 80))}`);
  return [...(previous ?? []), ...names];
}
