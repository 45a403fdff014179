/*
 * gemmctl.c - the command-line client of gemmd.
 *
 * Subcommands: submit (one job from .npy files, with an optional check
 * of the result against a reference computed here, or detached), ping,
 * stats, status, wait and cancel of detached jobs, drain and resume, and
 * rand (random .npy matrices, since a fresh host may have no NumPy).
 * Each subcommand parses its own options with getopt_long and has its
 * own --help. Errors go to stderr as "gemmctl: ..."; the exit status says
 * which kind of failure it was (see main_usage).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemmd.h"
#include "gm_build.h"
#include "gm_ctlshm.h"
#include "gm_npy.h"
#include "gm_proto.h"
#include "gm_statview.h"

enum {
	EXIT_JOB = 1,	 /* the job failed or the daemon refused it */
	EXIT_USAGE = 2,	 /* bad command line */
	EXIT_DAEMON = 3, /* cannot reach the daemon, timeout, transport */
	EXIT_FILE = 4,	 /* a .npy file cannot be read or written */
	EXIT_VERIFY = 5, /* --verify found the result wrong */
};

#define DEFAULT_TIMEOUT_MS 60000

static const char *cmd = "gemmctl"; /* "gemmctl submit" once known */

__attribute__((format(printf, 1, 2))) static void err(const char *fmt, ...)
{
	va_list ap;

	fputs("gemmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* After getopt has already said what was wrong. */
static int try_help(void)
{
	fprintf(stderr, "Try '%s --help'.\n", cmd);
	return EXIT_USAGE;
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
							     ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return try_help();
}

/* ---- option values ---- */

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *out >= min &&
	       *out <= max;
}

static bool parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && end != s && *end == '\0' && isfinite(*out);
}

/* Options that every subcommand talking to the daemon takes. */
struct conn {
	const char *url;
	int timeout_ms;
	gemmd_open_opts tls;
};

/* clang-format off */
#define CONN_OPTS \
	{"url", required_argument, NULL, 'U'}, \
	{"timeout", required_argument, NULL, 'T'}, \
	{"ca", required_argument, NULL, 'C'}, \
	{"cert", required_argument, NULL, 'E'}, \
	{"key", required_argument, NULL, 'K'}, \
	{"server-name", required_argument, NULL, 'N'}, \
	{"help", no_argument, NULL, 'h'}

#define CONN_HELP \
	"      --url URL       daemon address (default $GEMMD_URL, else\n" \
	"                      " GEMMD_DEFAULT_URL ")\n" \
	"      --timeout MS    give up after MS milliseconds (default 60000)\n" \
	"      --ca FILE       tls+tcp://: PEM CA that signed the daemon's\n" \
	"                      certificate (required for TLS)\n" \
	"      --cert FILE     tls+tcp://: PEM client certificate (and key)\n" \
	"      --key FILE      tls+tcp://: PEM key, if not in --cert\n" \
	"      --server-name N tls+tcp://: name the daemon's certificate must\n" \
	"                      carry (default: the URL's host)\n" \
	"  -h, --help          show this help and exit\n"
/* clang-format on */

/* Handles the options of struct conn; false for another option. */
static bool conn_opt(struct conn *c, int opt, int *rc)
{
	long v;

	if (opt == 'U') {
		c->url = optarg;
	} else if (opt == 'C') {
		c->tls.tls_ca_file = optarg;
	} else if (opt == 'E') {
		c->tls.tls_cert_file = optarg;
	} else if (opt == 'K') {
		c->tls.tls_key_file = optarg;
	} else if (opt == 'N') {
		c->tls.tls_server_name = optarg;
	} else if (opt == 'T') {
		if (parse_long(optarg, 1, INT32_MAX, &v))
			c->timeout_ms = (int)v;
		else
			*rc = usage_error("--timeout '%s': want milliseconds "
					  "> 0",
					  optarg);
	} else {
		return false;
	}
	return true;
}

/* The URL gemmd_open will dial, for messages. */
static const char *conn_url(const struct conn *c)
{
	const char *env = getenv("GEMMD_URL");

	if (c->url != NULL)
		return c->url;
	return env != NULL && *env ? env : GEMMD_DEFAULT_URL;
}

/* Exit status for a failed library call: the connection, or the job. */
static int daemon_status(int rv)
{
	return rv == GM_ETRANSPORT || rv == GM_ETIMEDOUT || rv == GM_ECANCELED
		   ? EXIT_DAEMON
		   : EXIT_JOB;
}

static int connect_to(const struct conn *c, gemmd_client **cl)
{
	int rv = gemmd_open(c->url, &c->tls, cl);

	if (rv == GM_OK)
		return 0;
	err("cannot reach the daemon: %s", gemmd_last_error());
	return rv == GM_EINVAL ? EXIT_USAGE : EXIT_DAEMON;
}

/* ---- submit ---- */

struct submit_args {
	const char *a_path, *b_path, *c_path, *out_path;
	struct conn conn;
	gemmd_job job; /* flags, scalars and dtype; the rest filled later */
	gemmd_submit_opts opts;
	bool verify, dtype_set, detach, no_shm;
};

