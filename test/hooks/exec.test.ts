// hooks/exec.ts against the real API server: what it refuses before any container is reached (the
// control plane of the integration tests has no node, so its pods stay Pending). Commands running in
// real containers are in test/incluster/hooks.suite.ts, on the real node.
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execInPod, type ExecConnection } from '../../src/hooks/index.js';
import { adminConfig, createNamespace } from '../support/kube.js';

let kc: k8s.KubeConfig;
let ns: string;

beforeAll(async () => {
  kc = adminConfig();
  ns = await createNamespace(kc, 'hooks-exec');
  await kc.makeApiClient(k8s.CoreV1Api).createNamespacedPod({
    namespace: ns, body: { metadata: { name: 'app' }, spec: { containers: [{ name: 'main', image: 'local.invalid/none' }] } },
  });
});

afterAll(async () => {
  await kc.makeApiClient(k8s.CoreV1Api).deleteNamespace({ name: ns });
});

const run = (conn: ExecConnection, pod: string, container: string) =>
  execInPod(conn, { namespace: ns, pod, container, command: ['true'] }, { timeoutMs: 30_000 });

describe('execInPod against the API server', () => {
  it('a user without pods/exec is refused: the message names the user, the pod and the right', async () => {
    const o = await run({ kubeConfig: kc, impersonate: { username: 'hooks-nobody', groups: ['system:authenticated'] } }, 'app', 'main');
    expect(o.httpStatus).toBe(403);
    expect(o.exitCode).toBeUndefined();
    expect(o.timedOut).toBe(false);
    expect(o.error).toMatch(new RegExp(`^hooks-nobody may not exec into pod ${ns}/app: lacks create pods/exec in namespace ${ns} \\(the API server said: pods "app" is forbidden: User "hooks-nobody" cannot (get|create) resource "pods/exec"`));
  });

  it('a container the pod does not have is named', async () => {
    const o = await run({ kubeConfig: kc }, 'app', 'sidecar');
    expect(o).toMatchObject({ httpStatus: 400, exitCode: undefined, error: `container "sidecar" not found in pod ${ns}/app (the API server said: container sidecar is not valid for pod app)` });
  });

  it('a pod that does not exist, and one not on a node, say so', async () => {
    expect((await run({ kubeConfig: kc }, 'ghost', 'main')).error).toBe(`pod ${ns}/ghost not found (the API server said: pods "ghost" not found)`);
    expect((await run({ kubeConfig: kc }, 'app', 'main')).error)
      .toBe(`the API server refused the exec into pod ${ns}/app (container "main"): HTTP 400 (the API server said: pod app does not have a host assigned)`);
  });
});
