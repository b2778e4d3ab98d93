import { describe, expect, it } from 'vitest';
import { createRedactor, errorMessage, jsonSyntaxProblem, redact, safeErrorMessage, sanitizeMessage, secretForms } from './errors.js';

describe('errorMessage', () => {
  it('handles errors, strings, objects and nothing', () => {
    expect(errorMessage(new Error('boom'))).toBe('boom');
    expect(errorMessage('plain')).toBe('plain');
    expect(errorMessage({ message: 'from object' })).toBe('from object');
    expect(errorMessage({ code: 42 })).toBe('{"code":42}');
    expect(errorMessage(undefined)).toBe('unknown error');
    expect(errorMessage(null)).toBe('unknown error');
    expect(errorMessage(7)).toBe('7');
    const e = new Error('');
    e.name = 'TimeoutError';
    expect(errorMessage(e)).toBe('TimeoutError');
  });

  it('follows cause chains without repeating text the wrapper already has', () => {
    const inner = new Error('connect ECONNREFUSED 127.0.0.1:9000');
    expect(errorMessage(new Error('uploading the log', { cause: inner }))).toBe(
      'uploading the log: connect ECONNREFUSED 127.0.0.1:9000',
    );
    expect(errorMessage(new Error(`uploading: ${inner.message}`, { cause: inner }))).toBe(
      'uploading: connect ECONNREFUSED 127.0.0.1:9000',
    );
  });

  it('lists the errors of an AggregateError and survives cycles', () => {
    expect(errorMessage(new AggregateError([new Error('a'), 'b'], 'two failed'))).toBe('two failed: a; b');
    const e = new Error('loop');
    (e as { cause?: unknown }).cause = e;
    expect(errorMessage(e)).toBe('loop');
  });
});

describe('redact', () => {
  it('replaces a secret and its base64, base64url, escaped and url-encoded forms', () => {
    const secret = 'p@ss/word+1"x';
    const b64 = Buffer.from(secret).toString('base64');
    const b64url = Buffer.from(secret).toString('base64url');
    const text = `raw=${secret} data=${b64} url=${b64url} json=${JSON.stringify({ s: secret })} q=${encodeURIComponent(secret)}`;
    const out = redact(text, [secret]);
    expect(out).not.toContain(secret);
    expect(out).not.toContain(b64);
    expect(out).not.toContain(b64url);
    expect(out).not.toContain(encodeURIComponent(secret));
    expect(out).toBe('raw=[REDACTED] data=[REDACTED] url=[REDACTED] json={"s":"[REDACTED]"} q=[REDACTED]');
  });

  it('replaces the longest secret first and ignores empty ones', () => {
    expect(redact('tokenABCDEF and tokenABC', ['tokenABC', 'tokenABCDEF', ''])).toBe('[REDACTED] and [REDACTED]');
    expect(redact('nothing here', [])).toBe('nothing here');
  });

  it('treats regex characters in secrets literally', () => {
    expect(redact('a.b*c and axbxc', ['a.b*c'])).toBe('[REDACTED] and axbxc');
  });

  it('secretForms lists distinct forms', () => {
    expect(secretForms('')).toEqual([]);
    expect(secretForms('abcd')).toEqual(['abcd', 'YWJjZA==', 'YWJjZA']);
    expect(createRedactor([])('same')).toBe('same');
  });
});

describe('sanitizeMessage', () => {
  it.each([
    ['Get "https://AKIDEXAMPLE:wJalrXUtnFEMI@minio.local:9000/bucket": EOF', 'Get "https://[REDACTED]@minio.local:9000/bucket": EOF'],
    [
      'GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F2024&X-Amz-Signature=abc123&X-Amz-Security-Token=tok',
      'GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Security-Token=[REDACTED]',
    ],
    ['https://acct.blob.core.windows.net/c/b?sv=2020&sig=Zm9vYmFy', 'https://acct.blob.core.windows.net/c/b?sv=2020&sig=[REDACTED]'],
    ['request failed: Authorization: Bearer abcdefghijklmnop', 'request failed: Authorization: [REDACTED]'],
    ['sent bearer abcdefghijklmnop to the server', 'sent bearer [REDACTED] to the server'],
    ['config password=hunter22 user=bob', 'config password=[REDACTED] user=bob'],
    ['{"secretAccessKey":"wJalrXUtnFEMI/K7MDENG","region":"us-east-1"}', '{"secretAccessKey":"[REDACTED]","region":"us-east-1"}'],
    ['aws_secret_access_key = wJalrXUtnFEMI', 'aws_secret_access_key = [REDACTED]'],
    ['key id AKIAIOSFODNN7EXAMPLE was rejected', 'key id [REDACTED] was rejected'],
    ['token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl expired', 'token [REDACTED] expired'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- trailing', '[REDACTED] trailing'],
  ])('scrubs %j', (input, expected) => {
    expect(sanitizeMessage(input)).toBe(expected);
  });

  it('leaves ordinary messages alone', () => {
    const msg = 'secrets "db-creds" is forbidden: User "system:serviceaccount:stowage:stowage" cannot list resource "secrets"';
    expect(sanitizeMessage(msg)).toBe(msg);
    expect(sanitizeMessage('backup ns/b1 completed with 12 items in https://minio.local:9000/bucket')).toBe(
      'backup ns/b1 completed with 12 items in https://minio.local:9000/bucket',
    );
  });

  it('safeErrorMessage combines message, sanitising and redaction', () => {
    const err = new Error('upload to https://u:p@h/b failed', { cause: new Error('bad key s3cr3tvalue') });
    expect(safeErrorMessage(err, ['s3cr3tvalue'])).toBe('upload to https://[REDACTED]@h/b failed: bad key [REDACTED]');
  });
});

describe('jsonSyntaxProblem', () => {
  const problem = (text: string): string => {
    try {
      JSON.parse(text);
    } catch (err) {
      return jsonSyntaxProblem(err);
    }
    throw new Error('parsed');
  };
  it('says where the JSON is broken without quoting it', () => {
    const secret = 'c2VjcmV0LXZhbHVl';
    for (const text of [`x${secret}`, `{"password":"${secret}" x`, `{"password":"${secret}`, `{"a":1}${secret}`]) {
      expect(problem(text)).not.toContain(secret);
      expect(problem(text)).toMatch(/^(syntax error|the text ends too early)/);
    }
    expect(problem('{"a":1 x')).toBe('syntax error at character 7');
  });
});
