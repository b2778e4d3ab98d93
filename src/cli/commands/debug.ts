// `stowage debug`: one tar.gz with what a bug report needs: versions, the server's recent log,
// CRD versions, locations, and for a named backup or restore its object, describe output, log and
// results. Every file is scrubbed (scrub.ts) before it is written; the kubeconfig is never read
// into it. A part that cannot be gathered is named, with why, in README.txt and on stderr, and
// the rest is still written (exit 0): a bundle is most needed when something is broken.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Command, Option } from 'commander';
import * as tar from 'tar-stream';
import { RESOURCES, type Backup, type Restore } from '../../apis/v1/index.js';
import { errorMessage } from '../../util/errors.js';
import { action, type Session } from './action.js';
import { getBackup } from './backup.js';
import {
  clientInfo, describeRun, gatherCrds, gatherLocations, gatherResults, gatherRunLog, gatherServerLog, gatherVersions,
  learnKubeconfigCredentials, learnSecrets, namespacesOf, type Versions,
} from './debugSources.js';
import { CliError } from './errors.js';
import { checkName, parseTimeout, timestampSuffix } from './flags.js';
import { addGlobalOptions, type CliContext } from './kubeContext.js';
import { formatBytes, formatData, out } from './output.js';
import { getRestore } from './restore.js';
import { createScrubber, type Scrubber } from './scrub.js';
import type { TlsOptions } from './download.js';
import { ServerNotRunningError } from './version.js';

interface DebugFlags {
  backup?: string;
  restore?: string;
  output?: string;
  force?: boolean;
  timeout: string;
  cacert?: string;
  insecureSkipTlsVerify?: boolean;
}

/** One file of the bundle: its path under the top directory, what it holds, and its content. */
interface BundleFile {
  name: string;
  about: string;
  content: string;
}

/** Collects files and the parts that could not be gathered. */
class Bundle {
  readonly files: BundleFile[] = [];
  readonly missing: string[] = [];
  add(name: string, about: string, content: string): void {
    this.files.push({ name, about, content });
  }
  /** Runs one gathering step; its failure becomes a line of "Not gathered". */
  async part(what: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (err) {
      this.missing.push(`${what}: ${errorMessage(err)}`);
    }
  }
}

const yaml = (v: unknown): string => formatData(v, 'yaml');
const json = (v: unknown): string => formatData(v, 'json');

async function gatherRun(
  ctx: CliContext, b: Bundle, scrubber: Scrubber, kind: 'backup' | 'restore', run: Backup | Restore, o: { timeoutMs: number; tls: TlsOptions; serverUp: boolean },
): Promise<void> {
  const dir = `${kind}/${run.metadata.name}`;
  b.add(`${dir}/${kind}.yaml`, `the ${kind} object, status included`, yaml(scrubber.value(run)));
  await b.part(`the describe output of ${kind} "${run.metadata.name}"`, async () => {
    b.add(`${dir}/describe.txt`, `\`stowage ${kind} describe${kind === 'backup' ? ' --details' : ''}\``, await describeRun(ctx, kind, run, o.timeoutMs, o.serverUp));
  });
  const needsServer = (): void => {
    if (!o.serverUp) throw new Error('the server did not answer (see above)');
  };
  await b.part(`the log of ${kind} "${run.metadata.name}"`, async () => {
    needsServer();
    b.add(`${dir}/log.txt`, `\`stowage ${kind} logs\``, await gatherRunLog(ctx, kind, run, o.timeoutMs, o.tls));
  });
  await b.part(`the results of ${kind} "${run.metadata.name}"`, async () => {
    needsServer();
    b.add(`${dir}/results.json`, 'warnings and errors by namespace, and the per-item records', json(scrubber.value(await gatherResults(ctx, kind, run, o.timeoutMs, o.tls))));
  });
}

