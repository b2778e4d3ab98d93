// A Dockerfile parser and a small, strict simulator of its stages, for machines with no Docker
// engine. The simulator builds each stage into a directory standing in for the image's root
// filesystem: COPY copies from the build context (the repository minus .dockerignore) or from an
// earlier stage, and RUN accepts only the commands this project's Dockerfile uses, each done for
// real or (dev dependencies of the build stage) by linking the checkout's node_modules. Anything
// else fails loudly, so a Dockerfile change the simulation cannot follow breaks the test.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY, ... */
  cmd: string;
  /** Text after the keyword, continuations joined. */
  args: string;
  /** Heredoc bodies in order (`<<EOF` ... `EOF`). */
  heredocs: string[];
  line: number;
}

/** Parses a Dockerfile: comments, `\` continuations and heredocs (BuildKit syntax). */
export function parseDockerfile(text: string): Instruction[] {
  const lines = text.split('\n');
  const out: Instruction[] = [];
  for (let i = 0; i < lines.length; i++) {
    const startLine = i + 1;
    let line = lines[i] ?? '';
    if (/^\s*(#.*)?$/.test(line)) continue;
    let joined = '';
    while (line.endsWith('\\')) {
      joined += line.slice(0, -1) + ' ';
      i++;
      line = lines[i] ?? '';
      while (/^\s*#/.test(line)) {
        i++;
        line = lines[i] ?? '';
      }
    }
    joined += line;
    const m = /^\s*([A-Za-z]+)\s*(.*)$/.exec(joined);
    if (m === null) throw new Error(`Dockerfile line ${startLine}: cannot parse "${joined}"`);
    const cmd = (m[1] ?? '').toUpperCase();
    const args = (m[2] ?? '').trim();
    const heredocs: string[] = [];
    for (const h of args.matchAll(/<<-?(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1/g)) {
      const end = h[2] ?? '';
      const body: string[] = [];
      for (;;) {
        i++;
        if (i >= lines.length) throw new Error(`Dockerfile line ${startLine}: heredoc ${end} is not closed`);
        const l = lines[i] ?? '';
        if (l.trim() === end) break;
        body.push(l);
      }
      heredocs.push(body.join('\n') + '\n');
    }
    out.push({ cmd, args, heredocs, line: startLine });
  }
  return out;
}

export interface Stage {
  name: string;
  /** Base image after ARG substitution. */
  from: string;
  instructions: Instruction[];
}

/** Splits instructions into stages, substituting global ARG defaults in FROM. */
export function stagesOf(instructions: readonly Instruction[]): Stage[] {
  const globalArgs = new Map<string, string>();
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.cmd === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (m === null) throw new Error(`Dockerfile line ${ins.line}: cannot parse FROM ${ins.args}`);
      const from = (m[1] ?? '').replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, n: string) => {
        const v = globalArgs.get(n);
        if (v === undefined) throw new Error(`Dockerfile line ${ins.line}: ARG ${n} has no default`);
        return v;
      });
      stages.push({ name: m[2] ?? String(stages.length), from, instructions: [] });
      continue;
    }
    const cur = stages.at(-1);
    if (cur === undefined) {
      if (ins.cmd !== 'ARG') throw new Error(`Dockerfile line ${ins.line}: ${ins.cmd} before FROM`);
      const [k, v] = ins.args.split('=', 2);
      if (k !== undefined && v !== undefined) globalArgs.set(k, v);
      continue;
    }
    cur.instructions.push(ins);
  }
  return stages;
}

/** `KEY=value KEY2="v 2"` (and the legacy `KEY value`) as ENV writes them. */
export function parseEnv(args: string): [string, string][] {
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
    const m = /^(\S+)\s+(.*)$/.exec(args);
    return m ? [[m[1] ?? '', m[2] ?? '']] : [];
  }
  const out: [string, string][] = [];
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|'([^']*)'|(\S*))/g)) {
    out.push([m[1] ?? '', m[3] ?? m[4] ?? m[5] ?? '']);
  }
  return out;
}

export interface CopyArgs {
  from: string | undefined;
  chmod: string | undefined;
  chown: string | undefined;
  sources: string[];
  dest: string;
}

