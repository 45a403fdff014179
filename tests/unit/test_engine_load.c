/*
 * test_engine_load.c - the loader of the CUDA engine's plugin
 * (gpu/gm_engine_load.c): where it looks, what it says when the plugin
 * or a library it needs is missing, and that it refuses a plugin of
 * another gemmd (plugin_stale.c) before calling it. The loader opens the
 * plugin once per process, so each case runs in a child of its own,
 * with $GEMMD_CUDA_PLUGIN as the case sets it, and sends back what
 * gm_engine_cuda_probe and gm_engine_cuda_open said. Paths of the
 * plugins come from the build: CUDA_PLUGIN (the real one, in a build
 * with CUDA) and STALE_DIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gm_build.h"
#include "gm_engine_plugin.h"
#include "gm_error.h"

#define MSG 2048

/* What one child saw. */
struct seen {
	int count;
	int open_rv;
	char probe[MSG];
	char open[MSG];
};

static void child(const char *env, int fd)
{
	gm_engine_config cfg = {.kind = GM_ENGINE_CUDA, .pool_bytes = 1 << 20};
	struct seen s;
	gm_engine *e;

	memset(&s, 0, sizeof(s));
	if (env != NULL)
		setenv("GEMMD_CUDA_PLUGIN", env, 1);
	else
		unsetenv("GEMMD_CUDA_PLUGIN");
	s.count = gm_engine_cuda_probe(s.probe, sizeof(s.probe));
	/* Opening a real engine needs a device: only where there is none. */
	if (s.count == 0) {
		s.open_rv =
		    gm_engine_cuda_open(&cfg, NULL, NULL, &e, s.open, MSG);
		if (e != NULL)
			s.open_rv = -1;
	}
	_exit(write(fd, &s, sizeof(s)) == (ssize_t)sizeof(s) ? 0 : 1);
}

/* Runs the loader in a child with $GEMMD_CUDA_PLUGIN set to env (NULL:
 * unset); the child must exit 0 (a stale plugin's table aborts). */
static void run(const char *env, struct seen *s)
{
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		child(env, fds[1]);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], s, sizeof(*s)), (ssize_t)sizeof(*s));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static char *stale(const char *name)
{
	static char path[1024];

	snprintf(path, sizeof(path), "%s/%s", getenv("STALE_DIR"), name);
	return path;
}

/* A refused plugin: no device, both calls say why, exactly. */
static void expect_refused(const char *env, const char *why)
{
	char want[MSG];
	struct seen s;

	run(env, &s);
	snprintf(want, sizeof(want), "cannot load the CUDA engine: %s", why);
	assert_int_equal(s.count, 0);
	assert_string_equal(s.probe, want);
	assert_int_equal(s.open_rv, GM_ENODEV);
	assert_string_equal(s.open, want);
}

static void skip_without_cuda(void)
{
	if (!GEMMD_HAVE_CUDA)
		skip();
}

/* Each plugin the loader must refuse: one not there, one that needs a
 * library the loader cannot find (named, as the real one is when
 * libcudart is hidden), one without the entry symbol, and stale ones of
 * another interface, layout or version (plugin_stale.c). */
static void test_refused(void **state)
{
	char why[MSG];

	skip_without_cuda();
	expect_refused("/nonexistent/gemmd-cuda.so",
		       "/nonexistent/gemmd-cuda.so: cannot open shared object "
		       "file: No such file or directory");
	expect_refused(stale("plugin_needs_missing.so"),
		       "libgm_no_such_library.so: cannot open shared object "
		       "file: No such file or directory");
	snprintf(why, sizeof(why), "%s: undefined symbol: %s",
		 stale("plugin_no_entry.so"), GM_ENGINE_PLUGIN_SYMBOL);
	expect_refused(stale("plugin_no_entry.so"), why);
	snprintf(why, sizeof(why),
		 "%s: a stale plugin (interface %u; this gemmd's is %u)",
		 stale("plugin_stale_abi.so"), GM_ENGINE_PLUGIN_ABI + 1,
		 GM_ENGINE_PLUGIN_ABI);
	expect_refused(stale("plugin_stale_abi.so"), why);
	snprintf(why, sizeof(why),
		 "%s: a stale plugin (gemmd %s, layout %#llx; this gemmd is "
		 "%s, layout %#llx)",
		 stale("plugin_stale_layout.so"), GEMMD_VERSION,
		 (unsigned long long)GM_ENGINE_PLUGIN_LAYOUT + 1, GEMMD_VERSION,
		 (unsigned long long)GM_ENGINE_PLUGIN_LAYOUT);
	expect_refused(stale("plugin_stale_layout.so"), why);
	snprintf(why, sizeof(why),
		 "%s: a stale plugin (gemmd 0.0.1-old, layout %#llx; this "
		 "gemmd is %s, layout %#llx)",
		 stale("plugin_stale_version.so"),
		 (unsigned long long)GM_ENGINE_PLUGIN_LAYOUT, GEMMD_VERSION,
		 (unsigned long long)GM_ENGINE_PLUGIN_LAYOUT);
	expect_refused(stale("plugin_stale_version.so"), why);
}

/* Run from the build tree, with the variable unset or empty, the loader
 * takes the build tree's plugin: it loads, and says it used it (with
 * CUDA's own reason where there is no device). */
static void test_build_tree(void **state)
{
	const char *envs[] = {NULL, ""};
	const char *built = getenv("CUDA_PLUGIN");
	struct seen s;
	size_t i;

	skip_without_cuda();
	for (i = 0; i < 2; i++) {
		run(envs[i], &s);
		assert_null(strstr(s.probe, "cannot load"));
		assert_non_null(strstr(s.probe, built));
		if (s.count == 0) {
			assert_int_equal(s.open_rv, GM_ENODEV);
			assert_null(strstr(s.open, "cannot load"));
		}
	}
}

static void test_not_built(void **state)
{
	struct seen s;

	if (GEMMD_HAVE_CUDA)
		skip();
	run("/nonexistent/gemmd-cuda.so", &s);
	assert_int_equal(s.count, 0);
	assert_string_equal(s.probe, "this gemmd was built without CUDA");
	assert_int_equal(s.open_rv, GM_ENODEV);
	assert_string_equal(s.open, "this gemmd was built without CUDA");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_build_tree),
	    cmocka_unit_test(test_not_built),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
