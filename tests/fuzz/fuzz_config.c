/*
 * fuzz_config.c - the configuration loader on untrusted text, as
 * `gemmd -c FILE` reads it. Checks the loader's contract beyond "no
 * crash": a refused document leaves the configuration as it was (all or
 * nothing) with a known code and a NUL-terminated message; an accepted
 * one dumps, through gm_config_to_json, to JSON that loads back into
 * the same configuration (the dump is what --print-config and the stats
 * document show, so it must not drift from what was loaded).
 */
#include <string.h>

#include "fuzz.h"
#include "gm_config.h"
#include "gm_error.h"

static char *dump(const gm_config *c)
{
	char *s = gm_config_to_json(c);

	FUZZ_CHECK(s != NULL);
	return s;
}

static void round_trip(const gm_config *c)
{
	char *first = dump(c), *second, msg[512];
	gm_config again;
	int rv;

	gm_config_defaults(&again);
	rv = gm_config_load_string(&again, first, strlen(first), msg,
				   sizeof(msg));
	if (rv != GM_OK)
		fprintf(stderr, "dump refused: %s\n%s\n", msg, first);
	FUZZ_CHECK(rv == GM_OK);
	second = dump(&again);
	FUZZ_CHECK(strcmp(first, second) == 0);
	free(second);
	free(first);
	gm_config_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *defaults;
	char msg[512], *now;
	gm_config c;
	int rv;

	gm_config_defaults(&c);
	if (defaults == NULL)
		defaults = dump(&c);
	rv = gm_config_load_string(&c, (const char *)data, size, msg,
				   sizeof(msg));
	if (rv != GM_OK) {
		FUZZ_CHECK(rv == GM_EJSON || rv == GM_ECONFIG ||
			   rv == GM_ENOMEM);
		FUZZ_CHECK(memchr(msg, '\0', sizeof(msg)) != NULL);
		now = dump(&c);
		FUZZ_CHECK(strcmp(now, defaults) == 0);
		free(now);
	} else {
		rv = gm_config_check(&c, msg, sizeof(msg));
		FUZZ_CHECK(rv == GM_OK || rv == GM_ECONFIG);
		round_trip(&c);
	}
	gm_config_free(&c);
	return 0;
}
