// What `stowage debug` gathers, one function per part of the bundle. Each reuses the code path of
// the command that shows the same thing (version, backup/restore describe and logs, the download
// of results), so the bundle holds what the user would have seen. Scrubbing is debug.ts's job.
import { GROUP, KINDS, RESOURCES, buildCrd, crdName, type Backup, type BackupStorageLocation, type Restore } from '../../apis/v1/index.js';
import { CORE, CUSTOM_RESOURCE_DEFINITIONS, type KubeObject } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';
import { describeBackupText, fetchResults } from './backup.js';
import { download, readAll, type TlsOptions } from './download.js';
import type { CliContext } from './kubeContext.js';
import { describeRestoreText, fetchRestoreResults } from './restore.js';
import { printRunLog } from './runLog.js';
import type { Scrubber } from './scrub.js';
import { clientVersion, serverStatus, type ServerStatus } from './version.js';

/** The server log tail is a few hundred KiB; refuse anything far beyond what the server keeps. */
const MAX_SERVER_LOG_BYTES = 16 * 1024 * 1024;

export interface Versions {
  client: { version: string; node: string; platform: string };
  server?: ServerStatus & { namespace: string };
}

export function clientInfo(): Versions['client'] {
  return { version: clientVersion(), node: process.version, platform: `${process.platform}/${process.arch}` };
}

export async function gatherVersions(ctx: CliContext, timeoutMs: number): Promise<Versions> {
  return { client: clientInfo(), server: { ...(await serverStatus(ctx, timeoutMs)), namespace: ctx.namespace } };
}

/** The server's last log lines, through a DownloadRequest for its ServerLog target. */
export async function gatherServerLog(ctx: CliContext, timeoutMs: number, tls: TlsOptions): Promise<string> {
  const body = await download(ctx, { kind: 'ServerLog', name: ctx.namespace }, { timeoutMs, ...tls });
  return (await readAll(body, MAX_SERVER_LOG_BYTES, 'the server log')).toString('utf8');
}

type InstalledCrd = KubeObject & {
  spec?: { group?: string; versions?: { name: string; served?: boolean; storage?: boolean; schema?: unknown }[] };
  status?: { storedVersions?: string[]; conditions?: { type: string; status: string }[] };
};

/** JSON with sorted keys: two schemas are the same when this is. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

export interface CrdReport {
  /** Every stowage.dev CRD this CLI expects, and what the cluster has for it. */
  expected: {
    name: string;
    versions: string[];
    installed: boolean;
    installedVersions?: { name: string; served: boolean; storage: boolean; schema: 'same as this CLI' | 'differs from this CLI' | 'not expected by this CLI' }[];
    storedVersions?: string[];
    established?: boolean;
  }[];
  /** stowage.dev CRDs installed that this CLI does not know. */
  unexpected: string[];
}

/** The installed stowage.dev CRDs against the ones this CLI was built with (names, versions, schemas). */
export async function gatherCrds(ctx: CliContext): Promise<CrdReport> {
  const all = await ctx.client.listAll<InstalledCrd>(CUSTOM_RESOURCE_DEFINITIONS);
  const installed = new Map(all.items.filter((c) => c.spec?.group === GROUP).map((c) => [c.metadata?.name ?? '', c]));
  const expected = KINDS.map((def) => {
    const want = buildCrd(def);
    const name = crdName(def);
    const have = installed.get(name);
    installed.delete(name);
    const versions = want.spec.versions.map((v) => v.name);
    if (have === undefined) return { name, versions, installed: false };
    return {
      name,
      versions,
      installed: true,
      installedVersions: (have.spec?.versions ?? []).map((v) => {
        const mine = want.spec.versions.find((w) => w.name === v.name);
        const schema = mine === undefined ? 'not expected by this CLI' as const
          : canonical(mine.schema) === canonical(v.schema) ? 'same as this CLI' as const : 'differs from this CLI' as const;
        return { name: v.name, served: v.served === true, storage: v.storage === true, schema };
      }),
      storedVersions: have.status?.storedVersions ?? [],
      established: (have.status?.conditions ?? []).some((c) => c.type === 'Established' && c.status === 'True'),
    };
  });
  return { expected, unexpected: [...installed.keys()].sort() };
}

