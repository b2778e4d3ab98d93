import { describe, expect, it } from 'vitest';
import { parseListenAddress } from './address.js';

describe('parseListenAddress', () => {
  it.each([
    [':8085', { host: undefined, port: 8085 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['localhost:9090', { host: 'localhost', port: 9090 }],
    ['[::1]:8085', { host: '::1', port: 8085 }],
    ['[::]:80', { host: '::', port: 80 }],
  ])('%s', (text, expected) => {
    expect(parseListenAddress(text)).toEqual(expected);
  });

  it.each(['8085', ':', 'host:', ':70000', 'a:b:1', ':80x', ''])('rejects %j', (text) => {
    expect(() => parseListenAddress(text, 'metrics-address')).toThrow(
      `metrics-address "${text}" is not an address like ":8085" or "127.0.0.1:8085"`,
    );
  });
});
