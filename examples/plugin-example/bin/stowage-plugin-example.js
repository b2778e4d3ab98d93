#!/usr/bin/env node
// The executable the Stowage server runs: put it (or a link to it) in the server's --plugin-dir.
import { main } from '../src/plugin.js';

await main();
