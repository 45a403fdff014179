/*
 * gm_ctl_submit.c - gemmctl submit: one job from .npy files (or stdin).
 * Checks that the result can be written, reads A, B and C, takes M, N
 * and K from their shapes, converts them to A's order and the job's
 * dtype, asks the daemon whether its engine runs that dtype (refused
 * here, as the daemon would, before the operands are sent), runs the job
 * or queues it detached, prints its timings (text or JSON), writes the
 * result and, with --verify, checks it (gm_verify.h).
 *
 * Over ipc:// the job gets a shared-memory region of its own, sized for
 * A, B, C and the result, the operands are read straight into it
 * (gm_ctl_operands.h), and the result file is written from it.
 * Elsewhere (tcp://, regions off, a quota, --no-shm, --detach) the plain
 * path reads the files into memory of their own and the library sends
 * them (staging them through its own region over ipc://); the result
 * file is the same either way.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gm_ctl.h"
#include "gm_ctl_operands.h"
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
    "                      socket; by default they are read straight\n"
    "                      into a shared-memory region of the job's own\n"
    "                      when the daemon takes regions\n" CONN_HELP;

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

/* Whether to try a region: over ipc://, unless --no-shm. */
static bool wants_region(const struct submit_args *s)
{
	return !(s->conn.tls.flags & GEMMD_OPEN_NO_SHM) &&
	       strncmp(gm_ctl_conn_url(&s->conn), "ipc://", 6) == 0;
}

/* Loads the operands, in a region or plain, and runs the job on cl
 * (left open: a region's result is read from it afterwards). */
static int run_job(const struct submit_args *s, struct gm_ctl_operands *o,
		   gemmd_job *j, gemmd_client **cl)
{
	int rc, rv, timeout_ms = s->conn.timeout_ms;
	double t0;

	if ((rc = gm_ctl_connect(&s->conn, cl)) != 0)
		return rc;
	if ((rc = gm_ctl_check_dtype(*cl, j->dtype, &timeout_ms)) != 0)
		return rc;
	t0 = gm_ctl_now_ms();
	rc = wants_region(s)
		 ? gm_ctl_operands_region(o, *cl, j, s->verify, timeout_ms)
		 : GM_CTL_NO_REGION;
	if (rc == GM_CTL_NO_REGION) {
		gm_ctl_operands_drop_region(o, j);
		rc = gm_ctl_operands_plain(o, j);
	}
	if (rc != 0)
		return rc;
	timeout_ms -= (int)(gm_ctl_now_ms() - t0);
	rv = gemmd_submit(*cl, j, 1, &s->opts, timeout_ms > 0 ? timeout_ms : 1);
	if (rv == GM_OK && j->status == GM_OK) {
		if (o->region != NULL)
			gm_ctl_operands_view(o, j);
		return 0;
	}
	if (rv == GM_OK)
		rv = j->status;
	return gm_ctl_failed("job", 0, rv, j->message);
}

/* Queues j detached and prints its id. Its operands take the plain
 * path: the daemon refuses a detached request that names a region
 * (EUNSUPPORTED), since the region goes when this process does and the
 * result must outlast it until 'gemmctl wait'. */
static int run_detached(const struct submit_args *s, struct gm_ctl_operands *o,
			gemmd_job *j)
{
	int rc, rv, timeout_ms = s->conn.timeout_ms;
	gemmd_client *cl;
	uint64_t id;

	if ((rc = gm_ctl_operands_plain(o, j)) != 0)
		return rc;
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
	struct gm_ctl_operands o = {0};
	gemmd_client *cl = NULL;
	int rc;

	s.job.alpha = 1.0;
	if ((rc = submit_parse(argc, argv, &s)) != 0)
		return rc < 0 ? 0 : rc;
	if (!s.detach && (rc = gm_ctl_check_output(s.out_path)) != 0)
		return rc;
	if ((rc = gm_ctl_operands_open(&o, s.a_path, s.b_path, s.c_path,
				       s.dtype_set, &s.job)) == 0 &&
	    s.detach)
		rc = run_detached(&s, &o, &s.job);
	else if (rc == 0 && (rc = run_job(&s, &o, &s.job, &cl)) == 0)
		rc = finish(&s, &s.job);
	if (cl != NULL)
		gemmd_close(cl); /* and the region with it */
	gm_ctl_operands_free(&o);
	return rc;
}
