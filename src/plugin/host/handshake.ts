// Parses the go-plugin handshake line a plugin prints on stdout once it serves:
//   CORE-VERSION|APP-VERSION|NETWORK|ADDRESS|PROTOCOL[|BASE64-DER-CERT]
import net from 'node:net';

export interface Handshake {
  coreVersion: number;
  appVersion: number;
  network: 'unix' | 'tcp';
  address: string;
  protocol: 'grpc';
  /** Base64 DER server certificate, when the plugin serves mTLS. */
  serverCert?: string;
}

export interface HandshakeExpectations {
  /** Names the plugin in errors: its executable, and its plugin names when known. */
  plugin: string;
  coreVersion: number;
  appVersions: readonly number[];
}

export class HandshakeError extends Error {
  override readonly name = 'HandshakeError';
}

const FORMAT = 'CORE-VERSION|APP-VERSION|unix|SOCKET-PATH|grpc';

function quote(line: string): string {
  const shown = line.length > 200 ? `${line.slice(0, 200)}...` : line;
  return JSON.stringify(shown);
}

/**
 * Whether a tcp handshake address (`HOST:PORT`, IPv6 hosts in brackets) is a literal loopback IP:
 * 127.0.0.0/8 or ::1. The host connects without TLS: a plugin listening elsewhere would be
 * reachable (and impersonable) from the network. Names (even `localhost`) are refused, since
 * resolving them could lead anywhere.
 */
export function isLoopbackAddress(address: string): boolean {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address);
  if (m === null) return false;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return false;
  const host = m[1] ?? m[2] ?? '';
  if (m[1] !== undefined) return net.isIPv6(host) && new net.SocketAddress({ address: host, family: 'ipv6' }).address === '::1';
  return net.isIPv4(host) && host.split('.')[0] === '127';
}

function parseVersion(field: string): number | undefined {
  return /^\d{1,9}$/.test(field) ? Number(field) : undefined;
}

/** Parses `line`; throws a HandshakeError naming the plugin and, for version problems, both sides' versions. */
export function parseHandshake(line: string, expect: HandshakeExpectations): Handshake {
  const text = line.replace(/\r?\n$/, '').trim();
  const malformed = (why: string): HandshakeError =>
    new HandshakeError(`plugin ${expect.plugin}: malformed handshake line ${quote(text)}: ${why} (expected ${FORMAT})`);
  const parts = text.split('|');
  if (parts.length < 5 || parts.length > 6) throw malformed(`it has ${parts.length} fields, not 5 or 6`);
  const [coreField, appField, network, address, protocol, cert] = parts as [string, string, string, string, string, string | undefined];
  const core = parseVersion(coreField);
  if (core === undefined) throw malformed(`core version ${JSON.stringify(coreField)} is not a number`);
  if (core !== expect.coreVersion) {
    throw new HandshakeError(
      `plugin ${expect.plugin} speaks core protocol version ${core}, but this server speaks core version ${expect.coreVersion}`,
    );
  }
  const app = parseVersion(appField);
  if (app === undefined) throw malformed(`plugin protocol version ${JSON.stringify(appField)} is not a number`);
  if (!expect.appVersions.includes(app)) {
    throw new HandshakeError(
      `plugin ${expect.plugin} speaks plugin protocol version ${app}, but this server supports version(s) ${expect.appVersions.join(', ')}; ` +
        'use a plugin built for this Stowage release',
    );
  }
  if (network !== 'unix' && network !== 'tcp') throw malformed(`network ${JSON.stringify(network)} is neither "unix" nor "tcp"`);
  if (address === '') throw malformed('the address is empty');
  if (network === 'unix' && !address.startsWith('/')) throw malformed(`unix socket path ${JSON.stringify(address)} is not absolute`);
  if (network === 'tcp' && !isLoopbackAddress(address)) {
    throw new HandshakeError(
      `plugin ${expect.plugin} serves on tcp address ${quote(address)}, which is not a loopback address: ` +
        'a tcp plugin must listen on 127.0.0.0/8 or [::1] (IP:PORT), or use a unix socket',
    );
  }
  if (protocol !== 'grpc') throw malformed(`protocol ${JSON.stringify(protocol)} is not "grpc" (Stowage plugins speak gRPC only)`);
  const out: Handshake = { coreVersion: core, appVersion: app, network, address, protocol: 'grpc' };
  if (cert !== undefined && cert !== '') out.serverCert = cert;
  return out;
}