function readme(b: Bundle, o: { created: string; versions: Versions['client']; namespace: string; asked: string[]; scrubbed: string }): string {
  const width = Math.max(...b.files.map((f) => f.name.length), 'README.txt'.length) + 2;
  let s = 'Stowage debug bundle\n\n';
  s += `Created:    ${o.created} by stowage CLI ${o.versions.version} (Node.js ${o.versions.node}, ${o.versions.platform})\n`;
  s += `Namespace:  ${o.namespace} (the server's)\n`;
  s += `Asked for:  ${o.asked.length === 0 ? 'no backup or restore' : o.asked.join(', ')}\n\n`;
  s += 'Files:\n';
  s += `  ${'README.txt'.padEnd(width)}this file\n`;
  for (const f of b.files) s += `  ${f.name.padEnd(width)}${f.about}\n`;
  s += '\n';
  s += b.missing.length === 0 ? 'Everything asked for was gathered.\n' : `Not gathered:\n${b.missing.map((m) => `  - ${m}\n`).join('')}`;
  s += `\nScrubbed: ${o.scrubbed}\n`;
  return s;
}

async function writeTarGz(file: string, top: string, files: readonly { name: string; content: string }[]): Promise<void> {
  const pack = tar.pack();
  const partial = `${file}.partial`;
  const done = pipeline(pack, createGzip(), fs.createWriteStream(partial, { mode: 0o600 }));
  const mtime = new Date();
  try {
    for (const f of files) {
      const data = Buffer.from(f.content, 'utf8');
      pack.entry({ name: `${top}/${f.name}`, size: data.length, mode: 0o644, mtime }, data);
    }
    pack.finalize();
    await done;
    fs.renameSync(partial, file);
  } catch (err) {
    pack.destroy();
    fs.rmSync(partial, { force: true });
    throw err;
  }
}

