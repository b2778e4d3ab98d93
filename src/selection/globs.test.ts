import { describe, expect, it } from 'vitest';
import { globMatches, globProblem, globToRegExp, isGlob } from './globs.js';

describe('globMatches', () => {
  it.each([
    ['*', 'anything', true],
    ['team-?', 'team-a', true],
    ['team-?', 'team-ab', false],
    ['ns[123]', 'ns2', true],
    ['ns[123]', 'ns4', false],
    ['ns[a-c]', 'nsb', true],
    ['ns[a-c]', 'nsd', false],
    ['ns[a-c0-9]', 'ns7', true],
    ['{prod,staging}-db', 'prod-db', true],
    ['{prod,staging}-db', 'staging-db', true],
    ['{prod,staging}-db', 'dev-db', false],
    ['{prod,staging}-db', 'prod,staging-db', false],
    ['app-{web,api-*}', 'app-api-v2', true],
    ['app-{web,api-*}', 'app-webx', false],
    ['{a,b}[0-9]?', 'b3x', true],
    ['a.b', 'axb', false],
    ['a+b', 'a+b', true],
    ['a+b', 'aab', false],
  ])('%s vs %s -> %s', (pattern, name, expected) => {
    expect(globMatches(pattern, name)).toBe(expected);
  });

  it('matches the whole name, not a part of it', () => {
    expect(globMatches('app-[0-9]', 'my-app-1')).toBe(false);
    expect(globMatches('app-[0-9]', 'app-12')).toBe(false);
  });

  it('an invalid pattern matches nothing (validation refuses it first)', () => {
    expect(globMatches('ns[', 'ns[')).toBe(false);
    expect(globMatches('{a', '{a')).toBe(false);
  });
});

describe('isGlob', () => {
  it('tells names from patterns', () => {
    expect(['app', 'app-1', 'a.b'].map(isGlob)).toEqual([false, false, false]);
    expect(['a*', 'a?', 'a[b]', '{a,b}'].map(isGlob)).toEqual([true, true, true, true]);
  });
});

describe('globProblem', () => {
  it.each([
    ['ns[', 'a "[" is never closed by "]"'],
    ['ns[]', '"[]" matches no character'],
    ['ns]', 'a "]" has no "[" before it'],
    ['ns[z-a]', 'the range [z-a] runs backwards'],
    ['ns[a*]', '"*" cannot appear inside [...]'],
    ['{a,b', 'a "{" is never closed by "}"'],
    ['a,b}', 'a "}" has no "{" before it'],
    ['{a}', '"{...}" needs at least two alternatives separated by ","'],
    ['{a,{b,c}}', '"{...}" cannot be nested'],
  ])('%s: %s', (pattern, why) => {
    expect(globProblem(pattern)).toBe(why);
    expect(() => globToRegExp(pattern)).toThrow(why);
  });

  it('accepts valid patterns', () => {
    for (const p of ['*', 'a?', 'ns[abc]', 'ns[a-z]', '{a,b,c}', 'x-{a,b}-[0-9]*', 'plain']) expect(globProblem(p), p).toBeUndefined();
  });
});
