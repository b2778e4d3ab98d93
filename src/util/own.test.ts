import { describe, expect, it } from 'vitest';
import { getOwn, setOwn } from './own.js';

describe('own-property helpers', () => {
  it('set __proto__ as data, leaving the prototype alone', () => {
    const o: Record<string, unknown> = {};
    setOwn(o, '__proto__', 'text');
    setOwn(o, 'k', { a: 1 });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(Object.keys(o)).toEqual(['__proto__', 'k']);
    expect(JSON.stringify(o)).toBe('{"__proto__":"text","k":{"a":1}}');
    const polluted: Record<string, unknown> = {};
    setOwn(polluted, '__proto__', { injected: true });
    expect(({} as Record<string, unknown>).injected).toBeUndefined();
    expect(Object.getPrototypeOf(polluted)).toBe(Object.prototype);
  });

  it('get only own properties', () => {
    const parsed = JSON.parse('{"__proto__":"v","a":1}') as Record<string, unknown>;
    expect(getOwn(parsed, '__proto__')).toBe('v');
    expect(getOwn({}, '__proto__')).toBeUndefined();
    expect(getOwn({}, 'toString')).toBeUndefined();
    expect(getOwn(undefined, 'a')).toBeUndefined();
    expect(getOwn(parsed, 'a')).toBe(1);
  });
});
