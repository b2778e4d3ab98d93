// Application-consistent volume snapshots (issues 36 and 37): a StatefulSet whose pods keep
// appending numbered lines to their own ext4 volume (StorageClass stowage-csi-ext4: each volume an
// image on a loop device, scripts/csi/driver/filesystem.go) is backed up with Velero's hook
// annotations that fsfreeze /data before the pod's claim is snapshotted and thaw it after. The
// in-process server runs against the real cluster, as in volumes.suite.ts. Registered from
// test/incluster/node.test.ts (freezeSuite).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSI_DRIVER, CSI_KNOB_CLASSES, CSI_STORAGE_CLASS_EXT4 } from '../../scripts/node/csi.js';
import { loopDevicesUnder, mountsUnder } from '../../scripts/node/loopVolumes.js';
import { BUSYBOX_IMAGE } from '../../scripts/node/node.js';
import { RESOURCES, newBackup, newRestore, type Backup, type Restore, type RestoreSpec } from '../../src/apis/v1/index.js';
import type { DynamicClient } from '../../src/kube/index.js';
import { ensureBuilt } from '../cli/helpers.js';
import { startInProcessServer, type InProcessServer } from '../support/inProcessServer.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { filesystemLocation, testClient, waitFinished } from '../support/server.js';
import { inCluster, kubectl, kubectlOk, log, podReady, timed } from './context.js';

const PODS = ['web-0', 'web-1'] as const;

/**
 * The app: appends "<pod> <n>" to /data/lines every 0.2 s and then says so on stdout with the time
 * ("wrote <n> <epoch seconds>"), which the freeze does not block. On start it continues after what
 * the volume holds, saying how many lines it found and the last one.
 */
const APP = [
  'trap "exit 0" TERM',
  'f=/data/lines; h=$(hostname); n=0',
  'if [ -f $f ]; then n=$(wc -l < $f); echo "resuming after line $n: $(tail -n 1 $f)"; fi',
  'while :; do n=$((n+1)); echo "$h $n" >> $f; echo "wrote $n $EPOCHREALTIME"; sleep 0.2; done',
].join('\n');

function statefulSet(namespace: string): string {
  const hook = (phase: 'pre' | 'post', flag: string): Record<string, string> => ({
    [`${phase}.hook.backup.velero.io/container`]: 'app',
    [`${phase}.hook.backup.velero.io/command`]: JSON.stringify(['/usr/sbin/fsfreeze', flag, '/data']),
    [`${phase}.hook.backup.velero.io/timeout`]: '30s',
  });
  return JSON.stringify({
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace, name: 'web' },
    spec: {
      serviceName: 'web', replicas: PODS.length, selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' }, annotations: { ...hook('pre', '--freeze'), ...hook('post', '--unfreeze') } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: 'app', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', APP],
            // FIFREEZE needs CAP_SYS_ADMIN; it freezes only this volume's own ext4 (a loop mount).
            securityContext: { privileged: true },
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          }],
        },
      },
      volumeClaimTemplates: [{
        metadata: { name: 'data' },
        spec: { storageClassName: CSI_STORAGE_CLASS_EXT4, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } },
      }],
    },
  });
}

interface Written { n: number; at: number }

