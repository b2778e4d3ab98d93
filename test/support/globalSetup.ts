// Starts one real control plane and one S3 server (MinIO, built from the Go module proxy) for the
// whole integration run. Provisioning failures fail the run with the reason; nothing is skipped.
// Tests that take the S3 server down and up again start their own s3rver (scripts/cluster/s3.ts).
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import type { S3Server } from '../../scripts/cluster/s3.js';
import { startMinio } from '../../scripts/cluster/minio.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: {
      kubeconfigPath: string; userKubeconfigPath: string; server: string; adminToken: string; userToken: string;
      /** alice (group team-a), bob (group team-b) and carol (group team-c): no RBAC grants until a test binds them. */
      teamUsers: { name: string; uid: string; groups: string[]; token: string; kubeconfigPath: string }[];
    };
    /** MinIO: a real S3 server (multipart listing, versioning, Object Lock, checksums) with per-run random credentials. */
    s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; directory: string };
  }
}

let cp: ControlPlane | undefined;
let s3: S3Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  const t0 = Date.now();
  cp = await startControlPlane();
  // S3 block (helper minio): MinIO replaces s3rver as the shared server.
  s3 = await startMinio();
  process.stderr.write(`[globalSetup] control plane at ${cp.server} and S3 at ${s3.endpoint} ready in ${Date.now() - t0} ms\n`);
  project.provide('cluster', {
    kubeconfigPath: cp.kubeconfigPath,
    userKubeconfigPath: cp.userKubeconfigPath,
    server: cp.server,
    adminToken: cp.adminToken,
    userToken: cp.userToken,
    teamUsers: cp.teamUsers,
  });
  project.provide('s3', {
    endpoint: s3.endpoint,
    region: s3.region,
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    directory: s3.directory,
  });
}

export async function teardown(): Promise<void> {
  await s3?.close();
  await cp?.stop();
}
