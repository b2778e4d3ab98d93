// The backup engine on its own: src/backup's runBackup in the benchmark's process, writing through
// the S3 object store class in-process (no server, no plugin process, no gRPC), with the server's
// client limits and a run log like the server's. Between the floor and the server's figure, it
// tells whether a gap comes from the engine or from the server and its plugin processes.
import fs from 'node:fs';
import path from 'node:path';
import { newBackup } from '../src/apis/v1/index.js';
import { runBackup } from '../src/backup/index.js';
import type { DynamicClient } from '../src/kube/index.js';
import { createRunLogger, createServerLogger } from '../src/logging/index.js';
import { createBackupStore } from '../src/persistence/backupStore.js';
import { AwsObjectStore } from '../src/plugin/builtin/aws.js';
import { setLogSink } from '../src/plugin/sdk/logger.js';

export interface EngineResult {
  seconds: number;
  phase: string;
  /** Why the run did not complete: its failure reason and first errors, for the harness's message. */
  problems: string[];
  items: number;
  tarballBytes: number;
  cpuSeconds: number;
}

export interface EngineOptions {
  client: DynamicClient;
  /** stowage.dev/aws config (region, s3Url, s3ForcePathStyle, credentialsFile). */
  storeConfig: Record<string, string>;
  bucket: string;
  prefix: string;
  namespaces: readonly string[];
  pageSize: number;
  /** The backup's name and namespace (for the run log). */
  name: string;
  namespace: string;
  workDir: string;
}

export async function backupEngine(o: EngineOptions): Promise<EngineResult> {
  setLogSink(() => undefined); // the store's own log lines ("ready") are not the benchmark's output
  const objectStore = new AwsObjectStore();
  await objectStore.init(o.storeConfig);
  const store = createBackupStore({ objectStore, bucket: o.bucket, prefix: o.prefix });
  const serverLogFile = fs.createWriteStream(path.join(o.workDir, 'engine-server.log'));
  const server = createServerLogger({ stream: serverLogFile });
  const run = createRunLogger({ server, kind: 'backup', namespace: o.namespace, name: o.name, dir: path.join(o.workDir, 'engine-run-logs') });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const result = await runBackup(
      { client: o.client, store, log: run.logger, pageSize: o.pageSize },
      newBackup(o.name, o.namespace, { includedNamespaces: [...o.namespaces] }),
    );
    await run.close();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return {
      seconds, phase: result.phase, items: result.progress.itemsBackedUp,
      problems: [
        ...(result.failureReason !== undefined ? [result.failureReason] : []),
        ...result.results.errors.cluster,
        ...Object.values(result.results.errors.namespaces).flat(),
      ].slice(0, 5),
      tarballBytes: result.manifest?.tarball.bytes ?? 0, cpuSeconds: (cpu.user + cpu.system) / 1e6,
    };
  } finally {
    await run.close().catch(() => undefined);
    server.close();
    serverLogFile.end();
  }
}