static const char submit_help[] =
    "Usage: gemmctl submit A.npy B.npy -o OUT.npy [options]\n"
    "       gemmctl submit A.npy B.npy --detach [options]\n"
    "Compute OUT = alpha * op(A) * op(B) + beta * C on the daemon.\n"
    "\n"
    "M and K come from A's shape (K x M with --transa), N from B's (N x K\n"
    "with --transb). A C-order A makes a row-major job, a Fortran-order A\n"
    "a column-major one; B and C are converted to A's order. Inputs are\n"
    "converted to the job's dtype (fp16, bf16: round to nearest even);\n"
    "fp32, tf32, fp16 and bf16 results are written as float32.\n"
    "Prints the daemon's timings and the rate of the kernel alone.\n"
    "\n"
    "  -o, --output FILE   write the result here (required)\n"
    "      --c FILE        C input, M x N\n"
    "      --alpha X       default 1\n"
    "      --beta Y        default 0\n"
    "      --transa        op(A) = A transposed\n"
    "      --transb        op(B) = B transposed\n"
    "      --dtype T       fp64, fp32, tf32, fp16 or bf16 (default: A's)\n"
    "      --kernel K      default, cublas or tiled\n"
    "      --priority P    0 (lowest) to 3 (default 1)\n"
    "      --deadline MS   fail the job unless the daemon meets this\n"
    "                      deadline, counted from its receipt\n"
    "      --verify        compare with a long double reference computed\n"
    "                      here from the exact inputs sent (M*N*K work);\n"
    "                      exit 5 when the error is over tolerance\n"
    "      --detach        do not wait: print the job's id and exit; the\n"
    "                      daemon keeps the result for 'gemmctl wait'\n"
    "                      (no -o, no --verify)\n"
    "      --no-shm        over ipc://, send the operands through the\n"
    "                      socket; by default they go through a shared-\n"
    "                      memory region when the daemon takes one\n" CONN_HELP;

static int parse_kernel(const char *s)
{
	if (strcmp(s, "default") == 0)
		return GEMMD_KERNEL_DEFAULT;
	if (strcmp(s, "cublas") == 0)
		return GEMMD_KERNEL_CUBLAS;
	if (strcmp(s, "tiled") == 0)
		return GEMMD_KERNEL_TILED;
	return -1;
}

/* One option of submit; returns nonzero to stop with that exit status. */
static int submit_opt(struct submit_args *s, int opt)
{
	gemmd_job *j = &s->job;
	int rc = 0;
	long v;

	switch (opt) {
	case 'o':
		s->out_path = optarg;
		break;
	case 'c':
		s->c_path = optarg;
		break;
	case 'a':
		if (!parse_double(optarg, &j->alpha))
			return usage_error("--alpha '%s': not a finite number",
					   optarg);
		break;
	case 'b':
		if (!parse_double(optarg, &j->beta))
			return usage_error("--beta '%s': not a finite number",
					   optarg);
		break;
	case 'A':
		j->trans_a = 1;
		break;
	case 'B':
		j->trans_b = 1;
		break;
	case 'd':
		if ((j->dtype = gm_dtype_parse(optarg)) == 0)
			return usage_error("--dtype '%s': want fp64, fp32, "
					   "tf32, fp16 or bf16",
					   optarg);
		s->dtype_set = true;
		break;
	case 'k':
		if ((j->kernel = parse_kernel(optarg)) < 0)
			return usage_error(
			    "--kernel '%s': want default, cublas "
			    "or tiled",
			    optarg);
		break;
	case 'p':
		if (!parse_long(optarg, 0, GEMMD_PRIORITY_MAX, &v))
			return usage_error("--priority '%s': want 0..%d",
					   optarg, GEMMD_PRIORITY_MAX);
		s->opts.priority = (int)v;
		break;
	case 'D':
		if (!parse_long(optarg, 1, UINT32_MAX, &v))
			return usage_error("--deadline '%s': want milliseconds "
					   "> 0",
					   optarg);
		s->opts.deadline_ms = (uint32_t)v;
		break;
	case 'V':
		s->verify = true;
		break;
	case 'X':
		s->detach = true;
		break;
	case 'S':
		s->no_shm = true;
		break;
	case 'h':
		fputs(submit_help, stdout);
		return -1;
	default:
		if (!conn_opt(&s->conn, opt, &rc))
			return try_help();
	}
	return rc;
}

static int submit_parse(int argc, char **argv, struct submit_args *s)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"c", required_argument, NULL, 'c'},
	    {"alpha", required_argument, NULL, 'a'},
	    {"beta", required_argument, NULL, 'b'},
	    {"transa", no_argument, NULL, 'A'},
	    {"transb", no_argument, NULL, 'B'},
	    {"dtype", required_argument, NULL, 'd'},
	    {"kernel", required_argument, NULL, 'k'},
	    {"priority", required_argument, NULL, 'p'},
	    {"deadline", required_argument, NULL, 'D'},
	    {"verify", no_argument, NULL, 'V'},
	    {"detach", no_argument, NULL, 'X'},
	    {"no-shm", no_argument, NULL, 'S'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (opt == '?')
			return try_help();
		if ((rc = submit_opt(s, opt)) != 0)
			return rc;
	}
	if (argc - optind != 2)
		return usage_error("want two inputs, A.npy and B.npy; got %d",
				   argc - optind);
	if (s->detach && (s->out_path != NULL || s->verify))
		return usage_error("--detach takes neither -o nor --verify: "
				   "'gemmctl wait ID -o OUT.npy' gets the "
				   "result");
	if (s->out_path == NULL && !s->detach)
		return usage_error("-o OUT.npy is required");
	s->a_path = argv[optind];
	s->b_path = argv[optind + 1];
	return 0;
}

/* The operands as read, and the copies converted to the job's dtype
 * where the file held another. */
struct operands {
	gm_npy a, b, c;
	void *pa, *pb, *pc, *out;
};

static void operands_free(struct operands *o)
{
	gm_npy_free(&o->a);
	gm_npy_free(&o->b);
	gm_npy_free(&o->c);
	free(o->pa);
	free(o->pb);
	free(o->pc);
	free(o->out);
}

static int read_npy(const char *path, gm_npy *m)
{
	char msg[512];
	int rv;

	if ((rv = gm_npy_read(path, m, msg, sizeof(msg))) == 0)
		return 0;
	err("%s", msg);
	return rv == GM_ENOMEM ? EXIT_JOB : EXIT_FILE;
}

static int check_dim(const char *what, uint64_t v, uint32_t *out)
{
	if (v == 0 || v > GEMMD_MAX_DIM) {
		err("%s = %" PRIu64 ": must be 1..%u", what, v, GEMMD_MAX_DIM);
		return EXIT_USAGE;
	}
	*out = (uint32_t)v;
	return 0;
}

