export { SignatureError } from './errors.js';
export {
  canSign, currentSigningKey, ED25519_ALGORITHM, ed25519Fingerprint, HMAC_ALGORITHM, MIN_HMAC_KEY_BYTES, parseSigningKey, signingKeyProblems, signingKeysOf,
  type SignatureAlgorithm, type SigningKey, type SigningKeys,
} from './keys.js';
export {
  canonicalJson, parseSignatureFile, probeSigningKey, SIGNATURE_KIND, signStatement, verifySignatureFile, type SignatureFile, type SignedStatement,
} from './statement.js';
