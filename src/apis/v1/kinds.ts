// The source of truth for every Stowage kind. `npm run crds` renders these into
// deploy/crds/*.yaml and src/apis/v1/types.gen.ts; `npm run crds:check` fails on drift.
import {
  BACKUP_PHASES,
  BSL_ACCESS_MODES,
  BSL_LAYOUTS,
  BSL_PHASES,
  DELETE_BACKUP_REQUEST_PHASES,
  DOWNLOAD_REQUEST_PHASES,
  DOWNLOAD_TARGET_KINDS,
  EXISTING_RESOURCE_POLICIES,
  LABEL_SELECTOR_OPERATORS,
  RESTORE_PHASES,
  SCHEDULE_PHASES,
  SERVER_STATUS_REQUEST_PHASES,
  VSL_PHASES,
} from './constants.js';
import { s, type KindDef, type PrinterColumn, type Schema } from './schema.js';

const stringList = (description: string): Schema => s.array(s.string(), { description });
const stringMap = (description: string): Schema => s.map(s.string(), { description });

const labelSelector = s.named(
  'LabelSelector',
  s.object({
    matchLabels: stringMap('Labels that must all match exactly.'),
    matchExpressions: s.array(
      s.named(
        'LabelSelectorRequirement',
        s.object(
          {
            key: s.string(),
            operator: s.named('LabelSelectorOperator', s.enum(LABEL_SELECTOR_OPERATORS)),
            values: s.array(s.string()),
          },
          { required: ['key', 'operator'] },
        ),
      ),
    ),
  }, { description: 'A Kubernetes label selector (all requirements must hold).' }),
);

const filters = {
  includedNamespaces: stringList('Namespaces to include; empty or ["*"] means all.'),
  excludedNamespaces: stringList('Namespaces to exclude.'),
  includedResources: stringList('Resources to include (plural or group-resource, e.g. "deployments.apps"); empty or ["*"] means all.'),
  excludedResources: stringList('Resources to exclude.'),
  includeClusterResources: s.bool({
    nullable: true,
    description: 'true: include cluster-scoped resources; false: never; unset/null: only those related to included namespaced items (or all for a full-cluster backup).',
  }),
  labelSelector: { ...labelSelector, description: 'Only items whose labels match.' } satisfies Schema,
  orLabelSelectors: s.array(labelSelector, { description: 'Items matching any of these selectors; cannot be combined with labelSelector.' }),
  // Velero's scope-specific resource filters: the alternative to includedResources/excludedResources/includeClusterResources.
  includedClusterScopedResources: stringList('Cluster-scoped resources to include ("*" for all); when this and excludedClusterScopedResources are empty, all for a whole-cluster selection, else only those related to included items. Cannot be combined with includedResources, excludedResources or includeClusterResources.'),
  excludedClusterScopedResources: stringList('Cluster-scoped resources to exclude ("*" for all, related items too).'),
  includedNamespaceScopedResources: stringList('Namespaced resources to include; empty or ["*"] means all.'),
  excludedNamespaceScopedResources: stringList('Namespaced resources to exclude.'),
  includedNames: stringList('Only items with these names: exact names, globs ("app-*") or "regex:" patterns, optionally scoped to one resource ("configmaps/app-*"); an entry narrows only the resources it applies to.'),
  excludedNames: stringList('Items with these names are left out, dependencies included; same forms as includedNames.'),
};

/**
 * Velero's spec fields that Stowage does not implement yet. They are declared, not left out: a
 * structural schema prunes what it does not declare, so a Velero manifest's
 * `defaultVolumesToFsBackup: true` would vanish on create and the run would go ahead without it.
 * Declared, the value is stored, and validation (fields.ts) refuses a run that sets it, with
 * `reason` and the field's path.
 */
const notYet = (schema: Schema, reason: string): Schema => ({
  ...schema,
  unsupported: reason,
  description: `${schema.description !== undefined ? `${schema.description} ` : ''}Not supported yet: a run that sets it fails validation.`,
});

/**
 * Marks every object of a spec x-kubernetes-preserve-unknown-fields, so the apiserver stores a
 * field no schema declares (a typo such as `snapshotVolume` or `matchLables`, a newer Velero
 * field) instead of pruning it, and validation refuses it by name. Declared fields keep their
 * types and are still checked by the apiserver.
 */
