// Whether two sets of namespaces, each written as include/exclude lists with "*" and "?" globs,
// can share a namespace. Decided over every name a namespace could have (not the namespaces that
// exist now: one may be created while a run goes). Exact, except that a set of names matched only
// by patterns counts as excluded only when one exclude pattern provably covers a whole include
// pattern; otherwise it is taken to overlap, so the answer errs towards "overlap", never away.
import { globMatches } from './filters.js';

/** One include/exclude pair (a spec's namespace filter): empty includes or "*" mean every namespace. */
export interface NamespaceLists {
  readonly includes: readonly string[];
  readonly excludes: readonly string[];
}

/**
 * A set of namespaces: the names every filter of `all` admits (their intersection; absent: no
 * name comes from filters) plus the exact names in `names`.
 */
export interface NamespaceSet {
  readonly all?: readonly NamespaceLists[];
  readonly names?: readonly string[];
}

/**
 * What two sets share: the shared names found, and the include patterns whose matches may be
 * shared (["*"]: any name; []: too many patterns to compare, taken to overlap).
 */
export interface NamespaceOverlap {
  names: string[];
  patterns: string[][];
}

const isPattern = (p: string): boolean => p.includes('*') || p.includes('?');

function clean(list: readonly string[]): string[] {
  return [...new Set(list.map((x) => x.trim()).filter((x) => x !== ''))];
}

/** The includes as used for matching: "*" alone when empty or containing "*". */
function includesOf(l: NamespaceLists): string[] {
  const inc = clean(l.includes);
  return inc.length === 0 || inc.includes('*') ? ['*'] : inc;
}

function admits(l: NamespaceLists, name: string): boolean {
  const exc = clean(l.excludes);
  if (exc.some((p) => globMatches(p, name))) return false;
  return includesOf(l).some((p) => globMatches(p, name));
}

/** One token of a glob: a literal character, "?" (one character) or "*" (any run). */
type Token = { kind: 'char'; c: string } | { kind: 'one' } | { kind: 'any' };

function tokens(p: string): Token[] {
  return [...p].map((c): Token => (c === '*' ? { kind: 'any' } : c === '?' ? { kind: 'one' } : { kind: 'char', c }));
}

/** Whether some name matches every pattern: a search over the product of the patterns' positions. */
export function globsIntersect(patterns: readonly string[]): boolean {
  const ts = patterns.map(tokens);
  const start = ts.map(() => 0);
  const seen = new Set<string>();
  const stack: number[][] = [];
  const push = (pos: number[]): void => {
    // A "*" may match nothing: its position and the one after it are the same state.
    const closure: number[][] = [pos];
    for (let k = 0; k < closure.length; k++) {
      const cur = closure[k] as number[];
      const id = cur.join(',');
      if (seen.has(id)) continue;
      seen.add(id);
      stack.push(cur);
      cur.forEach((at, i) => {
        if ((ts[i] as Token[])[at]?.kind === 'any') closure.push(cur.map((x, j) => (j === i ? x + 1 : x)));
      });
    }
  };
  push(start);
  while (stack.length > 0) {
    const pos = stack.pop() as number[];
    if (pos.every((at, i) => at === (ts[i] as Token[]).length)) return true;
    // One character every pattern can take at once: literals must agree.
    const here = pos.map((at, i) => (ts[i] as Token[])[at]);
    if (here.some((t) => t === undefined)) continue;
    const literals = new Set(here.flatMap((t) => (t?.kind === 'char' ? [t.c] : [])));
    if (literals.size > 1) continue;
    push(pos.map((at, i) => ((ts[i] as Token[])[at]?.kind === 'any' ? at : at + 1)));
  }
  return false;
}

/**
 * Whether every name `p` matches is matched by `e` (sound, not complete): `e` matches `p` read as
 * text, where a "*" of `e` takes any run of `p`'s tokens, a "?" of `e` one literal or "?" of `p`.
 */
export function globCovers(e: string, p: string): boolean {
  const et = tokens(e);
  const pt = tokens(p);
  const memo = new Map<string, boolean>();
  const go = (i: number, j: number): boolean => {
    const id = `${i},${j}`;
    const hit = memo.get(id);
    if (hit !== undefined) return hit;
    let r: boolean;
    const a = et[i];
    const b = pt[j];
    if (a === undefined) r = b === undefined;
    else if (a.kind === 'any') r = go(i + 1, j) || (b !== undefined && go(i, j + 1));
    else if (b === undefined) r = false;
    else if (a.kind === 'one') r = b.kind !== 'any' && go(i + 1, j + 1);
    else r = b.kind === 'char' && b.c === a.c && go(i + 1, j + 1);
    memo.set(id, r);
    return r;
  };
  return go(0, 0);
}

/** Pattern combinations tried before giving up and answering "overlap" (specs with many patterns). */
const MAX_COMBINATIONS = 10_000;

/**
 * Whether some namespace is admitted by every filter in `filters`, with what it found: each literal
 * include is tried by name; then each choice of one include pattern per filter, which shares a
 * name unless an exclude of any filter provably covers one of the chosen patterns.
 */
function filtersOverlap(filters: readonly NamespaceLists[]): NamespaceOverlap {
  const found: NamespaceOverlap = { names: [], patterns: [] };
  const literals = new Set(filters.flatMap((f) => includesOf(f).filter((p) => !isPattern(p))));
  for (const n of [...literals].sort()) if (filters.every((f) => admits(f, n))) found.names.push(n);
  const patternLists = filters.map((f) => includesOf(f).filter(isPattern));
  if (patternLists.some((l) => l.length === 0)) return found;
  const excludes = filters.flatMap((f) => clean(f.excludes));
  const combos = patternLists.reduce((n, l) => n * l.length, 1);
  if (combos > MAX_COMBINATIONS) {
    found.patterns.push([]); // too many to compare: taken to overlap, naming no pattern
    return found;
  }
  const walk = (i: number, chosen: string[]): void => {
    if (i === patternLists.length) {
      if (!globsIntersect(chosen)) return;
      if (chosen.some((p) => excludes.some((e) => globCovers(e, p)))) return;
      // "*" adds nothing to what the other patterns say.
      const named = [...new Set(chosen)].filter((p) => p !== '*');
      found.patterns.push(named.length > 0 ? named : ['*']);
      return;
    }
    for (const p of patternLists[i] as string[]) walk(i + 1, [...chosen, p]);
  };
  walk(0, []);
  return found;
}

function setAdmits(s: NamespaceSet, name: string): boolean {
  return (s.names ?? []).includes(name) || (s.all !== undefined && s.all.every((f) => admits(f, name)));
}

/** What namespaces `a` and `b` may share; both lists empty when they share none. */
export function namespaceOverlap(a: NamespaceSet, b: NamespaceSet): NamespaceOverlap {
  const names = new Set<string>();
  let patterns: string[][] = [];
  for (const n of a.names ?? []) if (setAdmits(b, n)) names.add(n);
  for (const n of b.names ?? []) if (setAdmits(a, n)) names.add(n);
  if (a.all !== undefined && b.all !== undefined) {
    const both = filtersOverlap([...a.all, ...b.all]);
    for (const n of both.names) names.add(n);
    patterns = both.patterns;
  }
  return { names: [...names].sort(), patterns };
}

export function overlaps(o: NamespaceOverlap): boolean {
  return o.names.length > 0 || o.patterns.length > 0;
}