/* M, N, K from the shapes; the inner dimensions and C must agree. */
static int job_shape(const struct operands *o, gemmd_job *j)
{
	uint64_t m = j->trans_a ? o->a.cols : o->a.rows;
	uint64_t k = j->trans_a ? o->a.rows : o->a.cols;
	uint64_t kb = j->trans_b ? o->b.cols : o->b.rows;
	uint64_t n = j->trans_b ? o->b.rows : o->b.cols;
	int rc;

	if (k != kb) {
		err("inner dimensions differ: op(A) is %" PRIu64 "x%" PRIu64
		    ", op(B) is %" PRIu64 "x%" PRIu64 " (K %" PRIu64
		    " vs %" PRIu64 ")",
		    m, k, kb, n, k, kb);
		return EXIT_USAGE;
	}
	if (o->c.data != NULL && (o->c.rows != m || o->c.cols != n)) {
		err("C is %" PRIu64 "x%" PRIu64 ", op(A)*op(B) is %" PRIu64
		    "x%" PRIu64,
		    o->c.rows, o->c.cols, m, n);
		return EXIT_USAGE;
	}
	if ((rc = check_dim("M", m, &j->m)) ||
	    (rc = check_dim("N", n, &j->n)) || (rc = check_dim("K", k, &j->k)))
		return rc;
	return 0;
}

/* What is sent for m: its own data when those bytes already are the
 * job's dtype (tf32 is fp32 data), else a converted copy in *copy. */
static int as_sent(const gm_npy *m, int dtype, void **copy, const void **sent)
{
	bool same = m->dtype == GM_FP64 ? dtype == GM_FP64
					: dtype == GM_FP32 || dtype == GM_TF32;

	if (same) {
		*sent = m->data;
		return GM_OK;
	}
	if (gm_npy_pack(m, dtype, copy) != GM_OK)
		return GM_ENOMEM;
	*sent = *copy;
	return GM_OK;
}

/* B and C in A's order, everything in the job's dtype. */
static int pack_operands(struct operands *o, gemmd_job *j)
{
	bool has_c = o->c.data != NULL;
	size_t out_bytes = (size_t)j->m * j->n * gm_dtype_size(j->dtype);

	j->layout = o->a.fortran ? GEMMD_COL_MAJOR : GEMMD_ROW_MAJOR;
	if (gm_npy_reorder(&o->b, o->a.fortran) != 0 ||
	    (has_c && gm_npy_reorder(&o->c, o->a.fortran) != 0) ||
	    as_sent(&o->a, j->dtype, &o->pa, &j->a) != 0 ||
	    as_sent(&o->b, j->dtype, &o->pb, &j->b) != 0 ||
	    (has_c && as_sent(&o->c, j->dtype, &o->pc, &j->c) != 0) ||
	    (j->out = o->out = malloc(out_bytes)) == NULL) {
		err("out of memory");
		return EXIT_JOB;
	}
	return 0;
}

static int load_operands(const struct submit_args *s, struct operands *o,
			 gemmd_job *j)
{
	int rc;

	if ((rc = read_npy(s->a_path, &o->a)) ||
	    (rc = read_npy(s->b_path, &o->b)) ||
	    (s->c_path && (rc = read_npy(s->c_path, &o->c))))
		return rc;
	if (!s->dtype_set)
		j->dtype = o->a.dtype;
	if ((rc = job_shape(o, j)) != 0)
		return rc;
	return pack_operands(o, j);
}

static int run_job(const struct submit_args *s, gemmd_job *j)
{
	const char *detail;
	gemmd_client *cl;
	int rc, rv;

	if ((rc = connect_to(&s->conn, &cl)) != 0)
		return rc;
	if (!s->no_shm && gm_ctlshm_usable(conn_url(&s->conn)))
		rv = gm_ctlshm_submit(cl, j, &s->opts, s->conn.timeout_ms);
	else
		rv = gemmd_submit(cl, j, 1, &s->opts, s->conn.timeout_ms);
	gemmd_close(cl);
	if (rv == GM_OK && j->status == GM_OK)
		return 0;
	if (rv == GM_OK)
		rv = j->status;
	detail = j->message[0] ? j->message : gemmd_last_error();
	err("job failed: %s (%s)%s%s", gemmd_strerror(rv), gm_errname(rv),
	    *detail ? ": " : "", detail);
	return daemon_status(rv);
}

/* Queues j detached and prints its id. */
static int run_detached(const struct submit_args *s, gemmd_job *j)
{
	const char *detail;
	gemmd_client *cl;
	uint64_t id;
	int rc, rv;

	if ((rc = connect_to(&s->conn, &cl)) != 0)
		return rc;
	rv = gemmd_submit_detached(cl, j, 1, &s->opts, &id, s->conn.timeout_ms);
	gemmd_close(cl);
	if (rv == GM_OK) {
		printf("%" PRIu64 "\n", id);
		return 0;
	}
	detail = j->message[0] ? j->message : gemmd_last_error();
	err("submit failed: %s (%s)%s%s", gemmd_strerror(rv), gm_errname(rv),
	    *detail ? ": " : "", detail);
	return daemon_status(rv);
}

/* Milliseconds with about three significant digits, never exponents. */
static void put_ms(const char *name, double us)
{
	double ms = us / 1000.0;

	printf("  %s %.*f ms", name, ms < 10 ? 3 : ms < 100 ? 1 : 0, ms);
}

static void print_timings(const gemmd_job *j)
{
	double flops = 2.0 * j->m * j->n * j->k;
	double rate = j->t.kernel_us > 0 ? flops / j->t.kernel_us / 1e3 : 0;

	printf("ok  %" PRIu32 "x%" PRIu32 "x%" PRIu32 " %s", j->m, j->n, j->k,
	       gm_dtype_name(j->dtype));
	put_ms("queue", j->t.queue_us);
	put_ms("h2d", j->t.h2d_us);
	put_ms("kernel", j->t.kernel_us);
	put_ms("d2h", j->t.d2h_us);
	put_ms("total", j->t.total_us);
	if (rate >= 1000)
		printf("  (%.1f TFLOP/s)", rate / 1000);
	else if (rate > 0)
		printf("  (%.1f GFLOP/s)", rate);
	putchar('\n');
}

