export * from './metrics.js';
export * from './server.js';
