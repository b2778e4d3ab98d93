export * from './address.js';
export * from './backoff.js';
export * from './clock.js';
export * from './concurrency.js';
export * from './duration.js';
export * from './errors.js';
