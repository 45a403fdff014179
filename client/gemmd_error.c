/* gemmd_error.c - the public names of the error codes (gemmd_errname);
 * the texts are gemmd_strerror's. Both read proto's one table. */
#include "gemmd.h"

const char *gemmd_errname(int code)
{
	return gm_errname(code);
}
