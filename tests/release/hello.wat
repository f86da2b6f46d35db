;; SPDX-License-Identifier: Apache-2.0
;; The smallest WASI command that shows the packaged Wasm backend end to end: corral wasm run
;; compiles it (wasm2c + cc), then corral-wasm-guest runs it and it writes one line to stdout.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "corral wasm ok\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 15))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
