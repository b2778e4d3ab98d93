// Whether this server's admission webhook is in effect for its own namespace, checked at start-up
// and every --webhook-probe-interval while it runs. The probe is a server-side dry-run create of a
// Backup in the namespace with the server's client: the object the API server returns carries a
// seal made with this server's key only if the configuration exists, selects the namespace and
// reaches a replica holding the key. Nothing is stored. While the probe fails, runs are held
// (controller/run/webhookHold.ts): a stamp written now may not be the webhook's, and a requester
// check that cannot tell is no check.
import type winston from 'winston';
import { RESOURCES, newBackup } from '../apis/v1/index.js';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, sealRefusal } from '../auth/index.js';
import type { DynamicClient, KubeObject } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';

/** The name of the dry-run Backup (never stored). */
export const PROBE_NAME = 'stowage-webhook-probe';

/**
 * Why the object a dry-run create returned shows the webhook not in effect, or undefined when it
 * carries a seal this server's key verifies.
 */
export function probeVerdict(configurationName: string, namespace: string, key: Buffer, returned: KubeObject): string | undefined {
  const annotations = returned.metadata?.annotations ?? {};
  const notCalled = `the API server did not call it for a Backup created in namespace ${namespace} (MutatingWebhookConfiguration ${configurationName} is missing, or does not select this namespace)`;
  if (annotations[REQUESTER_ANNOTATION] === undefined || annotations[SEAL_ANNOTATION] === undefined) return notCalled;
  const refused = sealRefusal(key, { ...returned, kind: returned.kind ?? 'Backup' });
  if (refused !== undefined) return `MutatingWebhookConfiguration ${configurationName} does not point at this server (the seal on a Backup created in namespace ${namespace} is not made with this server's key)`;
  return undefined;
}

export interface WebhookHealth {
  /** Why runs are held now, or undefined while the webhook is in effect. */
  holdReason(): string | undefined;
  /** Called each time the webhook is in effect again after a failed probe. */
  onHealthy(fn: () => void): void;
  /** The probe in flight, or a new one: start-up awaits the first. */
  probe(): Promise<void>;
  stop(): void;
}

export interface WebhookHealthOptions {
  client: DynamicClient;
  namespace: string;
  configurationName: string;
  sealKey: Buffer;
  intervalMs: number;
  logger: winston.Logger;
  /** The gauge: true while the webhook is in effect. */
  report(ok: boolean): void;
}

/**
 * When to probe next: every `intervalMs` while the webhook is in effect; while it is not, every 2 s
 * (500 ms after the first failure), never less often than `intervalMs`, so held runs start soon
 * after it is back (e.g. a CA bundle just published that the API server has not loaded yet).
 */
export function nextProbeDelay(intervalMs: number, failuresInARow: number): number {
  if (failuresInARow === 0) return intervalMs;
  return Math.min(intervalMs, failuresInARow === 1 ? 500 : 2000);
}

export function startWebhookHealth(o: WebhookHealthOptions): WebhookHealth {
  // Held until the first probe says otherwise: no run starts before it is known.
  let reason: string | undefined = 'the admission webhook has not been checked yet';
  // So that the first probe logs its outcome either way.
  let logged: string | undefined = reason;
  let failures = 0;
  const listeners: (() => void)[] = [];
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const check = async (): Promise<string | undefined> => {
    try {
      const probe = newBackup(PROBE_NAME, o.namespace, {});
      const returned = await o.client.create<KubeObject>(RESOURCES.Backup, o.namespace, probe, { dryRun: true });
      return probeVerdict(o.configurationName, o.namespace, o.sealKey, returned);
    } catch (err) {
      return `a dry-run create of a Backup in namespace ${o.namespace}, to check MutatingWebhookConfiguration ${o.configurationName}, failed: ${errorMessage(err)}`;
    }
  };

  const probe = (): Promise<void> => {
    inFlight ??= (async () => {
      const next = await check();
      inFlight = undefined;
      if (stopped) return;
      const was = reason;
      reason = next === undefined ? undefined : `the admission webhook is not in effect: ${next}`;
      failures = reason === undefined ? 0 : failures + 1;
      o.report(reason === undefined);
      // One log line per change of state (a new reason is a change too).
      if (reason !== logged) {
        if (reason === undefined) o.logger.info(`admission webhook in effect for namespace ${o.namespace} (MutatingWebhookConfiguration ${o.configurationName}): backups and restores start`);
        else o.logger.warn(`${reason}; no backup or restore starts until it is in effect again`);
        logged = reason;
      }
      clearTimeout(timer);
      timer = setTimeout(() => void probe(), nextProbeDelay(o.intervalMs, failures));
      timer.unref();
      if (was !== undefined && reason === undefined) for (const fn of listeners) fn();
    })();
    return inFlight;
  };

  void probe();
  return {
    holdReason: () => reason,
    onHealthy: (fn) => listeners.push(fn),
    probe,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