async function runDebug(cmd: Command, s: Session): Promise<void> {
  const o = cmd.opts<DebugFlags>();
  const timeoutMs = parseTimeout('timeout', o.timeout);
  if (o.backup !== undefined) checkName('backup', o.backup);
  if (o.restore !== undefined) checkName('restore', o.restore);
  const stamp = timestampSuffix();
  const file = path.resolve(o.output ?? `stowage-debug-${stamp}.tar.gz`);
  if (fs.existsSync(file) && o.force !== true) throw new CliError(`${file} already exists; use --force to overwrite it`);
  const top = path.basename(file).replace(/\.(tar\.gz|tgz)$/, '') || `stowage-debug-${stamp}`;
  const tls: TlsOptions = { ...(o.cacert !== undefined ? { cacert: o.cacert } : {}), ...(o.insecureSkipTlsVerify === true ? { insecureSkipTlsVerify: true } : {}) };
  const ctx = s.client();

  // The named runs first: a typo fails before anything is gathered or written.
  const backup = o.backup === undefined ? undefined : await getBackup(ctx, o.backup);
  const restore = o.restore === undefined ? undefined : await getRestore(ctx, o.restore);
  const asked = [...(backup ? [`backup "${backup.metadata.name}"`] : []), ...(restore ? [`restore "${restore.metadata.name}"`] : [])];
  out(`Gathering a debug bundle for namespace ${ctx.namespace}${asked.length > 0 ? ` and ${asked.join(', ')}` : ''}...`);

  // Values to scrub: the Secrets of the server's namespace (location credentials, keys) and of the
  // runs' scopes, and the kubeconfig's own credentials.
  const scrubber = createScrubber();
  learnKubeconfigCredentials(ctx, scrubber);
  const restoredFrom = restore?.spec.backupName !== undefined && restore.spec.backupName !== '' && restore.spec.backupName !== backup?.metadata.name
    ? await ctx.client.get<Backup>(RESOURCES.Backup, ctx.namespace, restore.spec.backupName).catch(() => undefined)
    : backup;
  const scopes = [backup?.spec, restore === undefined ? undefined : { ...(restoredFrom?.spec ?? {}), namespaceMapping: restore.spec.namespaceMapping }]
    .filter((x) => x !== undefined)
    .map((spec) => namespacesOf(spec));
  const namespaces = scopes.includes('all') ? 'all' : [...new Set([ctx.namespace, ...scopes.flatMap((n) => (n === 'all' ? [] : n))])];
  const learned = await learnSecrets(ctx, scrubber, namespaces);

  const b = new Bundle();
  let serverUp = true;
  let versions: Versions = { client: clientInfo() };
  await b.part('the server version and plugins', async () => {
    try {
      versions = await gatherVersions(ctx, timeoutMs);
    } catch (err) {
      // Without a server, what goes through it (its log, run logs, results) would only time out.
      if (err instanceof ServerNotRunningError) serverUp = false;
      throw err;
    }
  });
  b.add('version.yaml', 'client and server versions, and the server\'s plugins', yaml(versions));
  await b.part('the server log', async () => {
    if (!serverUp) throw new Error('the server did not answer');
    b.add('server.log', 'the server\'s last log lines (kept in its memory, at most 2000 lines / 1 MiB)', await gatherServerLog(ctx, timeoutMs, tls));
  });
  await b.part('the CRD versions', async () => {
    b.add('crds.yaml', 'the installed stowage.dev CRDs against the ones this CLI expects: names, versions, schemas', yaml(await gatherCrds(ctx)));
  });
  await b.part('the backup storage locations', async () => {
    const list = { apiVersion: 'stowage.dev/v1', kind: 'BackupStorageLocationList', items: await gatherLocations(ctx) };
    b.add('locations.yaml', 'the BackupStorageLocations, status included (credential Secrets only by name)', yaml(scrubber.value(list)));
  });
  const runOpts = { timeoutMs, tls, serverUp };
  if (backup !== undefined) await gatherRun(ctx, b, scrubber, 'backup', backup, runOpts);
  if (restore !== undefined) await gatherRun(ctx, b, scrubber, 'restore', restore, runOpts);

  const where = namespaces === 'all' ? 'all namespaces' : `namespace${namespaces.length === 1 ? '' : 's'} ${namespaces.join(', ')}`;
  const scrubbed = `the values of ${learned.read} Secret${learned.read === 1 ? '' : 's'} in ${where} (as text, base64 and escaped), ` +
    'Secret data and credential-named keys (token, password, secret, credential, access key...) in objects, and bearer tokens, ' +
    'AWS access keys, JWTs, private keys and URL credentials in all text. The kubeconfig is not included.' +
    (learned.unreadable.length > 0 ? ` Secrets that could not be read, so scrubbed by key and shape only: ${learned.unreadable.join('; ')}.` : '');
  const files = [
    { name: 'README.txt', content: readme(b, { created: new Date().toISOString(), versions: versions.client, namespace: ctx.namespace, asked, scrubbed }) },
    ...b.files,
  ].map((f) => ({ name: f.name, content: scrubber.text(f.content) }));
  await writeTarGz(file, top, files);
  for (const m of b.missing) process.stderr.write(`warning: not gathered: ${m}\n`);
  out(`Debug bundle written to ${file} (${files.length} files, ${formatBytes(fs.statSync(file).size)}). Secret data and credentials were scrubbed; see README.txt in it.`);
}

export function debugCommand(): Command {
  return addGlobalOptions(
    new Command('debug')
      .description('Write a tar.gz for a bug report: versions, the server log, CRD versions, locations, and a backup\'s or restore\'s log, describe output and results (secrets scrubbed)')
      .option('--backup <name>', 'include this backup: its object, describe output, log and results')
      .option('--restore <name>', 'include this restore: its object, describe output, log and results')
      .option('--output <file>', 'where to write the bundle (default: stowage-debug-<timestamp>.tar.gz)')
      .option('--force', 'overwrite the output file if it exists')
      .addOption(new Option('--timeout <duration>', 'how long to wait for each answer of the server').default('1m'))
      .option('--cacert <file>', 'PEM file with the CA certificates of the object store, when it uses a private CA')
      .option('--insecure-skip-tls-verify', 'do not verify the object store\'s TLS certificate (insecure)')
      .addHelpText(
        'after',
        `
Examples:
  stowage debug
  stowage debug --backup nightly-20250101 --output bug-123.tar.gz
  stowage debug --restore app-copy`,
      ),
  ).action(action(async (cmd, s) => runDebug(cmd, s)));
}
