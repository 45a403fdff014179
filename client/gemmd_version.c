/* gemmd_version.c - the library's version at run time. */
#include "gemmd.h"

const char *gemmd_version(void)
{
	return GEMMD_VERSION_STRING;
}
