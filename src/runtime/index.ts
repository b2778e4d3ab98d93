// Public surface of runtime/: informers, the work queue, controllers, leader election.
export { createInformer, keyOf, splitKey, type Informer, type InformerEvent, type InformerEventType, type InformerHandler, type InformerOptions } from './informer.js';
export { createWorkQueue, type WorkQueue, type WorkQueueOptions } from './queue.js';
export {
  TerminalError,
  isTerminalError,
  startController,
  type Controller,
  type ControllerOptions,
  type ReconcileContext,
  type ReconcileOutcome,
  type Reconciler,
  type Result,
  type WatchSource,
} from './controller.js';
export { silentLogger, type Logger } from './logger.js';
export { startLeaderElection, type LeaderElectionOptions, type LeaderElector } from './leaderElection.js';
