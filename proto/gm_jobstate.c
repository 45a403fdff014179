/* gm_jobstate.c - wire names for the states of GM_JOBSTATE_MAP. */
#include "gm_jobstate.h"

#include <stddef.h>
#include <string.h>

static const char *const names[] = {
#define GM_JOBSTATE_NAME(name, val, wire) [val] = wire,
    GM_JOBSTATE_MAP(GM_JOBSTATE_NAME)
#undef GM_JOBSTATE_NAME
};

#define NSTATES (sizeof(names) / sizeof(names[0]))

const char *gm_jobstate_name(int state)
{
	if (state < 0 || (size_t)state >= NSTATES)
		return NULL;
	return names[state];
}

int gm_jobstate_parse(const char *name)
{
	for (size_t i = 0; name != NULL && i < NSTATES; i++)
		if (names[i] != NULL && strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}