/** The app's "wrote <n> <time>" lines of a pod, time in ms. */
function writes(namespace: string, pod: string): Written[] {
  return kubectlOk(['logs', '-n', namespace, pod]).split('\n').flatMap((l) => {
    const m = /^wrote (\d+) (\d+\.\d+)$/.exec(l);
    return m === null ? [] : [{ n: Number(m[1]), at: Number(m[2]) * 1000 }];
  });
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function freezeSuite(): void {
  describe('freeze: hooks fsfreeze a StatefulSet\'s volumes around their CSI snapshots, and a restore brings each pod\'s lines back up to the freeze', () => {
    const ns = uniqueName('stowage-freeze');
    const app = uniqueName('freeze-app');
    const loc = filesystemLocation();
    let client: DynamicClient;
    let server: InProcessServer;
    /** Per pod: when the server logged its pre hook (frozen by then) and its claim's snapshot ready (still frozen). */
    const frozenAt = new Map<string, number>();
    const readyAt = new Map<string, number>();
    /** Per pod: the app's writes as its log showed them after the backup. */
    const logged = new Map<string, Written[]>();

    async function runRestore(name: string, spec: RestoreSpec): Promise<Restore> {
      await client.create(RESOURCES.Restore, ns, newRestore(name, ns, spec));
      return waitFinished<Restore>(client, RESOURCES.Restore, ns, name, 300_000);
    }

    /** What the restored pod found on its volume: K and the lines 1..K as read back. */
    async function restoredLines(namespace: string, pod: string): Promise<{ k: number; lines: string }> {
      const first = await waitUntil(`${namespace}/${pod} says what it resumed after`, async () => {
        const l = kubectlOk(['logs', '-n', namespace, pod]).split('\n')[0] ?? '';
        return l.startsWith('resuming') || l.startsWith('wrote') ? l : undefined;
      }, 60_000, 250);
      const m = /^resuming after line (\d+): (.*)$/.exec(first);
      if (m === null) {
        const seen = kubectl(['exec', '-n', namespace, pod, '--', 'sh', '-c', 'grep " /data " /proc/mounts; ls -la /data']);
        throw new Error(`${namespace}/${pod} found no lines on its restored volume (its first line: ${first}); /data: ${seen.stdout}${seen.stderr}\n${inCluster().cluster.csi?.logs() ?? ''}`);
      }
      const k = Number(m?.[1]);
      expect(m?.[2]).toBe(`${pod} ${k}`);
      return { k, lines: kubectlOk(['exec', '-n', namespace, pod, '--', 'head', '-n', String(k), '/data/lines']) };
    }

    /** The lines pod wrote from 1 to k, as the app writes them. */
    const expected = (pod: string, k: number): string => Array.from({ length: k }, (_, i) => `${pod} ${i + 1}\n`).join('');

    /**
     * The restored pod holds exactly its own lines 1..K, the last one whole, and K is where its
     * freeze cut: the app's write K+1 completed only after the snapshot was ready.
     */
    async function expectCutAtFreeze(namespace: string, pod: string): Promise<void> {
      const { k, lines } = await restoredLines(namespace, pod);
      expect(lines).toBe(expected(pod, k));
      const w = logged.get(pod) ?? [];
      const next = w.find((x) => x.n === k + 1);
      expect(next, `${pod}: no write ${k + 1} in the app's log after the backup`).toBeDefined();
      expect(next?.at, `${pod}: write ${k + 1} landed at ${next?.at}, the snapshot was ready at ${readyAt.get(pod)}`).toBeGreaterThan(readyAt.get(pod) ?? Infinity);
      const last = w.find((x) => x.n === k);
      log(`freeze: ${namespace}/${pod} restored with ${k} lines; the app's gap between writes ${k} and ${k + 1}: ${(((next?.at ?? 0) - (last?.at ?? 0)) / 1000).toFixed(2)} s`);
    }

    beforeAll(async () => {
      const { cluster } = inCluster();
      client = testClient(cluster.cp.kubeconfigPath);
      await timed('freeze: build dist for the server', () => ensureBuilt());
      server = await timed('freeze: in-process server against the real cluster', () =>
        startInProcessServer({ kubeconfigPath: cluster.cp.kubeconfigPath, namespace: ns, location: loc }));
      kubectlOk(['create', 'namespace', app]);
      kubectlOk(['apply', '-f', '-'], statefulSet(app));
      await timed('freeze: StatefulSet of 2 on ext4 volumes Ready', () => podReady(app, 'app=web', 2));
      for (const pod of PODS) await waitUntil(`${pod} writing`, async () => (writes(app, pod).length >= 5 ? true : undefined), 60_000, 250);
    }, 600_000);

    afterAll(async () => {
      // Never leave a volume frozen (a failure between the hooks): its writer could not even be killed.
      for (const pod of PODS) kubectl(['exec', '-n', app, pod, '--', '/usr/sbin/fsfreeze', '--unfreeze', '/data']);
      await server?.stop();
      kubectl(['delete', 'namespace', app, '--wait=false']);
    }, 120_000);

    it('backs up with the pods\' Velero hook annotations: per pod, freeze, then its snapshot ready, then thaw; no write lands while frozen', async () => {
      for (const pod of PODS) {
        const claim = `persistentvolumeclaims "${app}/data-${pod}": snapshot snap-[0-9a-f]+ of \\d+ ready`;
        void server.waitForOutput(new RegExp(`pre hook "pre\\.hook\\.backup\\.velero\\.io" \\(from the pod's annotations\\) in pod ${escape(app)}/${pod}, container app: succeeded`))
          .then(() => frozenAt.set(pod, Date.now()), () => undefined);
        void server.waitForOutput(new RegExp(claim)).then(() => readyAt.set(pod, Date.now()), () => undefined);
      }
      const b0 = newBackup('frozen', ns, { includedNamespaces: [app], snapshotVolumes: true, csiSnapshotTimeout: '2m' });
      // A class whose snapshots report ready 3 s after they are cut (the driver cuts at once): the
      // freeze lasts that long, so a write that did not wait for the thaw would show.
      b0.metadata.annotations = { [`velero.io/csi-volumesnapshot-class_${CSI_DRIVER}`]: CSI_KNOB_CLASSES.settling.name };
      await client.create(RESOURCES.Backup, ns, b0);
      const b = await timed('freeze: backup with 2 frozen snapshots', () => waitFinished<Backup>(client, RESOURCES.Backup, ns, 'frozen', 300_000));
      expect(b.status?.phase, JSON.stringify(b.status)).toBe('Completed');
      expect(b.status?.hookStatus).toEqual({ hooksAttempted: 4, hooksFailed: 0 });
      expect([b.status?.csiVolumeSnapshotsAttempted, b.status?.csiVolumeSnapshotsCompleted]).toEqual([2, 2]);

      const lines = server.output().split('\n').filter((l) => l.includes(`backup=${ns}/frozen`));
      const at = (re: RegExp): number => {
        const i = lines.findIndex((l) => re.test(l));
        expect(i, `no run-log line matches ${re}:\n${lines.join('\n')}`).toBeGreaterThanOrEqual(0);
        return i;
      };
      const brackets = PODS.map((pod) => {
        const pre = at(new RegExp(`pre hook "pre\\.hook\\.backup\\.velero\\.io" \\(from the pod's annotations\\) in pod ${escape(app)}/${pod}, container app: succeeded`));
        const ready = at(new RegExp(`persistentvolumeclaims "${escape(app)}/data-${pod}": snapshot snap-[0-9a-f]+ of \\d+ ready`));
        const post = at(new RegExp(`post hook "post\\.hook\\.backup\\.velero\\.io" \\(from the pod's annotations\\) in pod ${escape(app)}/${pod}, container app: succeeded`));
        expect([pre < ready, ready < post], `${pod}: pre ${pre}, ready ${ready}, post ${post}`).toEqual([true, true]);
        return [pre, post] as const;
      });
      // One pod at a time: neither pod is frozen while the other's bracket runs.
      const [a, c] = brackets;
      expect((a?.[1] ?? 0) < (c?.[0] ?? 0) || (c?.[1] ?? 0) < (a?.[0] ?? 0), JSON.stringify(brackets)).toBe(true);

      for (const pod of PODS) {
        const f = frozenAt.get(pod);
        const r = readyAt.get(pod);
        expect([f, r].every((t) => t !== undefined), `${pod}: frozen ${f}, ready ${r}`).toBe(true);
        // The app goes on after the thaw: its log has writes past the snapshot's readiness.
        const w = await waitUntil(`${pod} writing after the thaw`, async () => {
          const all = writes(app, pod);
          return all.some((x) => x.at > (r ?? 0)) ? all : undefined;
        }, 60_000, 250);
        logged.set(pod, w);
        // While frozen (from its pre hook's end to its snapshot's readiness) no write completed, but
        // for at most one whose line was printed just after it had landed, before the freeze.
        const during = w.filter((x) => x.at > (f ?? 0) && x.at < (r ?? 0));
        expect(during.length, `${pod}: writes while frozen ${JSON.stringify(during)}`).toBeLessThanOrEqual(1);
        // The window is the class's 3 s at least: unfrozen, the app would have written some 15 lines in it.
        expect((r ?? 0) - (f ?? 0)).toBeGreaterThanOrEqual(2_500);
        log(`freeze: ${pod} frozen for at least ${(((r ?? 0) - (f ?? 0)) / 1000).toFixed(2)} s (pre hook logged to snapshot ready logged)`);
      }
    }, 600_000);

    it('after the namespace is deleted, a restore brings each pod its own lines, exactly those written before its freeze', async () => {
      expect(logged.size).toBe(2);
      const csi = inCluster().cluster.csi;
      if (csi === undefined) throw new Error('the real cluster was started without its CSI stack (startRealCluster({ csi: true }))');
      const images: string[] = [];
      for (const pod of PODS) {
        const pvc = await inCluster().core.readNamespacedPersistentVolumeClaim({ namespace: app, name: `data-${pod}` });
        const pv = await inCluster().core.readPersistentVolume({ name: pvc.spec?.volumeName ?? '' });
        images.push(`${csi.volumeDir(pv.spec?.csi?.volumeHandle ?? '')}.img`);
      }
      expect(images.every((i) => fs.existsSync(i) && loopDevicesUnder(path.dirname(i)).length > 0), images.join(', ')).toBe(true);
      // Through the API, not a blocking kubectl: this process serves the in-process server meanwhile.
      await timed('freeze: namespace deleted', async () => {
        await inCluster().core.deleteNamespace({ name: app });
        await waitUntil(`namespace ${app} gone`, async () => inCluster().core.readNamespace({ name: app }).then(() => undefined, () => true), 180_000, 500);
      });
      // DeleteVolume (reclaim Delete) unmounted each old volume, detached its loop device and removed its image.
      await waitUntil('the old volumes\' images gone and detached', async () => (
        images.every((i) => !fs.existsSync(i) && !mountsUnder(path.dirname(i)).includes(i.replace(/\.img$/, ''))) ? true : undefined), 120_000, 500);
      // A file removed while still attached shows as "<file> (deleted)": matched by its start.
      const attached = spawnSync('losetup', ['--list', '--noheadings', '--raw', '--output', 'BACK-FILE'], { encoding: 'utf8' }).stdout.split('\n');
      expect(images.filter((i) => attached.some((l) => l.startsWith(i)))).toEqual([]);
      const r = await timed('freeze: restore of 2 ext4 volumes', () => runRestore('frozen-back', { backupName: 'frozen' }));
      expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
      await timed('freeze: restored pods Ready', () => podReady(app, 'app=web', 2));
      for (const pod of PODS) await expectCutAtFreeze(app, pod);
    }, 600_000);

    it('the same restore into a mapped namespace: each pod reads its own lines up to the freeze', async () => {
      const mapped = uniqueName('freeze-mapped');
      try {
        const r = await timed('freeze: restore into a mapped namespace', () => runRestore('frozen-mapped', { backupName: 'frozen', namespaceMapping: { [app]: mapped } }));
        expect(r.status?.phase, JSON.stringify(r.status)).toBe('Completed');
        await timed('freeze: mapped pods Ready', () => podReady(mapped, 'app=web', 2));
        expect(logged.size).toBe(2);
        for (const pod of PODS) await expectCutAtFreeze(mapped, pod);
      } finally {
        kubectl(['delete', 'namespace', mapped, '--wait=false']);
      }
    }, 600_000);
  });
}
