// SPDX-License-Identifier: Apache-2.0
// node's WASI as a peer row: node wasi_node.mjs MODULE.wasm ARGS...
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv } from 'node:process';
const wasi = new WASI({ version: 'preview1', args: argv.slice(2), env: {} });
const module = await WebAssembly.compile(await readFile(argv[2]));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject ? wasi.getImportObject() : { wasi_snapshot_preview1: wasi.wasiImport });
wasi.start(instance);
