import { describe, expect, it } from 'vitest';
import {
  anyLabelSelectorMatches,
  isEmptyLabelSelector,
  labelKeyProblem,
  labelSelectorMatches,
  labelSelectorToString,
  labelValueProblem,
  parseLabelSelector,
  validateLabelSelector,
  type LabelSelector,
} from './labels.js';

describe('labelSelectorMatches', () => {
  const labels = { app: 'web', tier: 'front', 'example.com/team': 'a' };

  it('matches everything with an absent or empty selector', () => {
    expect(labelSelectorMatches(undefined, labels)).toBe(true);
    expect(labelSelectorMatches(null, undefined)).toBe(true);
    expect(labelSelectorMatches({}, {})).toBe(true);
  });

  it('requires every matchLabels pair', () => {
    expect(labelSelectorMatches({ matchLabels: { app: 'web', tier: 'front' } }, labels)).toBe(true);
    expect(labelSelectorMatches({ matchLabels: { app: 'web', tier: 'back' } }, labels)).toBe(false);
    expect(labelSelectorMatches({ matchLabels: { app: 'web' } }, undefined)).toBe(false);
    expect(labelSelectorMatches({ matchLabels: { '': '' } }, {})).toBe(false);
  });

  it.each<[LabelSelector, boolean]>([
    [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'api'] }] }, true],
    [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['api'] }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'In', values: [''] }] }, false],
    [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['api'] }] }, true],
    [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, true],
    [{ matchExpressions: [{ key: 'example.com/team', operator: 'Exists' }] }, true],
    [{ matchExpressions: [{ key: 'missing', operator: 'Exists' }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'DoesNotExist' }] }, true],
    [{ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, false],
    [{ matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['back'] }] }, false],
  ])('%j -> %s', (selector, expected) => {
    expect(labelSelectorMatches(selector, labels)).toBe(expected);
  });

  it('matches nothing for an unknown operator', () => {
    const sel = { matchExpressions: [{ key: 'app', operator: 'Gt', values: ['1'] }] } as unknown as LabelSelector;
    expect(labelSelectorMatches(sel, labels)).toBe(false);
  });

  it('does not treat inherited properties as labels', () => {
    expect(labelSelectorMatches({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {})).toBe(false);
  });

  it('anyLabelSelectorMatches ORs selectors and matches all for none', () => {
    expect(anyLabelSelectorMatches([], labels)).toBe(true);
    expect(anyLabelSelectorMatches(undefined, labels)).toBe(true);
    expect(anyLabelSelectorMatches([{ matchLabels: { app: 'x' } }, { matchLabels: { tier: 'front' } }], labels)).toBe(true);
    expect(anyLabelSelectorMatches([{ matchLabels: { app: 'x' } }, { matchLabels: { tier: 'y' } }], labels)).toBe(false);
  });
});

describe('labelSelectorToString', () => {
  it('renders every operator, sorted by key', () => {
    const sel: LabelSelector = {
      matchLabels: { z: '1', a: 'b' },
      matchExpressions: [
        { key: 'm', operator: 'In', values: ['y', 'x'] },
        { key: 'n', operator: 'NotIn', values: ['q'] },
        { key: 'e', operator: 'Exists' },
        { key: 'f', operator: 'DoesNotExist' },
      ],
    };
    expect(labelSelectorToString(sel)).toBe('a=b,e,!f,m in (x,y),n notin (q),z=1');
  });

  it('renders nothing for an empty selector', () => {
    expect(labelSelectorToString(undefined)).toBe('');
    expect(labelSelectorToString({})).toBe('');
  });

  it('refuses an operator it cannot render', () => {
    const sel = { matchExpressions: [{ key: 'a', operator: 'Gt' }] } as unknown as LabelSelector;
    expect(() => labelSelectorToString(sel)).toThrow('label selector operator "Gt" for key "a" has no string form');
  });
});

