// `npm run cluster -- up|down|env|status|provision`: the local control plane by hand.
// `up` starts a detached supervisor (this file with `serve`) that owns the processes; `down` stops it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { K8S_VERSION, cacheDir, cacheRoot } from './paths.js';
import { provision } from './provision.js';
import { startControlPlane } from './controlPlane.js';
import { startS3Server } from './s3.js';

interface State {
  pid: number;
  kubeconfigPath: string;
  userKubeconfigPath: string;
  server: string;
  s3Endpoint: string;
  s3Directory: string;
}

const stateFile = path.join(cacheRoot(), 'cluster-state.json');

function readState(): State | undefined {
  try {
    const s = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as State;
    process.kill(s.pid, 0);
    return s;
  } catch {
    return undefined;
  }
}

function printEnv(s: State): void {
  process.stdout.write(
    `export KUBECONFIG=${s.kubeconfigPath}\n` +
      `# unprivileged user: KUBECONFIG=${s.userKubeconfigPath}\n` +
      `export AWS_ENDPOINT_URL_S3=${s.s3Endpoint} AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1\n`,
  );
}

async function serve(): Promise<void> {
  const cp = await startControlPlane();
  const s3 = await startS3Server();
  const state: State = {
    pid: process.pid,
    kubeconfigPath: cp.kubeconfigPath,
    userKubeconfigPath: cp.userKubeconfigPath,
    server: cp.server,
    s3Endpoint: s3.endpoint,
    s3Directory: s3.directory,
  };
  fs.writeFileSync(stateFile, JSON.stringify(state, null, 2));
  const shutdown = async (): Promise<void> => {
    await s3.close();
    await cp.stop();
    fs.rmSync(stateFile, { force: true });
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown());
  process.once('SIGINT', () => void shutdown());
  setInterval(() => undefined, 1 << 30);
}

async function up(): Promise<void> {
  const existing = readState();
  if (existing) {
    process.stderr.write(`control plane already running (pid ${existing.pid}) at ${existing.server}\n`);
    printEnv(existing);
    return;
  }
  await provision();
  fs.mkdirSync(path.dirname(stateFile), { recursive: true });
  const log = path.join(path.dirname(stateFile), 'cluster-serve.log');
  const out = fs.openSync(log, 'w');
  const child = spawn(process.execPath, [...process.execArgv, import.meta.filename, 'serve'], { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const s = readState();
    if (s) {
      process.stderr.write(`control plane up at ${s.server} (supervisor pid ${s.pid}); stop it with: npm run cluster -- down\n`);
      printEnv(s);
      return;
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`control plane did not come up; see ${log}:\n${fs.readFileSync(log, 'utf8').slice(-2000)}`);
}

async function down(): Promise<void> {
  const s = readState();
  if (!s) {
    process.stderr.write('no local control plane is running\n');
    return;
  }
  process.kill(s.pid, 'SIGTERM');
  while (readState()) await new Promise((r) => setTimeout(r, 200));
  process.stderr.write('control plane stopped\n');
}

const cmd = process.argv[2];
try {
  switch (cmd) {
    case 'up': await up(); break;
    case 'down': await down(); break;
    case 'env': {
      const s = readState();
      if (!s) throw new Error('no local control plane is running; start one with: npm run cluster -- up');
      printEnv(s);
      break;
    }
    case 'provision': await provision(); process.stderr.write(`Kubernetes v${K8S_VERSION} binaries cached in ${cacheDir()}/bin\n`); break;
    case 'serve': await serve(); break;
    default:
      process.stderr.write('usage: npm run cluster -- up|down|env|provision\n');
      process.exit(2);
  }
} catch (err) {
  process.stderr.write(`cluster ${cmd}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
