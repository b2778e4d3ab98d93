import { describe, expect, it } from 'vitest';
import { namespacesOf } from './debugSources.js';

describe('debug bundle: whose Secrets are read for scrubbing', () => {
  it('takes a run\'s named namespaces and its mapping targets, or every namespace for an unbounded scope', () => {
    expect(namespacesOf({ includedNamespaces: ['a', 'b'] })).toEqual(['a', 'b']);
    expect(namespacesOf({ includedNamespaces: ['a'], namespaceMapping: { a: 'a-copy' } })).toEqual(['a', 'a-copy']);
    expect(namespacesOf({})).toBe('all');
    expect(namespacesOf({ includedNamespaces: ['*'] })).toBe('all');
    expect(namespacesOf({ includedNamespaces: ['a', 'team-*'] })).toBe('all');
  });
});