describe('parseLabelSelector', () => {
  it('parses every form', () => {
    expect(parseLabelSelector('a=b,c!=d,e in (x, y),f notin (z),g,!h,i==j')).toEqual({
      matchLabels: { a: 'b', i: 'j' },
      matchExpressions: [
        { key: 'c', operator: 'NotIn', values: ['d'] },
        { key: 'e', operator: 'In', values: ['x', 'y'] },
        { key: 'f', operator: 'NotIn', values: ['z'] },
        { key: 'g', operator: 'Exists' },
        { key: 'h', operator: 'DoesNotExist' },
      ],
    });
  });

  it('accepts prefixed keys, empty values and spaces', () => {
    expect(parseLabelSelector(' app.kubernetes.io/name = web , empty= ')).toEqual({
      matchLabels: { 'app.kubernetes.io/name': 'web', empty: '' },
    });
    expect(parseLabelSelector('')).toEqual({});
    expect(parseLabelSelector('   ')).toEqual({});
  });

  it('keeps the meaning of a repeated equality key', () => {
    const sel = parseLabelSelector('a=b,a=c');
    expect(sel).toEqual({ matchLabels: { a: 'b' }, matchExpressions: [{ key: 'a', operator: 'In', values: ['c'] }] });
    expect(labelSelectorMatches(sel, { a: 'b' })).toBe(false);
  });

  it('round-trips with labelSelectorToString', () => {
    // Canonical strings survive parse -> render unchanged; others become canonical.
    for (const text of ['a=b', 'a=b,c in (x,y)', 'e,!f', 'n notin (q),z=1']) {
      expect(labelSelectorToString(parseLabelSelector(text))).toBe(text);
    }
    expect(labelSelectorToString(parseLabelSelector('!f, e, c in (y,x)'))).toBe('c in (x,y),e,!f');
  });

  it.each([
    ['a in x', 'label selector "a in x": expected "(" after "in" at position 6'],
    ['a in (x', 'label selector "a in (x": expected "," or ")" in the values of "a" at position 8'],
    ['a in ()', 'label selector "a in ()": "in" needs at least one value at position 3'],
    ['a gt (1)', 'label selector "a gt (1)": unknown operator "gt" (use =, ==, !=, in, notin) at position 3'],
    ['bad key!=v', 'label selector "bad key!=v": label key "bad key" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric at position 1'],
    ['bad key = v', 'label selector "bad key = v": label key "bad key" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric at position 1'],
    ['a=b c=d', 'label selector "a=b c=d": expected "," between requirements, found "c" at position 5'],
    ['a=b,', 'label selector "a=b,": expected a label key, found the end at position 5'],
    ['!', 'label selector "!": expected a label key after "!", found the end at position 2'],
    ['=b', 'label selector "=b": expected a label key, found "=" at position 1'],
    ['-a=b', 'label selector "-a=b": label key "-a" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric at position 1'],
    ['a=-b', 'label selector "a=-b": label value "-b" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric at position 3'],
    ['Bad_Prefix/a=b', 'label selector "Bad_Prefix/a=b": label key "Bad_Prefix/a" has prefix "Bad_Prefix", which is not a DNS subdomain at position 1'],
  ])('rejects %j', (text, message) => {
    expect(() => parseLabelSelector(text)).toThrow(message);
  });
});

describe('validation', () => {
  it('labelKeyProblem and labelValueProblem', () => {
    expect(labelKeyProblem('app')).toBeUndefined();
    expect(labelKeyProblem('example.com/app')).toBeUndefined();
    expect(labelKeyProblem('/app')).toBe('label key "/app" has an empty prefix before "/"');
    expect(labelKeyProblem('example.com/')).toBe('label key "example.com/" has an empty name');
    expect(labelKeyProblem('a'.repeat(64))).toBe(`label key "${'a'.repeat(64)}" has a name longer than 63 characters`);
    expect(labelValueProblem('')).toBeUndefined();
    expect(labelValueProblem('v1.2_3-x')).toBeUndefined();
    expect(labelValueProblem('b'.repeat(64))).toBe(`label value "${'b'.repeat(64)}" is longer than 63 characters`);
  });

  it('validateLabelSelector reports every problem with its path', () => {
    expect(
      validateLabelSelector(
        {
          matchLabels: { 'bad key': 'ok', good: 'bad value' },
          matchExpressions: [
            { key: 'a', operator: 'In', values: [] },
            { key: 'b', operator: 'Exists', values: ['x'] },
            { key: 'c', operator: 'Gt', values: ['1'] },
            { key: 'd', operator: 'NotIn', values: ['-x'] },
          ],
        },
        'orLabelSelectors[1]',
      ),
    ).toEqual([
      'orLabelSelectors[1].matchLabels: label key "bad key" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric',
      'orLabelSelectors[1].matchLabels["good"]: label value "bad value" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric',
      'orLabelSelectors[1].matchExpressions[0]: operator In needs at least one value',
      'orLabelSelectors[1].matchExpressions[1]: operator Exists must not have values',
      'orLabelSelectors[1].matchExpressions[2]: unknown operator "Gt" (use In, NotIn, Exists or DoesNotExist)',
      'orLabelSelectors[1].matchExpressions[3]: label value "-x" must consist of alphanumerics, "-", "_" or ".", and start and end with an alphanumeric',
    ]);
    expect(validateLabelSelector(undefined, 'labelSelector')).toEqual([]);
    expect(validateLabelSelector({ matchLabels: { app: 'web' } }, 'labelSelector')).toEqual([]);
  });

  it('isEmptyLabelSelector', () => {
    expect(isEmptyLabelSelector(undefined)).toBe(true);
    expect(isEmptyLabelSelector({ matchLabels: {}, matchExpressions: [] })).toBe(true);
    expect(isEmptyLabelSelector({ matchLabels: { a: 'b' } })).toBe(false);
  });
});
