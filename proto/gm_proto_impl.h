/*
 * gm_proto_impl.h - private to proto/: the little-endian byte helpers and
 * the checks of gm_proto.c that the other decoders of proto/ share.
 *
 * Every field is read and written one byte at a time, so the code depends
 * neither on the host's byte order nor on the alignment of the buffer.
 */
#ifndef GM_PROTO_IMPL_H
#define GM_PROTO_IMPL_H

#include <stdint.h>
#include <string.h>

#include "gm_proto.h"

/* ---- little-endian byte helpers ---- */

static inline void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, (uint16_t)v);
	put_u16(p + 2, (uint16_t)(v >> 16));
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

/* A double and a uint64_t share byte order on every supported host. */
static inline void put_f64(uint8_t *p, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	put_u64(p, u);
}

static inline uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get_u32(const uint8_t *p)
{
	return get_u16(p) | (uint32_t)get_u16(p + 2) << 16;
}

static inline uint64_t get_u64(const uint8_t *p)
{
	return get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static inline double get_f64(const uint8_t *p)
{
	uint64_t u = get_u64(p);
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

/* Writes s into a GM_MSG_TEXT field, NUL-padded. At most GM_MSG_TEXT - 1
 * bytes are kept so that readers in any language find a terminator, and
 * the cut backs off to a UTF-8 character boundary. */
static inline void put_text(uint8_t *p, const char *s)
{
	size_t n = strnlen(s, GM_MSG_TEXT - 1);

	while (n > 0 && s[n] != '\0' && ((uint8_t)s[n] & 0xC0) == 0x80)
		n--;
	memset(p, 0, GM_MSG_TEXT);
	memcpy(p, s, n);
}

static inline void get_text(const uint8_t *p, char out[GM_MSG_TEXT + 1])
{
	memcpy(out, p, GM_MSG_TEXT);
	out[GM_MSG_TEXT] = '\0';
}

/* Writes a failure message (when the caller gave room for one) and
 * returns code, so that checks read `return gm_proto_fail(GM_EDIM, ...)`. */
__attribute__((format(printf, 4, 5))) int
gm_proto_fail(int code, char *msg, size_t msglen, const char *fmt, ...);

/* Decodes the job header at p (48 bytes present), unchecked. */
void gm_proto_parse_job(const uint8_t *p, gm_job_desc *d);

/* What a job header at p says on its own (dtype, reserved bytes,
 * fields, dims), in PROTOCOL.md's order. */
int gm_proto_check_job_head(const uint8_t *p, const gm_limits *lim, char *msg,
			    size_t msglen);

/* GM_ETOOBIG when bytes, what a job carries in the message (what of
 * A + B + C is inline), pass lim->max_job_bytes; what names them. */
int gm_proto_check_job_bytes(uint64_t bytes, const gm_limits *lim,
			     const char *what, char *msg, size_t msglen);

/* GM_EMSGTYPE unless h is of type. */
int gm_proto_want_type(const gm_hdr *h, uint16_t type, char *msg,
		       size_t msglen);

#endif
