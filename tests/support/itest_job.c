/*
 * itest_job.c - the daemon fixture through the client library: stats
 * by key and fp64 GEMM jobs checked against A*B; see itest.h.
 */
#include "itest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cJSON *it_stats(gemmd_client *c)
{
	char *doc = NULL;
	cJSON *root, *stats;

	if (gemmd_stats(c, &doc, 5000) != GM_OK)
		return NULL;
	root = cJSON_Parse(doc);
	free(doc);
	stats = cJSON_DetachItemFromObjectCaseSensitive(root, "stats");
	cJSON_Delete(root);
	return stats;
}

double it_stat(gemmd_client *c, const char *path)
{
	cJSON *s = it_stats(c);
	double v = it_num(s, path);

	cJSON_Delete(s);
	return v;
}

void it_job(gemmd_job *j, uint32_t m, uint32_t n, uint32_t k, unsigned seed)
{
	size_t na = (size_t)m * k, nb = (size_t)k * n;
	double *a = malloc(na * sizeof(double)),
	       *b = malloc(nb * sizeof(double));
	void *out = malloc((size_t)m * n * sizeof(double));

	for (size_t i = 0; a != NULL && i < na; i++)
		a[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	for (size_t i = 0; b != NULL && i < nb; i++)
		b[i] = (double)rand_r(&seed) / RAND_MAX * 2 - 1;
	if (out != NULL)
		memset(out, 0xA5, (size_t)m * n * sizeof(double));
	*j = (gemmd_job){.dtype = GEMMD_FP64,
			 .layout = GEMMD_ROW_MAJOR,
			 .m = m,
			 .n = n,
			 .k = k,
			 .alpha = 1.0,
			 .a = a,
			 .b = b,
			 .out = out};
}

void it_done(void *arg, int rv)
{
	it_waiter *w = arg;

	w->rv = rv;
	w->at_us = it_now_us();
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
}

int it_wait_done(it_waiter *w, int ms)
{
	double end = it_now_us() + ms * 1e3;

	while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) &&
	       (ms < 0 || it_now_us() < end))
		usleep(1000);
	return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
}

void it_job_free(gemmd_job *j)
{
	free((void *)j->a);
	free((void *)j->b);
	free(j->out);
}

int it_job_ok(const gemmd_job *j)
{
	const double *a = j->a, *b = j->b, *c = j->out;

	if (j->status != GM_OK)
		return 0;
	for (size_t r = 0; r < j->m; r++)
		for (size_t col = 0; col < j->n; col++) {
			double s = 0, mag = 0;

			for (size_t p = 0; p < j->k; p++) {
				s += a[r * j->k + p] * b[p * j->n + col];
				mag +=
				    fabs(a[r * j->k + p] * b[p * j->n + col]);
			}
			if (fabs(c[r * j->n + col] - s) >
			    4e-16 * (double)j->k * mag + 1e-300)
				return 0;
		}
	return 1;
}

int it_job_untouched(const gemmd_job *j)
{
	const uint8_t *p = j->out;

	for (size_t i = 0; i < (size_t)j->m * j->n * sizeof(double); i++)
		if (p[i] != 0xA5)
			return 0;
	return 1;
}

double it_timed_job(gemmd_client *c, uint32_t m, uint32_t n, uint32_t k,
		    unsigned seed, int timeout_ms)
{
	gemmd_job j;
	double t0, us;
	int rv, ok;

	it_job(&j, m, n, k, seed);
	t0 = it_now_us();
	rv = gemmd_submit(c, &j, 1, NULL, timeout_ms);
	us = it_now_us() - t0;
	ok = rv == GM_OK && it_job_ok(&j);
	if (!ok)
		fprintf(stderr, "job %ux%ux%u: %s, status %d\n", m, n, k,
			gemmd_errname(rv), j.status);
	it_job_free(&j);
	return ok ? us : -1.0;
}

double it_flops_per_us(const char *const *args, uint32_t n, int timeout_ms)
{
	double rate = -1;
	gemmd_client *c;
	gemmd_job j;
	it_daemon d;
	int i;

	if (it_launch(&d, args) != 0) {
		it_cleanup(&d);
		return -1;
	}
	if (gemmd_open(d.ipc, NULL, &c) == GM_OK) {
		it_job(&j, n, n, n, 1);
		for (i = 0; i < 2; i++)
			if (gemmd_submit(c, &j, 1, NULL, timeout_ms) != GM_OK ||
			    j.status != GM_OK)
				break;
		if (i == 2)
			rate = 2.0 * n * n * n / j.t.kernel_us;
		it_job_free(&j);
		gemmd_close(c);
	}
	it_stop(&d);
	it_cleanup(&d);
	return rate;
}

uint32_t it_cube_for(const char *const *args, uint32_t n, int timeout_ms,
		     double seconds, uint32_t lo, uint32_t hi, double *rate)
{
	double edge;

	if ((*rate = it_flops_per_us(args, n, timeout_ms)) <= 0)
		return 0;
	edge = cbrt(seconds * 1e6 * *rate / 2.0);
	return (uint32_t)(edge < lo ? lo : edge > hi ? hi : edge);
}