function keepUnknown(schema: Schema): Schema {
  switch (schema.kind) {
    case 'named':
      return { ...schema, schema: keepUnknown(schema.schema) };
    case 'object':
      return {
        ...schema,
        preserveUnknownFields: true,
        properties: Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, keepUnknown(v)])),
      };
    case 'array':
      return { ...schema, items: keepUnknown(schema.items) };
    case 'map':
      return { ...schema, values: keepUnknown(schema.values) };
    default:
      return schema;
  }
}

// Velero's backup hooks, field for field, so its manifests apply unchanged: commands run in a pod's
// container before the pod and its volumes are taken (pre) and after (post). Pod annotations
// (pre.hook.backup.velero.io/*, or Stowage's pre.hook.backup.stowage.dev/*) win over these for a pod.
// Values are checked by validation (selection/hooks.ts), not by enums here, so a bad one fails the
// run with the field's path instead of the apply.
const execHook = s.named('ExecHook', s.object(
  {
    container: s.string({ description: 'The container to run the command in; the pod\'s first container when unset.' }),
    command: stringList('The command and its arguments, run without a shell (start it with sh -c for one).'),
    onError: s.string({ description: '"Fail" (default): the pod is not backed up and the backup ends PartiallyFailed; "Continue": a warning.' }),
    timeout: s.string({ description: 'Go duration the command may take (default 30s); then its exec is ended and the hook counts as failed.' }),
  },
  { required: ['command'] },
));
const backupResourceHook = s.named('BackupResourceHook', s.object({ exec: execHook }, { required: ['exec'] }));
const backupHooks = s.named('BackupHooks', s.object({
  resources: s.array(s.named('BackupResourceHookSpec', s.object(
    {
      name: s.string({ description: 'Names the hook in the log and in errors.' }),
      includedNamespaces: stringList('Pods in these namespaces (globs allowed); empty or ["*"] means all.'),
      excludedNamespaces: stringList('Not pods in these namespaces.'),
      includedResources: stringList('Hooks run in pods only: empty, "*" or an entry naming pods.'),
      excludedResources: stringList('Resources the hook does not apply to.'),
      labelSelector: { ...labelSelector, description: 'Only pods whose labels match.' } satisfies Schema,
      pre: s.array(backupResourceHook, { description: 'Run in order before the pod and its volumes are backed up.' }),
      post: s.array(backupResourceHook, { description: 'Run in order after the pod and its volumes are backed up.' }),
    },
    { required: ['name'] },
  ))),
}, { description: 'Commands to run in pods before and after they are backed up.' }));

const FS_BACKUP = 'file-system backup of pod volumes (Velero\'s node agent, Kopia or Restic) is not supported: Stowage backs volume data up through CSI snapshots (snapshotVolumes)';
const DATA_MOVER = 'moving snapshot data into the bucket (Velero\'s data mover) is not supported: a CSI snapshot stays in the storage system that took it';
const VSL_REASON = 'VolumeSnapshotLocations and VolumeSnapshotter plugins are not supported: Stowage takes volume snapshots through CSI only (snapshotVolumes, with a VolumeSnapshotClass)';
const ITEM_OPERATIONS = 'asynchronous item action operations are not supported yet';
const UPLOADER = 'volume data upload is not supported yet';

