// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: a candidate takes the
// lease only when it is free or its holder has not renewed for leaseDuration (measured on our own
// clock from when we last saw the record change, so clock skew between nodes does not matter);
// the leader renews every retryPeriod and steps down as soon as it cannot renew within
// renewDeadline or sees another holder, so two leaders never act at once for long.
import crypto from 'node:crypto';
import os from 'node:os';
import { LEASES, isNotFound, type DynamicClient } from '../kube/index.js';
import { sleep } from '../util/backoff.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from './logger.js';

export interface LeaderElectionOptions {
  client: DynamicClient;
  namespace: string;
  /** Lease name. */
  name: string;
  /** Unique per process. Default `<hostname>_<random>`. */
  identity?: string;
  /** How long a lease is valid without renewal. Default 15 s. */
  leaseDurationMs?: number;
  /** The leader gives up if it has not renewed for this long. Default 10 s; must be < leaseDuration. */
  renewDeadlineMs?: number;
  /** Wait between attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  /** Called on becoming leader; `signal` aborts when leadership is lost or the elector stops. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Called once leadership ends (lost or released). */
  onStoppedLeading: () => void;
  /** Called when the observed holder changes (including to ourselves). */
  onNewLeader?: (identity: string) => void;
  /** On stop(), clear the lease so another candidate takes over at once. Default true. */
  releaseOnStop?: boolean;
  logger?: Logger;
}

export interface LeaderElector {
  readonly identity: string;
  isLeader(): boolean;
  /** Resolves when the elector has ended: after losing leadership once, or after stop(). */
  readonly done: Promise<void>;
  /** Stops campaigning; a leader releases the lease (unless disabled) and steps down. */
  stop(): Promise<void>;
}

type LeaseSpec = {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
};

type Lease = {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec: LeaseSpec;
};

/** metav1.MicroTime wants exactly six fractional digits. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export function startLeaderElection(opts: LeaderElectionOptions): LeaderElector {
  const identity = opts.identity ?? `${os.hostname()}_${crypto.randomUUID()}`;
  const leaseDurationMs = opts.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
  const retryPeriodMs = opts.retryPeriodMs ?? 2_000;
  if (!(renewDeadlineMs < leaseDurationMs)) throw new Error(`leader election: renewDeadline (${renewDeadlineMs} ms) must be shorter than leaseDuration (${leaseDurationMs} ms)`);
  if (!(retryPeriodMs < renewDeadlineMs)) throw new Error(`leader election: retryPeriod (${retryPeriodMs} ms) must be shorter than renewDeadline (${renewDeadlineMs} ms)`);
  const logger = opts.logger ?? silentLogger;
  const { client, namespace, name } = opts;
  const where = `lease ${namespace}/${name}`;

  const stopAc = new AbortController();
  let leading = false;
  let observed: { spec: string; at: number; holder: string } | undefined;
  let lastLease: Lease | undefined;

  function observe(spec: LeaseSpec, now: number): void {
    const text = JSON.stringify(spec);
    if (observed?.spec === text) return;
    const holder = spec.holderIdentity ?? '';
    if (holder !== '' && holder !== observed?.holder) opts.onNewLeader?.(holder);
    observed = { spec: text, at: now, holder };
  }

  /** One attempt; true when we hold the lease afterwards. Never throws. */
  async function tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = Date.now();
    const spec = (prev: LeaseSpec | undefined): LeaseSpec => {
      const mine = prev?.holderIdentity === identity;
      return {
        holderIdentity: identity,
        leaseDurationSeconds: Math.max(1, Math.round(leaseDurationMs / 1000)),
        acquireTime: mine && prev?.acquireTime !== undefined ? prev.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: mine ? (prev?.leaseTransitions ?? 0) : (prev?.leaseTransitions ?? -1) + 1,
      };
    };
    try {
      let lease: Lease;
      try {
        lease = await client.get<Lease>(LEASES, namespace, name, { signal });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        const created = await client.create<Lease>(
          LEASES,
          namespace,
          { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: spec(undefined) },
          { signal },
        );
        lastLease = created;
        observe(created.spec, now);
        return true;
      }
      lastLease = lease;
      observe(lease.spec ?? {}, now);
      const holder = lease.spec?.holderIdentity ?? '';
      const durMs = (lease.spec?.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
      if (holder !== '' && holder !== identity && (observed?.at ?? now) + durMs > now) return false;
      const updated = await client.replace<Lease>(LEASES, namespace, name, { ...lease, spec: spec(lease.spec) }, { signal });
      lastLease = updated;
      observe(updated.spec, now);
      return true;
    } catch (err) {
      if (!signal.aborted) logger.debug(`${where}: ${errorMessage(err)}`);
      return false;
    }
  }

  const jitter = (ms: number): number => ms * (1 + Math.random() * 0.2);

  async function run(): Promise<void> {
    // Campaign.
    for (;;) {
      if (stopAc.signal.aborted) return;
      if (await tryAcquireOrRenew(stopAc.signal)) break;
      try {
        await sleep(jitter(retryPeriodMs), stopAc.signal);
      } catch {
        return;
      }
    }
    leading = true;
    const leaderAc = new AbortController();
    logger.info(`${where}: ${identity} became leader`);
    Promise.resolve()
      .then(() => opts.onStartedLeading(leaderAc.signal))
      .catch((err: unknown) => logger.error(`${where}: onStartedLeading failed: ${errorMessage(err)}`));
    // Renew until we cannot.
    let lastRenew = Date.now();
    let reason = 'stopped';
    for (;;) {
      try {
        await sleep(retryPeriodMs, stopAc.signal);
      } catch {
        break;
      }
      const left = renewDeadlineMs - (Date.now() - lastRenew);
      const attempt = AbortSignal.any([stopAc.signal, AbortSignal.timeout(Math.max(1, left))]);
      if (await tryAcquireOrRenew(attempt)) {
        lastRenew = Date.now();
        continue;
      }
      if (stopAc.signal.aborted) break;
      if (observed !== undefined && observed.holder !== '' && observed.holder !== identity) {
        reason = `${observed.holder} holds the lease now`;
        break;
      }
      if (Date.now() - lastRenew >= renewDeadlineMs) {
        reason = `could not renew within ${renewDeadlineMs} ms`;
        break;
      }
    }
    leading = false;
    leaderAc.abort(new Error(`leadership of ${where} lost: ${reason}`));
    if (stopAc.signal.aborted && opts.releaseOnStop !== false) await release();
    logger.info(`${where}: ${identity} stopped leading (${reason})`);
    opts.onStoppedLeading();
  }

  /** Hands the lease back so the next candidate need not wait for it to expire. */
  async function release(): Promise<void> {
    if (lastLease === undefined || lastLease.spec.holderIdentity !== identity) return;
    try {
      const now = microTime(Date.now());
      await client.replace(
        LEASES,
        namespace,
        name,
        { ...lastLease, spec: { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: lastLease.spec.leaseTransitions ?? 0 } },
        { signal: AbortSignal.timeout(renewDeadlineMs) },
      );
    } catch (err) {
      logger.warn(`${where}: could not release: ${errorMessage(err)}`);
    }
  }

  const done = run();
  return {
    identity,
    isLeader: () => leading,
    done,
    async stop() {
      stopAc.abort();
      await done;
    },
  };
}
