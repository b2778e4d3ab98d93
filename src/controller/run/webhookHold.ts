// Runs held while the admission webhook is not in effect (webhook/health.ts): a validated run that
// would start stays New, `status.waitingFor` names the reason and a Warning event says so. The held
// keys are remembered and queued again when the webhook is back (no polling of each run).
import type { ResourceRef } from '../../kube/index.js';
import type { RunKind } from '../../logging/index.js';
import type { ControllerContext } from './context.js';
import type { RunObject } from './lifecycle.js';
import { patchStatusIfCurrent } from './patch.js';

export interface WebhookHold {
  /** True when `obj` is held (its status and event recorded); false when it may start. */
  holds(obj: RunObject & { status?: { waitingFor?: string } }, key: string): Promise<boolean>;
  bind(enqueue: (key: string) => void): void;
}

export function createWebhookHold(ctx: ControllerContext, kind: RunKind, resource: ResourceRef): WebhookHold {
  const held = new Set<string>();
  let enqueue: ((key: string) => void) | undefined;
  ctx.webhookGate?.onHealthy(() => {
    const keys = [...held];
    held.clear();
    for (const k of keys) enqueue?.(k);
  });
  return {
    bind(fn) {
      enqueue = fn;
    },
    async holds(obj, key) {
      const reason = ctx.webhookGate?.holdReason();
      if (reason === undefined) {
        held.delete(key);
        return false;
      }
      held.add(key);
      const waitingFor = `${reason}; this ${kind} starts once it is in effect again`;
      if (obj.status?.waitingFor === waitingFor) return true;
      if (!(await patchStatusIfCurrent(ctx, resource, obj, { waitingFor }))) return true;
      void ctx.events.event(obj, 'Warning', 'WebhookNotInEffect', waitingFor);
      return true;
    },
  };
}
