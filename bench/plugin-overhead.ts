// Measures the plugin host: per-call overhead of an Execute round trip, PutObject throughput through
// the S3 plugin against a direct SDK upload to the same S3 server, and restart latency after a kill.
// Run: npm run build && npx tsx bench/plugin-overhead.ts [--mib 200] [--calls 2000] [--kills 10]
// Prints a summary and writes bench/results/plugin-overhead.json.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import winston from 'winston';
import { startS3Server } from '../scripts/cluster/s3.js';
import { backupActionExecute, connectPlugin, runMetadata } from '../src/plugin/grpc/index.js';
import { createPluginPool, pluginEnv, type PluginPool } from '../src/plugin/host/index.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const arg = (name: string, dflt: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const MIB = arg('mib', 200);
const CALLS = arg('calls', 2000);
const KILLS = arg('kills', 10);
const ROUNDS = arg('rounds', 3);

const quiet = winston.createLogger({ level: 'error', transports: [new winston.transports.Console({ stderrLevels: ['error'] })] });
const run = { kind: 'backup', namespace: 'bench', name: 'bench' };

function stats(xs: number[]): { mean: number; p50: number; p99: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { mean: xs.reduce((a, b) => a + b, 0) / xs.length, p50: at(0.5), p99: at(0.99), min: s[0] ?? NaN, max: s[s.length - 1] ?? NaN };
}

const median = (xs: number[]): number => stats(xs).p50;

/** CPU time (ms) a process has used so far, from /proc (user + system). */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * (1000 / 100);
}

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function pidOf(needle: string): number {
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(needle)) return Number(p);
    } catch {
      // gone
    }
  }
  throw new Error(`no process matching ${needle}`);
}

function pluginDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-bench-plugins-'));
  const url = pathToFileURL(path.join(ROOT, 'test/fixtures/plugins/test-plugin.mjs')).href;
  const file = path.join(dir, 'bench-plugin');
  fs.writeFileSync(file, `#!${process.execPath}\nimport(${JSON.stringify(url)});\n`);
  fs.chmodSync(file, 0o755);
  return dir;
}

const item = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'bench', labels: { app: 'x' } }, data: { key: 'value'.repeat(40) } };
const backup = { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b', namespace: 'stowage' } };

/** Times `CALLS` calls of each function, in alternating batches so load changes hit both alike. */
async function interleaved(fns: Record<string, () => Promise<unknown>>): Promise<Record<string, ReturnType<typeof stats>>> {
  const us: Record<string, number[]> = {};
  for (const [name, fn] of Object.entries(fns)) {
    us[name] = [];
    for (let i = 0; i < 200; i++) await fn();
  }
  for (let batch = 0; batch < CALLS / 100; batch++) {
    for (const [name, fn] of Object.entries(fns)) {
      for (let i = 0; i < 100; i++) {
        const t0 = performance.now();
        await fn();
        us[name]?.push((performance.now() - t0) * 1000);
      }
    }
  }
  return Object.fromEntries(Object.entries(us).map(([k, v]) => [k, stats(v)]));
}

/** Baseline: the same Execute straight over gRPC to a plugin process, without the host around it. */
async function rawExecutor(): Promise<{ call: () => Promise<unknown>; close: () => void }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'test/fixtures/plugins/test-plugin.mjs')], {
    env: pluginEnv({ logLevel: 'error', parent: process.env }),
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const line = await new Promise<string>((r) => readline.createInterface({ input: child.stdout }).once('line', r));
  const conn = connectPlugin(`unix:${line.split('|')[3]}`);
  return {
    call: () => backupActionExecute(conn, { metadata: runMetadata(run), deadline: new Date(Date.now() + 60_000) }, 'test.stowage.dev/echo', { item, backup }),
    close: () => {
      conn.close();
      child.kill('SIGKILL');
    },
  };
}

async function restartLatency(pool: PluginPool, executable: string, call: () => Promise<unknown>): Promise<ReturnType<typeof stats>> {
  const ms: number[] = [];
  for (let i = 0; i < KILLS; i++) {
    await call();
    const pid = pool.status().find((s) => s.executable === executable)?.pid;
    if (pid === undefined) throw new Error('no live plugin process');
    const t0 = performance.now();
    process.kill(pid, 'SIGKILL');
    await call(); // detects the death, restarts, replays, answers
    ms.push(performance.now() - t0);
  }
  return stats(ms);
}

const PIECE = crypto.randomBytes(1024 * 1024);
async function* body(mib: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < mib; i++) yield PIECE;
}

