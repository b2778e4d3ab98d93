// Public surface of auth/: who asked for a run (requester.ts), what they may do (access.ts), and
// the client a run acts with (authority.ts).
export { REQUESTER_ANNOTATION, describeRequester, formatRequester, isRequester, parseRequester, requesterOf, sameRequester, type Requester } from './requester.js';
export { createAccessReviewer, describeAccess, type AccessAnswer, type AccessReviewer, type NamespaceAccess, type ResourceAccess } from './access.js';
export { SEAL_ANNOTATION, SEAL_KEY_BYTES, SEAL_WINDOW_MS, createSealKey, sealRefusal, sealStamp, type SealSubject } from './seal.js';
export { authorityFor, type Authority } from './authority.js';
export { backupUseRefusal, describeLacks, lackedRights, type HeldResources, type Lack } from './backupAccess.js';
export { SEAL_ALGORITHM, createLinkKey, parseLinkPublicKey, sealContext, sealLink, type LinkKey } from './sealedLink.js';
