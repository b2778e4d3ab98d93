// `npm run bench`'s command line: parsed and checked here, apart from run.ts's side effects, so the
// rules (positive counts, a known peer, the S3 server a peer needs) are unit-tested.
import { parseArgs } from 'node:util';

export const USAGE = `usage: npm run bench -- [--objects N] [--namespaces M] [--rounds R] [--out FILE] [--baseline FILE] [--memory-limit MIB] [--peer velero] [--s3 s3rver|minio] [--profile] [--node-arg FLAG]... [--no-build] [--dist DIR]
  --objects N       objects to seed (default 10000)
  --namespaces M    namespaces to spread them over (default 10)
  --rounds R        rounds of the backups (floor, engine alone, Stowage, the peer), reported as medians (default 5)
  --out FILE        JSON report (default bench/results/latest.json); the markdown goes next to it (.md)
  --baseline FILE   an earlier report (a run at N=5000) to check the memory-growth goal against
  --memory-limit MIB  the server container's memory limit its heap is sized for (default: deploy/'s, 1024); 0: none
  --peer velero     also run Velero (built from the Go module proxy on first use) on the same objects: its backup and restore rows
  --s3 KIND         the S3 server every row uses: s3rver (default) or minio (the default with --peer, which needs MinIO)
  --profile         run the server under node --cpu-prof (profiles in the work directory)
  --node-arg FLAG   a node flag for the server, e.g. --node-arg=--trace-gc (its GC log lands in server-<phase>.log); repeatable
  --no-build        use dist/ as it is instead of rebuilding it when src/ is newer
  --dist DIR        run the server (and the plugin's SDK) from another build, e.g. the commit before a change for an A/B`;

export const PEERS = ['velero'] as const;
export type Peer = (typeof PEERS)[number];
export const S3_KINDS = ['s3rver', 'minio'] as const;
export type S3Kind = (typeof S3_KINDS)[number];

export function positiveInt(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not ${JSON.stringify(v)}`);
  return n;
}

export interface BenchArgs {
  help: boolean;
  objects: number;
  namespaces: number;
  backupRounds: number;
  peer?: Peer;
  s3: S3Kind;
  values: {
    out?: string | undefined;
    baseline?: string | undefined;
    profile: boolean;
    'node-arg'?: string[] | undefined;
    'memory-limit'?: string | undefined;
    'no-build': boolean;
    dist?: string | undefined;
  };
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      objects: { type: 'string' },
      namespaces: { type: 'string' },
      rounds: { type: 'string' },
      out: { type: 'string' },
      baseline: { type: 'string' },
      peer: { type: 'string' },
      s3: { type: 'string' },
      profile: { type: 'boolean', default: false },
      'node-arg': { type: 'string', multiple: true },
      'memory-limit': { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      dist: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const objects = positiveInt('objects', values.objects, 10_000);
  const namespaces = positiveInt('namespaces', values.namespaces, 10);
  const backupRounds = positiveInt('rounds', values.rounds, 5);
  if (namespaces > objects) throw new Error('--namespaces may not exceed --objects');
  const peer = values.peer;
  if (peer !== undefined && !(PEERS as readonly string[]).includes(peer)) {
    throw new Error(`--peer must be one of ${PEERS.join(', ')}, not ${JSON.stringify(peer)}`);
  }
  const s3 = values.s3 ?? (peer !== undefined ? 'minio' : 's3rver');
  if (!(S3_KINDS as readonly string[]).includes(s3)) throw new Error(`--s3 must be one of ${S3_KINDS.join(', ')}, not ${JSON.stringify(s3)}`);
  // The issue asks for Velero on MinIO, the S3 server users run; its AWS plugin is not tried against s3rver.
  if (peer !== undefined && s3 !== 'minio') throw new Error(`--peer ${peer} runs every row on MinIO: leave out --s3 or give --s3 minio`);
  return {
    help: values.help, objects, namespaces, backupRounds, s3: s3 as S3Kind,
    ...(peer !== undefined ? { peer: peer as Peer } : {}),
    values: {
      out: values.out, baseline: values.baseline, profile: values.profile, 'node-arg': values['node-arg'],
      'memory-limit': values['memory-limit'], 'no-build': values['no-build'], dist: values.dist,
    },
  };
}
