// Public surface of webhook/: the admission webhook that records who created each run.
export { STAMPED_RESOURCES, admit, impersonationNeeded, type AdmissionOutcome, type AdmissionResponse, type MayImpersonate, type Sealer } from './admission.js';
export { DEFAULT_LIFETIME_MS, createTlsIdentity, ensureTlsIdentity, expiryOf, liveCertificates, renewBeforeMs, servingNames, tlsSecretName, unusableBecause, type EnsuredIdentity, type TlsIdentity } from './certs.js';
export {
  MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_NAME, WEBHOOK_PATH, WEBHOOK_SERVICE_NAME,
  publishCaBundle, readWebhookConfiguration, serviceClientConfig, serviceOf, webhookConfiguration,
  type ClientConfig, type MutatingWebhookConfiguration,
} from './configuration.js';
export { APISERVER_MAX_REQUEST_BYTES, MAX_BODY_BYTES, startWebhookServer, type WebhookServer, type WebhookServerOptions } from './server.js';
export { checkIntervalMs, startCertificateRenewal, switchDue, type CertificateRenewal, type RenewalOptions } from './renewal.js';
export { impersonationReviewer, startAdmissionWebhook, type AdmissionWebhook, type AdmissionWebhookOptions } from './start.js';
export { PROBE_NAME, nextProbeDelay, probeVerdict, startWebhookHealth, type WebhookHealth, type WebhookHealthOptions } from './health.js';
