// Unit tests for the CLI's pure pieces: flag parsing, output formatting, progress rendering, log
// lines, stream helpers, manifest comparison and error lines. Commands themselves are tested as
// child processes against the real apiserver in test/cli/.
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import * as tar from 'tar-stream';
import { KubeError } from '../../kube/index.js';
import { compareWithManifest, hashTarball, pulledInSection, volumeSnapshotsSection, waitUntilFinished } from './backup.js';
import { backupSpecFromFlags } from './backupFlags.js';
import { lines, maybeGunzip, pickServerPod } from './download.js';
import { CliError, UsageError, describeError, exitCodeOf } from './errors.js';
import { checkName, commaList, filterSpec, keyValueList, parseBool, parseTimeout, timestampSuffix } from './flags.js';
import { formatBytes, formatTable, formatTimestamp, parseOutputFormat, shortDuration, timeLeft } from './output.js';
import { createProgress, renderBar, renderPlain } from './progress.js';
import { hooksField, outcomesSection, restoreSpecFromFlags, summaryCounts } from './restore.js';
import { renderLogLine } from './runLog.js';

async function* chunks(...parts: (string | Buffer)[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield typeof p === 'string' ? Buffer.from(p) : p;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('flags', () => {
  it('splits comma lists across repeated flags and drops empty items', () => {
    expect(commaList('a, b,,c', undefined)).toEqual(['a', 'b', 'c']);
    expect(commaList('d', ['a'])).toEqual(['a', 'd']);
  });

  it('parses booleans and names the flag when the value is not one', () => {
    expect(parseBool('x', true)).toBe(true);
    expect(parseBool('x', 'False')).toBe(false);
    expect(parseBool('x', undefined)).toBeUndefined();
    expect(() => parseBool('include-cluster-resources', 'maybe')).toThrow(/--include-cluster-resources takes true or false, not "maybe"/);
  });

  it('builds filter specs, splitting --or-selector on " or "', () => {
    expect(filterSpec({ includeNamespaces: ['a'], includeClusterResources: 'true', orSelector: 'app=a or app=b' })).toEqual({
      includedNamespaces: ['a'],
      includeClusterResources: true,
      orLabelSelectors: [{ matchLabels: { app: 'a' } }, { matchLabels: { app: 'b' } }],
    });
    expect(() => filterSpec({ selector: 'a=b', orSelector: 'c=d' })).toThrow(UsageError);
    expect(() => filterSpec({ selector: 'a in (' })).toThrow(/--selector: label selector "a in \("/);
  });

  it('parses key=value and a:b lists', () => {
    const kv = keyValueList('labels', '=');
    expect(kv('a=1, b=2', { z: '0' })).toEqual({ z: '0', a: '1', b: '2' });
    expect(() => kv('a', undefined)).toThrow(/--labels: "a" is not of the form key=value/);
    expect(keyValueList('namespace-mappings', ':')('prod:staging', undefined)).toEqual({ prod: 'staging' });
  });

  it('checks names, formats generated-name timestamps and parses timeouts', () => {
    expect(checkName('backup', 'nightly-2025.01')).toBe('nightly-2025.01');
    expect(() => checkName('backup', 'Nightly')).toThrow(/"Nightly" is not a valid backup name/);
    expect(() => checkName('backup', '-x')).toThrow(UsageError);
    expect(timestampSuffix(new Date('2025-03-04T05:06:07.890Z'))).toBe('20250304050607');
    expect(parseTimeout('timeout', '90s')).toBe(90_000);
    expect(parseTimeout('timeout', '1m30s')).toBe(90_000);
    expect(() => parseTimeout('timeout', '0s')).toThrow(/--timeout must be positive/);
    expect(() => parseTimeout('timeout', 'soon')).toThrow(UsageError);
  });

  it('normalises --ttl to a Go duration and rejects bad ones as usage errors', () => {
    expect(backupSpecFromFlags({ ttl: '72h', storageLocation: 'x' })).toEqual({ ttl: '72h0m0s', storageLocation: 'x' });
    expect(backupSpecFromFlags({ ttl: '90m' }).ttl).toBe('1h30m0s');
    expect(() => backupSpecFromFlags({ ttl: '-1h' })).toThrow(/--ttl must not be negative/);
    expect(() => backupSpecFromFlags({ ttl: '3 days' })).toThrow(UsageError);
  });

  it('passes --snapshot-volumes through and normalises --csi-snapshot-timeout', () => {
    expect(backupSpecFromFlags({ snapshotVolumes: true })).toEqual({ snapshotVolumes: true });
    expect(backupSpecFromFlags({ snapshotVolumes: 'false' })).toEqual({ snapshotVolumes: false });
    expect(backupSpecFromFlags({ csiSnapshotTimeout: '90s' })).toEqual({ csiSnapshotTimeout: '1m30s' });
    expect(() => backupSpecFromFlags({ csiSnapshotTimeout: '0s' })).toThrow('--csi-snapshot-timeout must be above zero');
    expect(() => backupSpecFromFlags({ csiSnapshotTimeout: 'soon' })).toThrow(UsageError);
  });

  it('builds restore specs and requires exactly one source', () => {
    expect(restoreSpecFromFlags({ fromBackup: 'b', restoreStatus: ['*'], existingResourcePolicy: 'update', dryRun: true })).toEqual({
      backupName: 'b',
      restoreStatus: { includedResources: ['*'] },
      existingResourcePolicy: 'update',
      dryRun: true,
    });
    expect(restoreSpecFromFlags({ fromSchedule: 's' })).toEqual({ scheduleName: 's' });
    expect(() => restoreSpecFromFlags({})).toThrow(/exactly one of --from-backup/);
    expect(() => restoreSpecFromFlags({ fromBackup: 'b', fromSchedule: 's' })).toThrow(UsageError);
    expect(() => restoreSpecFromFlags({ fromBackup: 'b', existingResourcePolicy: 'replace' })).toThrow(/must be none or update/);
    expect(() => restoreSpecFromFlags({ fromBackup: 'b', namespaceMappings: { a: 'B_' } })).toThrow(/"B_" is not a valid namespace name/);
    expect(restoreSpecFromFlags({ fromBackup: 'b', resourceModifierConfigmap: 'mods' })).toEqual({ backupName: 'b', resourceModifier: { kind: 'ConfigMap', name: 'mods' } });
    expect(() => restoreSpecFromFlags({ fromBackup: 'b', resourceModifierConfigmap: 'a/b' })).toThrow(/--resource-modifier-configmap: "a\/b" is not a valid ConfigMap name/);
  });

  it('shows what transformed an item, and with --details how and the object a dry run would write', () => {
    const o = { groupResource: 'deployments.apps', namespace: 'a', name: 'web', action: 'created' as const, reason: 'would be created', transforms: ['rule 0'], patched: { spec: { replicas: 3 } } };
    expect(outcomesSection([o], true)).toContain('    deployments.apps a/web: would be created (transformed; --details shows how)\n');
    expect(outcomesSection([o], true, true)).toContain('    deployments.apps a/web: would be created\n      transformed by rule 0\n      as it would be written:\n        spec:\n          replicas: 3\n');
  });
});

describe('output', () => {
  it('aligns tables with three spaces and no trailing blanks', () => {
    expect(formatTable(['NAME', 'STATUS'], [['a', 'Completed'], ['longer-name', 'New']])).toBe(
      'NAME          STATUS\na             Completed\nlonger-name   New\n',
    );
  });

  it('formats timestamps, ages, time left and sizes', () => {
    expect(formatTimestamp('2025-01-02T03:04:05Z')).toBe('2025-01-02 03:04:05 UTC');
    expect(formatTimestamp(undefined)).toBe('<none>');
    expect(shortDuration(45_000)).toBe('45s');
    expect(shortDuration(5 * 60_000)).toBe('5m');
    expect(shortDuration(5 * 3_600_000)).toBe('5h');
    expect(shortDuration(29 * 86_400_000 + 5000)).toBe('29d');
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(timeLeft('2025-01-31T00:00:00Z', now)).toBe('30d');
    expect(timeLeft('2024-12-31T00:00:00Z', now)).toBe('expired');
    expect(timeLeft(undefined, now)).toBe('n/a');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(8000)).toBe('7.8 KiB');
    expect(formatBytes(300 * 1024 * 1024)).toBe('300 MiB');
  });

  it('accepts table, json and yaml (and the spellings kubectl users type)', () => {
    expect(parseOutputFormat('JSON')).toBe('json');
    expect(parseOutputFormat('yml')).toBe('yaml');
    expect(parseOutputFormat('wide')).toBe('table');
    expect(() => parseOutputFormat('xml')).toThrow(/unknown output format "xml" \(use table, json or yaml\)/);
  });
});

describe('progress', () => {
  it('renders a bar with counts, percentage and phase', () => {
    expect(renderBar({ phase: 'InProgress', done: 5, total: 10 }, 'items backed up', 10)).toBe('[#####.....]  50%  5/10 items backed up  (InProgress)');
    expect(renderBar({ phase: 'New', done: 0, total: 0 }, 'items', 4)).toBe('[....]    -  0 items  (New)');
    expect(renderPlain({ phase: 'InProgress', done: 3, total: 4 }, 'items restored')).toBe('InProgress: 3/4 items restored (75%)');
  });

  function sink(): { stream: NodeJS.WriteStream; text: () => string } {
    let text = '';
    const w = new Writable({
      write(chunk: Buffer, _enc, cb) {
        text += chunk.toString();
        cb();
      },
    });
    return { stream: w as unknown as NodeJS.WriteStream, text: () => text };
  }

  it('redraws one line on a terminal and ends it on finish', () => {
    const s = sink();
    const p = createProgress({ stream: s.stream, noun: 'items', tty: true });
    p.update({ phase: 'InProgress', done: 1, total: 2 });
    p.update({ phase: 'InProgress', done: 1, total: 2 });
    p.update({ phase: 'Completed', done: 2, total: 2 });
    p.finish();
    expect(s.text().split('\r').filter((x) => x !== '')).toHaveLength(2);
    expect(s.text().endsWith('(Completed)\x1b[K\n')).toBe(true);
  });

  it('prints plain lines at most once per interval, but always on a phase change', () => {
    const s = sink();
    let t = 0;
    const p = createProgress({ stream: s.stream, noun: 'items', tty: false, intervalMs: 1000, now: () => t });
    p.update({ phase: 'InProgress', done: 1, total: 10 });
    t = 500;
    p.update({ phase: 'InProgress', done: 2, total: 10 });
    t = 1200;
    p.update({ phase: 'InProgress', done: 3, total: 10 });
    t = 1300;
    p.update({ phase: 'Completed', done: 10, total: 10 });
    p.finish();
    // The second line has seen 2 items in 1.2 s: 1.7 items/s, 7 left, about 5 s.
    expect(s.text()).toBe('InProgress: 1/10 items (10%)\nInProgress: 3/10 items (30%), 1.7 items/s, ETA 5s\nCompleted: 10/10 items (100%)\n');
  });
});

describe('run log lines', () => {
  it('renders stored JSON lines as text, without the run name every line carries', () => {
    const line = JSON.stringify({ time: '2025-01-01T00:00:00.000Z', level: 'warn', msg: 'item skipped', backup: 'stowage/b1', logSource: 'backup', item: 'a b' });
    expect(renderLogLine(line, 'backup')).toBe('2025-01-01T00:00:00.000Z warn  item skipped logSource=backup item="a b"');
    expect(renderLogLine('not json', 'backup')).toBe('not json');
    expect(renderLogLine('{broken', 'backup')).toBe('{broken');
  });

  it('splits streams into lines across chunk boundaries and gunzips only gzip data', async () => {
    expect(await collect(lines(chunks('a\nb', 'c\r\nd')))).toEqual(['a', 'bc', 'd']);
    const gz = gzipSync(Buffer.from('x\ny\n'));
    expect(await collect(lines(maybeGunzip(chunks(gz.subarray(0, 1), gz.subarray(1)))))).toEqual(['x', 'y']);
    expect(await collect(lines(maybeGunzip(chunks('{"a":1}\n'))))).toEqual(['{"a":1}']);
    expect(await collect(maybeGunzip(chunks()))).toEqual([]);
  });
});

describe('logs --follow end', () => {
  // A followed log closes before the server records the final phase; the CLI waits for that phase.
  it('polls until the run reaches a final phase and returns it', async () => {
    const phases = ['InProgress', 'InProgress', 'Uploading', 'PartiallyFailed', 'Completed'];
    let calls = 0;
    const phase = await waitUntilFinished('backup', async () => ({ status: { phase: phases[calls++] } }), Date.now() + 10_000, 1);
    expect(phase).toBe('PartiallyFailed');
    expect(calls).toBe(4);
  });

  it('gives up at the deadline with no phase, still asking at least once', async () => {
    let calls = 0;
    const phase = await waitUntilFinished('restore', async () => ({ status: { phase: calls++ === 0 ? undefined : 'InProgress' } }), Date.now() + 300, 5);
    expect(phase).toBeUndefined();
    expect(calls).toBeGreaterThan(1);
  });
});

describe('port-forward target', () => {
  const pod = (name: string, ip: string, labels: Record<string, string> = {}, phase = 'Running') => ({ metadata: { name, labels }, status: { phase, podIP: ip } });

  it('picks the pod whose IP the URL names, else a running pod labelled as the server', () => {
    const url = new URL('http://10.0.0.7:8086/download/t');
    expect(pickServerPod([pod('a', '10.0.0.1'), pod('b', '10.0.0.7')], url)).toEqual({ name: 'b', port: 8086 });
    expect(pickServerPod([pod('a', '10.0.0.1'), pod('s', '10.0.0.2', { 'app.kubernetes.io/name': 'stowage' })], url)).toEqual({ name: 's', port: 8086 });
    expect(pickServerPod([pod('b', '10.0.0.7', {}, 'Pending')], url)).toBeUndefined();
  });
});

describe('verify', () => {
  async function tarball(files: Record<string, string>): Promise<Buffer> {
    const pack = tar.pack();
    pack.entry({ name: 'resources/', type: 'directory' });
    for (const [name, body] of Object.entries(files)) pack.entry({ name }, body);
    pack.finalize();
    return gzipSync(Buffer.concat(await collect(pack as AsyncIterable<Buffer>)));
  }

  it('hashes the whole stream and every file entry, skipping directories', async () => {
    const gz = await tarball({ 'metadata/version': '1.1.0', 'resources/a.json': '{}' });
    const h = await hashTarball(chunks(gz));
    expect(Object.keys(h.entries).sort()).toEqual(['metadata/version', 'resources/a.json']);
    expect(h.tarball.bytes).toBe(gz.length);
    await expect(hashTarball(chunks('not gzip at all'))).rejects.toThrow();
  });

  it('classifies every difference from the manifest', () => {
    const manifest = { formatVersion: '1.1.0', tarball: { sha256: 'T', bytes: 10 }, entries: { a: '1', b: '2', c: '3' } };
    const ok = compareWithManifest('b1', { tarball: { sha256: 'T', bytes: 10 }, entries: { a: '1', b: '2', c: '3' } }, manifest);
    expect(ok).toMatchObject({ ok: true, checked: 3, matched: 3, problems: [] });
    const bad = compareWithManifest('b1', { tarball: { sha256: 'U', bytes: 11 }, entries: { a: '1', b: 'x', d: '4' } }, manifest);
    expect(bad.ok).toBe(false);
    expect(bad.matched).toBe(1);
    expect(bad.problems.map((p) => [p.kind, p.path])).toEqual([['tarball', undefined], ['mismatch', 'b'], ['missing', 'c'], ['extra', 'd']]);
  });
});

describe('restore describe', () => {
  it('groups outcomes by action, with reasons, worded for a dry run', () => {
    const text = outcomesSection(
      [
        { groupResource: 'configmaps', namespace: 'a', name: 'x', action: 'created', reason: 'created' },
        { groupResource: 'services', namespace: 'a', name: 'web', action: 'skipped', reason: 'already exists and differs from the backup; left unchanged' },
        { groupResource: 'namespaces', namespace: '', name: 'a', action: 'created', reason: 'created', validated: false },
      ],
      true,
    );
    expect(text).toBe(
      'Plan (dry run: nothing was written to the cluster):\n' +
        '  Would be created (2):\n    configmaps a/x\n    namespaces a (not validated by the API server)\n' +
        '  Would be skipped (1):\n    services a/web: already exists and differs from the backup; left unchanged\n',
    );
    expect(outcomesSection([], false)).toBe('Items:  <none>\n');
  });

  it('shows hookStatus as Hooks, and nothing for a restore that ran none', () => {
    expect(hooksField({ hookStatus: { hooksAttempted: 4, hooksFailed: 1 } })).toMatch(/^Hooks:\s+4 attempted, 1 failed\n$/);
    expect(hooksField({})).toBe('');
  });

  it('lists a pod\'s restore hooks under it, without --details (a dry run is how one checks which would run)', () => {
    const text = outcomesSection([{
      groupResource: 'pods', namespace: 'shop', name: 'db', action: 'created', reason: 'would be created',
      hooks: ['init container seed (busybox) would be added by restore hook "seed"', 'exec hook "seed" in container db of pod shop/db would run: ["true"] (onError Continue)'],
    }], true);
    expect(text).toBe(
      'Plan (dry run: nothing was written to the cluster):\n  Would be created (1):\n    pods shop/db: would be created\n' +
        '      hook: init container seed (busybox) would be added by restore hook "seed"\n' +
        '      hook: exec hook "seed" in container db of pod shop/db would run: ["true"] (onError Continue)\n',
    );
  });

  it('says "not validated" once per item, and "would fail" for a predicted failure', () => {
    const text = outcomesSection(
      [
        {
          groupResource: 'configmaps', namespace: 'a', name: 'x', action: 'created', validated: false,
          reason: 'would be created; not validated by the API server, as namespace a would be created first',
        },
        { groupResource: 'configmaps', namespace: 'a', name: 'q', action: 'failed', validated: true, reason: 'exceeded quota: q' },
      ],
      true,
    );
    expect(text.match(/not validated/g)).toHaveLength(1);
    expect(text).toContain('  Would fail (1):\n    configmaps a/q: exceeded quota: q\n');
    expect(summaryCounts({ created: 1, updated: 0, skipped: 2, failed: 1 }, true)).toBe('would create 1, would update 0, would skip 2, would fail 1');
    expect(summaryCounts({ created: 1, updated: 0, skipped: 2, failed: 1 }, false)).toBe('created 1, updated 0, skipped 2, failed 1');
  });
});

describe('error lines', () => {
  const target = { verb: 'list', resource: 'backups.stowage.dev', namespace: 'stowage' };

  it('turns apiserver failures into sentences a user can act on', () => {
    const ctx = { server: 'https://k:6443', kubeconfigSource: '/home/u/.kube/config' };
    expect(describeError(new KubeError(target, 0, 'ECONNREFUSED', 'cannot reach the apiserver at https://k:6443: connect ECONNREFUSED'), ctx)).toBe(
      'cannot reach the Kubernetes API server at https://k:6443: connect ECONNREFUSED',
    );
    expect(describeError(new KubeError(target, 401, 'Unauthorized', 'Unauthorized'), ctx)).toBe(
      'the Kubernetes API server at https://k:6443 rejected the credentials in kubeconfig /home/u/.kube/config (401 Unauthorized)',
    );
    expect(describeError(new KubeError(target, 403, 'Forbidden', 'backups.stowage.dev is forbidden: User "u" cannot list resource "backups"'), ctx)).toBe(
      'permission denied: backups.stowage.dev is forbidden: User "u" cannot list resource "backups"',
    );
    expect(describeError(new KubeError(target, 404, 'NotFound', '404 page not found'), ctx)).toMatch(/does not serve backups\.stowage\.dev: the Stowage CRDs are not installed/);
  });

  it('maps errors to exit codes: 2 for usage, the CliError\'s own code, else 1', () => {
    expect(exitCodeOf(new UsageError('x'))).toBe(2);
    expect(exitCodeOf(new CliError('x', 130))).toBe(130);
    expect(exitCodeOf(new Error('x'))).toBe(1);
  });
});

describe('backup describe: pulled-in section', () => {
  it('describe --details lists each CSI volume snapshot: claim, snapshot handle, size and time', () => {
    expect(volumeSnapshotsSection(undefined)).toBe('CSI volume snapshots:  <none>\n');
    const rec = (pvc: string, handle: string) => ({
      namespace: 'shop', persistentVolumeClaim: pvc, persistentVolume: `pv-${pvc}`, volumeSnapshot: `${pvc}-vs`, volumeSnapshotContent: `snapcontent-${pvc}`,
      snapshotHandle: handle, driver: 'csi.a', volumeSnapshotClass: 'fast', restoreSize: '1073741824', creationTime: '2026-01-01T00:00:00.000Z',
    });
    const text = volumeSnapshotsSection([rec('data-web-1', 'snap-b'), rec('data-web-0', 'snap-a')]);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('CSI volume snapshots:');
    expect(lines[1]).toMatch(/^ {2}CLAIM +SNAPSHOT HANDLE +SIZE +TAKEN +CLASS +CONTENT$/);
    expect(lines[2]).toMatch(/^ {2}shop\/data-web-0 +snap-a +1073741824 +2026-01-01T00:00:00.000Z +fast +snapcontent-data-web-0$/);
    expect(lines[3]).toMatch(/^ {2}shop\/data-web-1 +snap-b /);
  });

  it('lists pulled-in items by resource and name, each with its reason, or <none>', () => {
    expect(pulledInSection(undefined)).toBe('Pulled in (cluster-scoped dependencies):  <none>\n');
    expect(pulledInSection([])).toBe('Pulled in (cluster-scoped dependencies):  <none>\n');
    const rbac = 'rbac.authorization.k8s.io';
    expect(pulledInSection([
      { groupResource: `clusterroles.${rbac}`, name: 'view', requiredBy: `clusterrolebindings.${rbac} "ops-admin"`, reason: 'ClusterRole "view" is the role of ClusterRoleBinding "ops-admin"' },
      { groupResource: `clusterrolebindings.${rbac}`, name: 'ops-admin', requiredBy: 'serviceaccounts "shop/operator"', reason: 'ClusterRoleBinding "ops-admin" binds ServiceAccount "shop/operator"' },
      { groupResource: `clusterroles.${rbac}`, name: 'edit', requiredBy: `rolebindings.${rbac} "shop/e"`, reason: 'ClusterRole "edit" is the role of RoleBinding "shop/e"' },
    ])).toBe([
      'Pulled in (cluster-scoped dependencies):',
      `  clusterrolebindings.${rbac}:`,
      '    - ops-admin: ClusterRoleBinding "ops-admin" binds ServiceAccount "shop/operator"',
      `  clusterroles.${rbac}:`,
      '    - edit: ClusterRole "edit" is the role of RoleBinding "shop/e"',
      '    - view: ClusterRole "view" is the role of ClusterRoleBinding "ops-admin"',
      '',
    ].join('\n'));
  });
});
