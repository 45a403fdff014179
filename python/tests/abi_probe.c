/*
 * abi_probe.c - prints the layout of gemmd.h's structs as the C
 * compiler makes them, {"struct": {"size": N, "fields": {"name":
 * offset, ...}}, ...}, for test_abi.py to compare with the Python
 * package's cffi declarations.
 */
#include <stddef.h>
#include <stdio.h>

#include "gemmd.h"

#define STRUCTS(X)                                                          \
	X(gemmd_region_ref, F(region) F(offset))                            \
	X(gemmd_timings, F(queue_us) F(h2d_us) F(kernel_us) F(d2h_us)       \
			     F(total_us) F(start_seq))                      \
	X(gemmd_job,                                                        \
	  F(dtype) F(layout) F(kernel) F(trans_a) F(trans_b) F(m) F(n) F(k) \
	      F(alpha) F(beta) F(a) F(b) F(c) F(out) F(a_ref) F(b_ref)      \
		  F(c_ref) F(out_ref) F(status) F(message) F(t))            \
	X(gemmd_submit_opts, F(priority) F(deadline_ms))                    \
	X(gemmd_open_opts,                                                  \
	  F(flags) F(tls_ca_file) F(tls_cert_file) F(tls_key_file)          \
	      F(tls_server_name) F(region_socket) F(connections)            \
		  F(staging_bytes))                                         \
	X(gemmd_job_info,                                                   \
	  F(id) F(state) F(status) F(message) F(has_result) F(priority)     \
	      F(dtype) F(layout) F(m) F(n) F(k) F(t))

int main(void)
{
	const char *sep = "";

	putchar('{');
#define F(f) printf("%s\"%s\": %zu", sep2, #f, offsetof(type, f)), sep2 = ", ";
#define X(s, fields)                                                       \
	{                                                                  \
		typedef s type;                                            \
		const char *sep2 = "";                                     \
		printf("%s\"%s\": {\"size\": %zu, \"fields\": {", sep, #s, \
		       sizeof(s));                                         \
		fields printf("}}");                                       \
		sep = ", ";                                                \
	}
	STRUCTS(X)
	puts("}");
	return 0;
}