static int write_result(const char *path, const gemmd_job *j)
{
	char msg[512];
	gm_npy r;
	int rv;

	rv = gm_npy_unpack(j->out, j->dtype, j->m, j->n,
			   j->layout == GEMMD_COL_MAJOR, &r);
	if (rv != 0) {
		err("%s: %s", path, gemmd_strerror(rv));
		return EXIT_JOB;
	}
	rv = gm_npy_write(path, &r, msg, sizeof(msg));
	gm_npy_free(&r);
	if (rv != 0) {
		err("%s", msg);
		return EXIT_FILE;
	}
	return 0;
}

/* ---- verify ---- */

/* Element (i, c) of a rows x cols matrix of the job's dtype and layout. */
static double at(const gemmd_job *j, const void *buf, uint64_t rows,
		 uint64_t cols, uint64_t i, uint64_t c)
{
	uint64_t idx =
	    j->layout == GEMMD_ROW_MAJOR ? i * cols + c : c * rows + i;

	return gm_npy_wire_get(buf, j->dtype, idx);
}

/* op(A) as M x K and op(B) transposed as N x K, both row-major, so the
 * reference reads both along K. Every wire value is exact in a double. */
static int op_rows(const gemmd_job *j, double **opa, double **opbt)
{
	uint64_t m = j->m, n = j->n, k = j->k, i, p;

	*opa = malloc(m * k * sizeof(double));
	*opbt = malloc(n * k * sizeof(double));
	if (*opa == NULL || *opbt == NULL)
		return GM_ENOMEM;
	for (i = 0; i < m; i++)
		for (p = 0; p < k; p++)
			(*opa)[i * k + p] = j->trans_a
						? at(j, j->a, k, m, p, i)
						: at(j, j->a, m, k, i, p);
	for (i = 0; i < n; i++)
		for (p = 0; p < k; p++)
			(*opbt)[i * k + p] = j->trans_b
						 ? at(j, j->b, n, k, i, p)
						 : at(j, j->b, k, n, p, i);
	return GM_OK;
}

/* Sums of squares over the whole result: error, reference, and the
 * terms each reference element is summed from. */
struct sums {
	long double err, ref, terms;
};

static void reference(const gemmd_job *j, const double *opa, const double *opbt,
		      struct sums *s)
{
	uint64_t m = j->m, n = j->n, k = j->k, i, c, p;
	long double acc, sq, t, ref, d, bc;

	for (i = 0; i < m; i++) {
		for (c = 0; c < n; c++) {
			acc = sq = 0;
			for (p = 0; p < k; p++) {
				t = (long double)opa[i * k + p] *
				    opbt[c * k + p];
				acc += t;
				sq += t * t;
			}
			ref = j->alpha * acc;
			sq *= (long double)j->alpha * j->alpha;
			bc = j->c ? j->beta *
					(long double)at(j, j->c, m, n, i, c)
				  : 0;
			ref += bc;
			d = at(j, j->out, m, n, i, c) - ref;
			s->err += d * d;
			s->ref += ref * ref;
			s->terms += sq + bc * bc;
		}
	}
}

/*
 * The tolerance, for rel_err = ||out - ref||_F / ||ref||_F with ref
 * computed here in long double (its own error is negligible) from the
 * exact values sent. Rounding errors are modelled as in Higham and
 * Mary's probabilistic analysis: independent, so K of them grow like
 * sqrt(K) rather than K. Each result element is a sum of K terms
 * alpha * a * b (and beta * c); sigma = ||sqrt(sum of squared terms)||_F
 * / ||ref||_F measures how much the terms cancel: about 1 for random
 * signs, 1/sqrt(K) for same-sign data, large when the result cancels,
 * which is exactly when a GEMM's error relative to it grows. The
 * partial sums of an element are bounded by |ref| for same-sign terms
 * and by the root sum of squares for random ones, so the error of an
 * element, relative to ||ref||_F, is at most about u * (1 + sigma) per
 * unit of rounding u. Three sources:
 *  - accumulation: u_acc * sqrt(K) * (1 + sigma), with u_acc the unit
 *    roundoff of the compute precision: fp64 2^-53, else fp32 2^-24
 *    (fp16 and bf16 accumulate in fp32);
 *  - input rounding, tf32 only: the tensor cores drop 13 mantissa bits
 *    of each fp32 input, perhaps by truncation, so u_in is a whole tf32
 *    ulp, 2^-10, per input. Truncation is biased: on same-sign data the
 *    errors add up instead of cancelling, so this term is not
 *    discounted: 2 * u_in * (1 + sigma);
 *  - output rounding, once per element: u_out (fp64 2^-53, fp32 and
 *    tf32 2^-24, fp16 2^-11, bf16 2^-8).
 * The factor 2 on the first two and 4 on the last are the margin. A
 * simulation with sequential fp32 sums (worse than cuBLAS's blocked
 * ones) and truncated tf32 inputs stayed under a fifth of this for
 * random, same-sign and cancelling data, K from 16 to 16384.
 */
static double tolerance(int dtype, uint32_t k, double sigma)
{
	double u_acc = dtype == GM_FP64 ? 0x1p-53 : 0x1p-24;
	double u_in = dtype == GM_TF32 ? 0x1p-10 : 0;
	double u_out = dtype == GM_FP16	  ? 0x1p-11
		       : dtype == GM_BF16 ? 0x1p-8
					  : u_acc;

	return 2 * (2 * u_in + u_acc * sqrt(k)) * (1 + sigma) + 4 * u_out;
}

