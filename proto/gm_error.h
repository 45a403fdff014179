/*
 * gm_error.h - the one error type of gemmd.
 *
 * Every code is listed once in GM_ERRNO_MAP so that the enum, the wire
 * value and the gm_strerror() text cannot drift apart. The numeric values
 * travel on the wire (proto/PROTOCOL.md) and are an API: append, never
 * renumber.
 */
#ifndef GM_ERROR_H
#define GM_ERROR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, text) */
#define GM_ERRNO_MAP(X)                                             \
	X(OK, 0, "success")                                         \
	X(EINVAL, 1, "invalid argument")                            \
	X(EMAGIC, 2, "bad magic number")                            \
	X(EVERSION, 3, "unsupported protocol version")              \
	X(EMSGTYPE, 4, "unknown message type")                      \
	X(EDTYPE, 5, "unknown dtype")                               \
	X(EUNSUPPORTED, 6, "unsupported by this engine")            \
	X(EDIM, 7, "dimension zero or over limit")                  \
	X(EOVERFLOW, 8, "size arithmetic overflows")                \
	X(ETRUNC, 9, "truncated message")                           \
	X(ETRAILING, 10, "trailing bytes after message")            \
	X(ETOOMANY, 11, "too many jobs in one request")             \
	X(EFIELD, 12, "reserved or out-of-range field")             \
	X(ETOOBIG, 13, "larger than the configured limit")          \
	X(EBUSY, 14, "queue full, try again later")                 \
	X(ENOMEM, 15, "out of memory")                              \
	X(EGPUFAULT, 16, "GPU fault, daemon restarting")            \
	X(ESHUTDOWN, 17, "daemon shutting down")                    \
	X(ETIMEDOUT, 18, "timed out")                               \
	X(ECONFIG, 19, "bad configuration")                         \
	X(EIO, 20, "input/output error")                            \
	X(ETRANSPORT, 21, "transport error")                        \
	X(ECUDA, 22, "CUDA error")                                  \
	X(ECUBLAS, 23, "cuBLAS error")                              \
	X(ENPY, 24, "bad or unsupported .npy file")                 \
	X(EJSON, 25, "bad JSON document")                           \
	X(ECANCELED, 26, "canceled")                                \
	X(ENOTFOUND, 27, "not found")                               \
	X(EINTERNAL, 28, "internal error")                          \
	X(ENODEV, 29, "no usable device")                           \
	X(EDRAINING, 30, "daemon draining: not accepting new jobs") \
	X(EACCES, 31, "permission denied")                          \
	X(EBOUNDS, 32, "offset or length outside the region")

typedef enum gm_err {
#define GM_ERR_ENUM(name, val, text) GM_##name = val,
	GM_ERRNO_MAP(GM_ERR_ENUM)
#undef GM_ERR_ENUM
	    GM_ERR_COUNT
} gm_err;

/* Returns the static text for code, or "unknown error" for a value not in
 * GM_ERRNO_MAP. Any thread. */
const char *gm_strerror(int code);

/* Returns the symbolic name ("EBUSY") for code, or "E?" when unknown. */
const char *gm_errname(int code);

/* Room for gm_size_text's text. */
#define GM_SIZE_TEXT 24

/* n bytes as a message says them to a person: "17 bytes", "64 KiB",
 * "1.5 GiB" (in the largest unit it reaches, up to TiB; one decimal
 * unless whole, three where one would look whole: "95.999 KiB"), into
 * buf; returns buf. Any thread. */
const char *gm_size_text(uint64_t n, char buf[GM_SIZE_TEXT]);

#ifdef __cplusplus
}
#endif
#endif
