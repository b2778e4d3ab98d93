// While the admission webhook is not in effect for the server's namespace, no run starts (issue 31,
// item 2). Against the real API server and the server binary (trust mode requester, probing every
// 200 ms): a Backup and a Restore created while the webhook works are queued behind runs held at
// their gates (fixtures/plugins/gate-plugin.mjs); the configuration is then deleted, and when the
// blockers end the queued runs are held for the webhook instead of starting, saying so in
// status.waitingFor, a Warning event, the server log and stowage_webhook_configuration_ok. Once the
// configuration is back they start and complete. A configuration that stops selecting the namespace
// counts as not in effect too.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newBackup, type Backup, type Restore } from '../../src/apis/v1/index.js';
import { CORE, type DynamicClient, type KubeObject } from '../../src/kube/index.js';
import { createInformer, type Informer } from '../../src/runtime/index.js';
import { ensureBuilt } from '../cli/helpers.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureNamespace, filesystemLocation, startServer, testClient, waitFinished, type RunningServer } from '../support/server.js';
import { MUTATING_WEBHOOK_CONFIGURATIONS, PROBE_NAME, type MutatingWebhookConfiguration } from '../../src/webhook/index.js';
import { suspendWebhook, webhookConfigurationNameFor } from '../support/webhook.js';
import { pluginDir, removeTempDirs, tempDir } from '../plugin/support.js';

type Run = Backup | Restore;
type Event = KubeObject & { type?: string; reason?: string; message?: string; involvedObject?: { kind?: string; name?: string } };
const EVENTS = { group: '', version: 'v1', resource: 'events', namespaced: true } as const;

