import { describe, expect, it } from 'vitest';
import { compileGroupResourceGlob } from './glob.js';
import { applyJsonPatch, PatchError, PatchTestFailed, type JsonValue } from './jsonPatch.js';
import { applyMergePatch } from './mergePatch.js';
import { ruleMatches } from './apply.js';
import { parseResourceModifiers, patchValue } from './rules.js';
import { applyStrategicPatch } from './strategicMerge.js';

describe('JSON Patch (RFC 6902)', () => {
  const doc = { foo: ['bar', 'baz'], a: { b: 1 }, 'x/y': 1, 'm~n': 2 };
  it('adds, removes, replaces, moves, copies and tests, without touching the input', () => {
    expect(applyJsonPatch(doc, [{ op: 'add', path: '/foo/1', value: 'qux' }]).foo).toEqual(['bar', 'qux', 'baz']);
    expect(applyJsonPatch(doc, [{ op: 'add', path: '/foo/-', value: 'end' }]).foo).toEqual(['bar', 'baz', 'end']);
    expect(applyJsonPatch(doc, [{ op: 'remove', path: '/foo/0' }]).foo).toEqual(['baz']);
    expect(applyJsonPatch(doc, [{ op: 'replace', path: '/a/b', value: 2 }]).a).toEqual({ b: 2 });
    expect(applyJsonPatch(doc, [{ op: 'move', from: '/a/b', path: '/c' }])).toMatchObject({ a: {}, c: 1 });
    expect(applyJsonPatch(doc, [{ op: 'copy', from: '/a', path: '/d' }])).toMatchObject({ a: { b: 1 }, d: { b: 1 } });
    expect(applyJsonPatch(doc, [{ op: 'test', path: '/a', value: { b: 1 } }])).toEqual(doc);
    expect(applyJsonPatch(doc, [{ op: 'replace', path: '/x~1y', value: 5 }, { op: 'remove', path: '/m~0n' }])).toMatchObject({ 'x/y': 5 });
    expect(applyJsonPatch(doc, [{ op: 'replace', path: '/foo/-1', value: 'last' }]).foo).toEqual(['bar', 'last']);
    expect(doc).toEqual({ foo: ['bar', 'baz'], a: { b: 1 }, 'x/y': 1, 'm~n': 2 });
  });
  it('fails on missing paths and bad indices, and reports a failed test as such', () => {
    expect(() => applyJsonPatch(doc, [{ op: 'replace', path: '/nope', value: 1 }])).toThrow(PatchError);
    expect(() => applyJsonPatch(doc, [{ op: 'add', path: '/a/b/c', value: 1 }])).toThrow(/operation 0 \(add \/a\/b\/c\)/);
    expect(() => applyJsonPatch(doc, [{ op: 'remove', path: '/foo/5' }])).toThrow(/out of range/);
    expect(() => applyJsonPatch(doc, [{ op: 'move', from: '/a', path: '/a/b/c' }])).toThrow(/its own child/);
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/a/b', value: 2 }])).toThrow(PatchTestFailed);
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/zz', value: 2 }])).toThrow(PatchTestFailed);
  });
});

