#!/usr/bin/env node
import { runProbe } from './probe.js';

process.exitCode = await runProbe(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
