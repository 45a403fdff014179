/*
 * gm_pcie.h - the PCIe bound of moving a request's inputs to the GPU:
 * one host-to-device copy of the bytes from pinned memory to device 0,
 * timed by CUDA events (the fastest any engine can take them in). Built
 * with the CUDA engine only; without it the bound is not measured.
 */
#ifndef GM_PCIE_H
#define GM_PCIE_H

#include <stddef.h>
#include <stdint.h>

/* Median milliseconds of reps copies of bytes, after one untimed; -1
 * with a line in msg without CUDA or a device, or on failure. */
double gm_pcie_h2d_ms(uint64_t bytes, int reps, char *msg, size_t msglen);

#endif
