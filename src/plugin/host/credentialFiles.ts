// Credential files the server writes for plugins: a private (0600) copy of a location's credential
// Secret key, under <scratch>/credentials/<location>/<content hash>. Plugins are handed the path
// (Velero's `credentialsFile`), never the secret itself. The files live only as long as their
// location: replaced when the Secret's content changes, removed when the location is deleted, and
// all removed when the server stops or starts (a killed server could not clean up).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The directory holding every location's credential files. */
export function credentialsDir(scratchDir: string): string {
  return path.join(scratchDir, 'credentials');
}

/**
 * The location's own directory. Location names are DNS subdomain names (the API server checks),
 * so they hold no `/`; anything else is refused rather than written outside the directory.
 */
function locationDir(scratchDir: string, location: string): string {
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(location)) throw new Error(`invalid backup storage location name ${JSON.stringify(location)} for a credentials file`);
  return path.join(credentialsDir(scratchDir), location);
}

/**
 * Writes `content` for `location` and returns the file's path. The name is a hash of the content,
 * so the plugin's Init config (and thus its instance) stays the same across reconciles; the
 * location's files of earlier content are removed.
 */
export function writeCredentialFile(scratchDir: string, location: string, content: Buffer): string {
  const dir = locationDir(scratchDir, location);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = crypto.createHash('sha256').update(content).digest('hex').slice(0, 24);
  const file = path.join(dir, name);
  if (!fs.existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, content, { mode: 0o600 });
    fs.renameSync(tmp, file);
  }
  for (const old of fs.readdirSync(dir)) if (old !== name) fs.rmSync(path.join(dir, old), { force: true });
  return file;
}

/** Removes the location's credential files (it was deleted). */
export function removeCredentialFiles(scratchDir: string, location: string): void {
  fs.rmSync(locationDir(scratchDir, location), { recursive: true, force: true });
}

/** Removes every location's credential files (the server stops, or starts after a crash). */
export function removeAllCredentialFiles(scratchDir: string): void {
  fs.rmSync(credentialsDir(scratchDir), { recursive: true, force: true });
}