// A Backup's fields, less cancel: a Schedule's template has them all but cancel (a backup cannot be
// created canceled), so there `cancel` is an unknown field and validation refuses it by name.
const backupFields = {
    ...filters,
    ttl: s.string({ description: 'How long to keep the backup, as a Go duration ("720h0m0s"). Default 720h.' }),
    storageLocation: s.string({ description: 'Name of the BackupStorageLocation; the default location when unset.' }),
    snapshotVolumes: s.bool({
      nullable: true,
      description: 'Whether to take a CSI snapshot of each bound claim in scope whose driver has a VolumeSnapshotClass (chosen as Velero chooses it). Unset means true, as in Velero; false takes none.',
    }),
    hooks: backupHooks,
    // Velero's other fields, refused until implemented (false, null or empty asks for nothing and is accepted).
    volumeSnapshotLocations: notYet(stringList('VolumeSnapshotLocations to store volume snapshots in.'), VSL_REASON),
    snapshotMoveData: notYet(s.bool({ nullable: true, description: 'Move volume snapshot data to the backup storage.' }), DATA_MOVER),
    datamover: notYet(s.string({ description: 'The data mover for snapshot data.' }), DATA_MOVER),
    csiSnapshotTimeout: s.string({ description: 'How long to wait for each CSI VolumeSnapshot to become ready, as a Go duration. Default 10m (Velero\'s).' }),
    defaultVolumesToFsBackup: notYet(s.bool({ nullable: true, description: 'Back up every pod volume with file-system backup.' }), FS_BACKUP),
    defaultVolumesToRestic: notYet(s.bool({ nullable: true, description: 'Velero\'s older name for defaultVolumesToFsBackup.' }), FS_BACKUP),
    uploaderConfig: notYet(s.unknownObject({ description: 'Settings of the volume data uploader.' }), UPLOADER),
    itemOperationTimeout: notYet(s.string({ description: 'How long to wait for asynchronous item action operations.' }), ITEM_OPERATIONS),
    resourcePolicy: notYet(s.unknownObject({ description: 'A reference to a ConfigMap of resource policies.' }), 'resource policies are not supported yet'),
    metadata: notYet(s.unknownObject({ description: 'Labels for the backup (Velero: for the backups a schedule creates).' }),
      'labels through spec.metadata are not supported yet (put them on the Backup\'s or the Schedule\'s own metadata.labels)'),
    orderedResources: stringMap('Per resource, a comma-separated list of ns/name giving the order to back items up in.'),
    includeAllGroupVersions: s.bool({
      description: 'Also store every other served version of each object (Velero: EnableAPIGroupVersions); a restore prefers the target cluster\'s preferred version.',
    }),
};

const cancel = (what: string, more = ''): Schema => s.bool({
  description: `true stops the ${what}: a New one never starts, one InProgress is aborted and ends Canceled with what it did so far in its results; a finished one is left as it is.${more}`,
});

const backupSpec = keepUnknown(s.named('BackupSpec', s.object({ ...backupFields, cancel: cancel('backup', ' A canceled backup keeps no tarball and is never restorable.') })));
const backupTemplateSpec = keepUnknown(s.named('BackupTemplateSpec', s.object(backupFields, { description: 'The spec of the Backups the schedule creates.' })));

const backupStatus = s.named(
  'BackupStatus',
  s.object({
    phase: s.named('BackupPhase', s.enum(BACKUP_PHASES)),
    validationErrors: stringList('Every reason the spec failed validation.'),
    startTimestamp: s.dateTime(),
    completionTimestamp: s.dateTime(),
    expiration: s.dateTime({ description: 'When garbage collection may delete the backup.' }),
    progress: s.named(
      'BackupProgress',
      s.object({ totalItems: s.int({ minimum: 0 }), itemsBackedUp: s.int({ minimum: 0 }) }, { required: ['totalItems', 'itemsBackedUp'] }),
    ),
    warnings: s.int({ minimum: 0 }),
    errors: s.int({ minimum: 0 }),
    failureReason: s.string(),
    formatVersion: s.string({ description: 'Version of the tarball layout, e.g. "1.1.0".' }),
    csiVolumeSnapshotsAttempted: s.int({ minimum: 0, description: 'CSI VolumeSnapshots the backup asked for.' }),
    csiVolumeSnapshotsCompleted: s.int({ minimum: 0, description: 'CSI VolumeSnapshots that became ready and are kept with the backup.' }),
    waitingFor: s.string({ description: 'While the backup is New and queued: the running or earlier backups whose scope overlaps it, or the --concurrent-backups slots it waits for.' }),
    hookStatus: s.named('HookStatus', s.object(
      { hooksAttempted: s.int({ minimum: 0 }), hooksFailed: s.int({ minimum: 0 }) },
      { description: 'Backup hooks run so far (attempted) and those that failed, whatever their onError.' },
    )),
    encryption: s.named(
      'BackupEncryptionStatus',
      s.object({
        algorithm: s.string({ description: 'e.g. "AES-256-GCM-CHUNKED-v1".' }),
        keyManager: s.string({ description: '"stowage.dev/secret" or the KeyManager plugin that wrapped the data key.' }),
        keyId: s.string({ description: 'Id of the key-encryption key that wrapped the data key.' }),
        wrappedKey: s.string({ description: 'The data key as wrapped (base64; readable only through the key manager). Recorded as the run starts, so even a run that never wrote stowage-backup.json has readable artifacts.' }),
      }),
      { description: 'Set when the backup is encrypted: what must still be held to read it.' },
    ),
    signature: s.named(
      'BackupSignatureStatus',
      s.object({
        algorithm: s.string({ description: '"HMAC-SHA256" or "Ed25519".' }),
        keyId: s.string({ description: 'Which key signed: the Secret entry, or the public key\'s fingerprint.' }),
      }),
      { description: 'Set when the backup\'s manifest is signed.' },
    ),
  }),
);

