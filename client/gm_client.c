/*
 * gm_client.c - what is done after the client's lock, and the calling
 * thread's last error; see gm_client.h.
 */
#include "gm_client.h"

#include <stdarg.h>
#include <stdio.h>

#include "gm_call.h"
#include "gm_conn.h"

static _Thread_local char last_error[GM_CLIENT_ERRLEN];

void gm_todo_run(gm_todo *t)
{
	gm_conn *c;
	gm_call *k;

	/* Callers first: a reply's caller is told before its connection
	 * reads again, which costs a few us (nng arms the socket). */
	for (;;) {
		if ((k = t->tell) != NULL) {
			t->tell = k->next_tell;
			gm_call_tell(k);
		} else if ((c = t->run) != NULL) {
			t->run = gm_conn_next_run(c);
			gm_conn_run(c, t);
		} else {
			break;
		}
	}
}

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