describe('runs held while the admission webhook is not in effect', () => {
  const ns = uniqueName('hold');
  const src = uniqueName('hold-src');
  const target = `${src}-r`;
  const gates = tempDir('hold-gates');
  let client: DynamicClient;
  let server: RunningServer;
  let backups: Informer<Backup>;
  let restores: Informer<Restore>;
  let probeSeen = false;

  const open = (gate: string): void => fs.writeFileSync(path.join(gates, gate), '');
  const phaseOf = (inf: Informer<Run>, name: string): string => inf.get(`${ns}/${name}`)?.status?.phase ?? 'New';
  const waitPhase = (inf: Informer<Run>, name: string, phase: string): Promise<boolean> =>
    waitUntil(`${name} ${phase}`, () => Promise.resolve(phaseOf(inf, name) === phase ? true : undefined), 90_000, 50);
  const waitingFor = (inf: Informer<Run>, name: string, text: string): Promise<Run> =>
    waitUntil(`${name} waiting for: ${text}`, () => {
      const o = inf.get(`${ns}/${name}`);
      return Promise.resolve(o?.status?.waitingFor === text ? o : undefined);
    }, 90_000, 50);
  const metric = async (): Promise<string | undefined> => {
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    return /^stowage_webhook_configuration_ok (\d+)$/m.exec(text)?.[1];
  };
  const restore = (name: string): Promise<unknown> =>
    client.create(RESOURCES.Restore, ns, { apiVersion: 'stowage.dev/v1', kind: 'Restore', metadata: { name, namespace: ns }, spec: { backupName: 'base', namespaceMapping: { [src]: target } } });

  beforeAll(async () => {
    await ensureBuilt();
    const kc = inject('cluster').kubeconfigPath;
    client = testClient(kc);
    await ensureNamespace(client, src);
    for (const name of ['gate', 'one']) await client.create(CORE.configMaps, src, { metadata: { name }, data: { k: name } });
    // The plugin gets a minimal environment: its launcher sets where the gates are.
    const plugins = pluginDir({ gate: 'gate-plugin.mjs' }, { GATE_DIR: gates });
    server = await startServer({
      kubeconfigPath: kc, namespace: ns, location: filesystemLocation(),
      args: ['--plugin-dir', plugins.dir, '--webhook-probe-interval', '200ms'],
    });
    backups = createInformer<Backup>(client, RESOURCES.Backup, { namespace: ns });
    restores = createInformer<Restore>(client, RESOURCES.Restore, { namespace: ns });
    // The probe's dry-run Backup is never stored: the watch never sees it.
    backups.addHandler(() => {
      if (backups.get(`${ns}/${PROBE_NAME}`) !== undefined) probeSeen = true;
    });
    backups.start();
    restores.start();
    await Promise.all([backups.waitForSync(), restores.waitForSync()]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([backups?.stop(), restores?.stop()]);
    await server?.stop();
    for (const n of [src, target]) await client?.delete(CORE.namespaces, undefined, n).catch(() => undefined);
    removeTempDirs();
  });

  it('holds a queued backup and restore with the reason in status, an event, the log and the metric, and runs them once it is back', async () => {
    expect(await waitUntil('the gauge at 1', async () => ((await metric()) === '1' ? true : undefined))).toBe(true);
    // The start-up probe's outcome is logged.
    await server.waitForOutput(/admission webhook in effect for namespace \S+ \(MutatingWebhookConfiguration \S+\): backups and restores start/);
    // A backup to restore from (its gate open beforehand).
    open(`backup-${src}`);
    await client.create(RESOURCES.Backup, ns, newBackup('base', ns, { includedNamespaces: [src] }));
    expect((await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'base')).status?.phase).toBe('Completed');

    // Blockers held at their gates, and a run queued behind each, all created while the webhook works.
    await client.create(RESOURCES.Backup, ns, newBackup('blocker', ns, { includedNamespaces: [src] }));
    await waitPhase(backups, 'blocker', 'InProgress');
    await client.create(RESOURCES.Backup, ns, newBackup('queued', ns, { includedNamespaces: [src] }));
    await waitingFor(backups, 'queued', `waiting for backup "blocker" (overlapping namespaces: ${src})`);
    await restore('blocker-r');
    await waitPhase(restores, 'blocker-r', 'InProgress');
    await restore('queued-r');
    await waitUntil('queued-r queued', () => Promise.resolve(restores.get(`${ns}/queued-r`)?.status?.waitingFor?.startsWith('waiting for restore "blocker-r"') === true ? true : undefined), 90_000, 50);

    const inEffect = `admission webhook in effect for namespace ${ns} (MutatingWebhookConfiguration ${webhookConfigurationNameFor(ns)}): backups and restores start`;
    const inEffectLines = (): number => server.output().split(inEffect).length - 1;
    const before = inEffectLines();
    const restoreWebhook = await suspendWebhook(client, ns);
    const name = webhookConfigurationNameFor(ns);
    const reason = `the admission webhook is not in effect: the API server did not call it for a Backup created in namespace ${ns} (MutatingWebhookConfiguration ${name} is missing, or does not select this namespace)`;
    try {
      await server.waitForOutput(new RegExp(`${reason.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; no backup or restore starts until it is in effect again`), 90_000);
      expect(await metric()).toBe('0');

      open(`backup-${src}`);
      open(`restore-${src}`);
      expect((await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'blocker')).status?.phase).toBe('Completed');
      expect((await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'blocker-r')).status?.phase).toBe('Completed');
      // Woken by the blockers' end, they do not start: held for the webhook.
      await waitingFor(backups, 'queued', `${reason}; this backup starts once it is in effect again`);
      await waitingFor(restores, 'queued-r', `${reason}; this restore starts once it is in effect again`);
      const events = await waitUntil('the Warning events', async () => {
        const list = await client.listAll<Event>(EVENTS, { namespace: ns });
        const held = list.items.filter((e) => e.type === 'Warning' && e.reason === 'WebhookNotInEffect' && ['queued', 'queued-r'].includes(e.involvedObject?.name ?? ''));
        return held.length === 2 ? held : undefined;
      }, 90_000, 100);
      expect(events.map((e) => e.message).sort()).toEqual([
        `${reason}; this backup starts once it is in effect again`, `${reason}; this restore starts once it is in effect again`,
      ]);
      expect(phaseOf(backups, 'queued')).toBe('New');
      expect(phaseOf(restores, 'queued-r')).toBe('New');
      // One log line for the change of state, however many probes failed since.
      expect(server.output().split(reason).length - 1).toBe(1);
    } finally {
      await restoreWebhook();
    }

    // Back in effect: the held runs are queued again and run (each passes its gate).
    open(`backup-${src}`);
    open(`restore-${src}`);
    await waitUntil('the log line saying it is in effect again', () => Promise.resolve(inEffectLines() === before + 1 ? true : undefined), 90_000, 50);
    const queued = await waitFinished<Backup>(client, RESOURCES.Backup, ns, 'queued');
    expect(queued.status?.phase, JSON.stringify(queued.status)).toBe('Completed');
    expect(queued.status?.waitingFor).toBeUndefined();
    const queuedR = await waitFinished<Restore>(client, RESOURCES.Restore, ns, 'queued-r');
    expect(queuedR.status?.phase, JSON.stringify(queuedR.status)).toBe('Completed');
    expect(queuedR.status?.waitingFor).toBeUndefined();
    expect(await metric()).toBe('1');
    expect(probeSeen).toBe(false);
  });

  it('sees a configuration whose namespaceSelector no longer selects the namespace as not in effect, and the fix', async () => {
    const name = webhookConfigurationNameFor(ns);
    const saved = await client.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
    const reason = `the admission webhook is not in effect: the API server did not call it for a Backup created in namespace ${ns} (MutatingWebhookConfiguration ${name} is missing, or does not select this namespace)`;
    const lines = (): number => server.output().split(reason).length - 1;
    const before = lines();
    await client.replace(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name, {
      ...saved, webhooks: (saved.webhooks ?? []).map((w) => ({ ...w, namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': `not-${ns}` } } })),
    });
    try {
      await waitUntil('the log line', () => Promise.resolve(lines() === before + 1 ? true : undefined), 90_000, 50);
      expect(await metric()).toBe('0');
    } finally {
      const now = await client.get<MutatingWebhookConfiguration>(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name);
      await client.replace(MUTATING_WEBHOOK_CONFIGURATIONS, undefined, name, { ...now, webhooks: saved.webhooks });
    }
    expect(await waitUntil('the gauge at 1 again', async () => ((await metric()) === '1' ? true : undefined), 90_000, 50)).toBe(true);
  });
});
