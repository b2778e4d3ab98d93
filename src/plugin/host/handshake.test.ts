import { describe, expect, it } from 'vitest';
import { HandshakeError, isLoopbackAddress, parseHandshake } from './handshake.js';

const expect1 = { plugin: '/plugins/acme (acme.io/store)', coreVersion: 1, appVersions: [1] };

function errorOf(line: string): HandshakeError {
  try {
    parseHandshake(line, expect1);
  } catch (err) {
    if (err instanceof HandshakeError) return err;
    throw err;
  }
  throw new Error(`parseHandshake accepted ${line}`);
}

describe('parseHandshake', () => {
  it('parses a unix socket handshake', () => {
    expect(parseHandshake('1|1|unix|/tmp/stowage-plugin-x/plugin.sock|grpc\n', expect1)).toEqual({
      coreVersion: 1,
      appVersion: 1,
      network: 'unix',
      address: '/tmp/stowage-plugin-x/plugin.sock',
      protocol: 'grpc',
    });
  });

  it('keeps the optional certificate and accepts tcp', () => {
    const hs = parseHandshake('1|1|tcp|127.0.0.1:4000|grpc|MIIBx', expect1);
    expect(hs.network).toBe('tcp');
    expect(hs.serverCert).toBe('MIIBx');
  });

  it('accepts tcp on loopback only (127.0.0.0/8, ::1), and says why otherwise', () => {
    for (const ok of ['127.0.0.1:4000', '127.10.20.30:1', '[::1]:65535', '[0:0:0:0:0:0:0:1]:4000']) {
      expect(parseHandshake(`1|1|tcp|${ok}|grpc`, expect1).address).toBe(ok);
    }
    for (const bad of ['10.0.0.5:4000', '0.0.0.0:4000', '[::]:4000', 'localhost:4000', '128.0.0.1:4000', '[::ffff:10.0.0.1]:4000', '127.0.0.1', '127.0.0.1:0', '127.0.0.1:70000', 'evil.example.com:127']) {
      expect(errorOf(`1|1|tcp|${bad}|grpc`).message).toBe(
        `plugin /plugins/acme (acme.io/store) serves on tcp address ${JSON.stringify(bad)}, which is not a loopback address: ` +
          'a tcp plugin must listen on 127.0.0.0/8 or [::1] (IP:PORT), or use a unix socket',
      );
    }
    expect(isLoopbackAddress('127.0.0.1:80')).toBe(true);
    expect(isLoopbackAddress('192.168.1.1:80')).toBe(false);
  });

  it('names the plugin and both versions when the plugin protocol version is wrong', () => {
    const err = errorOf('1|2|unix|/tmp/s|grpc');
    expect(err.message).toContain('/plugins/acme (acme.io/store)');
    expect(err.message).toContain('plugin protocol version 2');
    expect(err.message).toContain('supports version(s) 1');
  });

  it('names both core versions when the core version is wrong', () => {
    const err = errorOf('3|1|unix|/tmp/s|grpc');
    expect(err.message).toContain('core protocol version 3');
    expect(err.message).toContain('core version 1');
  });

  it.each([
    ['hello world', 'it has 1 fields'],
    ['1|1|unix|/tmp/s', 'it has 4 fields'],
    ['1|1|unix|/tmp/s|grpc|cert|extra', 'it has 7 fields'],
    ['x|1|unix|/tmp/s|grpc', 'core version "x" is not a number'],
    ['1|one|unix|/tmp/s|grpc', 'plugin protocol version "one" is not a number'],
    ['1|1|udp|/tmp/s|grpc', 'network "udp"'],
    ['1|1|unix||grpc', 'the address is empty'],
    ['1|1|unix|relative.sock|grpc', 'is not absolute'],
    ['1|1|unix|/tmp/s|netrpc', 'protocol "netrpc" is not "grpc"'],
  ])('rejects %j as malformed', (line, why) => {
    const err = errorOf(line);
    expect(err.message).toContain('malformed handshake line');
    expect(err.message).toContain(why);
    expect(err.message).toContain('/plugins/acme');
  });

  it('truncates very long lines in the error', () => {
    const err = errorOf('x'.repeat(5000));
    expect(err.message.length).toBeLessThan(600);
  });
});
