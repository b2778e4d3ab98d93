// Leader election on a coordination.k8s.io/v1 Lease, after client-go's rules: a candidate takes the
// lease only when it is free or its holder has not renewed for leaseDuration (measured on our own
// clock from when we last saw the record change, so clock skew between nodes does not matter); the
// leader renews every retryPeriod and steps down as soon as it sees another holder.
//
// Unlike client-go, a leader does not step down merely because the API is unreachable (connection
// refused or reset, timeouts, 429, 5xx): while the API is down nobody can take the lease, and the
// runs' own requests are paused by the same outage (kube/outage.ts). It keeps trying every
// retryPeriod; once the API answers it renews, or learns that another holder took the lease and
// stops at once. A candidate that could not read the lease restarts its expiry clock when it reads
// it again, so the leader, cut off by the same outage, gets a whole leaseDuration to renew after
// the API returns instead of losing the lease to whoever asks first. When the API answers but the
// renewal still fails (403, a webhook), the leader steps down after renewDeadline, as before.
//
// Identities are `<pod>_<random>`, the pod being POD_NAME or the host name: a new process of the
// same pod (a restarted container) that finds the lease held by an earlier process of its pod takes
// it at once rather than waiting out a lease nobody renews.
import crypto from 'node:crypto';
import os from 'node:os';
import { LEASES, isConflict, isNotFound, isTransient, type DynamicClient } from '../kube/index.js';
import { systemClock, type TimerClock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from './logger.js';

export interface LeaderElectionOptions {
  client: DynamicClient;
  namespace: string;
  /** Lease name. */
  name: string;
  /**
   * Unique per process. Default `<pod>_<random>`, `<pod>` being POD_NAME or the host name. The part
   * before the last `_` names the pod: a holder of the same pod is an earlier process of this one.
   */
  identity?: string;
  /** How long a lease is valid without renewal. Default 15 s. */
  leaseDurationMs?: number;
  /**
   * A leader whose renewals the API refuses (not an outage) gives up after this long. Default 10 s;
   * must be < leaseDuration.
   */
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
  /** Times expiry, renewals and retries (a test moves it past a lease). Default the system clock. */
  clock?: TimerClock;
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

/** The pod of this process: POD_NAME (the downward API) or the host name (a pod's is its name). */
export function podName(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const fromEnv = env.POD_NAME;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : os.hostname();
}

/** The pod part of an identity (before the last `_`); '' when it has none. */
export function podOfIdentity(identity: string): string {
  const at = identity.lastIndexOf('_');
  return at <= 0 ? '' : identity.slice(0, at);
}

/** A leader's renewals: when the lease was last renewed, and since when the API has not answered. */
interface Renewal {
  lastRenew: number;
  unreachableSince: number | undefined;
}

/** Attempt outcomes: held, another holds a valid lease, the API did not answer, or it refused. */
type Attempt = { kind: 'held' } | { kind: 'other'; holder: string } | { kind: 'unreachable'; error: string } | { kind: 'failed'; error: string; conflict: boolean };

export function startLeaderElection(opts: LeaderElectionOptions): LeaderElector {
  const identity = opts.identity ?? `${podName()}_${crypto.randomUUID()}`;
  const pod = podOfIdentity(identity);
  const leaseDurationMs = opts.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
  const retryPeriodMs = opts.retryPeriodMs ?? 2_000;
  if (!(renewDeadlineMs < leaseDurationMs)) throw new Error(`leader election: renewDeadline (${renewDeadlineMs} ms) must be shorter than leaseDuration (${leaseDurationMs} ms)`);
  if (!(retryPeriodMs < renewDeadlineMs)) throw new Error(`leader election: retryPeriod (${retryPeriodMs} ms) must be shorter than renewDeadline (${renewDeadlineMs} ms)`);
  const logger = opts.logger ?? silentLogger;
  const clock = opts.clock ?? systemClock;
  const nowMs = (): number => clock.now().getTime();
  const { client, namespace, name } = opts;
  const where = `lease ${namespace}/${name}`;

  const stopAc = new AbortController();
  let leading = false;
  let observed: { spec: string; at: number; holder: string } | undefined;
  let lastLease: Lease | undefined;
  /** The last attempt could not reach the API: the next read of the lease restarts its expiry clock. */
  let blind = false;

  function observe(spec: LeaseSpec, now: number): void {
    const text = JSON.stringify(spec);
    if (observed?.spec === text && !blind) return;
    const holder = spec.holderIdentity ?? '';
    if (holder !== '' && holder !== observed?.holder) opts.onNewLeader?.(holder);
    observed = { spec: text, at: now, holder };
  }

  /** Whether a holder's lease may be taken now: expired on our clock, or held by an earlier process of our pod. */
  function takeable(holder: string, durMs: number, now: number): boolean {
    if (holder === '' || holder === identity) return true;
    if (pod !== '' && podOfIdentity(holder) === pod) return true;
    return (observed?.at ?? now) + durMs <= now;
  }

  /** One attempt to acquire or renew. Never throws. */
  async function tryAcquireOrRenew(signal: AbortSignal): Promise<Attempt> {
    const now = nowMs();
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
        blind = false;
        observe(created.spec, now);
        return { kind: 'held' };
      }
      lastLease = lease;
      observe(lease.spec ?? {}, now);
      blind = false;
      const holder = lease.spec?.holderIdentity ?? '';
      const durMs = (lease.spec?.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
      if (!takeable(holder, durMs, now)) return { kind: 'other', holder };
      if (holder !== identity && holder !== '' && podOfIdentity(holder) === pod) logger.info(`${where}: taking over from ${holder}, an earlier process of this pod`);
      const updated = await client.replace<Lease>(LEASES, namespace, name, { ...lease, spec: spec(lease.spec) }, { signal });
      lastLease = updated;
      observe(updated.spec, now);
      return { kind: 'held' };
    } catch (err) {
      const error = errorMessage(err);
      if (!signal.aborted) logger.debug(`${where}: ${error}`);
      // An attempt cut off by its own deadline got no answer either.
      if (isTransient(err) || (signal.aborted && !stopAc.signal.aborted)) {
        blind = true;
        return { kind: 'unreachable', error };
      }
      return { kind: 'failed', error, conflict: isConflict(err) };
    }
  }

  const jitter = (ms: number): number => ms * (1 + Math.random() * 0.2);

  async function run(): Promise<void> {
    if (!(await campaign())) return;
    leading = true;
    const leaderAc = new AbortController();
    logger.info(`${where}: ${identity} became leader`);
    Promise.resolve()
      .then(() => opts.onStartedLeading(leaderAc.signal))
      .catch((err: unknown) => logger.error(`${where}: onStartedLeading failed: ${errorMessage(err)}`));
    const reason = await renewWhileLeading();
    leading = false;
    leaderAc.abort(new Error(`leadership of ${where} lost: ${reason}`));
    if (stopAc.signal.aborted && opts.releaseOnStop !== false) await release();
    logger.info(`${where}: ${identity} stopped leading (${reason})`);
    opts.onStoppedLeading();
  }

  /** Tries for the lease every retry period until it is held (true) or stop() (false). */
  async function campaign(): Promise<boolean> {
    let waitingOn: string | undefined;
    for (;;) {
      if (stopAc.signal.aborted) return false;
      const attempt = await tryAcquireOrRenew(stopAc.signal);
      if (attempt.kind === 'held') return true;
      if (attempt.kind === 'other' && attempt.holder !== waitingOn) {
        waitingOn = attempt.holder;
        logger.info(`${where}: held by ${attempt.holder}; ${identity} takes it once it goes ${Math.round(leaseDurationMs / 1000)} s unrenewed or is released`);
      }
      try {
        await clock.sleep(jitter(retryPeriodMs), stopAc.signal);
      } catch {
        return false;
      }
    }
  }

  /** Renews until another holder shows, the API refuses for renewDeadline, or stop(); returns why leading ended. */
  async function renewWhileLeading(): Promise<string> {
    const renewal: Renewal = { lastRenew: nowMs(), unreachableSince: undefined };
    let reread = false;
    for (;;) {
      if (!reread) {
        try {
          await clock.sleep(retryPeriodMs, stopAc.signal);
        } catch {
          return 'stopped';
        }
      }
      const attempt = await tryAcquireOrRenew(AbortSignal.any([stopAc.signal, AbortSignal.timeout(renewDeadlineMs)]));
      if (stopAc.signal.aborted) return 'stopped';
      const next = judgeRenewal(attempt, renewal, reread);
      if ('end' in next) return next.end;
      reread = next.reread;
    }
  }

  /**
   * What one renewal attempt means to the leader: it ends leading (with the reason) or goes on,
   * reading the lease again at once (`reread`) when someone wrote it between our read and our write.
   */
  function judgeRenewal(attempt: Attempt, renewal: Renewal, reread: boolean): { end: string } | { reread: boolean } {
    if (attempt.kind === 'held') {
      if (renewal.unreachableSince !== undefined) logger.info(`${where}: the API answers again after ${Math.round((nowMs() - renewal.unreachableSince) / 1000)} s; ${identity} renewed the lease`);
      renewal.unreachableSince = undefined;
      renewal.lastRenew = nowMs();
      return { reread: false };
    }
    if (attempt.kind === 'other') return { end: `${attempt.holder} holds the lease now` };
    if (attempt.kind === 'unreachable') {
      if (renewal.unreachableSince === undefined) logger.warn(`${where}: cannot reach the API to renew (${attempt.error}); still leading, as nobody can take the lease while the API is down`);
      renewal.unreachableSince ??= nowMs();
      return { reread: false };
    }
    // The API answers again, but refuses: a restarted API server refuses for a moment what RBAC
    // allows (its authorizer's caches are not filled yet), so renewDeadline counts from its return.
    if (renewal.unreachableSince !== undefined) {
      logger.info(`${where}: the API answers again after ${Math.round((nowMs() - renewal.unreachableSince) / 1000)} s but refused the renewal (${attempt.error}); retrying for up to ${renewDeadlineMs} ms`);
      renewal.unreachableSince = undefined;
      renewal.lastRenew = nowMs();
    }
    if (attempt.conflict && !reread) return { reread: true };
    if (nowMs() - renewal.lastRenew >= renewDeadlineMs) return { end: `could not renew within ${renewDeadlineMs} ms: ${attempt.error}` };
    return { reread: false };
  }

  /** Hands the lease back so the next candidate need not wait for it to expire. */
  async function release(): Promise<void> {
    if (lastLease === undefined || lastLease.spec.holderIdentity !== identity) return;
    const signal = AbortSignal.timeout(renewDeadlineMs);
    const clear = (lease: Lease): Promise<Lease> => {
      const now = microTime(nowMs());
      return client.replace<Lease>(LEASES, namespace, name,
        { ...lease, spec: { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: lease.spec.leaseTransitions ?? 0 } },
        { signal });
    };
    try {
      await clear(lastLease).catch(async (err: unknown) => {
        // A renewal cut short by stop() may still have landed, moving the version on: read it again,
        // and release it if it is still ours (else the next leader would wait out the whole lease).
        if (!isConflict(err)) throw err;
        const fresh = await client.get<Lease>(LEASES, namespace, name, { signal });
        if (fresh.spec?.holderIdentity === identity) await clear(fresh);
      });
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