// Velero's restore hooks (RestoreHooks), field for field: init containers added to restored pods,
// and commands run in their containers once they run (src/hooks/restoreSpec.ts validates them).
const restoreHookDuration = (what: string): Schema => s.string({ description: `${what}, as a Go duration ("90s", "5m").` });
const restoreHooks = s.named(
  'RestoreHooks',
  s.object({
    resources: s.array(
      s.named(
        'RestoreResourceHookSpec',
        s.object(
          {
            name: s.string({ description: 'The hook\'s name, used in the run log and in messages.' }),
            includedNamespaces: stringList('Target namespaces (after namespaceMapping) whose pods the hooks apply to; empty or ["*"] means all.'),
            excludedNamespaces: stringList('Target namespaces whose pods the hooks do not apply to.'),
            includedResources: stringList('Resources the hooks apply to: hooks apply to pods only, so this may name only pods (or "*").'),
            excludedResources: stringList('Resources the hooks do not apply to: naming pods here means the hooks apply to nothing, which is refused.'),
            labelSelector: { ...labelSelector, description: 'Only pods whose labels match (as restored).' } satisfies Schema,
            postHooks: s.array(
              s.named(
                'RestoreResourceHook',
                s.object({
                  exec: s.named(
                    'ExecRestoreHook',
                    s.object(
                      {
                        container: s.string({ description: 'The container to run the command in; the pod\'s first container when unset.' }),
                        command: stringList('The command and its arguments (not run in a shell).'),
                        onError: s.enum(['Continue', 'Fail'], { description: 'Fail: a failed hook is an error of the restore (PartiallyFailed), and the pod\'s later hooks do not run. Continue (default): a warning.' }),
                        execTimeout: restoreHookDuration('How long the command may run before it is ended and counted failed (default 30s)'),
                        waitTimeout: restoreHookDuration('How long to wait, from the pod\'s creation, for the container to run (and be ready with waitForReady); default 10m'),
                        waitForReady: s.bool({ nullable: true, description: 'Wait for the container to be ready, not only running.' }),
                      },
                      { required: ['command'] },
                    ),
                    { description: 'A command run in a container of the restored pod once it runs.' },
                  ),
                  init: s.named(
                    'InitRestoreHook',
                    s.object({
                      initContainers: s.array(s.unknownObject({ description: 'A Kubernetes Container: name and image required.' }), {
                        description: 'Init containers added to the restored pod, before its own, in this order.',
                      }),
                      timeout: restoreHookDuration('How long the restore waits for these init containers to finish (default 10m); a container not finished by then counts failed'),
                    }),
                    { description: 'Init containers added to the restored pod.' },
                  ),
                }),
              ),
              { description: 'Hooks run in order: init containers are added to the pod, exec hooks run once it runs.' },
            ),
          },
          { required: ['name'] },
        ),
      ),
      { description: 'Hooks, each with the pods it applies to.' },
    ),
  }),
  { description: 'Init containers to add and commands to run in restored pods (Velero\'s format). Pod annotations init.hook.restore.velero.io/* and post.hook.restore.velero.io/* take precedence.' },
);

const restoreSpec = keepUnknown(s.named(
  'RestoreSpec',
  s.object({
    backupName: s.string({ description: 'The backup to restore from.' }),
    scheduleName: s.string({ description: 'Restore from the newest Completed backup of this schedule; the backup picked is recorded in backupName when the restore starts.' }),
    ...filters,
    namespaceMapping: stringMap('Source namespace -> target namespace.'),
    existingResourcePolicy: s.named('ExistingResourcePolicy', s.enum(EXISTING_RESOURCE_POLICIES), {
      description: 'What to do with an object that already exists: "none" (skip and warn, default) or "update".',
    }),
    restoreStatus: s.object(
      { includedResources: stringList('Resources whose status is restored.'), excludedResources: stringList('Resources whose status is not restored.') },
      { description: 'Which resources get their status restored too.' },
    ),
    preserveNodePorts: s.bool({ description: 'Keep Service nodePorts.' }),
    dryRun: s.bool({ description: 'Compute what would be created, updated or skipped, and write nothing to the cluster.' }),
    cancel: cancel('restore', ' The items a canceled restore already created or updated stay, and its results list them.'),
    // Velero's fields, refused until implemented.
    hooks: restoreHooks,
    restorePVs: s.bool({
      nullable: true,
      description: 'Whether claims the backup snapshotted get their data back from the snapshot (unset means true). false: they are restored as new, empty claims, which the results say.',
    }),
    itemOperationTimeout: notYet(s.string({ description: 'How long to wait for asynchronous item action operations.' }), ITEM_OPERATIONS),
    resourceModifier: s.named('ResourceModifierRef', s.object(
      {
        apiGroup: s.string({ description: 'Empty: ConfigMaps are core objects.' }),
        kind: s.string({ description: '"ConfigMap".' }),
        name: s.string({ description: 'The ConfigMap, in the Restore\'s namespace, whose one data entry is a rules file in Velero\'s resource modifier format.' }),
      },
      { required: ['kind', 'name'], description: 'Resource modifier rules (Velero\'s format) applied to every restored item after the restore item actions.' },
    )),
    uploaderConfig: notYet(s.unknownObject({ description: 'Settings of the volume data uploader.' }), UPLOADER),
  }),
));

