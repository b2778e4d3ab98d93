// Command-line values shared by the benchmark's entry points.

/** `--name v` as a positive integer, or `dflt` when absent; anything else is refused by name. */
export function positiveInt(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return n;
}
