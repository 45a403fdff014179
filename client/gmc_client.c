/*
 * gmc_client.c - what is done after the client's lock, and the calling
 * thread's last error; see gmc_client.h.
 */
#include "gmc_client.h"

#include <stdarg.h>
#include <stdio.h>

#include "gmc_call.h"
#include "gmc_conn.h"

static _Thread_local char last_error[GMC_CLIENT_ERRLEN];

void gmc_todo_run(gmc_todo *t)
{
	gmc_conn *c;
	gmc_call *k;

	/* Callers first: a reply's caller is told before its connection
	 * reads again, which costs a few us (nng arms the socket). */
	for (;;) {
		if ((k = t->tell) != NULL) {
			t->tell = k->next_tell;
			gmc_call_tell(k);
		} else if ((c = t->run) != NULL) {
			t->run = gmc_conn_next_run(c);
			gmc_conn_run(c, t);
		} else {
			break;
		}
	}
}

int gmc_client_seterr(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return code;
}

void gmc_client_clearerr(void)
{
	last_error[0] = '\0';
}

const char *gmc_client_lasterr(void)
{
	return last_error;
}
