/*
 * gemmd_lib.c - what the library says of itself: its version at run
 * time, the names and texts of the error codes (proto's one table) and
 * the calling thread's last error.
 */
#include "gemmd.h"

#include "gmc_error.h"

const char *gemmd_version(void)
{
	return GEMMD_VERSION_STRING;
}

const char *gemmd_errname(int code)
{
	return gm_errname(code);
}

const char *gemmd_strerror(int code)
{
	return gm_strerror(code);
}

const char *gemmd_last_error(void)
{
	return gmc_error_last();
}