const restoreStatus = s.named(
  'RestoreStatus',
  s.object({
    phase: s.named('RestorePhase', s.enum(RESTORE_PHASES)),
    validationErrors: stringList('Every reason the spec failed validation.'),
    startTimestamp: s.dateTime(),
    completionTimestamp: s.dateTime(),
    progress: s.named(
      'RestoreProgress',
      s.object({ totalItems: s.int({ minimum: 0 }), itemsRestored: s.int({ minimum: 0 }) }, { required: ['totalItems', 'itemsRestored'] }),
    ),
    summary: s.named(
      'RestoreSummary',
      s.object(
        { created: s.int({ minimum: 0 }), updated: s.int({ minimum: 0 }), skipped: s.int({ minimum: 0 }), failed: s.int({ minimum: 0 }) },
        { required: ['created', 'updated', 'skipped', 'failed'], description: 'Outcome counts; for a dry run, what would happen.' },
      ),
    ),
    warnings: s.int({ minimum: 0 }),
    errors: s.int({ minimum: 0 }),
    failureReason: s.string(),
    waitingFor: s.string({ description: 'While the restore is New and queued: the running or earlier restores writing to its target namespaces (or both cluster-scoped), or the --concurrent-restores slots it waits for.' }),
    artifactsNotUploaded: s.string({
      description: 'Set when the restore\'s log, results and resource list were not written to object storage (its backup is in a Velero or ReadOnly location, which Stowage never writes to): where they are instead.',
    }),
    hookStatus: s.named(
      'RestoreHookStatus',
      s.object({ hooksAttempted: s.int({ minimum: 0 }), hooksFailed: s.int({ minimum: 0 }) }),
      { description: 'Restore hooks run (init containers added and exec hooks), and how many of them failed.' },
    ),
    messages: s.named(
      'RestoreMessages',
      s.object({ warnings: stringList('Warnings, "namespace: message" or the message for the cluster.'), errors: stringList('Errors, likewise.') }),
      { description: 'The warnings and errors of a restore whose results are not uploaded (see artifactsNotUploaded), the first 100 of each.' },
    ),
  }),
);

const secretKeyRef = s.named(
  'SecretKeySelector',
  s.object({ name: s.string({ description: 'Secret name, in the server namespace.' }), key: s.string() }, { required: ['name', 'key'] }),
);