export function parseCopy(args: string): CopyArgs {
  const words = args.split(/\s+/).filter((w) => w !== '');
  const flags = new Map<string, string>();
  while (words[0]?.startsWith('--')) {
    const [k, v] = (words.shift() ?? '').slice(2).split('=', 2);
    flags.set(k ?? '', v ?? 'true');
  }
  for (const k of flags.keys()) {
    if (!['from', 'chmod', 'chown', 'link'].includes(k)) throw new Error(`COPY --${k} is not understood by the simulator`);
  }
  const dest = words.pop();
  if (dest === undefined || words.length === 0) throw new Error(`COPY ${args}: needs sources and a destination`);
  return { from: flags.get('from'), chmod: flags.get('chmod'), chown: flags.get('chown'), sources: words, dest };
}

/** The exec form (`["a","b"]`) of ENTRYPOINT/CMD. */
export function execForm(args: string): string[] {
  const v: unknown = JSON.parse(args);
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`expected a JSON array of strings, got ${args}`);
  return v as string[];
}

// --- .dockerignore -------------------------------------------------------------------------

interface IgnoreRule {
  pattern: string;
  re: RegExp;
  negate: boolean;
}

function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        // `**/` matches zero or more directories; a trailing `**` matches anything.
        if (pattern[i + 2] === '/') {
          re += '(?:.*/)?';
          i += 2;
        } else {
          re += '.*';
          i += 1;
        }
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

export interface DockerIgnore {
  /** Whether a context path is left out: it or one of its parents matches; the last matching rule wins. */
  ignored(relPath: string): boolean;
  /** Whether an ignored directory may still hold re-included (`!`) paths, so it must be walked. */
  mayReinclude(dir: string): boolean;
}

/** Docker's .dockerignore semantics, for the patterns this project uses. */
export function dockerIgnore(text: string): DockerIgnore {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split('\n')) {
    let line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1).trim();
    line = path.posix.normalize(line).replace(/^\/+/, '').replace(/\/+$/, '');
    rules.push({ pattern: line, re: globToRegExp(line), negate });
  }
  return {
    ignored(relPath: string): boolean {
      const parts = relPath.split('/');
      let excluded = false;
      for (const r of rules) {
        for (let n = 1; n <= parts.length; n++) {
          if (r.re.test(parts.slice(0, n).join('/'))) {
            excluded = !r.negate;
            break;
          }
        }
      }
      return excluded;
    },
    mayReinclude: (dir: string) => rules.some((r) => r.negate && (r.pattern.startsWith(`${dir}/`) || r.pattern.startsWith('*'))),
  };
}

/** Copies the repository into `dest` as Docker would send it as the build context. */
export function buildContext(repo: string, dest: string): void {
  const ignoreFile = path.join(repo, '.dockerignore');
  const rules = dockerIgnore(fs.existsSync(ignoreFile) ? fs.readFileSync(ignoreFile, 'utf8') : '');
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(repo, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (rules.ignored(r) && !rules.mayReinclude(r)) continue;
        walk(r);
      } else if (e.isFile() && !rules.ignored(r)) {
        fs.mkdirSync(path.join(dest, rel), { recursive: true });
        fs.copyFileSync(path.join(repo, r), path.join(dest, r));
      }
    }
  };
  fs.mkdirSync(dest, { recursive: true });
  walk('');
}

// --- simulation ------------------------------------------------------------------------------

export interface SimulatedStage {
  name: string;
  from: string;
  /** Directory standing in for the stage's root filesystem. */
  root: string;
  workdir: string;
  env: Map<string, string>;
  user: string | undefined;
  entrypoint: string[];
  cmd: string[];
  exposed: string[];
  /** Every COPY, with what it copied, for assertions. */
  copies: { line: number; from: string; sources: string[]; dest: string }[];
  /** Log of RUN commands and how each was carried out. */
  runs: string[];
}

export interface SimulateOptions {
  repo: string;
  /** Build context directory (see buildContext). */
  context: string;
  /** Parent directory for the stage roots. */
  workDir: string;
  /** Streams progress lines (npm output is long; keep it out of the test log unless asked). */
  log?: (line: string) => void;
}

function mapPath(root: string, imagePath: string): string {
  return path.join(root, imagePath);
}

