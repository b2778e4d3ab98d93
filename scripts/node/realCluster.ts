// A whole throwaway cluster on this machine, as the in-cluster tests and `npm run demo -- --in-cluster`
// use it: a node-mode control plane, a real node (node.ts), an S3 server on the machine's address
// (the pods reach it as they would an external store), the helm binary and, when asked, a CSI stack
// (csi.ts). stop() ends all of it and says what of the machine, if anything, differs from before it started.
import { startControlPlane, type ControlPlane } from '../cluster/controlPlane.js';
import { startS3Server, type S3Server } from '../cluster/s3.js';
import { ensureHelm } from '../helm/helm.js';
import { ensureCsi, startCsi, type CsiStack } from './csi.js';
import { takeRealNodeLock } from './hostLock.js';
import { hostChanges, snapshotHost, type HostSnapshot } from './hostState.js';
import { hostIp, nodeBinaries, startNode, type RealNode } from './node.js';
import { ensureNodePackages } from './packages.js';

export const NODE_NAME = 'stowage-node';

export interface RealCluster {
  cp: ControlPlane;
  node: RealNode;
  s3: S3Server;
  helmBin: string;
  /** The CSI driver, its sidecars, StorageClasses and VolumeSnapshotClasses, when started with `csi: true`. */
  csi?: CsiStack;
  /** Stops the node, the S3 server and the control plane, and lets the next real-node user start; resolves what differs on the machine from before (empty: nothing). */
  stop(): Promise<string[]>;
}

export async function startRealCluster(opts: { buckets: string[]; log: (line: string) => void; csi?: boolean }): Promise<RealCluster> {
  // nft (for the snapshot) is one of the node's packages: a fresh machine gets them first.
  ensureNodePackages(opts.log);
  // Built (minutes, cold) while this run waits for the lock and starts the node; awaited after.
  const csiBuild = opts.csi === true ? ensureCsi(opts.log) : undefined;
  // Else an early failure would leave it unhandled; the await below still throws it.
  csiBuild?.catch(() => undefined);
  // Real-node test files run in parallel with each other: they take turns on the machine.
  const lock = await takeRealNodeLock(opts.log);
  const before: HostSnapshot = snapshotHost();
  const ip = hostIp();
  let cp: ControlPlane | undefined;
  let node: RealNode | undefined;
  let s3: S3Server | undefined;
  let csi: CsiStack | undefined;
  const stop = async (): Promise<string[]> => {
    const problems: string[] = [];
    const attempt = async (what: string, f: () => Promise<void> | undefined): Promise<void> => {
      try {
        await f();
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
      }
    };
    // Before the node: its volume mounts sit in the kubelet's directory.
    await attempt('stopping the CSI stack', async () => {
      const left = await csi?.stop();
      if (left !== undefined && left.length > 0) throw new Error(left.join('; '));
    });
    await attempt('stopping the node', () => node?.stop());
    await attempt('stopping the S3 server', () => s3?.close());
    await attempt('stopping the control plane', () => cp?.stop());
    csi = undefined;
    node = undefined;
    s3 = undefined;
    cp = undefined;
    const changes = hostChanges(before, snapshotHost());
    await lock.release();
    return [...problems, ...changes];
  };
  try {
    cp = await startControlPlane({ node: { ip, nodeName: NODE_NAME } });
    node = await startNode(cp, { binaries: nodeBinaries(), log: opts.log });
    s3 = await startS3Server({ address: ip, buckets: opts.buckets });
    const helmBin = await ensureHelm(opts.log);
    if (csiBuild !== undefined) csi = await startCsi({ cp, node }, opts.log, await csiBuild);
    return { cp, node, s3, helmBin, csi, stop };
  } catch (err) {
    const left = await stop();
    throw new Error(`${(err as Error).message}${left.length > 0 ? `\n(and after stopping what had started: ${left.join('; ')})` : ''}`);
  }
}
