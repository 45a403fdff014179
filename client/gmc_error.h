/*
 * gmc_error.h - private to the client library: the calling thread's last
 * error, which every file of the library sets and gemmd_last_error()
 * reads. Any thread; each has its own.
 */
#ifndef GMC_ERROR_H
#define GMC_ERROR_H

/* Longest detail kept for gemmd_last_error(), with its NUL. */
#define GMC_ERRLEN 256

/* Sets the calling thread's gemmd_last_error() and returns code. */
int gmc_error_set(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Empties the calling thread's gemmd_last_error(). */
void gmc_error_clear(void);

/* The calling thread's last error text (thread-local storage). */
const char *gmc_error_last(void);

#endif
