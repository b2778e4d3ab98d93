// Kubernetes API version priority (the order kubectl and the apiserver sort versions in): GA before
// beta before alpha; within each, the higher major number first, then (beta, alpha) the higher minor
// number; versions that do not look like `v<N>[alpha|beta<M>]` come last, in alphabetical order.
// So: v10, v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1, v11alpha2, foo1, foo10.

interface ParsedVersion {
  /** 3 GA, 2 beta, 1 alpha, 0 anything else. */
  level: number;
  major: number;
  minor: number;
}

const VERSION_RE = /^v([1-9]\d*)(?:(alpha|beta)([1-9]\d*)?)?$/;

function parse(v: string): ParsedVersion {
  const m = VERSION_RE.exec(v);
  if (m === null) return { level: 0, major: 0, minor: 0 };
  const level = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
  return { level, major: Number(m[1]), minor: m[3] === undefined ? 0 : Number(m[3]) };
}

/** Negative when `a` has the higher priority, so `versions.sort(compareVersionPriority)` puts the best first. */
export function compareVersionPriority(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  if (pa.level !== pb.level) return pb.level - pa.level;
  if (pa.level === 0) return a < b ? -1 : a > b ? 1 : 0;
  if (pa.major !== pb.major) return pb.major - pa.major;
  return pb.minor - pa.minor;
}

/**
 * The version to read a resource at: the group's preferred version when it serves the resource,
 * else the highest-priority version that does. `served` must not be empty.
 */
export function chooseVersion(preferred: string | undefined, served: readonly string[]): string {
  if (preferred !== undefined && served.includes(preferred)) return preferred;
  const best = [...served].sort(compareVersionPriority)[0];
  if (best === undefined) throw new Error('chooseVersion needs at least one served version');
  return best;
}