static int verify(const gemmd_job *j)
{
	struct sums s = {0, 0, 0};
	double *opa = NULL, *opbt = NULL;
	double norm, rel, sigma, tol;
	int rv = op_rows(j, &opa, &opbt);

	if (rv == GM_OK)
		reference(j, opa, opbt, &s);
	free(opa);
	free(opbt);
	if (rv != GM_OK) {
		err("verify: out of memory");
		return EXIT_VERIFY;
	}
	/* An all-zero reference leaves absolute error as the measure. */
	norm = s.ref > 0 ? sqrtl(s.ref) : 1;
	rel = (double)(sqrtl(s.err) / norm);
	sigma = (double)(sqrtl(s.terms) / norm);
	tol = tolerance(j->dtype, j->k, sigma);
	/* Written so that NaN fails. */
	if (rel <= tol) {
		printf("verify: rel_err %.1e (tol %.1e) ok\n", rel, tol);
		return 0;
	}
	printf("verify: rel_err %.1e (tol %.1e) FAILED\n", rel, tol);
	return EXIT_VERIFY;
}

static int cmd_submit(int argc, char **argv)
{
	struct submit_args s = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS},
				.opts = {GEMMD_PRIORITY_DEFAULT, 0}};
	struct operands o = {0};
	int rc;

	s.job.alpha = 1.0;
	if ((rc = submit_parse(argc, argv, &s)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = load_operands(&s, &o, &s.job)) == 0 && s.detach) {
		rc = run_detached(&s, &s.job);
	} else if (rc == 0 && (rc = run_job(&s, &s.job)) == 0) {
		print_timings(&s.job);
		fflush(stdout);
		if ((rc = write_result(s.out_path, &s.job)) == 0 && s.verify)
			rc = verify(&s.job);
	}
	operands_free(&o);
	return rc;
}

/* ---- ping ---- */

static const char ping_help[] =
    "Usage: gemmctl ping [options]\n"
    "Send the daemon a ping; print the round-trip time and the version\n"
    "and engine it reports.\n"
    "\n" CONN_HELP;

static const char stats_help[] =
    "Usage: gemmctl stats [--json] [--watch [SECONDS]] [options]\n"
    "Print the daemon's statistics as a table: requests, jobs, queue and\n"
    "pool; rates over the last 1, 10 and 60 s; latency percentiles per\n"
    "phase; one line per device (busy share, copy/compute overlap, each\n"
    "stream's busy share); jobs per dtype; errors.\n"
    "\n"
    "      --json          print the raw JSON document instead\n"
    "  -w, --watch [SECONDS]\n"
    "                      refresh every SECONDS (default 2) until\n"
    "                      interrupted, in place on a terminal; device\n"
    "                      shares are then over the last interval\n" CONN_HELP;

#define DEFAULT_WATCH_S 2.0

/* What stats takes beside the connection options. */
struct stats_opts {
	bool json;
	double watch_s; /* 0: print once */
};

/* A --watch interval: seconds, at least 0.1. */
static bool parse_watch(const char *s, double *out)
{
	return parse_double(s, out) && *out >= 0.1 && *out <= 86400;
}

/* Handles --json and --watch; false for another option. */
static bool stats_opt(struct stats_opts *so, int opt, int *rc)
{
	if (so == NULL || (opt != 'j' && opt != 'w'))
		return false;
	if (opt == 'j') {
		so->json = true;
		return true;
	}
	so->watch_s = DEFAULT_WATCH_S;
	if (optarg != NULL && !parse_watch(optarg, &so->watch_s))
		*rc = usage_error("--watch '%s': want seconds >= 0.1", optarg);
	return true;
}

