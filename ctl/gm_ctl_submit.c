/*
 * gm_ctl_submit.c - gemmctl submit: one job from .npy files (or stdin).
 * Checks that the result can be written, reads A, B and C, takes M, N
 * and K from their shapes, converts them to A's order and the job's
 * dtype, asks the daemon whether its engine runs that dtype (refused
 * here, as the daemon would, before the operands are sent), runs the job
 * (through a shared-memory region over ipc:// when it can) or queues it
 * detached, prints its timings (text or JSON),
 * writes the result and, with --verify, checks it (gm_verify.h).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_ctl.h"
#include "gm_npy.h"
#include "gm_proto.h"
#include "gm_verify.h"

struct submit_args {
	const char *a_path, *b_path, *c_path, *out_path;
	struct gm_ctl_conn conn;
	gemmd_job job; /* flags, scalars and dtype; the rest filled later */
	gemmd_submit_opts opts;
	bool verify, dtype_set, detach;
};

static const char submit_help[] =
    "Usage: gemmctl submit A.npy B.npy -o OUT.npy [options]\n"
    "       gemmctl submit A.npy B.npy --detach [options]\n"
    "Compute OUT = alpha * op(A) * op(B) + beta * C on the daemon.\n"
    "\n"
    "M and K come from A's shape (K x M with --transa), N from B's (N x K\n"
    "with --transb). A C-order A makes a row-major job, a Fortran-order A\n"
    "a column-major one; B and C are converted to A's order. Inputs are\n"
    "float64, float32 or float16 .npy files, converted to the job's dtype\n"
    "(fp16, bf16: round to nearest even); one of them may be '-', stdin.\n"
    "fp32, tf32, fp16 and bf16 results are written as float32.\n"
    "Prints the daemon's timings and the rate of the kernel alone.\n"
    "\n"
    "  -o, --output FILE   write the result here (required), or to stdout\n"
    "                      with '-o -' (the report then goes to stderr);\n"
    "                      checked to be writable before the job is sent\n"
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
    "                      socket; by default the library stages them\n"
    "                      through a shared-memory region when the\n"
    "                      daemon takes regions\n" CONN_HELP;

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
		if (!gm_ctl_parse_double(optarg, &j->alpha))
			return gm_ctl_usage_error(
			    "--alpha '%s': not a finite number", optarg);
		break;
	case 'b':
		if (!gm_ctl_parse_double(optarg, &j->beta))
			return gm_ctl_usage_error(
			    "--beta '%s': not a finite number", optarg);
		break;
	case 'A':
		j->trans_a = 1;
		break;
	case 'B':
		j->trans_b = 1;
		break;
	case 'd':
		if ((j->dtype = gm_dtype_parse(optarg)) == 0)
			return gm_ctl_usage_error(
			    "--dtype '%s': want fp64, fp32, "
			    "tf32, fp16 or bf16",
			    optarg);
		s->dtype_set = true;
		break;
	case 'k':
		if ((j->kernel = parse_kernel(optarg)) < 0)
			return gm_ctl_usage_error(
			    "--kernel '%s': want default, cublas "
			    "or tiled",
			    optarg);
		break;
	case 'p':
		if (!gm_ctl_parse_long(optarg, 0, GEMMD_PRIORITY_MAX, &v))
			return gm_ctl_usage_error("--priority '%s': want 0..%d",
						  optarg, GEMMD_PRIORITY_MAX);
		s->opts.priority = (int)v;
		break;
	case 'D':
		if (!gm_ctl_parse_long(optarg, 1, UINT32_MAX, &v))
			return gm_ctl_usage_error(
			    "--deadline '%s': want milliseconds "
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
		s->conn.tls.flags |= GEMMD_OPEN_NO_SHM;
		break;
	case 'h':
		fputs(submit_help, stdout);
		return -1;
	default:
		if (!gm_ctl_conn_opt(&s->conn, opt, &rc))
			return gm_ctl_try_help();
	}
	return rc;
}

