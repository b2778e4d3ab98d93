// includedNames and excludedNames: entry parsing, matching, scoping and validation.
import { describe, expect, it } from 'vitest';
import type { ResourceLike } from './filters.js';
import { nameFilter, parseNamePattern, validateNameFilters } from './names.js';

const configmaps: ResourceLike = { resource: 'configmaps', group: '', kind: 'ConfigMap', shortNames: ['cm'] };
const secrets: ResourceLike = { resource: 'secrets', group: '', kind: 'Secret' };
const deployments: ResourceLike = { resource: 'deployments', group: 'apps', kind: 'Deployment', singularName: 'deployment', shortNames: ['deploy'] };
const namespaces: ResourceLike = { resource: 'namespaces', group: '', kind: 'Namespace' };

const tenConfigMaps = ['app-1', 'app-2', 'app-3', 'app-10', 'app-x', 'my-app-1', 'db-1', 'db-2', 'web', 'kube-root-ca.crt'];

describe('parseNamePattern', () => {
  it.each([
    ['web', undefined, ['web'], ['web2', 'a-web']],
    ['app-*', undefined, ['app-', 'app-x'], ['my-app-x']],
    ['app-[0-9]', undefined, ['app-3'], ['app-x', 'app-10']],
    ['{web,api}', undefined, ['web', 'api'], ['db']],
    ['regex:^app-[0-9]$', undefined, ['app-1'], ['app-10', 'my-app-1']],
    ['regex:db', undefined, ['db-1', 'mydb'], ['web']],
    ['regex:^a/b$', undefined, ['a/b'], ['ab']],
    ['configmaps/app-*', 'configmaps', ['app-x'], ['web']],
    ['deployments.apps/web', 'deployments.apps', ['web'], ['web-2']],
    ['configmaps/regex:^app-[0-9]$', 'configmaps', ['app-2'], ['app-22']],
    ['cm/{a,b}', 'cm', ['a'], ['c']],
  ])('%s (resource %s)', (entry, resource, yes, no) => {
    const p = parseNamePattern(entry);
    expect(p.resource).toBe(resource);
    for (const n of yes) expect(p.matches(n), n).toBe(true);
    for (const n of no) expect(p.matches(n), n).toBe(false);
  });
});

describe('nameFilter', () => {
  it('with no entries takes everything', () => {
    const f = nameFilter(undefined, []);
    expect(f.isEmpty).toBe(true);
    expect(f.shouldInclude(configmaps, 'x')).toBe(true);
    expect(f.narrowsEveryResource).toBe(false);
  });

  it('a regex scoped to configmaps takes exactly 3 of 10 ConfigMaps and leaves other resources whole', () => {
    const f = nameFilter(['configmaps/regex:^app-[0-9]$'], []);
    expect(tenConfigMaps.filter((n) => f.shouldInclude(configmaps, n))).toEqual(['app-1', 'app-2', 'app-3']);
    expect(f.shouldInclude(secrets, 'anything')).toBe(true);
    expect(f.shouldInclude(deployments, 'web')).toBe(true);
    expect(f.narrowsEveryResource).toBe(false);
  });

  it('an unscoped include narrows every resource, but never Namespace objects', () => {
    const f = nameFilter(['web'], undefined);
    expect(f.shouldInclude(configmaps, 'web')).toBe(true);
    expect(f.shouldInclude(configmaps, 'db-1')).toBe(false);
    expect(f.shouldInclude(deployments, 'api')).toBe(false);
    expect(f.shouldInclude(namespaces, 'anything')).toBe(true);
    expect(f.narrowsEveryResource).toBe(true);
  });

  it('scoped entries match the resource by plural, plural.group, kind and short name', () => {
    for (const scope of ['deployments', 'deployments.apps', 'Deployment', 'deploy']) {
      const f = nameFilter([`${scope}/web`], []);
      expect(f.shouldInclude(deployments, 'web'), scope).toBe(true);
      expect(f.shouldInclude(deployments, 'api'), scope).toBe(false);
    }
    expect(nameFilter(['deployments.apps/web'], []).shouldInclude({ ...deployments, group: 'extensions' }, 'api')).toBe(true);
  });

  it('includes for one resource OR together; excludes win', () => {
    const f = nameFilter(['configmaps/app-*', 'configmaps/web'], ['configmaps/app-x', 'regex:^db-']);
    expect(tenConfigMaps.filter((n) => f.shouldInclude(configmaps, n))).toEqual(['app-1', 'app-2', 'app-3', 'app-10', 'web']);
    expect(f.shouldInclude(secrets, 'db-1')).toBe(false);
    expect(f.excludes(secrets, 'db-1')).toBe(true);
    expect(f.excludes(configmaps, 'app-x')).toBe(true);
    expect(f.excludes(secrets, 'app-x')).toBe(false);
    expect(f.excludes(namespaces, 'db-1')).toBe(false);
  });

  it('excludes alone take everything else', () => {
    const f = nameFilter([], ['kube-root-ca.crt']);
    expect(tenConfigMaps.filter((n) => f.shouldInclude(configmaps, n))).toHaveLength(9);
  });
});

describe('validateNameFilters', () => {
  it('accepts every form', () => {
    expect(validateNameFilters({ includedNames: ['web', 'app-*', 'regex:^a$', 'configmaps/x', 'deployments.apps/regex:w.b', 'cm/{a,b}'], excludedNames: ['db'] })).toEqual([]);
  });

  it('names the field, index, entry and the problem of every bad entry', () => {
    expect(validateNameFilters({
      includedNames: ['regex:^app-[0-9', 'configmaps/', 'regex:', 'ns/web', 'a/b/c', 'app-[', 'bad resource/x', ''],
      excludedNames: ['x', 'configmaps/{a'],
    })).toEqual([
      'includedNames[0] "regex:^app-[0-9" is not a valid regular expression: Invalid regular expression: /^app-[0-9/: Unterminated character class',
      'includedNames[1] "configmaps/" has no name after the resource',
      'includedNames[2] "regex:" has no regular expression after "regex:"',
      'includedNames[3] "ns/web" scopes to namespaces: Namespace objects are selected by includedNamespaces and excludedNamespaces',
      'includedNames[4] "a/b/c" has more than one "/" (write resource/name; namespaces are selected by includedNamespaces)',
      'includedNames[5] "app-[" is not a valid glob: a "[" is never closed by "]"',
      'includedNames[6] "bad resource/x" scopes to "bad resource", which is not a resource name (use a plural or plural.group, e.g. "deployments.apps/web")',
      'includedNames[7] "" is empty',
      'excludedNames[1] "configmaps/{a" is not a valid glob: a "{" is never closed by "}"',
    ]);
  });

  it('refuses the same entry on both sides', () => {
    expect(validateNameFilters({ includedNames: ['web'], excludedNames: ['web'] })).toEqual(['name pattern "web" is in both includedNames and excludedNames']);
  });

  it('refuses a pattern over 1,000 characters', () => {
    expect(validateNameFilters({ includedNames: [`regex:${'a'.repeat(1000)}`] })[0]).toMatch(/^includedNames\[0\] "regex:a+" is longer than 1000 characters$/);
  });
});
