;; SPDX-License-Identifier: Apache-2.0
;; Deep recursion on the native stack: each level calls itself through the table, so no
;; compiler can turn it into a loop, and keeps no frame in linear memory.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (type $t (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (table 1 funcref)
  (elem (i32.const 0) $f)
  (func $f (type $t) (param $n i32) (result i32)
    (i32.add
      (call_indirect (type $t) (i32.add (local.get $n) (i32.const 1)) (i32.const 0))
      (local.get $n)))
  (func (export "_start")
    (call $exit (call $f (i32.const 0)))))