/* Options of ping and stats; so is NULL for ping. */
static int conn_parse(int argc, char **argv, struct conn *c,
		      struct stats_opts *so, const char *help)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"watch", optional_argument, NULL, 'w'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc = 0;
	double v;

	while (rc == 0 && (opt = getopt_long(argc, argv, so ? "hw" : "h",
					     longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(help, stdout);
			return -1;
		}
		if (opt == '?' ||
		    (!stats_opt(so, opt, &rc) && !conn_opt(c, opt, &rc)))
			return try_help();
	}
	/* "--watch 5": getopt leaves an optional argument's separate word
	 * among the operands. */
	if (rc == 0 && so != NULL && so->watch_s > 0 && optind < argc &&
	    parse_double(argv[optind], &v)) {
		if (!parse_watch(argv[optind], &so->watch_s))
			return usage_error("--watch '%s': want seconds >= 0.1",
					   argv[optind]);
		optind++;
	}
	if (rc == 0 && optind != argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return rc;
}

static void print_field(const cJSON *doc, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
	char *text;

	if (cJSON_IsString(v)) {
		printf("  %s %s", key, v->valuestring);
	} else if (v != NULL && (text = cJSON_PrintUnformatted(v)) != NULL) {
		printf("  %s %s", key, text);
		free(text);
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Sends a ping; *reply is the document on success, *ms its time. */
static int ping(const struct conn *c, char **reply, double *ms)
{
	gemmd_client *cl;
	double t0;
	int rc, rv;

	if ((rc = connect_to(c, &cl)) != 0)
		return rc;
	t0 = now_ms();
	rv = gemmd_ping(cl, reply, c->timeout_ms);
	*ms = now_ms() - t0;
	gemmd_close(cl);
	if (rv == GM_OK)
		return 0;
	err("ping failed: %s (%s): %s", gemmd_strerror(rv), gm_errname(rv),
	    gemmd_last_error());
	return daemon_status(rv);
}

static int cmd_ping(int argc, char **argv)
{
	struct conn c = {.timeout_ms = DEFAULT_TIMEOUT_MS};
	char *reply = NULL;
	cJSON *doc;
	double ms;
	int rc;

	if ((rc = conn_parse(argc, argv, &c, NULL, ping_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = ping(&c, &reply, &ms)) != 0)
		return rc;
	doc = cJSON_Parse(reply);
	printf("pong from %s: %.3f ms", conn_url(&c), ms);
	print_field(doc, "version");
	print_field(doc, "engine");
	putchar('\n');
	cJSON_Delete(doc);
	free(reply);
	return 0;
}

/* ---- stats ---- */

/* Ctrl-C ends --watch; it is how a watch is meant to end, so with 0. */
static void on_sigint(int sig)
{
	(void)sig;
	_exit(0);
}

/* One refresh: the table (or the raw reply) into a buffer first, so
 * that a terminal gets it in one write, right after the clear. */
static void show(const char *reply, const struct stats_opts *so,
		 const cJSON *stats, const cJSON *prev, bool tty)
{
	char *frame = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&frame, &len);

	if (f == NULL)
		return;
	if (so->json || !cJSON_IsObject(stats))
		fprintf(f, "%s\n", reply);
	else
		gm_statview_print(f, stats, prev);
	fclose(f);
	if (so->watch_s > 0 && tty && !so->json)
		fputs("\033[H\033[2J", stdout); /* home, clear the screen */
	else if (so->watch_s > 0 && prev != NULL && !so->json)
		putchar('\n');
	fwrite(frame, 1, len, stdout);
	fflush(stdout);
	free(frame);
}

static void sleep_s(double s)
{
	struct timespec ts = {.tv_sec = (time_t)s,
			      .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int cmd_stats(int argc, char **argv)
{
	struct conn c = {.timeout_ms = DEFAULT_TIMEOUT_MS};
	struct stats_opts so = {false, 0};
	bool tty = isatty(STDOUT_FILENO);
	cJSON *doc, *prev = NULL;
	gemmd_client *cl;
	char *reply;
	int rc, rv;

	if ((rc = conn_parse(argc, argv, &c, &so, stats_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = connect_to(&c, &cl)) != 0)
		return rc;
	if (so.watch_s > 0)
		signal(SIGINT, on_sigint);
	for (;;) {
		if ((rv = gemmd_stats(cl, &reply, c.timeout_ms)) != GM_OK) {
			err("stats failed: %s (%s): %s", gemmd_strerror(rv),
			    gm_errname(rv), gemmd_last_error());
			rc = daemon_status(rv);
			break;
		}
		doc = cJSON_Parse(reply);
		/* {"ok":true,"stats":{...}}: the document is the inner one. */
		show(reply, &so, cJSON_GetObjectItemCaseSensitive(doc, "stats"),
		     cJSON_GetObjectItemCaseSensitive(prev, "stats"), tty);
		free(reply);
		cJSON_Delete(prev);
		prev = doc;
		if (so.watch_s <= 0)
			break;
		sleep_s(so.watch_s);
	}
	cJSON_Delete(prev);
	gemmd_close(cl);
	return rc;
}

/* ---- detached jobs: status, wait, cancel; drain, resume ---- */

/* What these subcommands take beside the connection options. */
struct job_args {
	struct conn conn;
	uint64_t id;
	const char *out_path; /* wait */
	bool json;	      /* status */
	bool idle;	      /* drain --wait */
};

enum { TAKES_ID = 1, TAKES_OUT = 2, TAKES_JSON = 4, TAKES_WAIT = 8 };

#define DRAIN_POLL_US 100000

static const char status_help[] =
    "Usage: gemmctl status ID [--json] [options]\n"
    "Show detached job ID: its state (queued, running, done, failed,\n"
    "canceled, expired), shape, priority, and once it finished its\n"
    "status and timings, and whether its result still waits for\n"
    "'gemmctl wait'. Exit 0 when the daemon knows the job, whatever its\n"
    "state; 1 when it does not (never, or no longer).\n"
    "\n"
    "      --json          print the daemon's JSON document "
    "instead\n" CONN_HELP;

static const char wait_help[] =
    "Usage: gemmctl wait ID -o OUT.npy [options]\n"
    "Wait for detached job ID to finish (up to --timeout), take its\n"
    "result from the daemon, which then no longer holds it, and write\n"
    "it as .npy; print its timings. Exit 1 when the job failed, was\n"
    "canceled, or its result expired or was already taken; 3 when it\n"
    "did not finish within --timeout (wait again); 4 when OUT.npy cannot\n"
    "be written (the result is then lost).\n"
    "\n"
    "  -o, --output FILE   write the result here (required)\n" CONN_HELP;

static const char cancel_help[] =
    "Usage: gemmctl cancel ID [options]\n"
    "Cancel detached job ID: a queued job never runs; a running one runs\n"
    "to its end but its result is dropped; a result waiting for 'gemmctl\n"
    "wait' is dropped. Prints the job's state after. Exit 1 for a job\n"
    "the daemon does not know.\n"
    "\n" CONN_HELP;

static const char drain_help[] =
    "Usage: gemmctl drain [--wait] [options]\n"
    "Drain the daemon: new jobs are refused with EDRAINING while queued\n"
    "and running jobs finish; ping, stats, status, wait and cancel go on.\n"
    "'gemmctl resume' undoes it. SIGUSR1 to gemmd drains it too.\n"
    "\n"
    "      --wait          return once no job is queued or running (exit 3\n"
    "                      if that takes longer than --timeout)\n" CONN_HELP;

static const char resume_help[] =
    "Usage: gemmctl resume [options]\n"
    "Accept jobs again after a drain. Exit 1 when the daemon is stopping.\n"
    "\n" CONN_HELP;

static bool parse_id(const char *s, uint64_t *id)
{
	char *end;

	errno = 0;
	*id = strtoull(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *s >= '0' &&
	       *s <= '9' && *id != 0;
}

/* One option of job_parse, if takes has it; false for another. */
static bool job_opt(struct job_args *a, unsigned takes, int opt)
{
	if (opt == 'o' && (takes & TAKES_OUT))
		a->out_path = optarg;
	else if (opt == 'j' && (takes & TAKES_JSON))
		a->json = true;
	else if (opt == 'W' && (takes & TAKES_WAIT))
		a->idle = true;
	else
		return false;
	return true;
}

static int job_parse(int argc, char **argv, struct job_args *a, unsigned takes,
		     const char *help)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, 'j'},
	    {"wait", no_argument, NULL, 'W'},
	    CONN_OPTS,
	    {NULL, 0, NULL, 0},
	};
	int opt, rc = 0;

	while (rc == 0 &&
	       (opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			fputs(help, stdout);
			return -1;
		}
		if (opt == '?' ||
		    (!job_opt(a, takes, opt) && !conn_opt(&a->conn, opt, &rc)))
			return opt == '?' ? try_help()
					  : usage_error("option '%s' is not "
							"one of this command's",
							argv[optind - 1]);
	}
	if (rc != 0)
		return rc;
	if ((takes & TAKES_ID) && optind == argc)
		return usage_error("want a job id");
	if ((takes & TAKES_ID) && !parse_id(argv[optind++], &a->id))
		return usage_error("job id '%s': want a positive integer",
				   argv[optind - 1]);
	if (optind != argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((takes & TAKES_OUT) && a->out_path == NULL)
		return usage_error("-o OUT.npy is required");
	return 0;
}

/* Reports a failed call about job id (0: none); the exit status. */
static int job_failed(const char *what, uint64_t id, int rv, const char *detail)
{
	if (detail == NULL || *detail == '\0')
		detail = gemmd_last_error();
	if (id != 0)
		err("%s of job %" PRIu64 " failed: %s (%s)%s%s", what, id,
		    gemmd_strerror(rv), gm_errname(rv), *detail ? ": " : "",
		    detail);
	else
		err("%s failed: %s (%s)%s%s", what, gemmd_strerror(rv),
		    gm_errname(rv), *detail ? ": " : "", detail);
	/* Here ECANCELED is the daemon's word on the job, not a client
	 * closing. */
	return rv == GM_ECANCELED ? EXIT_JOB : daemon_status(rv);
}

static void print_info(const gemmd_job_info *in)
{
	printf("%" PRIu64 "  %s  %" PRIu32 "x%" PRIu32 "x%" PRIu32
	       " %s %s  priority %d",
	       in->id, gemmd_job_state_name(in->state), in->m, in->n, in->k,
	       gm_dtype_name(in->dtype) ? gm_dtype_name(in->dtype) : "?",
	       in->layout == GEMMD_COL_MAJOR ? "col" : "row", in->priority);
	if (in->t.total_us > 0) {
		put_ms("queue", in->t.queue_us);
		put_ms("h2d", in->t.h2d_us);
		put_ms("kernel", in->t.kernel_us);
		put_ms("d2h", in->t.d2h_us);
		put_ms("total", in->t.total_us);
	}
	if (in->status != GM_OK)
		printf("  %s: %s", gm_errname(in->status), in->message);
	if (in->has_result)
		fputs("  result waiting", stdout);
	putchar('\n');
}

static int cmd_status(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_job_info info;
	gemmd_client *cl;
	char req[64], *reply = NULL;
	int rc, rv;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID | TAKES_JSON,
			    status_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = connect_to(&a.conn, &cl)) != 0)
		return rc;
	snprintf(req, sizeof(req), "{\"op\":\"status\",\"job\":%" PRIu64 "}",
		 a.id);
	rv = a.json ? gemmd_ctrl(cl, req, &reply, a.conn.timeout_ms)
		    : gemmd_job_status(cl, a.id, &info, a.conn.timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return job_failed("status", a.id, rv, NULL);
	if (a.json)
		puts(reply);
	else
		print_info(&info);
	free(reply);
	return 0;
}

static int cmd_wait(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_job j = {0};
	gemmd_job_info info;
	gemmd_client *cl;
	int rc, rv;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID | TAKES_OUT, wait_help)) !=
	    0)
		return rc < 0 ? 0 : rc;
	if ((rc = connect_to(&a.conn, &cl)) != 0)
		return rc;
	rv = gemmd_wait(cl, a.id, &j, a.conn.timeout_ms);
	/* K is not in the result; the status has it, for the rate. */
	if (rv == GM_OK && j.status == GM_OK &&
	    gemmd_job_status(cl, a.id, &info, a.conn.timeout_ms) == GM_OK)
		j.k = info.k;
	gemmd_close(cl);
	if (rv == GM_OK)
		rv = j.status;
	if (rv != GM_OK) {
		rc = job_failed("wait", a.id, rv, j.message);
	} else {
		print_timings(&j);
		fflush(stdout);
		rc = write_result(a.out_path, &j);
	}
	free(j.out);
	return rc;
}

static int cmd_cancel(int argc, char **argv)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_client *cl;
	int rc, rv, state = 0;

	if ((rc = job_parse(argc, argv, &a, TAKES_ID, cancel_help)) != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = connect_to(&a.conn, &cl)) != 0)
		return rc;
	rv = gemmd_cancel(cl, a.id, &state, a.conn.timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return job_failed("cancel", a.id, rv, NULL);
	printf("%" PRIu64 "  %s%s\n", a.id, gemmd_job_state_name(state),
	       state == GEMMD_JOB_RUNNING
		   ? ": it runs to its end, its result is dropped"
		   : "");
	return 0;
}

