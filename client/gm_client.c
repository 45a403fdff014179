/*
 * gm_client.c - the calling thread's last error; see gm_client.h.
 */
#include "gm_client.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[GM_CLIENT_ERRLEN];

int gm_client_seterr(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

void gm_client_clearerr(void)
{
	last_error[0] = '\0';
}

const char *gm_client_lasterr(void)
{
	return last_error;
}
