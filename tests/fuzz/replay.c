/*
 * replay.c - main() for fuzz targets in builds without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named on the command line,
 * and on every regular file of every directory named there (in name
 * order, so a failure is reproducible). This is how `meson test` replays
 * the seed corpus in every build, sanitizers or not; libFuzzer builds
 * replay the same corpus with -runs=0 instead.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads the whole file at path into a malloc'd buffer; exact size, so
 * that ASan sees a read past the input as a heap overflow. */
static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	FILE *f;
	size_t n;

	if ((f = fopen(path, "rb")) == NULL || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	n = (size_t)st.st_size;
	buf = malloc(n != 0 ? n : 1);
	if (buf == NULL || fread(buf, 1, n, f) != n) {
		fprintf(stderr, "%s: cannot read %zu bytes\n", path, n);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int only_files(const struct dirent *e)
{
	return e->d_name[0] != '.';
}

/* Runs every file of dir; returns how many, or -1. */
static int run_dir(const char *dir)
{
	struct dirent **list;
	char path[4096];
	int n, i, ran = 0, bad = 0;

	if ((n = scandir(dir, &list, only_files, alphasort)) < 0) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		if (run_file(path) == 0)
			ran++;
		else
			bad = 1;
		free(list[i]);
	}
	free(list);
	return bad ? -1 : ran;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, n, total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? run_dir(argv[i])
					: (run_file(argv[i]) == 0 ? 1 : -1);
		if (n < 0)
			return 1;
		total += n;
	}
	if (total == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	printf("%d inputs ran without a crash\n", total);
	return 0;
}
