// Shell-style globs for namespace and object names: `*` (any run of characters), `?` (one
// character), `[abc]` and `[a-z]` (one of a set), `{a,b}` (one of the alternatives, each of which
// may hold the other wildcards). Velero documents the first three for namespaces; `{a,b}` is
// Stowage's, so one pattern can name a few unrelated namespaces.

/** A pattern that is not a valid glob, with why. */
export class GlobSyntaxError extends Error {
  override readonly name = 'GlobSyntaxError';
}

const META = /[*?[\]{}]/;

/** Whether `p` uses any wildcard (else it names exactly one thing). */
export function isGlob(p: string): boolean {
  return META.test(p);
}

const escapeRe = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** The body of `[...]` starting after `[` at `i`; returns the regex class and the index after `]`. */
function bracket(p: string, i: number): { re: string; next: number } {
  let j = i;
  let body = '';
  while (j < p.length && p[j] !== ']') {
    const c = p[j] ?? '';
    if ('[{}*?'.includes(c)) throw new GlobSyntaxError(`"${c}" cannot appear inside [...]`);
    const to = p[j + 2];
    if (p[j + 1] === '-' && to !== undefined && to !== ']') {
      if (to < c) throw new GlobSyntaxError(`the range [${c}-${to}] runs backwards`);
      body += `${escapeRe(c)}-${escapeRe(to)}`;
      j += 3;
      continue;
    }
    body += escapeRe(c);
    j++;
  }
  if (j >= p.length) throw new GlobSyntaxError('a "[" is never closed by "]"');
  if (body === '') throw new GlobSyntaxError('"[]" matches no character');
  return { re: `[${body}]`, next: j + 1 };
}

/** The anchored regular expression a glob stands for; throws GlobSyntaxError naming what is wrong. */
export function globToRegExp(p: string): RegExp {
  let re = '';
  let inBraces = false;
  let alternatives = 0;
  for (let i = 0; i < p.length; ) {
    const c = p[i] ?? '';
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const b = bracket(p, i + 1);
      re += b.re;
      i = b.next;
      continue;
    } else if (c === ']') throw new GlobSyntaxError('a "]" has no "[" before it');
    else if (c === '{') {
      if (inBraces) throw new GlobSyntaxError('"{...}" cannot be nested');
      inBraces = true;
      alternatives = 1;
      re += '(?:';
    } else if (c === '}') {
      if (!inBraces) throw new GlobSyntaxError('a "}" has no "{" before it');
      if (alternatives < 2) throw new GlobSyntaxError('"{...}" needs at least two alternatives separated by ","');
      inBraces = false;
      re += ')';
    } else if (c === ',' && inBraces) {
      alternatives++;
      re += '|';
    } else re += escapeRe(c);
    i++;
  }
  if (inBraces) throw new GlobSyntaxError('a "{" is never closed by "}"');
  return new RegExp(`^${re}$`);
}

/** Why `p` is not a valid glob, or undefined when it is. */
export function globProblem(p: string): string | undefined {
  try {
    globToRegExp(p);
    return undefined;
  } catch (err) {
    if (err instanceof GlobSyntaxError) return err.message;
    throw err;
  }
}

const cache = new Map<string, RegExp | null>();
const CACHE_LIMIT = 10_000;

/**
 * Whether `name` matches the glob `pattern` (`*` alone matches everything; a pattern without
 * wildcards only itself). An invalid pattern matches nothing: validation refuses it first.
 */
export function globMatches(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (!isGlob(pattern)) return pattern === name;
  let re = cache.get(pattern);
  if (re === undefined) {
    try {
      re = globToRegExp(pattern);
    } catch {
      re = null;
    }
    // Patterns come from specs: bounded by the list caps, but a long-running server sees many.
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(pattern, re);
  }
  return re !== null && re.test(name);
}