/* Jobs queued and running, from the stats; -1 when they cannot be read. */
static double jobs_left(gemmd_client *cl, int timeout_ms)
{
	char *reply = NULL;
	const cJSON *jobs;
	cJSON *doc;
	double n = -1;

	if (gemmd_stats(cl, &reply, timeout_ms) != GM_OK)
		return -1;
	doc = cJSON_Parse(reply);
	jobs = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(doc, "stats"), "jobs");
	if (cJSON_IsObject(jobs))
		n = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(jobs, "queued")) +
		    cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(jobs, "inflight"));
	cJSON_Delete(doc);
	free(reply);
	return n;
}

/* drain --wait: polls until nothing is queued or running. */
static int wait_idle(gemmd_client *cl, int timeout_ms)
{
	double until = now_ms() + timeout_ms, left;

	while ((left = jobs_left(cl, timeout_ms)) != 0) {
		if (left < 0 || now_ms() > until) {
			err("drain --wait: %s",
			    left < 0 ? "cannot read the daemon's stats"
				     : "jobs still queued or running at "
				       "--timeout");
			return EXIT_DAEMON;
		}
		usleep(DRAIN_POLL_US);
	}
	puts("drained: no job queued or running");
	return 0;
}

/* drain (on) and resume. */
static int drain_cmd(int argc, char **argv, bool on)
{
	struct job_args a = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS}};
	gemmd_client *cl;
	int rc, rv;

	rc = job_parse(argc, argv, &a, on ? TAKES_WAIT : 0,
		       on ? drain_help : resume_help);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = connect_to(&a.conn, &cl)) != 0)
		return rc;
	rv = on ? gemmd_drain(cl, a.conn.timeout_ms)
		: gemmd_resume(cl, a.conn.timeout_ms);
	if (rv != GM_OK)
		rc = job_failed(on ? "drain" : "resume", 0, rv, NULL);
	else if (!on)
		puts("resumed: accepting jobs");
	else if (a.idle)
		rc = wait_idle(cl, a.conn.timeout_ms);
	else
		puts("draining: refusing new jobs");
	gemmd_close(cl);
	return rc;
}

