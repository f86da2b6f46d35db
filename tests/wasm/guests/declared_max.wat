;; SPDX-License-Identifier: Apache-2.0
;; A module that declares it may grow to 1000 pages (62.5 MiB) and then exits 0.
(module
  (memory (export "memory") 1 1000)
  (func (export "_start")))