describe('JSON Merge Patch (RFC 7386)', () => {
  it('follows the RFC examples', () => {
    const cases: [JsonValue, JsonValue, JsonValue][] = [
      [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
      [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
      [{ a: 'b' }, { a: null }, {}],
      [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
      [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
      [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
      [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
      [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
      [['a', 'b'], ['c', 'd'], ['c', 'd']],
      [{ a: 'b' }, ['c'], ['c']],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: 'b', c: null }, { a: 'b' }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, want] of cases) expect(applyMergePatch(target, patch)).toEqual(want);
  });
});

describe('strategic merge patch', () => {
  const pod = {
    metadata: { finalizers: ['a'], labels: { x: '1' } },
    spec: {
      containers: [
        { name: 'web', image: 'web:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], volumeMounts: [{ name: 'v', mountPath: '/data' }], ports: [{ containerPort: 80, name: 'http' }] },
      ],
      volumes: [{ name: 'v', nfs: { server: 's', path: '/' } }],
      tolerations: [{ key: 'a' }],
    },
  };
  it('merges keyed lists element by element and replaces the others', () => {
    const out = applyStrategicPatch(pod, {
      metadata: { finalizers: ['b', 'a'] },
      spec: {
        containers: [{ name: 'web', env: [{ name: 'B', value: '3' }, { name: 'C', value: '4' }], volumeMounts: [{ mountPath: '/data', readOnly: true }], ports: [{ containerPort: 80, protocol: 'TCP' }] }, { name: 'side', image: 's:1' }],
        tolerations: [{ key: 'b' }],
      },
    });
    expect(out).toEqual({
      metadata: { finalizers: ['a', 'b'], labels: { x: '1' } },
      spec: {
        containers: [
          {
            name: 'web', image: 'web:1',
            env: [{ name: 'A', value: '1' }, { name: 'B', value: '3' }, { name: 'C', value: '4' }],
            volumeMounts: [{ name: 'v', mountPath: '/data', readOnly: true }],
            ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }],
          },
          { name: 'side', image: 's:1' },
        ],
        volumes: [{ name: 'v', nfs: { server: 's', path: '/' } }],
        tolerations: [{ key: 'b' }],
      },
    });
  });
  it('honours $patch delete and replace, $retainKeys and $deleteFromPrimitiveList', () => {
    expect(applyStrategicPatch(pod, { spec: { containers: [{ name: 'web', $patch: 'delete' }] } })).toMatchObject({ spec: { containers: [] } });
    expect(applyStrategicPatch(pod, { spec: { volumes: [{ name: 'v', $retainKeys: ['name', 'persistentVolumeClaim'], persistentVolumeClaim: { claimName: 'c' } }] } }))
      .toMatchObject({ spec: { volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] } });
    expect(applyStrategicPatch(pod, { metadata: { labels: { $patch: 'replace', y: '2' } } })).toMatchObject({ metadata: { labels: { y: '2' } } });
    expect(applyStrategicPatch(pod, { spec: { volumes: [{ $patch: 'replace' }, { name: 'w', emptyDir: {} }] } })).toMatchObject({ spec: { volumes: [{ name: 'w', emptyDir: {} }] } });
    expect(applyStrategicPatch(pod, { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } })).toMatchObject({ metadata: { finalizers: [] } });
  });
  it('refuses a keyed list element without its key', () => {
    expect(() => applyStrategicPatch(pod, { spec: { containers: [{ image: 'x' }] } })).toThrow(/merge key "name"/);
    expect(() => applyStrategicPatch(pod, { metadata: { $patch: 'bogus' } })).toThrow(/\$patch "bogus"/);
  });
});

describe('groupResource globs (Velero\'s, "." as separator)', () => {
  const m = (p: string, gr: string): boolean => compileGroupResourceGlob(p).test(gr);
  it('matches as Velero does', () => {
    expect(m('*', 'configmaps')).toBe(true);
    expect(m('*', 'deployments.apps')).toBe(false);
    expect(m('*.apps', 'deployments.apps')).toBe(true);
    expect(m('*.*', 'deployments.apps')).toBe(true);
    expect(m('*.*', 'ingresses.networking.k8s.io')).toBe(false);
    expect(m('**', 'ingresses.networking.k8s.io')).toBe(true);
    expect(m('{deployments,statefulsets}.apps', 'statefulsets.apps')).toBe(true);
    expect(m('[cs]*', 'secrets')).toBe(true);
    expect(m('[!cs]*', 'secrets')).toBe(false);
    expect(m('pod?', 'pods')).toBe(true);
    expect(m('deployments.apps', 'deployments.apps')).toBe(true);
    expect(m('deployments.apps', 'deploymentsXapps')).toBe(false);
    expect(() => compileGroupResourceGlob('[abc')).toThrow(/never closed/);
    expect(() => compileGroupResourceGlob('{a,b')).toThrow(/never closed/);
  });
});

describe('patch values (Velero\'s reading of value strings)', () => {
  it('reads JSON-looking strings as JSON', () => {
    expect(patchValue('3', 'v')).toBe(3);
    expect(patchValue('1.5e2', 'v')).toBe(150);
    expect(patchValue('TRUE', 'v')).toBe(true);
    expect(patchValue('null', 'v')).toBeNull();
    expect(patchValue('"3"', 'v')).toBe('3');
    expect(patchValue('{"a":1}', 'v')).toEqual({ a: 1 });
    expect(patchValue('premium', 'v')).toBe('premium');
    expect(patchValue('', 'v')).toBe('');
    expect(patchValue(undefined, 'v')).toBe('');
    expect(patchValue(7, 'v')).toBe(7);
    expect(() => patchValue('{oops', 'v')).toThrow(/starts like JSON but is not/);
  });
});

describe('rule validation', () => {
  const parse = (text: string, data?: Record<string, string>) => parseResourceModifiers(data ?? { 'rules.yaml': text }, 'ConfigMap s/m');
  const errors = (text: string): string[] => {
    const r = parse(text);
    return 'errors' in r ? r.errors : [];
  };
  it('names the rule and the field of each problem', () => {
    const e = errors(`
version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  patches: [{operation: replace, path: /spec/x, value: "1"}]
- conditions: {groupResource: "[pods", resourceNameRegex: "(", typo: 1}
  patches:
  - {operation: frob, path: /a}
  - {operation: move, path: /a}
  - {operation: add, path: "a/b", value: "{bad"}
- conditions: {groupResource: pods, labelSelector: {matchExpressions: [{key: a, operator: Near}]}, matches: [{value: x}]}
  patches: [{operation: remove, path: /a}]
  mergePatches: [{patchData: "{}"}]
- conditions: {groupResource: pods}
  strategicPatches: [{patchData: "[1]"}, {}]
- conditions: {groupResource: pods}
`);
    const at = 'ConfigMap s/m, data "rules.yaml": resourceModifierRules';
    expect(e).toEqual([
      `${at}[1].conditions: unknown field "typo" (allowed: groupResource, resourceNameRegex, namespaces, labelSelector, matches)`,
      `${at}[1].conditions.groupResource: "[pods": "[" is never closed`,
      expect.stringMatching(new RegExp(`^${at.replace(/[[\]().]/g, '\\$&')}\\[1\\]\\.conditions\\.resourceNameRegex: Invalid regular expression`)),
      `${at}[1].patches[0].operation: unsupported operation "frob" (use add, remove, replace, move, copy, test)`,
      `${at}[1].patches[1].from is required for move`,
      `${at}[1].patches[2].path: "a/b" is not a JSON Pointer: it must start with "/"`,
      `${at}[1].patches[2].value: the value starts like JSON but is not: ${(() => { try { JSON.parse('{bad'); } catch (err) { return (err as Error).message; } return ''; })()}`,
      `${at}[2].conditions.labelSelector.matchExpressions[0]: unknown operator "Near" (use In, NotIn, Exists or DoesNotExist)`,
      `${at}[2].conditions.matches[0].path is required`,
      `${at}[2]: only one of patches, mergePatches and strategicPatches may be given (it has patches and mergePatches)`,
      `${at}[3].strategicPatches[0].patchData must be an object`,
      `${at}[3].strategicPatches[1].patchData is required (a JSON or YAML document)`,
      `${at}[4]: no patch: give patches, mergePatches or strategicPatches`,
    ]);
  });
  it('checks the file: one data entry, YAML, version v1, rules present, no unknown fields', () => {
    expect(parse('', {})).toEqual({ errors: ['ConfigMap s/m must hold exactly one data entry, the rules file (it has none)'] });
    expect(parse('', { a: 'x', b: 'y' })).toEqual({ errors: ['ConfigMap s/m must hold exactly one data entry, the rules file (it has "a", "b")'] });
    expect(errors('version: v2\nresourceModifierRules: []\nextra: 1')).toEqual([
      'ConfigMap s/m, data "rules.yaml": unknown field "extra" (allowed: version, resourceModifierRules)',
      'ConfigMap s/m, data "rules.yaml": unsupported version "v2" (only v1)',
      'ConfigMap s/m, data "rules.yaml": resourceModifierRules must be a non-empty list',
    ]);
    expect(errors('a: [')[0]).toMatch(/^ConfigMap s\/m, data "rules.yaml" is not YAML: /);
    expect(errors('version: v1\nresourceModifierRules: [{conditions: {groupResource: pods, resourceNameRegex: "web\\\\z"}, patches: [{operation: remove, path: /a}]}]'))
      .toEqual(['ConfigMap s/m, data "rules.yaml": resourceModifierRules[0].conditions.resourceNameRegex: \\z is RE2 syntax with no JavaScript equivalent here']);
    expect(errors('version: V1\nresourceModifierRules: [{conditions: {groupResource: pods, resourceNameRegex: "(?i)^WEB"}, patches: [{operation: Remove, path: /a}]}]')).toEqual([]);
  });
});

describe('condition namespaces (docs/restore-transforms.md "Namespace globs")', () => {
  const rules = (namespaces: string): ReturnType<typeof parseResourceModifiers> => parseResourceModifiers({
    'rules.yaml': `version: v1\nresourceModifierRules:\n- conditions: {groupResource: configmaps, namespaces: ${namespaces}}\n  patches: [{operation: add, path: /data/x, value: "1"}]\n`,
  }, 'ConfigMap s/m');
  const matches = (namespaces: string, ns: string): boolean => {
    const r = rules(namespaces);
    if ('errors' in r) throw new Error(r.errors.join('; '));
    const rule = r.modifiers.rules[0];
    if (rule === undefined) throw new Error('no rule');
    return ruleMatches(rule, { groupResource: 'configmaps', sourceNamespace: ns, namespaced: true }, { metadata: { name: 'c', namespace: ns } });
  };

  it('takes *, ?, [abc], [a-z] and {a,b}', () => {
    expect(matches('["team-*"]', 'team-a')).toBe(true);
    expect(matches('["team-*"]', 'ops')).toBe(false);
    expect(matches('["team-?"]', 'team-b')).toBe(true);
    expect(matches('["team-?"]', 'team-bb')).toBe(false);
    expect(matches('["team-[ab]"]', 'team-a')).toBe(true);
    expect(matches('["team-[ab]"]', 'team-c')).toBe(false);
    expect(matches('["team-[a-c]"]', 'team-c')).toBe(true);
    expect(matches('["team-[a-c]"]', 'team-d')).toBe(false);
    expect(matches('["{ops,team-?}"]', 'ops')).toBe(true);
    expect(matches('["{ops,team-?}"]', 'team-z')).toBe(true);
    expect(matches('["{ops,team-?}"]', 'dev')).toBe(false);
    expect(matches('[dev]', 'dev')).toBe(true);
  });

  it('refuses an entry that is neither a name nor a valid pattern, naming the rule and the entry', () => {
    const at = 'ConfigMap s/m, data "rules.yaml": resourceModifierRules[0].conditions.namespaces';
    expect(rules('["team-[a"]')).toEqual({ errors: [`${at}[0]: "team-[a" is not a valid namespace pattern: a "[" is never closed by "]"`] });
    expect(rules('[ok, "Team_A"]')).toEqual({
      errors: [`${at}[1]: "Team_A" is not a valid namespace name or pattern (lowercase letters, digits and "-", with the wildcards "*", "?", "[abc]", "[a-z]" and "{a,b}")`],
    });
  });
});