const bslSpec = s.named(
  'BackupStorageLocationSpec',
  s.object(
    {
      provider: s.string({ minLength: 1, description: 'Object store plugin name, e.g. "stowage.dev/aws" or "stowage.dev/filesystem".' }),
      objectStorage: s.named(
        'ObjectStorageLocation',
        s.object(
          {
            bucket: s.string({ minLength: 1 }),
            prefix: s.string({ description: 'Key prefix inside the bucket, without leading or trailing "/".' }),
            caCert: s.string({ description: 'PEM CA bundle, base64-encoded, for TLS to the store.' }),
          },
          { required: ['bucket'] },
        ),
      ),
      config: stringMap('Provider-specific settings (region, s3Url, s3ForcePathStyle, ...).'),
      credential: { ...secretKeyRef, description: 'Secret key holding the provider credentials file.' } satisfies Schema,
      default: s.bool({ description: 'Backups without storageLocation go here.' }),
      accessMode: s.named('BackupStorageLocationAccessMode', s.enum(BSL_ACCESS_MODES)),
      velero: s.bool({
        nullable: true,
        description: 'The bucket holds Velero\'s backups: sync imports them as read-only Backups, restores read them, and Stowage never writes there. ' +
          'Unset: detected at validation (status.layout); false: never treated as Velero\'s.',
      }),
      encryption: s.named(
        'BackupStorageLocationEncryption',
        s.object({
          keySecretRef: {
            ...secretKeyRef,
            description: 'Secret whose entries are 256-bit key-encryption keys, each named by its key id; `key` is the one new backups are wrapped with. Older entries keep older backups readable.',
          } satisfies Schema,
          keyManager: s.named(
            'KeyManagerRef',
            s.object(
              {
                provider: s.string({ minLength: 1, description: 'KeyManager plugin name, e.g. "example.com/kms".' }),
                config: stringMap('Provider-specific settings handed to the plugin\'s Init.'),
              },
              { required: ['provider'] },
            ),
            { description: 'A KeyManager plugin that wraps and unwraps data keys (a KMS); instead of keySecretRef.' },
          ),
          required: s.bool({ description: 'Refuse to sync or restore a backup of this location that is not encrypted.' }),
        }, { description: 'Client-side encryption of everything backups and restores write here (AES-256-GCM, a fresh data key per backup).' }),
      ),
      signing: s.named(
        'BackupStorageLocationSigning',
        s.object({
          keySecretRef: {
            ...secretKeyRef,
            description: 'Secret entry holding the signing key: an HMAC key (32+ bytes), an Ed25519 private key (PKCS#8 PEM), or only an Ed25519 public key (PEM) to verify backups made elsewhere.',
          } satisfies Schema,
          disabled: s.bool({ description: 'true: this location signs nothing and checks no signature, by choice (backups here are not tamper-evident). Exactly one of keySecretRef and disabled: true.' }),
        }, {
          description: 'Sign every backup\'s manifest (keySecretRef); a backup here without a valid signature is neither synced nor restorable. Or opt out explicitly with disabled: true. Required: a location in Stowage\'s layout without it is Unavailable (Velero\'s layout needs none; Velero signs nothing).',
        }),
      ),
      validationFrequency: s.string({ description: 'Go duration between validations; default "1m".' }),
      backupSyncPeriod: s.string({ description: 'Go duration between syncs from the bucket; default "1m".' }),
    },
    { required: ['provider', 'objectStorage'] },
  ),
);

const bslStatus = s.named(
  'BackupStorageLocationStatus',
  s.object({
    phase: s.named('BackupStorageLocationPhase', s.enum(BSL_PHASES)),
    message: s.string({ description: 'Why the location is unavailable (credentials scrubbed).' }),
    lastValidationTime: s.dateTime(),
    lastSyncedTime: s.dateTime(),
    layout: s.named('BackupStorageLocationLayout', s.enum(BSL_LAYOUTS)),
    layoutReason: s.string({ description: 'Why status.layout is what it is: spec.velero, or what validation found in the bucket.' }),
    layoutDetectedIn: s.string({
      description: 'The bucket and prefix (`bucket/prefix`) status.layout was detected in, once, at the first validation: later bucket contents never change it; a spec naming another bucket or prefix is detected anew.',
    }),
    observedGeneration: s.int({ minimum: 0, description: 'The metadata.generation of the spec that phase describes; a newer spec is validated at once.' }),
  }),
);

const scheduleSpec = keepUnknown(s.named(
  'ScheduleSpec',
  s.object(
    {
      schedule: s.string({ minLength: 1, description: 'Standard 5-field cron expression, in UTC.' }),
      template: backupTemplateSpec,
      paused: s.bool(),
      skipImmediately: s.bool({ description: 'Do not back up at once when created or unpaused; wait for the next tick.' }),
      useOwnerReferencesInBackup: s.bool({ description: 'Make the Schedule the owner of its Backups.' }),
      keepLast: s.int({ minimum: 0, description: 'Keep the newest N successful backups.' }),
      keepHourly: s.int({ minimum: 0 }),
      keepDaily: s.int({ minimum: 0 }),
      keepWeekly: s.int({ minimum: 0 }),
      keepMonthly: s.int({ minimum: 0 }),
    },
    { required: ['schedule', 'template'] },
  ),
));

