#!/usr/bin/env node
// Stable bin entry: npm links this committed file, which loads the built CLI.
import "../dist/main.js";
