// A recording reverse proxy in front of the test S3 server: every request is forwarded unchanged
// (Host header included, so SigV4 signatures still verify) and its method, path, query and headers
// are kept, so tests can check what reached the store (server-side encryption headers, presigned
// queries). With `tls`, it serves https with a fresh self-signed certificate for 127.0.0.1 (SSE-C
// is refused over plain http) and forwards plain http to the store.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createTlsIdentity } from '../../src/webhook/certs.js';

export interface RecordedRequest {
  method: string;
  /** Path without the query, decoded: `/bucket/key`. */
  path: string;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: http.IncomingHttpHeaders;
}

export interface RecordingProxy {
  endpoint: string;
  /** PEM of the certificate clients must trust (tls only). */
  caCert: string | undefined;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string, opts: { tls?: boolean } = {}): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    requests.push({ method: req.method ?? 'GET', path: decodeURIComponent(url.pathname), query: url.searchParams, headers: { ...req.headers } });
    const out = http.request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(out);
  };
  const identity = opts.tls === true ? createTlsIdentity(['127.0.0.1']) : undefined;
  const server = identity !== undefined ? https.createServer({ cert: identity.cert, key: identity.key }, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `${identity !== undefined ? 'https' : 'http'}://127.0.0.1:${port}`,
    caCert: identity?.cert,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** S3's operation for a recorded request (path-style, the subset Stowage sends). */
export function s3Operation(r: RecordedRequest): string {
  const q = r.query;
  const key = r.path.split('/').slice(2).join('/');
  switch (r.method) {
    case 'PUT':
      return q.has('partNumber') ? 'UploadPart' : key === '' ? 'CreateBucket' : 'PutObject';
    case 'POST':
      return q.has('uploads') ? 'CreateMultipartUpload' : q.has('uploadId') ? 'CompleteMultipartUpload' : 'Post';
    case 'GET':
      if (key === '') return q.has('uploads') ? 'ListMultipartUploads' : 'ListObjects';
      return 'GetObject';
    case 'HEAD':
      return key === '' ? 'HeadBucket' : 'HeadObject';
    case 'DELETE':
      return q.has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject';
    default:
      return r.method;
  }
}
