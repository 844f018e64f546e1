#!/usr/bin/env node
import { runProbe } from './probe.js';

// A reader that stops early (`mdp-probe --scan | head -1`) is not an error of the probe.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

process.exitCode = await runProbe(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
