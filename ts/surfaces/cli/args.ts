/** Parsers of the CLI's option values: each refuses bad input with a message that names the option. */
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
