/*
 * gemm_service.c - a C service using gemmd: many GEMMs in flight at once
 * on one connection, each completed by a callback, then checked.
 *
 * Build against the installed library and run:
 *
 *   cc gemm_service.c $(pkg-config --cflags --libs gemmd) -o gemm_service
 *   ./gemm_service [URL]          # default: $GEMMD_URL, else the system socket
 */
#include <gemmd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define JOBS 16

/* What the service waits on: the requests still out. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pending;

/* Runs on a thread of the library when a request is answered (or
 * failed); keep it short. */
static void done(void *arg, int rv)
{
	gemmd_job *job = arg;

	if (rv != GEMMD_OK)
		fprintf(stderr, "request failed: %s\n", gemmd_errname(rv));
	else if (job->status != GEMMD_OK)
		fprintf(stderr, "job failed: %s: %s\n",
			gemmd_errname(job->status), job->message);
	pthread_mutex_lock(&mu);
	pending--;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

static double *random_matrix(uint32_t rows, uint32_t cols)
{
	double *x = malloc(sizeof(double) * rows * cols);

	for (uint32_t i = 0; i < rows * cols; i++)
		x[i] = rand() / (double)RAND_MAX - 0.5;
	return x;
}

/* Whether job's result is A*B, row-major, within rounding. */
static int correct(const gemmd_job *job)
{
	const double *a = job->a, *b = job->b, *c = job->out;

	for (uint32_t i = 0; i < job->m; i++)
		for (uint32_t j = 0; j < job->n; j++) {
			double s = 0, err;

			for (uint32_t l = 0; l < job->k; l++)
				s += a[i * job->k + l] * b[l * job->n + j];
			err = s - c[i * job->n + j];
			if (err > 1e-12 * job->k || err < -1e-12 * job->k)
				return 0;
		}
	return 1;
}

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : NULL;
	gemmd_open_opts opts = {.flags = GEMMD_OPEN_LAZY};
	gemmd_job jobs[JOBS] = {0};
	gemmd_client *client;
	int rv, ok = 0;

	printf("gemmd client library %s (headers %s)\n", gemmd_version(),
	       GEMMD_VERSION_STRING);
	if ((rv = gemmd_open(url, &opts, &client)) != GEMMD_OK) {
		fprintf(stderr, "gemmd_open: %s: %s\n", gemmd_strerror(rv),
			gemmd_last_error());
		return 1;
	}
	srand(42);
	for (int i = 0; i < JOBS; i++) {
		gemmd_job *job = &jobs[i];

		job->dtype = GEMMD_FP64;
		job->layout = GEMMD_ROW_MAJOR;
		job->m = 32 + 8 * i, job->n = 24 + 4 * i, job->k = 16 + 2 * i;
		job->alpha = 1.0;
		job->a = random_matrix(job->m, job->k);
		job->b = random_matrix(job->k, job->n);
		job->out = malloc(sizeof(double) * job->m * job->n);
		pthread_mutex_lock(&mu);
		pending++;
		pthread_mutex_unlock(&mu);
		rv = gemmd_submit_async(client, job, 1, NULL, 30000, done, job);
		if (rv != GEMMD_OK) { /* done will not be called */
			fprintf(stderr, "submit: %s\n", gemmd_strerror(rv));
			pthread_mutex_lock(&mu);
			pending--;
			pthread_mutex_unlock(&mu);
		}
	}
	pthread_mutex_lock(&mu);
	while (pending > 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < JOBS; i++) {
		if (jobs[i].status == GEMMD_OK && correct(&jobs[i])) {
			ok++;
			printf("job %2d  %ux%ux%u  kernel %.3f ms  total %.3f "
			       "ms\n",
			       i, jobs[i].m, jobs[i].n, jobs[i].k,
			       jobs[i].t.kernel_us / 1e3,
			       jobs[i].t.total_us / 1e3);
		}
		free((void *)jobs[i].a), free((void *)jobs[i].b);
		free(jobs[i].out);
	}
	gemmd_close(client);
	printf("%d of %d jobs right\n", ok, JOBS);
	return ok == JOBS ? 0 : 1;
}