const scheduleStatus = s.named(
  'ScheduleStatus',
  s.object({
    phase: s.named('SchedulePhase', s.enum(SCHEDULE_PHASES)),
    lastBackup: s.dateTime({ description: 'When the last backup was created.' }),
    lastBackupName: s.string(),
    lastSkipped: s.dateTime({ description: 'When a tick was last skipped because a backup was still running.' }),
    validationErrors: stringList('Every reason the spec failed validation.'),
  }),
);

const dbrSpec = s.named('DeleteBackupRequestSpec', s.object({ backupName: s.string({ minLength: 1 }) }, { required: ['backupName'] }));
const dbrStatus = s.named(
  'DeleteBackupRequestStatus',
  s.object({ phase: s.named('DeleteBackupRequestPhase', s.enum(DELETE_BACKUP_REQUEST_PHASES)), errors: stringList('Every failure; the request can be retried.') }),
);

const downloadSpec = s.named(
  'DownloadRequestSpec',
  s.object(
    {
      target: s.named(
        'DownloadTarget',
        s.object({ kind: s.named('DownloadTargetKind', s.enum(DOWNLOAD_TARGET_KINDS)), name: s.string({ minLength: 1 }) }, { required: ['kind', 'name'] }),
      ),
      publicKey: s.string({
        minLength: 1,
        description: 'A one-time X25519 public key (base64 of its SPKI DER form) made by the client for this request. The server seals the download link to it (status.sealedURL), so only the holder of the private key can read the link; a request without one is refused.',
      }),
    },
    { required: ['target'] },
  ),
);
const downloadStatus = s.named(
  'DownloadRequestStatus',
  s.object({
    phase: s.named('DownloadRequestPhase', s.enum(DOWNLOAD_REQUEST_PHASES)),
    sealedURL: s.named(
      'SealedDownloadURL',
      s.object(
        {
          algorithm: s.string({ description: 'X25519-HKDF-SHA256-AES-256-GCM: ECDH of ephemeralPublicKey with spec.publicKey, HKDF-SHA256 to an AES-256-GCM key.' }),
          ephemeralPublicKey: s.string({ description: "The server's one-time X25519 public key, base64 SPKI DER." }),
          nonce: s.string({ description: 'AES-GCM nonce, base64.' }),
          ciphertext: s.string({ description: 'The download URL encrypted with AES-256-GCM, then its 16-byte tag, base64.' }),
        },
        { required: ['algorithm', 'ephemeralPublicKey', 'nonce', 'ciphertext'] },
      ),
      { description: 'The short-lived download link, readable only with the private key of spec.publicKey; never stored in plain text.' },
    ),
    expiration: s.dateTime(),
    message: s.string({ description: 'Why there is no sealedURL, when the server refused the request or could not provide the target.' }),
  }),
);

const ssrSpec = s.named('ServerStatusRequestSpec', s.object({}));
const ssrStatus = s.named(
  'ServerStatusRequestStatus',
  s.object({
    phase: s.named('ServerStatusRequestPhase', s.enum(SERVER_STATUS_REQUEST_PHASES)),
    processedTimestamp: s.dateTime(),
    serverVersion: s.string(),
    plugins: s.array(s.named('ServerStatusPluginInfo', s.object({ name: s.string(), kind: s.string() }, { required: ['name', 'kind'] }))),
  }),
);

const vslSpec = s.named(
  'VolumeSnapshotLocationSpec',
  s.object(
    { provider: s.string({ minLength: 1 }), config: stringMap('Provider-specific settings.'), credential: secretKeyRef },
    { required: ['provider'] },
  ),
);
const vslStatus = s.named('VolumeSnapshotLocationStatus', s.object({
  phase: s.named('VolumeSnapshotLocationPhase', s.enum(VSL_PHASES)),
  message: s.string({ description: 'Why the location is Unavailable.' }),
}));

