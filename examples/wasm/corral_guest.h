/* SPDX-License-Identifier: Apache-2.0 */
/* corral wasm guest SDK (ABI v1, docs/wasm-abi.md): what a C guest may rely on, and a few
 * helpers for the usual shape of a guest (read stdin, transform, write stdout). */
#ifndef CORRAL_GUEST_H
#define CORRAL_GUEST_H

#include <stddef.h>

/* Exit statuses a guest may use; 126 and above are corral's (proc_exit above 125 traps). */
#define CORRAL_EXIT_OK 0
#define CORRAL_EXIT_FAILURE 1
#define CORRAL_EXIT_USAGE 2
#define CORRAL_EXIT_MAX 125

/* The page size of linear memory; --memory is counted in these. */
#define CORRAL_WASM_PAGE 65536u

/* Reads all of stdin, at most max bytes, into a malloc'd NUL-terminated buffer; *len gets
 * the length. NULL when reading failed, memory ran out, or stdin held more than max. */
char* corral_read_stdin(size_t max, size_t* len);

/* Writes all of buf to stdout; 0 on success, -1 on error. */
int corral_write_stdout(const char* buf, size_t len);

/* One line "guest: <what>" on stderr, then exit with status (1..125). */
_Noreturn void corral_fail(int status, const char* what);

/* Pages of linear memory the guest has now. */
size_t corral_memory_pages(void);

#endif
