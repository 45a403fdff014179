/*
 * test_peers.c - gm_peers, connections counted by peer: keys by uid on
 * ipc:// and by address on tcp:// and tls+tcp://, every loopback address
 * one peer and an IPv6 one counted by its /64, none for a peer not
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

/* A peer and the key it is counted under. */
static const struct key_case {
	gm_peer p;
	const char *key;
} key_cases[] = {
    {{.kind = GM_URL_IPC, .has_cred = 1, .uid = 1000}, "uid 1000"},
    {{.kind = GM_URL_IPC}, ""}, /* no credentials: not counted */
    {{.kind = GM_URL_TLS, .addr = "10.0.0.2"}, "addr 10.0.0.2"},
    {{.kind = GM_URL_TCP, .addr = "10.0.0.2"}, "addr 10.0.0.2"},
    {{.kind = GM_URL_TCP}, ""},
    /* Any local user may bind every loopback address: one peer. */
    {{.kind = GM_URL_TCP, .addr = "127.0.0.1"}, "addr loopback"},
    {{.kind = GM_URL_TCP, .addr = "127.0.0.2"}, "addr loopback"},
    {{.kind = GM_URL_TLS, .addr = "127.255.3.9"}, "addr loopback"},
    {{.kind = GM_URL_TCP, .addr = "0:0:0:0:0:0:0:1"}, "addr loopback"},
    {{.kind = GM_URL_TCP, .addr = "0:0:0:0:0:ffff:7f00:5"}, "addr loopback"},
    {{.kind = GM_URL_TCP, .addr = "0:0:0:0:0:ffff:a00:2"}, "addr 10.0.0.2"},
    {{.kind = GM_URL_TCP, .addr = "128.0.0.1"}, "addr 128.0.0.1"},
    /* One host holds an IPv6 /64 whole. */
    {{.kind = GM_URL_TCP, .addr = "2001:db8:1:2:0:0:0:5"},
     "net6 2001:db8:1:2::/64"},
    {{.kind = GM_URL_TLS, .addr = "2001:db8:1:2:ab:cd:ef:1"},
     "net6 2001:db8:1:2::/64"},
    {{.kind = GM_URL_TCP, .addr = "2001:db8:1:3:0:0:0:5"},
     "net6 2001:db8:1:3::/64"},
    {{.kind = GM_URL_TCP, .addr = "?"}, "addr ?"},
};

static void test_keys(void **state)
{
	char key[GM_PEER_KEY];

	(void)state;
	for (size_t i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
		gm_peers_key(&key_cases[i].p, key);
		if (strcmp(key, key_cases[i].key) != 0)
			fail_msg("%s: key \"%s\", want \"%s\"",
				 key_cases[i].p.addr, key, key_cases[i].key);
	}
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
