#!/usr/bin/env node
// The executable the Stowage server runs: copy this package into the server's --plugin-dir.
import { main } from '../src/plugin.js';

await main();