const phaseCol: PrinterColumn = { name: 'Phase', type: 'string', jsonPath: '.status.phase' };
const ageCol: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const KINDS: readonly KindDef[] = [
  {
    kind: 'Backup',
    plural: 'backups',
    singular: 'backup',
    shortNames: [],
    description: 'A backup of cluster resources to a BackupStorageLocation.',
    spec: backupSpec,
    specRequired: true,
    status: backupStatus,
    printerColumns: [
      phaseCol,
      { name: 'Items', type: 'integer', jsonPath: '.status.progress.itemsBackedUp' },
      { name: 'Errors', type: 'integer', jsonPath: '.status.errors' },
      { name: 'Warnings', type: 'integer', jsonPath: '.status.warnings' },
      // A string, not a date: kubectl renders future dates as "<invalid>".
      { name: 'Expiration', type: 'string', jsonPath: '.status.expiration' },
      { name: 'Storage Location', type: 'string', jsonPath: '.spec.storageLocation' },
      ageCol,
    ],
  },
  {
    kind: 'BackupStorageLocation',
    plural: 'backupstoragelocations',
    singular: 'backupstoragelocation',
    shortNames: ['bsl'],
    description: 'A bucket (and prefix) where backups are stored, reached through an object store plugin.',
    spec: bslSpec,
    specRequired: true,
    status: bslStatus,
    printerColumns: [
      phaseCol,
      { name: 'Provider', type: 'string', jsonPath: '.spec.provider' },
      { name: 'Bucket', type: 'string', jsonPath: '.spec.objectStorage.bucket' },
      { name: 'Access Mode', type: 'string', jsonPath: '.spec.accessMode' },
      { name: 'Default', type: 'boolean', jsonPath: '.spec.default' },
      { name: 'Layout', type: 'string', jsonPath: '.status.layout' },
      { name: 'Last Validated', type: 'date', jsonPath: '.status.lastValidationTime' },
      ageCol,
    ],
  },
  {
    kind: 'Restore',
    plural: 'restores',
    singular: 'restore',
    shortNames: [],
    description: 'A restore of cluster resources from a Backup.',
    spec: restoreSpec,
    specRequired: true,
    status: restoreStatus,
    printerColumns: [
      phaseCol,
      { name: 'Items', type: 'integer', jsonPath: '.status.progress.itemsRestored' },
      { name: 'Errors', type: 'integer', jsonPath: '.status.errors' },
      { name: 'Warnings', type: 'integer', jsonPath: '.status.warnings' },
      { name: 'Backup', type: 'string', jsonPath: '.spec.backupName' },
      { name: 'Dry Run', type: 'boolean', jsonPath: '.spec.dryRun', priority: 1 },
      ageCol,
    ],
  },
  {
    kind: 'Schedule',
    plural: 'schedules',
    singular: 'schedule',
    shortNames: [],
    description: 'Creates Backups from a template on a cron schedule, with retention.',
    spec: scheduleSpec,
    specRequired: true,
    status: scheduleStatus,
    printerColumns: [
      phaseCol,
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Paused', type: 'boolean', jsonPath: '.spec.paused' },
      { name: 'Last Backup', type: 'date', jsonPath: '.status.lastBackup' },
      ageCol,
    ],
  },
  {
    kind: 'DeleteBackupRequest',
    plural: 'deletebackuprequests',
    singular: 'deletebackuprequest',
    shortNames: [],
    description: 'A request to delete a Backup, its data in object storage, and its Restores.',
    spec: dbrSpec,
    specRequired: true,
    status: dbrStatus,
    printerColumns: [phaseCol, { name: 'Backup', type: 'string', jsonPath: '.spec.backupName' }, ageCol],
  },
  {
    kind: 'DownloadRequest',
    plural: 'downloadrequests',
    singular: 'downloadrequest',
    shortNames: [],
    description: 'A request for a short-lived URL to download a backup or restore artifact.',
    spec: downloadSpec,
    specRequired: true,
    status: downloadStatus,
    printerColumns: [
      phaseCol,
      { name: 'Target Kind', type: 'string', jsonPath: '.spec.target.kind' },
      { name: 'Target', type: 'string', jsonPath: '.spec.target.name' },
      ageCol,
    ],
  },
  {
    kind: 'ServerStatusRequest',
    plural: 'serverstatusrequests',
    singular: 'serverstatusrequest',
    shortNames: [],
    description: 'A request for the server version and its plugins.',
    spec: ssrSpec,
    specRequired: false,
    status: ssrStatus,
    printerColumns: [phaseCol, { name: 'Server Version', type: 'string', jsonPath: '.status.serverVersion' }, ageCol],
  },
  {
    kind: 'VolumeSnapshotLocation',
    plural: 'volumesnapshotlocations',
    singular: 'volumesnapshotlocation',
    shortNames: ['vsl'],
    description: 'Where volume snapshots are taken, through a volume snapshotter plugin.',
    spec: vslSpec,
    specRequired: true,
    status: vslStatus,
    printerColumns: [phaseCol, { name: 'Provider', type: 'string', jsonPath: '.spec.provider' }, ageCol],
  },
];
