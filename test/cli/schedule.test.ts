// `stowage schedule` against a running server: a schedule made from the backup and retention
// flags, get in every format, pause/unpause, trigger (a backup named and labelled as the
// scheduled ones, which completes), describe (next backup, last backup, retention verdicts and
// why), delete, and bad input refused with a clear message and exit code 2.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import YAML from 'yaml';
import { LABEL_SCHEDULE_NAME, RESOURCES, type Backup, type Schedule } from '../../src/apis/v1/index.js';
import { isNotFound, type DynamicClient } from '../../src/kube/index.js';
import { mapLimit } from '../../src/util/concurrency.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { ensureAppNamespace, filesystemLocation, startServer, testClient, type RunningServer } from '../support/server.js';
import { ensureBuilt, runCli, show, type CliResult, type RunOptions } from './helpers.js';

/** The next 03:00 UTC after now, as the CLI prints it. */
function next3am(): string {
  const now = new Date();
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), 3));
  if (d.getTime() <= now.getTime()) d.setUTCDate(d.getUTCDate() + 1);
  return `${d.toISOString().slice(0, 10)} 03:00:00 UTC`;
}

describe('stowage schedule with a running server', () => {
  const kubeconfig = inject('cluster').kubeconfigPath;
  const ns = uniqueName('cli-sch');
  const app = uniqueName('cli-schapp');
  const loc = filesystemLocation();
  let client: DynamicClient;
  let server: RunningServer;
  let opts: RunOptions;
  const cli = (...args: string[]) => runCli(args, opts);
  const schedule = (name: string): Promise<Schedule> => client.get<Schedule>(RESOURCES.Schedule, ns, name);
  const backupsOf = async (name: string): Promise<Backup[]> =>
    (await client.list<Backup>(RESOURCES.Backup, { namespace: ns, labelSelector: `${LABEL_SCHEDULE_NAME}=${name}` })).items;

  beforeAll(async () => {
    client = testClient(kubeconfig);
    await ensureBuilt();
    await ensureAppNamespace(client, app, 3);
    // Garbage collection sweeps once at start-up (nothing to do then) and not again during the test,
    // so the backup retention would delete is still there for describe to show.
    server = await startServer({ kubeconfigPath: kubeconfig, namespace: ns, location: loc, args: ['--garbage-collection-frequency', '24h'] });
    // Generous: on a loaded machine one CLI process can take a minute to start.
    opts = { kubeconfig, namespace: ns, timeoutMs: 300_000 };
  });

  afterAll(async () => {
    await server?.stop();
    client?.close();
    fs.rmSync(loc.root, { recursive: true, force: true });
  });

  it('refuses bad input with a clear message and exit code 2, and creates nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['schedule', 'create', 'bad', '--schedule', '61 * * * *'], /^error: --schedule: .*61 is out of range 0-59/m],
      [['schedule', 'create', 'bad', '--schedule', '@every banana'], /^error: --schedule: /m],
      [['schedule', 'create', 'bad'], /^error: --schedule is required: a cron expression in UTC/m],
      [['schedule', 'create', '--schedule', '@every 6h'], /^error: a schedule name is required/m],
      [['schedule', 'create', 'bad', '--schedule', '@daily', '--bogus'], /^error: unknown option '--bogus'/m],
      [['schedule', 'create', 'Bad', '--schedule', '@daily'], /^error: "Bad" is not a valid schedule name/m],
      [['schedule', 'create', 'bad', '--schedule', '@daily', '--keep-daily', 'many'], /^error: --keep-daily takes a whole number of backups \(0 or more\), not "many"/m],
      [['schedule', 'create', 'bad', '--schedule', '@daily', '--ttl', '3 days'], /^error: .*--ttl/m],
      [['schedule', 'create', 'bad', '--schedule', '@daily', '--csi-snapshot-timeout', '0s'], /^error: --csi-snapshot-timeout must be above zero/m],
      [['schedule', 'create', 'bad', '--schedule', '@daily', '--paused=perhaps'], /^error: --paused takes true or false, not "perhaps"/m],
      [['schedule', 'create', 'x'.repeat(240), '--schedule', '@daily'], /^error: the schedule's name is 240 characters long; at most 238/m],
      [['schedule', 'pause'], /^error: name the schedules, or give --selector SELECTOR or --all$/m],
      [['schedule', 'unpause', 'a', '--all'], /^error: give schedule names, --selector or --all, not more than one of them$/m],
      [['schedule', 'get', '-o', 'xml'], /^error: unknown output format "xml"/m],
      [['schedule', 'trigger'], /^error: missing required argument 'name'/m],
      [['schedule', 'delete', 'anything'], /^error: refusing to delete without confirmation: stdin is not a terminal, so pass --confirm$/m],
    ];
    const results = await mapLimit(cases, 4, ([args]) => cli(...args));
    cases.forEach(([args, message], i) => {
      const r = results[i] as CliResult;
      expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    });
    expect((await client.list(RESOURCES.Schedule, { namespace: ns })).items).toEqual([]);
    const missing = await cli('schedule', 'trigger', 'nope');
    expect(missing.code, show(missing)).toBe(1);
    expect(missing.stderr.trim()).toBe(`error: schedule "nope" not found in namespace ${ns}`);
  }, 900_000);

  it('creates a schedule from the backup and retention flags; get shows it in every format', async () => {
    const r = await cli(
      'schedule', 'create', 'full', '--schedule', '@every 6h', '--include-namespaces', app, '--exclude-resources', 'secrets', '--selector', 'app=web',
      '--ttl', '48h', '--keep-last', '2', '--keep-hourly', '1', '--keep-daily', '7', '--keep-weekly', '4', '--keep-monthly', '12',
      '--labels', 'team=a', '--paused', '--use-owner-references-in-backup',
    );
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe('Schedule "full" created successfully.\nNext backup: <none: paused>\n');
    const s = await schedule('full');
    expect(s.metadata.labels).toEqual({ team: 'a' });
    expect(s.spec).toEqual({
      schedule: '@every 6h',
      template: { includedNamespaces: [app], excludedResources: ['secrets'], labelSelector: { matchLabels: { app: 'web' } }, ttl: '48h0m0s' },
      keepLast: 2, keepHourly: 1, keepDaily: 7, keepWeekly: 4, keepMonthly: 12,
      paused: true, useOwnerReferencesInBackup: true,
    });
    await waitUntil('the schedule to be Enabled', async () => ((await schedule('full')).status?.phase === 'Enabled' ? true : undefined), 60_000);

    const table = await cli('schedule', 'get');
    expect(table.code, show(table)).toBe(0);
    const [header, row] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^NAME +STATUS +CREATED +SCHEDULE +BACKUP TTL +LAST BACKUP +NEXT BACKUP +SELECTOR +PAUSED$/);
    expect(row).toMatch(/^full +Enabled +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC +@every 6h +48h0m0s +n\/a +n\/a +app=web +true$/);
    const json = JSON.parse((await cli('schedule', 'get', 'full', '-o', 'json')).stdout) as Schedule;
    expect(json.kind).toBe('Schedule');
    expect(json.spec.keepDaily).toBe(7);
    const yaml = YAML.parse((await cli('schedule', 'get', '-o', 'yaml')).stdout) as { kind: string; items: Schedule[] };
    expect(yaml.kind).toBe('ScheduleList');
    expect(yaml.items.map((i) => i.metadata.name)).toEqual(['full']);
    // Paused, it made no backup.
    expect(await backupsOf('full')).toEqual([]);
  }, 600_000);

  it('pause and unpause set spec.paused, by name or selector', async () => {
    const c = await cli('schedule', 'create', 'nightly', '--schedule', '0 3 * * *', '--include-namespaces', app, '--keep-last', '2', '--labels', 'team=b', '--skip-immediately');
    expect(c.code, show(c)).toBe(0);
    expect(c.stdout).toBe(`Schedule "nightly" created successfully.\nNext backup: ${next3am()}\n`);
    const p = await cli('schedule', 'pause', 'nightly');
    expect(p.code, show(p)).toBe(0);
    expect(p.stdout).toBe('Schedule "nightly" paused.\n');
    expect((await schedule('nightly')).spec.paused).toBe(true);
    expect((await cli('schedule', 'pause', 'nightly')).stdout).toBe('Schedule "nightly" is already paused.\n');
    const u = await cli('schedule', 'unpause', '--selector', 'team=b');
    expect(u.code, show(u)).toBe(0);
    expect(u.stdout).toBe('Schedule "nightly" unpaused.\n');
    expect((await schedule('nightly')).spec.paused).toBe(false);
    expect((await schedule('full')).spec.paused).toBe(true);
    // "full" was created paused and never fired: unpausing it would back up at once, so it stays paused.
    const all = await cli('schedule', 'pause', '--all');
    expect(all.code, show(all)).toBe(0);
    expect(all.stdout).toBe('Schedule "full" is already paused.\nSchedule "nightly" paused.\n');
    expect((await schedule('nightly')).spec.paused).toBe(true);
    const again = await cli('schedule', 'unpause', 'nightly');
    expect(again.stdout).toBe('Schedule "nightly" unpaused.\n');
    // skipImmediately: unpausing "nightly" made no backup; it waits for 03:00.
    expect(await backupsOf('nightly')).toEqual([]);
  }, 600_000);

  it('trigger backs up now from the template; describe shows the next and last backup and why retention keeps each', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      // Backup names carry the second they were made in: start each in a new second.
      const second = Math.floor(Date.now() / 1000);
      await waitUntil('the next second', async () => (Math.floor(Date.now() / 1000) > second ? true : undefined), 5000, 50);
      const t = await cli('schedule', 'trigger', 'nightly', '--wait');
      expect(t.code, show(t)).toBe(0);
      const name = /Backup request "(nightly-\d{14})" submitted successfully/.exec(t.stdout)?.[1];
      expect(name, t.stdout).toBeDefined();
      expect(t.stdout).toContain('Backup completed with status: Completed.');
      made.push(name ?? '');
    }
    const backups = await backupsOf('nightly');
    expect(backups.map((b) => b.metadata.name).sort()).toEqual([...made].sort());
    for (const b of backups) {
      expect(b.status?.phase).toBe('Completed');
      expect(b.metadata.labels).toEqual({ team: 'b', [LABEL_SCHEDULE_NAME]: 'nightly' });
      // The server records the location it wrote to.
      expect(b.spec).toEqual({ includedNamespaces: [app], storageLocation: 'default' });
    }
    const [oldest, middle, newest] = made as [string, string, string];

    const d = await cli('schedule', 'describe', 'nightly');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/^Phase: +Enabled$/m);
    expect(d.stdout).toMatch(/^Schedule: +0 3 \* \* \* \(UTC\)$/m);
    expect(d.stdout).toMatch(new RegExp(`^Last backup: +${newest} \\(Completed, created \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\)$`, 'm'));
    expect(d.stdout).toMatch(/^Last scheduled backup: +<none>$/m);
    expect(d.stdout).toMatch(new RegExp(`^Next backup: +${next3am()}$`, 'm'));
    expect(d.stdout).toMatch(/^Retention policy: +keepLast=2$/m);
    expect(d.stdout).toContain('Backups (2 kept, 1 to be deleted by garbage collection):\n');
    expect(d.stdout).toMatch(new RegExp(`^ {2}${newest} +Completed +keep +kept by policy: keepLast #1$`, 'm'));
    expect(d.stdout).toMatch(new RegExp(`^ {2}${middle} +Completed +keep +kept by policy: keepLast #2$`, 'm'));
    expect(d.stdout).toMatch(new RegExp(`^ {2}${oldest} +Completed +delete +not kept by the schedule's policy \\(keepLast=2\\)$`, 'm'));

    const j = JSON.parse((await cli('schedule', 'describe', 'nightly', '-o', 'json')).stdout) as {
      schedule: Schedule; nextBackup: string; retention: { policy: string; keep: { name: string; reason: string }[]; delete: { name: string; reason: string }[] };
    };
    expect(j.schedule.metadata.name).toBe('nightly');
    expect(new Date(j.nextBackup).getUTCHours()).toBe(3);
    expect(j.retention.keep.map((v) => v.name)).toEqual([newest, middle]);
    expect(j.retention.delete).toEqual([{ name: oldest, reason: "not kept by the schedule's policy (keepLast=2)" }]);

    // A paused schedule's template can still be triggered; describe says it makes nothing on its own.
    const pd = await cli('schedule', 'describe', 'full');
    expect(pd.stdout).toMatch(/^Next backup: +<none: paused>$/m);
    expect(pd.stdout).toMatch(/^Retention policy: +keepLast=2, keepHourly=1, keepDaily=7, keepWeekly=4, keepMonthly=12$/m);
    expect(pd.stdout).toContain('Backups:  <none>');
  }, 600_000);

  it('delete removes the schedules and keeps their backups', async () => {
    const r = await cli('schedule', 'delete', '--all', '--confirm');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain('Schedule "full" deleted.');
    expect(r.stdout).toContain(`Schedule "nightly" deleted. Its backups stay; delete them with \`stowage backup delete --selector ${LABEL_SCHEDULE_NAME}=nightly\`.`);
    // Deleted with propagationPolicy Orphan: the API server marks each at once, and the garbage
    // collector removes its orphan finalizer when it gets to it (later under load), as with kubectl.
    for (const n of ['full', 'nightly']) {
      const gone = await schedule(n).then((sc) => sc.metadata.deletionTimestamp !== undefined, (err: unknown) => isNotFound(err));
      expect(gone, `schedule ${n} neither gone nor being deleted`).toBe(true);
      await waitUntil(`schedule ${n} gone`, () => schedule(n).then(() => undefined, (err: unknown) => (isNotFound(err) ? true : Promise.reject(err))), 120_000);
    }
    expect(await backupsOf('nightly')).toHaveLength(3);
    const none = await cli('schedule', 'get');
    expect(none.code, show(none)).toBe(0);
    expect(none.stderr).toBe(`No schedules found in namespace ${ns}.\n`);
  }, 600_000);
});
