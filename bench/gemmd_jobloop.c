/*
 * gemmd_jobloop - the C client's side of bench/gemmd_py_bench.py: the
 * same requests the Python client makes, timed one by one.
 *
 *   gemmd_jobloop --url URL [--dtype fp32|fp64] [--size N] [--jobs J]
 *                 [--reps R] [--region]
 *
 * Each repetition is one gemmd_submit of J jobs N x N x N (row-major,
 * random operands in [-1, 1), each job its own A, B and result), its
 * operands plain pointers (the socket, staged over ipc://) or, with
 * --region, in a region made before the clock starts. After one
 * untimed warm-up request it prints one line: "p50 p99 mean" in
 * microseconds per request, then "ok". Exit status 1 on any failure.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemmd.h"

typedef struct loop {
	const char *url;
	int dtype;
	uint32_t size, jobs;
	int reps, region;
} loop;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int parse(int argc, char **argv, loop *l)
{
	static const struct option opts[] = {
	    {"url", required_argument, NULL, 'u'},
	    {"dtype", required_argument, NULL, 'd'},
	    {"size", required_argument, NULL, 's'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"reps", required_argument, NULL, 'r'},
	    {"region", no_argument, NULL, 'g'},
	    {NULL, 0, NULL, 0},
	};
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'u')
			l->url = optarg;
		else if (o == 'd')
			l->dtype = strcmp(optarg, "fp64") == 0 ? GEMMD_FP64
							       : GEMMD_FP32;
		else if (o == 's')
			l->size = (uint32_t)atoi(optarg);
		else if (o == 'j')
			l->jobs = (uint32_t)atoi(optarg);
		else if (o == 'r')
			l->reps = atoi(optarg);
		else if (o == 'g')
			l->region = 1;
		else
			return -1;
	}
	return l->url && l->size > 0 && l->jobs > 0 && l->reps > 0 &&
		       optind == argc
		   ? 0
		   : -1;
}

static void fill(void *p, size_t count, int dtype)
{
	for (size_t i = 0; i < count; i++) {
		double v = rand() / (double)RAND_MAX * 2 - 1;

		if (dtype == GEMMD_FP64)
			((double *)p)[i] = v;
		else
			((float *)p)[i] = (float)v;
	}
}

/* Points the jobs at one block of memory (base: the region's mapping or
 * a heap block) holding A, B and the result of each, in that order. */
static void lay_out(const loop *l, gemmd_job *jobs, char *base, gemmd_region *r,
		    uint64_t at)
{
	size_t mat =
	    (size_t)l->size * l->size * (l->dtype == GEMMD_FP64 ? 8 : 4);

	for (uint32_t i = 0; i < l->jobs; i++) {
		gemmd_job *j = &jobs[i];
		uint64_t off = at + (uint64_t)i * 3 * mat;

		memset(j, 0, sizeof(*j));
		j->dtype = l->dtype;
		j->m = j->n = j->k = l->size;
		j->alpha = 1.0;
		fill(base + off, 2 * mat / (l->dtype == GEMMD_FP64 ? 8 : 4),
		     l->dtype);
		if (r) {
			j->a_ref = (gemmd_region_ref){r, off};
			j->b_ref = (gemmd_region_ref){r, off + mat};
			j->out_ref = (gemmd_region_ref){r, off + 2 * mat};
		} else {
			j->a = base + off;
			j->b = base + off + mat;
			j->out = base + off + 2 * mat;
		}
	}
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static int submit(gemmd_client *c, gemmd_job *jobs, uint32_t n)
{
	int rv = gemmd_submit(c, jobs, n, NULL, 60000);

	for (uint32_t i = 0; rv == 0 && i < n; i++)
		rv = jobs[i].status;
	if (rv != 0)
		fprintf(stderr, "gemmd_jobloop: %s: %s\n", gemmd_errname(rv),
			gemmd_last_error());
	return rv;
}

static int run(const loop *l, gemmd_client *c, gemmd_job *jobs)
{
	double *us = calloc((size_t)l->reps, sizeof(*us)), sum = 0;

	if (!us || submit(c, jobs, l->jobs) != 0)
		return free(us), -1;
	for (int i = 0; i < l->reps; i++) {
		double t0 = now_us();

		if (submit(c, jobs, l->jobs) != 0)
			return free(us), -1;
		us[i] = now_us() - t0;
		sum += us[i];
	}
	qsort(us, (size_t)l->reps, sizeof(*us), cmp);
	printf("%.3f %.3f %.3f\nok\n", us[l->reps / 2],
	       us[(size_t)(l->reps * 0.99)], sum / l->reps);
	free(us);
	return 0;
}

int main(int argc, char **argv)
{
	loop l = {.dtype = GEMMD_FP32, .size = 64, .jobs = 1, .reps = 2000};
	gemmd_client *c = NULL;
	gemmd_region *r = NULL;
	gemmd_job *jobs;
	uint64_t at = 0;
	char *base;
	size_t bytes;
	int rv;

	if (parse(argc, argv, &l) != 0) {
		fprintf(stderr, "usage: gemmd_jobloop --url URL [--dtype "
				"fp32|fp64] [--size N] [--jobs J] [--reps R] "
				"[--region]\n");
		return 2;
	}
	bytes = (size_t)3 * l.jobs * l.size * l.size *
		(l.dtype == GEMMD_FP64 ? 8 : 4);
	jobs = calloc(l.jobs, sizeof(*jobs));
	if (!jobs || gemmd_open(l.url, NULL, &c) != 0) {
		fprintf(stderr, "gemmd_jobloop: %s\n", gemmd_last_error());
		return 1;
	}
	if (l.region) {
		if ((rv = gemmd_region_create(c, bytes + 4096, &r)) != 0 ||
		    (rv = gemmd_region_alloc(r, bytes, 256, &at)) != 0) {
			fprintf(stderr, "gemmd_jobloop: region: %s\n",
				gemmd_last_error());
			return 1;
		}
		base = gemmd_region_ptr(r);
	} else if (!(base = malloc(bytes))) {
		return 1;
	}
	lay_out(&l, jobs, base, r, at);
	rv = run(&l, c, jobs);
	if (r)
		gemmd_region_release(r);
	else
		free(base);
	gemmd_close(c);
	free(jobs);
	return rv == 0 ? 0 : 1;
}
