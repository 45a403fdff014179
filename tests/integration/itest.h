/*
 * itest.h - what the C integration tests that use the client library
 * share: everything of itest_core.h, the stats read through the library
 * and GEMM jobs with their reference check.
 *
 * Failures here return an error for the test to assert on; nothing in
 * this file calls cmocka.
 */
#ifndef ITEST_H
#define ITEST_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "gemmd.h"
#include "itest_core.h"

/* The "stats" object of a stats reply, fetched over c (cJSON_Delete
 * it), or NULL. */
cJSON *it_stats(gemmd_client *c);

/* it_num of a fresh stats document; -1 when it cannot be fetched. */
double it_stat(gemmd_client *c, const char *path);

/* Makes j a row-major fp64 m x n x k job, alpha 1, with operands in
 * -1..1 from seed and out filled with 0xA5 bytes (it_job_untouched). */
void it_job(gemmd_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed);

/* Frees what it_job allocated. */
void it_job_free(gemmd_job *j);

/* Whether j succeeded and out is A*B to fp64 rounding. */
int it_job_ok(const gemmd_job *j);

/* Runs one it_job of m x n x k from seed on c within timeout_ms and
 * checks it: its round trip in microseconds, or -1 when the call failed
 * or the result was wrong (reported on stderr). The well-behaved client
 * of the attack tests. */
double it_timed_job(gemmd_client *c, uint32_t m, uint32_t n, uint32_t k,
		    unsigned seed, int timeout_ms);

/* Whether out still holds the 0xA5 fill: no byte of a result landed. */
int it_job_untouched(const gemmd_job *j);

#endif
