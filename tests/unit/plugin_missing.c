/*
 * plugin_missing.c - a library that plugin_needs_missing.so needs under
 * a name (its soname) that no file has: the loader cannot find it, as it
 * cannot find libcudart where the CUDA runtime is missing.
 */
int gm_missing_stand_in(void);

int gm_missing_stand_in(void)
{
	return 0;
}
