/*
 * crc32c.h — internal: the two CRC-32C implementations behind ruma_crc32c
 * (core.h), named so tests can run both on the same input.
 */
#ifndef RUMA_CORE_CRC32C_H
#define RUMA_CORE_CRC32C_H

#include <ruma/core.h>

/* ruma_crc32c_portable — slicing-by-8, on any machine. */
uint32_t ruma_crc32c_portable(uint32_t crc, const void *buf, size_t n);

/* ruma_crc32c_hardware — the SSE4.2 instruction where the CPU has it (else
 * the portable code: the result is the same). */
uint32_t ruma_crc32c_hardware(uint32_t crc, const void *buf, size_t n);

/* ruma_crc32c_hw_supported — true when this CPU has the crc32 instruction. */
bool ruma_crc32c_hw_supported(void);

#endif
