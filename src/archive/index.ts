// The tarball format: paths, writer, safe reader, manifest.
export { FORMAT_VERSION, METADATA_VERSION_PATH, isSupportedFormatVersion } from './format.js';
export { ArchiveError, isArchiveError, type ArchiveErrorReason } from './errors.js';
export {
  groupResourceOf, splitGroupResource, groupOfApiVersion, versionOfApiVersion, preferredVersionDir, itemPath, parseItemPath,
  type ParsedItemPath,
} from './paths.js';
export { canonicalJson } from './json.js';
export {
  createTarballWriter, sha256Hex, type TarballWriter, type TarballWriterOptions, type ArchiveDigest, type ArchivableObject, type ItemId,
} from './writer.js';
export { readArchive, checkEntryName, DEFAULT_READ_LIMITS, type ReadLimits, type ReadOptions, type ArchiveContents } from './reader.js';
export type { ArchiveItem, ArchiveObject } from './items.js';
export { manifestFromDigest, parseManifest, verifyManifest, type BackupManifest } from './manifest.js';
