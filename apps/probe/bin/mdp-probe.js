#!/usr/bin/env node
// Launcher kept in git so package managers can link the bin before the first build.
import '../dist/cli.js';
