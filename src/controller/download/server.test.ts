import { describe, expect, it } from 'vitest';
import { baseURLFor, downloadServerOptions } from './server.js';

describe('download endpoint address', () => {
  it('advertises the bound host, the pod IP for a wildcard bind, or the configured URL', () => {
    expect(baseURLFor('127.0.0.1', 4000, undefined, undefined)).toBe('http://127.0.0.1:4000');
    expect(baseURLFor('', 8086, undefined, '10.1.2.3')).toBe('http://10.1.2.3:8086');
    expect(baseURLFor('::', 8086, undefined, 'fd00::5')).toBe('http://[fd00::5]:8086');
    expect(baseURLFor('0.0.0.0', 8086, undefined, undefined)).toBe('http://127.0.0.1:8086');
    expect(baseURLFor('', 8086, 'https://stowage.example/', '10.1.2.3')).toBe('https://stowage.example');
  });

  it('listens on loopback outside a cluster and on :8086 in a pod, unless told otherwise', () => {
    const unset = { downloadAddress: '', downloadUrl: '' };
    expect(downloadServerOptions(unset, {})).toEqual({ address: '127.0.0.1:0' });
    expect(downloadServerOptions(unset, { KUBERNETES_SERVICE_HOST: '10.0.0.1' })).toEqual({ address: ':8086' });
    expect(downloadServerOptions({ downloadAddress: ':9000', downloadUrl: 'http://x' }, { KUBERNETES_SERVICE_HOST: '10.0.0.1' })).toEqual({ address: ':9000', publicURL: 'http://x' });
  });
});
