/*
 * fuzz.h - what the fuzz targets share: libFuzzer's entry point, and a
 * check that aborts, so that a broken invariant is a crash libFuzzer
 * reports and the replay runner fails on, in every build type (assert()
 * is compiled out of release builds).
 */
#ifndef GM_FUZZ_H
#define GM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs one input; returns 0. Defined once per target. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

#endif
