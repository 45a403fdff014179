/*
 * test_peers.c - gm_peers, connections counted by peer: keys by uid on
 * ipc:// and by address on tcp:// and tls+tcp://, none for a peer not
 * known; counts up and down, an entry gone with its last connection,
 * and a table grown past its first buckets keeping every count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gm_error.h"
#include "gm_peers.h"

static void test_keys(void **state)
{
	gm_peer ipc = {.kind = GM_URL_IPC, .has_cred = 1, .uid = 1000},
		anon = {.kind = GM_URL_IPC},
		tls = {.kind = GM_URL_TLS, .addr = "10.0.0.2"};
	char key[GM_PEER_KEY];

	(void)state;
	gm_peers_key(&ipc, key);
	assert_string_equal(key, "uid 1000");
	gm_peers_key(&tls, key);
	assert_string_equal(key, "addr 10.0.0.2");
	gm_peers_key(&anon, key);
	assert_string_equal(key, "");
}

static void test_counts(void **state)
{
	enum { N = 1000 };
	char key[GM_PEER_KEY];
	gm_peers *t;

	(void)state;
	assert_int_equal(gm_peers_create(&t), GM_OK);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "addr 10.0.%d.%d", i / 256, i % 256);
		assert_int_equal(gm_peers_add(t, key), GM_OK);
		assert_int_equal(gm_peers_add(t, key), GM_OK);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "addr 10.0.%d.%d", i / 256, i % 256);
		assert_int_equal(gm_peers_count(t, key), 2);
		gm_peers_del(t, key);
		assert_int_equal(gm_peers_count(t, key), 1);
	}
	gm_peers_del(t, "addr 10.0.0.0");
	assert_int_equal(gm_peers_count(t, "addr 10.0.0.0"), 0);
	gm_peers_del(t, "addr 10.0.0.0"); /* not there: nothing */
	assert_int_equal(gm_peers_count(t, "uid 5"), 0);
	gm_peers_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
