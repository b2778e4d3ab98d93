// The pure parts of exec.ts; the exec itself runs against the real API server (test/hooks/exec.test.ts)
// and in real containers on the real node (test/incluster/hooks.suite.ts).
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ExecRefused, exitCodeOf, refusal, statusMessage, type ExecConnection, type ExecTarget } from './exec.js';

const target: ExecTarget = { namespace: 'shop', pod: 'db-0', container: 'db', command: ['true'] };
const asAlice: ExecConnection = { kubeConfig: new KubeConfig(), impersonate: { username: 'alice', groups: ['team-a'] } };
const asServer: ExecConnection = { kubeConfig: new KubeConfig() };

describe('exitCodeOf', () => {
  it('reads Success as 0 and NonZeroExitCode from its ExitCode cause', () => {
    expect(exitCodeOf({ status: 'Success' })).toBe(0);
    expect(exitCodeOf({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } })).toBe(3);
  });

  it('has no exit code for a command that did not run', () => {
    expect(exitCodeOf({ status: 'Failure', reason: 'InternalError', message: 'executable file not found in $PATH' })).toBeUndefined();
    expect(exitCodeOf({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: 'x' }] } })).toBeUndefined();
  });
});

describe('refusal', () => {
  it('names the user, the pod and the missing right on a 403, with the API server\'s words', () => {
    expect(refusal(asAlice, target, new ExecRefused(403, 'pods "db-0" is forbidden'))).toEqual({
      httpStatus: 403, error: 'alice may not exec into pod shop/db-0: lacks create pods/exec in namespace shop (the API server said: pods "db-0" is forbidden)',
    });
    expect(refusal(asServer, target, new ExecRefused(403, ''))).toEqual({
      httpStatus: 403, error: "the server's own account may not exec into pod shop/db-0: lacks create pods/exec in namespace shop",
    });
  });

  it('says which container is missing, or which pod', () => {
    expect(refusal(asAlice, target, new ExecRefused(400, 'container db is not valid for pod db-0')).error)
      .toBe('container "db" not found in pod shop/db-0 (the API server said: container db is not valid for pod db-0)');
    expect(refusal(asAlice, target, new ExecRefused(404, 'pods "db-0" not found')).error).toBe('pod shop/db-0 not found (the API server said: pods "db-0" not found)');
  });

  it('reports other refusals and connection failures plainly', () => {
    expect(refusal(asAlice, target, new ExecRefused(400, 'pod db-0 does not have a host assigned')).error)
      .toBe('the API server refused the exec into pod shop/db-0 (container "db"): HTTP 400 (the API server said: pod db-0 does not have a host assigned)');
    expect(refusal(asServer, target, new Error('connect ECONNREFUSED'))).toEqual({ error: 'could not connect to exec into pod shop/db-0: connect ECONNREFUSED' });
  });
});

describe('statusMessage', () => {
  it('takes a Status body\'s message, or the body cut short', () => {
    expect(statusMessage('{"kind":"Status","message":"nope"}')).toBe('nope');
    expect(statusMessage(`  ${'z'.repeat(600)} `)).toBe('z'.repeat(500));
  });
});