export async function gatherLocations(ctx: CliContext): Promise<BackupStorageLocation[]> {
  const list = await ctx.client.listAll<BackupStorageLocation>(RESOURCES.BackupStorageLocation, { namespace: ctx.namespace });
  return list.items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** A run's log as `backup logs` prints it (text lines), or why it has none. */
export async function gatherRunLog(ctx: CliContext, kind: 'backup' | 'restore', run: Backup | Restore, timeoutMs: number, tls: TlsOptions): Promise<string> {
  const phase = run.status?.phase ?? 'New';
  if (phase === 'New' || phase === 'FailedValidation') throw new Error(`the ${kind} is ${phase}, so it has no log`);
  const lines: string[] = [];
  await printRunLog(ctx, kind === 'backup' ? 'BackupLog' : 'RestoreLog', run.metadata.name, { follow: false, json: false, timeoutMs, ...tls, write: (l) => lines.push(l) });
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

export async function describeRun(ctx: CliContext, kind: 'backup' | 'restore', run: Backup | Restore, timeoutMs: number, serverUp: boolean): Promise<string> {
  if (kind === 'backup') return describeBackupText(ctx, run as Backup, { details: serverUp, timeoutMs });
  return describeRestoreText(ctx, run as Restore, timeoutMs);
}

/** A finished run's results file (warnings, errors, and per-item records), or why there is none. */
export async function gatherResults(ctx: CliContext, kind: 'backup' | 'restore', run: Backup | Restore, timeoutMs: number, tls: TlsOptions): Promise<unknown> {
  const phase = run.status?.phase ?? 'New';
  if (!['Completed', 'PartiallyFailed', 'Failed'].includes(phase)) throw new Error(`the ${kind} is ${phase}, so it has no results yet`);
  const results = kind === 'backup' ? await fetchResults(ctx, run.metadata.name, timeoutMs, tls) : await fetchRestoreResults(ctx, run.metadata.name, timeoutMs);
  if (results === undefined) throw new Error(`the ${kind}'s results are not in object storage`);
  return results;
}

/** The namespaces whose Secrets may show up in a run's texts: its scope (all, when it names none, or by a pattern such as `team-*`). */
export function namespacesOf(spec: { includedNamespaces?: string[]; namespaceMapping?: Record<string, string> }): string[] | 'all' {
  const inc = spec.includedNamespaces ?? [];
  if (inc.length === 0 || inc.some((n) => /[*?[\]]/.test(n))) return 'all';
  return [...new Set([...inc, ...Object.values(spec.namespaceMapping ?? {})])];
}

type SecretObj = KubeObject & { data?: Record<string, string>; stringData?: Record<string, string> };

/**
 * Feeds the values of the Secrets in these namespaces to the scrubber, so they are removed
 * wherever they appear. Namespaces whose Secrets this user may not list are returned: the bundle
 * says that scrubbing there relied on keys and shapes only.
 */
export async function learnSecrets(ctx: CliContext, scrubber: Scrubber, namespaces: readonly string[] | 'all'): Promise<{ read: number; unreadable: string[] }> {
  let read = 0;
  const unreadable: string[] = [];
  const scopes = namespaces === 'all' ? [undefined] : namespaces;
  for (const ns of scopes) {
    try {
      for await (const page of ctx.client.listPages<SecretObj>(CORE.secrets, { namespace: ns })) {
        for (const s of page.items) {
          scrubber.addSecretData(s);
          read++;
        }
      }
    } catch (err) {
      unreadable.push(`${ns === undefined ? 'all namespaces' : `namespace ${ns}`} (${errorMessage(err)})`);
    }
  }
  return { read, unreadable };
}

/** The kubeconfig's own credentials: never in the bundle, even if some text quoted them. */
export function learnKubeconfigCredentials(ctx: CliContext, scrubber: Scrubber): void {
  const user = ctx.kc.getCurrentUser();
  if (user === null) return;
  for (const v of [user.token, user.password]) if (typeof v === 'string' && v !== '') scrubber.addSecretValue(v);
  if (typeof user.keyData === 'string' && user.keyData !== '') {
    scrubber.addSecretValue(user.keyData);
    scrubber.addSecretValue(Buffer.from(user.keyData, 'base64').toString('utf8'));
  }
  for (const v of Object.values(user.authProvider?.config ?? {})) if (typeof v === 'string' && v !== '') scrubber.addSecretValue(v);
}
