// Public surface of hooks/: running a command in a pod's container through pods/exec (exec.ts),
// with bounded output (tail.ts). Backup and restore hooks decide what to run; this runs it.
export {
  ExecRefused, connectionOf, execInPod, execUser, exitCodeOf, formatMs, refusal, statusMessage,
  type ExecConnection, type ExecOptions, type ExecOutcome, type ExecTarget,
} from './exec.js';
export { DEFAULT_TAIL_BYTES, outputTail, type OutputTail } from './tail.js';
