// The download fallback for a server whose own URL is not reachable from the CLI (a server in a
// pod advertises its pod IP): the CLI looks for the server pod and port-forwards through the
// apiserver. This control plane has no kubelet, so the tunnel itself cannot open; the test proves
// the CLI finds the pod and asks the apiserver for the port-forward, and says why it failed.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { CORE, type DynamicClient } from '../../src/kube/index.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type RunOptions } from './helpers.js';

describe('downloads through a port-forward when the server URL is unreachable', () => {
  const ns = uniqueName('cli-pf');
  const app = uniqueName('cli-pfapp');
  const loc = filesystemLocation();
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;

  beforeAll(async () => {
    const kubeconfig = inject('cluster').kubeconfigPath;
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureNamespace(client, app);
    await client.create(CORE.configMaps, app, { metadata: { name: 'one' }, data: { a: 'b' } });
    // Port 1 on loopback refuses connections: the advertised URL is unreachable, as a pod IP is from outside.
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc, env: { STOWAGE_DOWNLOAD_URL: 'http://127.0.0.1:1' } });
    opts = { kubeconfig, namespace: ns };
    const b = await runCli(['backup', 'create', 'b', '--include-namespaces', app, '--wait'], opts);
    expect(b.code, show(b)).toBe(0);
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('says so when there is no server pod to port-forward to', async () => {
    const r = await runCli(['backup', 'logs', 'b'], opts);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr.trim()).toBe(
      `error: cannot reach the Stowage server at 127.0.0.1:1 to download the log of backup "b" (connect ECONNREFUSED 127.0.0.1:1), ` +
        `and found no running server pod in namespace ${ns} to port-forward to`,
    );
  });

  it('port-forwards to the running server pod through the apiserver, and names the pod when that fails', async () => {
    await client.create(CORE.pods, ns, { metadata: { name: 'stowage-server-0', labels: { 'app.kubernetes.io/name': 'stowage' } }, spec: {
      // The server's namespace enforces Pod Security `restricted` (deploy/00-namespace.yaml), as the real pod's spec meets.
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'server', image: 'stowage', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
    } });
    await client.patchStatus(CORE.pods, ns, 'stowage-server-0', { status: { phase: 'Running', podIP: '10.244.0.9' } });
    const r = await runCli(['backup', 'logs', 'b'], opts);
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: cannot reach the Stowage server at 127\\.0\\.0\\.1:1, and the port-forward to pod ${ns}/stowage-server-0 failed: .+\\n$`));
  });
});