async function main(): Promise<void> {
  const results: Record<string, unknown> = { node: process.version, cpus: os.cpus().length, loadavg: os.loadavg(), mib: MIB, calls: CALLS, kills: KILLS };

  // 1. Execute round trip through the host, and (baseline) straight over gRPC, interleaved.
  const dir = pluginDir();
  const pool = await createPluginPool({ pluginDirs: [dir], logger: quiet });
  const exe = pool.plugins[0]?.executable as string;
  const raw = await rawExecutor();
  const hostHandle = pool.handle(run);
  const hosted = hostHandle.backupItemAction('test.stowage.dev/echo');
  const exec = await interleaved({ host: () => hosted.execute({ item, backup }), rawGrpc: raw.call });
  hostHandle.release();
  raw.close();
  results.executeMicros = exec.host;
  results.rawGrpcExecuteMicros = exec.rawGrpc;
  console.log(
    `Execute round trip over ${CALLS} calls: host mean ${exec.host?.mean.toFixed(0)} µs (p50 ${exec.host?.p50.toFixed(0)}), ` +
      `raw gRPC mean ${exec.rawGrpc?.mean.toFixed(0)} µs (p50 ${exec.rawGrpc?.p50.toFixed(0)})`,
  );

  // 3a. Restart latency of a small SDK plugin.
  const h = pool.handle(run);
  const echo = h.backupItemAction('test.stowage.dev/echo');
  results.restartMsSdkPlugin = await restartLatency(pool, exe, () => echo.execute({ item, backup }));
  console.log('restart after SIGKILL (SDK test plugin), ms:', results.restartMsSdkPlugin);
  h.release();
  await pool.shutdown();

  // 2. PutObject throughput: direct SDK vs through the stowage.dev/aws plugin, same server, same part size.
  const s3 = await startS3Server();
  const bucket = 'bench';
  const direct = new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
  await direct.send(new CreateBucketCommand({ Bucket: bucket }));
  const creds = path.join(dir, 'credentials');
  fs.writeFileSync(creds, `[default]\naws_access_key_id=${s3.accessKeyId}\naws_secret_access_key=${s3.secretAccessKey}\n`, { mode: 0o600 });
  const builtins = await createPluginPool({ selfCommand: [process.execPath, path.join(ROOT, 'dist/cli/bin.js'), 'run-plugins'], logger: quiet });
  const bh = builtins.handle(run);
  const store = await bh.objectStore('stowage.dev/aws', { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true', credentialsFile: creds });
  const directMBs: number[] = [];
  const pluginMBs: number[] = [];
  // CPU per MiB of every process on the path: this server, the plugin, the S3 server.
  const pluginPid = builtins.status()[0]?.pid as number;
  const s3Pid = pidOf(s3.directory);
  const cpu = { direct: { host: 0, s3: 0 }, plugin: { host: 0, plugin: 0, s3: 0 } };
  const directPut = async (r: number): Promise<void> => {
    const h0 = selfCpuMs();
    const s0 = cpuMs(s3Pid);
    const t0 = performance.now();
    await new Upload({ client: direct, params: { Bucket: bucket, Key: `direct-${r}`, Body: Readable.from(body(MIB)) }, partSize: 8 * 1024 * 1024, queueSize: 4 }).done();
    directMBs.push(MIB / ((performance.now() - t0) / 1000));
    cpu.direct.host += (selfCpuMs() - h0) / MIB / ROUNDS;
    cpu.direct.s3 += (cpuMs(s3Pid) - s0) / MIB / ROUNDS;
  };
  const pluginPut = async (r: number): Promise<void> => {
    const h0 = selfCpuMs();
    const s0 = cpuMs(s3Pid);
    const p0 = cpuMs(pluginPid);
    const t0 = performance.now();
    await store.putObject(bucket, `plugin-${r}`, body(MIB));
    pluginMBs.push(MIB / ((performance.now() - t0) / 1000));
    cpu.plugin.host += (selfCpuMs() - h0) / MIB / ROUNDS;
    cpu.plugin.plugin += (cpuMs(pluginPid) - p0) / MIB / ROUNDS;
    cpu.plugin.s3 += (cpuMs(s3Pid) - s0) / MIB / ROUNDS;
  };
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so neither always runs on a warmer (or busier) machine.
    if (r % 2 === 0) {
      await directPut(r);
      await pluginPut(r);
    } else {
      await pluginPut(r);
      await directPut(r);
    }
    console.log(`round ${r + 1}: direct ${directMBs[r]?.toFixed(1)} MiB/s, plugin ${pluginMBs[r]?.toFixed(1)} MiB/s`);
  }
  results.putDirectMiBps = directMBs;
  results.putPluginMiBps = pluginMBs;
  results.putRatio = median(pluginMBs) / median(directMBs);
  results.putCpuMsPerMiB = cpu;
  console.log(`PutObject ${MIB} MiB: direct ${median(directMBs).toFixed(1)} MiB/s, plugin ${median(pluginMBs).toFixed(1)} MiB/s, ratio ${(results.putRatio as number).toFixed(2)}x`);
  console.log('CPU ms per MiB:', JSON.stringify(cpu, (_k, v: unknown) => (typeof v === 'number' ? Number(v.toFixed(2)) : v)));

  // 3b. Restart latency of the built-ins (the real `stowage run-plugins`), measured with a cheap call.
  results.restartMsBuiltins = await restartLatency(builtins, 'stowage run-plugins', () => store.objectExists(bucket, 'direct-0'));
  console.log('restart after SIGKILL (stowage run-plugins), ms:', results.restartMsBuiltins);

  bh.release();
  await builtins.shutdown();

  // 3c. The same built-ins without the rest of the CLI loaded (runPlugins.ts alone): what a
  // `run-plugins` fast path in bin.ts would give.
  const lean = await createPluginPool({ selfCommand: [process.execPath, path.join(ROOT, 'test/fixtures/plugins/run-plugins.mjs'), 'run-plugins'], logger: quiet });
  const lh = lean.handle(run);
  const leanStore = await lh.objectStore('stowage.dev/aws', { region: s3.region, s3Url: s3.endpoint, s3ForcePathStyle: 'true', credentialsFile: creds });
  results.restartMsBuiltinsWithoutCli = await restartLatency(lean, 'stowage run-plugins', () => leanStore.objectExists(bucket, 'direct-0'));
  console.log('restart after SIGKILL (runPlugins.ts without the rest of the CLI), ms:', results.restartMsBuiltinsWithoutCli);
  lh.release();
  await lean.shutdown();
  direct.destroy();
  await s3.close();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench/results/plugin-overhead.json'), `${JSON.stringify(results, null, 2)}\n`);
}

await main();
