// Starts one real control plane and one S3 server for the whole integration run. Provisioning
// failures fail the run with the reason; nothing is skipped.
import type { TestProject } from 'vitest/node';
import { startControlPlane, type ControlPlane } from '../../scripts/cluster/controlPlane.js';
import { startS3Server, type S3Server } from '../../scripts/cluster/s3.js';

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: {
      kubeconfigPath: string; userKubeconfigPath: string; server: string; adminToken: string; userToken: string;
      /** alice (group team-a), bob (group team-b) and carol (group team-c): no RBAC grants until a test binds them. */
      teamUsers: { name: string; uid: string; groups: string[]; token: string; kubeconfigPath: string }[];
    };
    s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; directory: string };
  }
}

let cp: ControlPlane | undefined;
let s3: S3Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  const t0 = Date.now();
  cp = await startControlPlane();
  s3 = await startS3Server();
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
