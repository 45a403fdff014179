/*
 * gm_ctl_rand.c - gemmctl rand: a .npy matrix of uniform random values
 * in [-1, 1), fp64, fp32 or fp16, in C or Fortran order, to a file or
 * stdout, since a fresh host may have no NumPy to make test inputs with.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "gm_ctl.h"
#include "gm_npy.h"
#include "gm_proto.h"

static const char rand_help[] =
    "Usage: gemmctl rand ROWSxCOLS -o FILE.npy [options]\n"
    "Write a matrix of uniform random values in [-1, 1).\n"
    "\n"
    "  -o, --output FILE   write it here (required); '-': stdout\n"
    "      --dtype T       fp64 (default), fp32 or fp16\n"
    "      --fortran       Fortran (column-major) order; default C order\n"
    "      --seed N        seed, for a repeatable matrix (default: from\n"
    "                      the clock and the process id)\n"
    "  -h, --help          show this help and exit\n";

/* splitmix64: small, fast, and good enough for test matrices. */
uint64_t gm_ctl_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Takes as many random bits as the dtype's mantissa holds, so that the
 * value is exact and never rounds up to 1. */
void gm_ctl_fill_random(gm_npy *m, uint64_t seed)
{
	uint64_t i, n = m->rows * m->cols;

	for (i = 0; i < n; i++) {
		uint64_t r = gm_ctl_random(&seed);

		if (m->dtype == GM_FP64)
			((double *)m->data)[i] =
			    ldexp((double)(r >> 11), -52) - 1;
		else if (m->dtype == GM_FP32)
			((float *)m->data)[i] =
			    ldexpf((float)(r >> 40), -23) - 1;
		else /* steps of 2^-10: exact in fp16 all over [-1, 1) */
			((uint16_t *)m->data)[i] =
			    gm_npy_to_fp16(ldexp((double)(r >> 53), -10) - 1);
	}
}

static bool parse_shape(const char *s, uint64_t *rows, uint64_t *cols)
{
	char *x, *end;

	errno = 0;
	*rows = strtoull(s, &x, 10);
	if (x == s || *x != 'x' || *s == '-')
		return false;
	*cols = strtoull(x + 1, &end, 10);
	return errno == 0 && end != x + 1 && *end == '\0' && x[1] != '-' &&
	       *rows > 0 && *cols > 0;
}

struct rand_args {
	const char *out_path;
	gm_npy m;
	uint64_t seed;
};

static int rand_parse(int argc, char **argv, struct rand_args *r)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"dtype", required_argument, NULL, 'd'},
	    {"fortran", no_argument, NULL, 'F'},
	    {"seed", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(rand_help, stdout);
			return -1;
		} else if (opt == 'o') {
			r->out_path = optarg;
		} else if (opt == 'F') {
			r->m.fortran = 1;
		} else if (opt == 'd') {
			r->m.dtype = gm_dtype_parse(optarg);
			if (r->m.dtype != GM_FP64 && r->m.dtype != GM_FP32 &&
			    r->m.dtype != GM_FP16)
				return gm_ctl_usage_error(
				    "--dtype '%s': want fp64, fp32 or fp16",
				    optarg);
		} else if (opt == 's') {
			errno = 0;
			r->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return gm_ctl_usage_error(
				    "--seed '%s': want an "
				    "unsigned integer",
				    optarg);
		} else {
			return gm_ctl_try_help();
		}
	}
	if (argc - optind != 1 ||
	    !parse_shape(argv[optind], &r->m.rows, &r->m.cols))
		return gm_ctl_usage_error(
		    "want one shape, ROWSxCOLS, e.g. 512x256");
	if (r->out_path == NULL)
		return gm_ctl_usage_error("-o FILE.npy is required");
	return 0;
}

int gm_ctl_rand(int argc, char **argv)
{
	struct timespec ts;
	struct rand_args r = {NULL, {GM_FP64, 0, 0, 0, NULL}, 0};
	size_t bytes;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	r.seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		 (uint64_t)getpid() << 32;
	if ((rc = rand_parse(argc, argv, &r)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = gm_ctl_check_output(r.out_path)) != 0)
		return rc;
	if (__builtin_mul_overflow(r.m.rows, r.m.cols, &bytes) ||
	    __builtin_mul_overflow(bytes, gm_dtype_size(r.m.dtype), &bytes) ||
	    (r.m.data = malloc(bytes)) == NULL) {
		gm_ctl_err("%" PRIu64 "x%" PRIu64 ": out of memory", r.m.rows,
			   r.m.cols);
		return EXIT_JOB;
	}
	gm_ctl_fill_random(&r.m, r.seed);
	rc = gm_ctl_write_npy(r.out_path, &r.m);
	gm_npy_free(&r.m);
	return rc;
}
