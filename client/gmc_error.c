/*
 * gmc_error.c - the calling thread's last error; see gmc_error.h.
 */
#include "gmc_error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[GMC_ERRLEN];

int gmc_error_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

void gmc_error_clear(void)
{
	last_error[0] = '\0';
}

const char *gmc_error_last(void)
{
	return last_error;
}
