/*
 * fuzz_npy.c - the .npy reader on untrusted bytes, as gemmctl reads A, B
 * and C. gm_npy_read takes a path and nothing else (it checks the file
 * size before it allocates), so each input is written to a memfd and
 * read back through /proc/self/fd: a real regular file, no disk I/O.
 * A matrix that is read is then put through what gemmctl does with it:
 * reordered both ways (which must give back the same bytes) and packed
 * to every wire dtype.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "gm_error.h"
#include "gm_npy.h"
#include "gm_proto.h"

/* One memfd for the whole run, rewritten per input. */
static int input_fd(char *path, size_t len)
{
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz_npy", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static void put_input(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = input_fd(path, len);

	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
}

static void use_matrix(gm_npy *m, size_t size)
{
	uint64_t n = m->rows * m->cols;
	size_t es = gm_dtype_size(m->dtype);
	void *orig, *packed;
	int fortran = m->fortran;

	FUZZ_CHECK(m->dtype == GM_FP64 || m->dtype == GM_FP32 ||
		   m->dtype == GM_FP16);
	/* The data came from the file, so it fits in the input. */
	FUZZ_CHECK(n * es <= size);
	if ((orig = malloc(n * es + 1)) == NULL)
		return;
	memcpy(orig, m->data, n * es);
	if (gm_npy_reorder(m, !fortran) == GM_OK &&
	    gm_npy_reorder(m, fortran) == GM_OK)
		FUZZ_CHECK(memcmp(orig, m->data, n * es) == 0);
	free(orig);
	for (int dtype = GM_FP64; dtype <= GM_BF16; dtype++)
		if (gm_npy_pack(m, dtype, &packed) == GM_OK)
			free(packed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], msg[512];
	gm_npy m;
	int rv;

	put_input(data, size, path, sizeof(path));
	rv = gm_npy_read(path, &m, msg, sizeof(msg));
	if (rv != GM_OK) {
		FUZZ_CHECK(rv == GM_ENPY || rv == GM_ENOMEM);
		FUZZ_CHECK(memchr(msg, '\0', sizeof(msg)) != NULL);
		FUZZ_CHECK(m.data == NULL);
		return 0;
	}
	use_matrix(&m, size);
	gm_npy_free(&m);
	return 0;
}
