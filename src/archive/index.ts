// The tarball format: paths, writer, safe reader, manifest.
export { FORMAT_VERSION, METADATA_VERSION_PATH, isSupportedFormatVersion } from './format.js';
export { ArchiveError, isArchiveError, type ArchiveErrorReason } from './errors.js';
export {
  groupResourceOf, splitGroupResource, groupOfApiVersion, versionOfApiVersion, preferredVersionDir, itemPath, parseItemPath,
  type ParsedItemPath,
} from './paths.js';
export { canonicalJson } from './json.js';
export {
  createTarballWriter, type TarballWriter, type TarballWriterOptions, type ArchiveDigest, type ArchivableObject, type ItemId,
} from './writer.js';
export {
  readArchive, scanArchive, checkEntryName, DEFAULT_READ_LIMITS, type OversizedEntry,
  type ReadLimits, type ReadOptions, type ArchiveContents, type ArchiveSummary, type ScannedArchive, type ItemCopy, type KeepItem,
} from './reader.js';
export { createSpillFile, spillArchive, spilledPath, loadSpilled, type SpillFile, type SpilledArchive, type SpilledItem, type SpillOptions } from './spill.js';
export type { ArchiveItem, ArchiveObject, ItemIdentity } from './items.js';
export {
  manifestCheck, manifestEntries, manifestFromDigest, parseManifest, verifyManifest, type AnyManifest, type BackupManifest, type ManifestCheck, type WrittenManifest,
} from './manifest.js';
export { ManifestTable } from './manifestTable.js';
export { ManifestStream, streamingManifestCheck, type AsyncManifestCheck, type ManifestHead } from './manifestStream.js';
export { sha256Hex } from './digest.js';