/* How many of the inputs are stdin. */
static int stdin_uses(const struct submit_args *s)
{
	const char *in[] = {s->a_path, s->b_path, s->c_path};
	int i, n = 0;

	for (i = 0; i < 3; i++)
		n += in[i] != NULL && strcmp(in[i], GM_CTL_STDIO) == 0;
	return n;
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
			return gm_ctl_try_help();
		if ((rc = submit_opt(s, opt)) != 0)
			return rc;
	}
	if (argc - optind != 2)
		return gm_ctl_usage_error(
		    "want two inputs, A.npy and B.npy; got %d", argc - optind);
	if (s->detach && (s->out_path != NULL || s->verify))
		return gm_ctl_usage_error(
		    "--detach takes neither -o nor --verify: "
		    "'gemmctl wait ID -o OUT.npy' gets the "
		    "result");
	if (s->out_path == NULL && !s->detach)
		return gm_ctl_usage_error("-o OUT.npy is required");
	s->a_path = argv[optind];
	s->b_path = argv[optind + 1];
	if (stdin_uses(s) > 1)
		return gm_ctl_usage_error("only one input can be '-', stdin");
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

static int check_dim(const char *what, uint64_t v, uint32_t *out)
{
	if (v == 0 || v > GEMMD_MAX_DIM) {
		return gm_ctl_fail("shape", GM_EDIM, EXIT_USAGE,
				   "%s = %" PRIu64 ": must be 1..%u", what, v,
				   GEMMD_MAX_DIM);
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

	if (k != kb)
		return gm_ctl_fail("shape", GM_EINVAL, EXIT_USAGE,
				   "inner dimensions differ: op(A) is %" PRIu64
				   "x%" PRIu64 ", op(B) is %" PRIu64 "x%" PRIu64
				   " (K %" PRIu64 " vs %" PRIu64 ")",
				   m, k, kb, n, k, kb);
	if (o->c.data != NULL && (o->c.rows != m || o->c.cols != n))
		return gm_ctl_fail("shape", GM_EINVAL, EXIT_USAGE,
				   "C is %" PRIu64 "x%" PRIu64
				   ", op(A)*op(B) is %" PRIu64 "x%" PRIu64,
				   o->c.rows, o->c.cols, m, n);
	if ((rc = check_dim("M", m, &j->m)) ||
	    (rc = check_dim("N", n, &j->n)) || (rc = check_dim("K", k, &j->k)))
		return rc;
	return 0;
}

/* What is sent for m: its own data when those bytes already are the
 * job's dtype (tf32 is fp32 data), else a converted copy in *copy. */
static int as_sent(const gm_npy *m, int dtype, void **copy, const void **sent)
{
	bool same =
	    m->dtype == dtype || (m->dtype == GM_FP32 && dtype == GM_TF32);

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
	    (j->out = o->out = malloc(out_bytes)) == NULL)
		return gm_ctl_fail("pack", GM_ENOMEM, EXIT_JOB,
				   "out of memory");
	return 0;
}

static int load_operands(const struct submit_args *s, struct operands *o,
			 gemmd_job *j)
{
	int rc;

	if ((rc = gm_ctl_read_npy(s->a_path, &o->a)) ||
	    (rc = gm_ctl_read_npy(s->b_path, &o->b)) ||
	    (s->c_path && (rc = gm_ctl_read_npy(s->c_path, &o->c))))
		return rc;
	if (!s->dtype_set)
		j->dtype = o->a.dtype;
	if ((rc = job_shape(o, j)) != 0)
		return rc;
	return pack_operands(o, j);
}

static int run_job(const struct submit_args *s, gemmd_job *j)
{
	int rc, rv, timeout_ms = s->conn.timeout_ms;
	gemmd_client *cl;

	if ((rc = gm_ctl_connect(&s->conn, &cl)) != 0)
		return rc;
	if ((rc = gm_ctl_check_dtype(cl, j->dtype, &timeout_ms)) != 0) {
		gemmd_close(cl);
		return rc;
	}
	rv = gemmd_submit(cl, j, 1, &s->opts, timeout_ms);
	gemmd_close(cl);
	if (rv == GM_OK && j->status == GM_OK)
		return 0;
	if (rv == GM_OK)
		rv = j->status;
	return gm_ctl_failed("job", 0, rv, j->message);
}

