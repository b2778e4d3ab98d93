export * from './format.js';
export * from './runLog.js';
export * from './server.js';
export * from './spool.js';
export * from './tail.js';