function resolveIn(workdir: string, p: string): string {
  return path.posix.isAbsolute(p) ? p : path.posix.join(workdir, p);
}

function copyInto(src: string, dst: string, intoDir: boolean): void {
  const st = fs.statSync(src);
  if (st.isDirectory()) {
    fs.mkdirSync(dst, { recursive: true });
    fs.cpSync(src, dst, { recursive: true, verbatimSymlinks: true });
    return;
  }
  const target = intoDir ? path.join(dst, path.basename(src)) : dst;
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.copyFileSync(src, target);
}

function chownRecursive(p: string, uid: number, gid: number): void {
  fs.lchownSync(p, uid, gid);
  if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) chownRecursive(path.join(p, e), uid, gid);
}

/** Runs one `&&`-separated part of a RUN line the way the image build would. */
function simulateRun(stage: SimulatedStage, part: string, opts: SimulateOptions): string {
  const words = part.split(/\s+/).filter((w) => w !== '');
  const cwd = mapPath(stage.root, stage.workdir);
  const run = (file: string, args: string[]): void => {
    // RUN sees the stage's ENV (image paths mapped), not the test runner's NODE_ENV.
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_ENV;
    for (const [k, v] of stage.env) env[k] = mapScriptPaths(v, stage.root);
    const r = spawnSync(file, args, { cwd, encoding: 'utf8', env });
    if (r.status !== 0) throw new Error(`RUN ${part} failed in stage ${stage.name} (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
    for (const l of `${r.stdout}${r.stderr}`.split('\n')) if (l.trim() !== '') opts.log?.(`[${stage.name}] ${l}`);
  };
  if (words[0] === 'npm' && words[1] === 'ci') {
    if (words.includes('--omit=dev')) {
      run('npm', words.slice(1));
      return `${part} (run for real)`;
    }
    // The full install from the same lockfile is what the checkout's node_modules already is.
    fs.symlinkSync(path.join(opts.repo, 'node_modules'), path.join(cwd, 'node_modules'), 'dir');
    return `${part} (linked the checkout's node_modules, installed by npm ci from the same lockfile)`;
  }
  if (words[0] === 'npm' && words[1] === 'run' && words.length === 3) {
    run('npm', words.slice(1));
    return `${part} (run for real)`;
  }
  if (words[0] === 'install' && words[1] === '-d') {
    let mode: string | undefined;
    let owner: string | undefined;
    let group: string | undefined;
    const dirs: string[] = [];
    for (let i = 2; i < words.length; i++) {
      const w = words[i] ?? '';
      if (w === '-m') mode = words[++i];
      else if (w === '-o') owner = words[++i];
      else if (w === '-g') group = words[++i];
      else if (w.startsWith('/')) dirs.push(w);
      else throw new Error(`RUN ${part}: install option ${w} is not understood by the simulator`);
    }
    for (const d of dirs) {
      const p = mapPath(stage.root, d);
      fs.mkdirSync(p, { recursive: true });
      if (mode !== undefined) fs.chmodSync(p, parseInt(mode, 8));
      if (owner !== undefined || group !== undefined) {
        if (!/^\d*$/.test(owner ?? '') || !/^\d*$/.test(group ?? '')) throw new Error(`RUN ${part}: use numeric owners`);
        fs.chownSync(p, Number(owner ?? 0), Number(group ?? 0));
      }
    }
    return `${part} (done)`;
  }
  throw new Error(`RUN ${part}: the Dockerfile simulator does not know this command; teach test/deploy/dockerfile.ts`);
}

/** Builds every stage in order; returns them by name. */
export function simulate(stages: readonly Stage[], opts: SimulateOptions): Map<string, SimulatedStage> {
  const done = new Map<string, SimulatedStage>();
  for (const st of stages) {
    const root = path.join(opts.workDir, `stage-${st.name}`);
    fs.mkdirSync(root, { recursive: true, mode: 0o755 });
    const stage: SimulatedStage = {
      name: st.name,
      from: st.from,
      root,
      workdir: '/',
      env: new Map(),
      user: undefined,
      entrypoint: [],
      cmd: [],
      exposed: [],
      copies: [],
      runs: [],
    };
    for (const ins of st.instructions) {
      switch (ins.cmd) {
        case 'ARG':
        case 'LABEL':
          break;
        case 'ENV':
          for (const [k, v] of parseEnv(ins.args)) stage.env.set(k, v);
          break;
        case 'WORKDIR':
          stage.workdir = resolveIn(stage.workdir, ins.args);
          fs.mkdirSync(mapPath(root, stage.workdir), { recursive: true });
          break;
        case 'USER':
          stage.user = ins.args;
          break;
        case 'EXPOSE':
          stage.exposed.push(...ins.args.split(/\s+/));
          break;
        case 'ENTRYPOINT':
          stage.entrypoint = execForm(ins.args);
          break;
        case 'CMD':
          stage.cmd = execForm(ins.args);
          break;
        case 'COPY': {
          const c = parseCopy(ins.args);
          const dest = resolveIn(stage.workdir, c.dest);
          const destPath = mapPath(root, dest);
          const heredocSources = c.sources.filter((s) => s.startsWith('<<'));
          if (heredocSources.length > 0) {
            if (heredocSources.length !== c.sources.length || ins.heredocs.length !== 1) throw new Error(`COPY line ${ins.line}: one heredoc per COPY is supported`);
            fs.mkdirSync(path.dirname(destPath), { recursive: true });
            fs.writeFileSync(destPath, ins.heredocs[0] ?? '');
          } else {
            let srcRoot = opts.context;
            if (c.from !== undefined) {
              const from = done.get(c.from);
              if (from === undefined) throw new Error(`COPY line ${ins.line}: --from=${c.from} names no earlier stage`);
              srcRoot = from.root;
            }
            const intoDir = c.dest.endsWith('/') || c.sources.length > 1;
            for (const s of c.sources) {
              // Sources in another stage are image paths; relative ones start at that stage's root.
              const src = c.from !== undefined ? mapPath(srcRoot, resolveIn('/', s)) : path.join(srcRoot, s);
              if (!fs.existsSync(src)) {
                throw new Error(`COPY line ${ins.line}: source ${s} does not exist in ${c.from !== undefined ? `stage ${c.from}` : 'the build context (repository minus .dockerignore)'}`);
              }
              copyInto(src, destPath, intoDir);
            }
          }
          if (c.chmod !== undefined) fs.chmodSync(destPath, parseInt(c.chmod, 8));
          if (c.chown !== undefined) {
            const [u, g] = c.chown.split(':');
            chownRecursive(destPath, Number(u), Number(g ?? u));
          }
          stage.copies.push({ line: ins.line, from: c.from ?? 'context', sources: c.sources, dest });
          break;
        }
        case 'RUN': {
          if (ins.heredocs.length > 0) throw new Error(`RUN line ${ins.line}: heredoc RUN is not simulated`);
          for (const part of ins.args.split('&&').map((p) => p.trim())) stage.runs.push(simulateRun(stage, part, opts));
          break;
        }
        default:
          throw new Error(`Dockerfile line ${ins.line}: ${ins.cmd} is not understood by the simulator`);
      }
    }
    done.set(st.name, stage);
  }
  return done;
}

/**
 * Rewrites absolute image paths in a script so it runs against the simulated root: a path is
 * mapped when the simulated root has it. Stands in for chroot, which needs a complete userland.
 */
export function mapScriptPaths(script: string, root: string): string {
  return script.replace(/(^|[\s"'=:])(\/[A-Za-z0-9._/-]+)/g, (whole, pre: string, p: string) => {
    if (p.startsWith('/bin/') || p.startsWith('/usr/bin/')) return whole;
    return fs.existsSync(path.join(root, p)) ? `${pre}${path.join(root, p)}` : whole;
  });
}

/** Resolves a command name through the image's PATH inside the simulated root. */
export function whichInImage(stage: SimulatedStage, name: string): string | undefined {
  const imagePath = stage.env.get('PATH') ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
  for (const dir of imagePath.split(':')) {
    const p = path.join(stage.root, dir, name);
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

/** Lists the files of a directory tree (relative paths), for assertions. */
export function listTree(dir: string): string[] {
  return execFileSync('find', ['.', '-type', 'f'], { cwd: dir, encoding: 'utf8' })
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.replace(/^\.\//, ''));
}