/* Queues j detached and prints its id. */
static int run_detached(const struct submit_args *s, gemmd_job *j)
{
	int rc, rv, timeout_ms = s->conn.timeout_ms;
	gemmd_client *cl;
	uint64_t id;

	if ((rc = gm_ctl_connect(&s->conn, &cl)) != 0)
		return rc;
	if ((rc = gm_ctl_check_dtype(cl, j->dtype, &timeout_ms)) != 0) {
		gemmd_close(cl);
		return rc;
	}
	rv = gemmd_submit_detached(cl, j, 1, &s->opts, &id, timeout_ms);
	gemmd_close(cl);
	if (rv != GM_OK)
		return gm_ctl_failed("submit", 0, rv, j->message);
	if (gm_ctl_json)
		fprintf(gm_ctl_out, "{\"ok\":true,\"id\":%" PRIu64 "}\n", id);
	else
		fprintf(gm_ctl_out, "%" PRIu64 "\n", id);
	return 0;
}

/* Checks the result; says how, as a line or into doc (--json). */
static int verify(const gemmd_job *j, cJSON *doc)
{
	double rel, tol;
	bool ok;
	cJSON *v;

	if (gm_verify_job(j, &rel, &tol) != GM_OK)
		return gm_ctl_fail("verify", GM_ENOMEM, EXIT_VERIFY,
				   "verify: out of memory");
	ok = rel <= tol; /* written so that NaN fails */
	if (doc != NULL) {
		v = cJSON_AddObjectToObject(doc, "verify");
		cJSON_AddBoolToObject(v, "ok", ok);
		cJSON_AddNumberToObject(v, "rel_err", rel);
		cJSON_AddNumberToObject(v, "tol", tol);
	} else {
		fprintf(gm_ctl_out, "verify: rel_err %.1e (tol %.1e) %s\n", rel,
			tol, ok ? "ok" : "FAILED");
	}
	return ok ? 0 : EXIT_VERIFY;
}

/* After the job ran: its report, its result, and the check. */
static int finish(const struct submit_args *s, const gemmd_job *j)
{
	cJSON *doc = gm_ctl_json ? gm_ctl_job_json(j) : NULL;
	int rc;

	if (doc == NULL) {
		gm_ctl_print_timings(j);
		fflush(gm_ctl_out);
	}
	if ((rc = gm_ctl_write_result(s->out_path, j)) == 0 && s->verify)
		rc = verify(j, doc);
	if (doc != NULL && gm_ctl_failure_put()) {
		cJSON_Delete(doc);
	} else if (doc != NULL) {
		cJSON_ReplaceItemInObject(doc, "ok", cJSON_CreateBool(rc == 0));
		gm_ctl_put_json(doc);
	}
	return rc;
}

int gm_ctl_submit(int argc, char **argv)
{
	struct submit_args s = {.conn = {.timeout_ms = DEFAULT_TIMEOUT_MS},
				.opts = {GEMMD_PRIORITY_DEFAULT, 0}};
	struct operands o = {0};
	int rc;

	s.job.alpha = 1.0;
	if ((rc = submit_parse(argc, argv, &s)) != 0)
		return rc < 0 ? 0 : rc;
	if (!s.detach && (rc = gm_ctl_check_output(s.out_path)) != 0)
		return rc;
	if ((rc = load_operands(&s, &o, &s.job)) == 0 && s.detach)
		rc = run_detached(&s, &s.job);
	else if (rc == 0 && (rc = run_job(&s, &s.job)) == 0)
		rc = finish(&s, &s.job);
	operands_free(&o);
	return rc;
}