static int cmd_drain(int argc, char **argv)
{
	return drain_cmd(argc, argv, true);
}

static int cmd_resume(int argc, char **argv)
{
	return drain_cmd(argc, argv, false);
}

/* ---- rand ---- */

static const char rand_help[] =
    "Usage: gemmctl rand ROWSxCOLS -o FILE.npy [options]\n"
    "Write a matrix of uniform random values in [-1, 1).\n"
    "\n"
    "  -o, --output FILE   write it here (required)\n"
    "      --dtype T       fp64 (default) or fp32\n"
    "      --fortran       Fortran (column-major) order; default C order\n"
    "      --seed N        seed, for a repeatable matrix (default: from\n"
    "                      the clock and the process id)\n"
    "  -h, --help          show this help and exit\n";

/* splitmix64: small, fast, and good enough for test matrices. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Takes as many random bits as the dtype's mantissa holds, so that the
 * value is exact and never rounds up to 1. */
static void fill_random(gm_npy *m, uint64_t seed)
{
	uint64_t i, n = m->rows * m->cols;

	for (i = 0; i < n; i++) {
		uint64_t r = next_random(&seed);

		if (m->dtype == GM_FP64)
			((double *)m->data)[i] =
			    ldexp((double)(r >> 11), -52) - 1;
		else
			((float *)m->data)[i] =
			    ldexpf((float)(r >> 40), -23) - 1;
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
			if (r->m.dtype != GM_FP64 && r->m.dtype != GM_FP32)
				return usage_error("--dtype '%s': want fp64 or "
						   "fp32",
						   optarg);
		} else if (opt == 's') {
			errno = 0;
			r->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return usage_error("--seed '%s': want an "
						   "unsigned integer",
						   optarg);
		} else {
			return try_help();
		}
	}
	if (argc - optind != 1 ||
	    !parse_shape(argv[optind], &r->m.rows, &r->m.cols))
		return usage_error("want one shape, ROWSxCOLS, e.g. 512x256");
	if (r->out_path == NULL)
		return usage_error("-o FILE.npy is required");
	return 0;
}

static int cmd_rand(int argc, char **argv)
{
	struct timespec ts;
	struct rand_args r = {NULL, {GM_FP64, 0, 0, 0, NULL}, 0};
	char msg[512];
	size_t bytes;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	r.seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		 (uint64_t)getpid() << 32;
	if ((rc = rand_parse(argc, argv, &r)) != 0)
		return rc < 0 ? 0 : rc;
	if (__builtin_mul_overflow(r.m.rows, r.m.cols, &bytes) ||
	    __builtin_mul_overflow(bytes, r.m.dtype == GM_FP64 ? 8 : 4,
				   &bytes) ||
	    (r.m.data = malloc(bytes)) == NULL) {
		err("%" PRIu64 "x%" PRIu64 ": out of memory", r.m.rows,
		    r.m.cols);
		return EXIT_JOB;
	}
	fill_random(&r.m, r.seed);
	rc = gm_npy_write(r.out_path, &r.m, msg, sizeof(msg));
	gm_npy_free(&r.m);
	if (rc != 0) {
		err("%s", msg);
		return EXIT_FILE;
	}
	return 0;
}

/* ---- main ---- */

static const char main_help[] =
    "Usage: gemmctl COMMAND [options]\n"
    "Client of the gemmd GEMM daemon.\n"
    "\n"
    "Commands:\n"
    "  submit A.npy B.npy -o OUT.npy  compute alpha*op(A)*op(B) + beta*C\n"
    "  ping                           check that the daemon answers\n"
    "  stats                          show the daemon's statistics\n"
    "  status ID                      show a detached job's state\n"
    "  wait ID -o OUT.npy             wait for a detached job's result\n"
    "  cancel ID                      cancel a detached job\n"
    "  drain                          refuse new jobs, finish the queued\n"
    "  resume                         accept jobs again after a drain\n"
    "  rand ROWSxCOLS -o FILE.npy     write a random matrix\n"
    "'gemmctl COMMAND --help' describes each one.\n"
    "\n"
    "The daemon is at --url, else $GEMMD_URL, else\n" GEMMD_DEFAULT_URL ".\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the job failed or the daemon refused the request\n"
    "  2  usage error (options, or shapes that do not fit together)\n"
    "  3  the daemon cannot be reached, timed out or dropped the "
    "connection\n"
    "  4  a .npy file cannot be read or written\n"
    "  5  --verify found the result outside its tolerance\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
    {"submit", cmd_submit}, {"ping", cmd_ping},	    {"stats", cmd_stats},
    {"status", cmd_status}, {"wait", cmd_wait},	    {"cancel", cmd_cancel},
    {"drain", cmd_drain},   {"resume", cmd_resume}, {"rand", cmd_rand},
};

int main(int argc, char **argv)
{
	static char name[64];
	size_t i;

	if (argc < 2) {
		fputs(main_help, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(main_help, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts("gemmctl " GEMMD_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		/* getopt's own messages then name the subcommand. */
		snprintf(name, sizeof(name), "gemmctl %s", argv[1]);
		cmd = name;
		argv[1] = name;
		return commands[i].fn(argc - 1, argv + 1);
	}
	return usage_error("unknown command '%s'", argv[1]);
}
