import { describe, expect, it } from 'vitest';
import { globCovers, globsIntersect, namespaceOverlap, overlaps, type NamespaceSet } from './overlap.js';

const f = (includes: string[], excludes: string[] = []): NamespaceSet => ({ all: [{ includes, excludes }] });

describe('globsIntersect', () => {
  it.each([
    [['a', 'a'], true],
    [['a', 'b'], false],
    [['team-*', '*-prod'], true],
    [['team-*', 'ops-*'], false],
    [['a?c', 'ab*'], true],
    [['a?', 'abc'], false],
    [['*x*', '*y*', '*z'], true],
    [['*', 'kube-system'], true],
    [['a*b', 'a*c'], false],
    [['??', '???'], false],
  ] as const)('%j -> %s', (patterns, want) => {
    expect(globsIntersect(patterns)).toBe(want);
  });
});

describe('globCovers', () => {
  it.each([
    ['*', 'team-*', true],
    ['team-*', 'team-a*', true],
    ['team-*', 'team?*', false],
    ['team-?', 'team-a', true],
    ['team-?', 'team-*', false],
    ['a*', 'b*', false],
    ['*-prod', 'x-*-prod', true],
  ] as const)('%s covers %s: %s', (e, p, want) => {
    expect(globCovers(e, p)).toBe(want);
  });
});

describe('namespaceOverlap', () => {
  it('finds shared literal names', () => {
    expect(namespaceOverlap(f(['a', 'b', 'c']), f(['c', 'b', 'd']))).toEqual({ names: ['b', 'c'], patterns: [] });
    expect(overlaps(namespaceOverlap(f(['a']), f(['b'])))).toBe(false);
  });

  it('treats empty includes and "*" as every namespace', () => {
    expect(namespaceOverlap(f([]), f(['x'])).names).toEqual(['x']);
    expect(namespaceOverlap(f(['*']), f([])).patterns).toEqual([['*']]);
  });

  it('honours excludes on either side, literal and glob', () => {
    expect(overlaps(namespaceOverlap(f([], ['kube-system']), f(['kube-system'])))).toBe(false);
    expect(overlaps(namespaceOverlap(f(['kube-system']), f(['*'], ['kube-*'])))).toBe(false);
    expect(overlaps(namespaceOverlap(f(['team-*']), f([], ['team-*'])))).toBe(false);
    expect(overlaps(namespaceOverlap(f(['team-a*']), f(['*'], ['team-*'])))).toBe(false);
    // Excluding one name of a pattern leaves the rest of it shared.
    expect(namespaceOverlap(f(['team-*']), f([], ['team-a'])).patterns).toEqual([['team-*']]);
  });

  it('compares patterns with patterns', () => {
    expect(namespaceOverlap(f(['team-*']), f(['*-prod'])).patterns).toEqual([['team-*', '*-prod']]);
    expect(overlaps(namespaceOverlap(f(['team-*']), f(['ops-*'])))).toBe(false);
    expect(namespaceOverlap(f(['team-*']), f(['team-a'])).names).toEqual(['team-a']);
  });

  it('excludes everything with "*"', () => {
    expect(overlaps(namespaceOverlap(f([], ['*']), f([])))).toBe(false);
  });

  it('intersects the filters of one set and adds its exact names', () => {
    const restore: NamespaceSet = { all: [{ includes: [], excludes: ['a'] }, { includes: ['a', 'b'], excludes: [] }], names: ['a-copy'] };
    expect(overlaps(namespaceOverlap(restore, f(['a'])))).toBe(false);
    expect(namespaceOverlap(restore, f(['b'])).names).toEqual(['b']);
    expect(namespaceOverlap(restore, f(['a-*'])).names).toEqual(['a-copy']);
    expect(namespaceOverlap(restore, { names: ['a-copy', 'z'] }).names).toEqual(['a-copy']);
    expect(overlaps(namespaceOverlap({ names: ['x'] }, { names: ['y'] }))).toBe(false);
  });

  it('answers overlap, naming no pattern, when there are too many pattern combinations to compare', () => {
    const many = Array.from({ length: 200 }, (_, i) => `p${i}-*`);
    expect(namespaceOverlap(f(many), f(many.map((p) => `x${p}`))).patterns).toEqual([[]]);
  });
});
