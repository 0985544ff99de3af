/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * fp_platform.h - the thin platform shim under the flexplane wire protocol.
 *
 * The protocol core (fp_wire, fp_gbn, fp_endpoint_conn, fp_emu_conn) is
 * plain C that builds unchanged in three places: the endpoint kernel module
 * (kbuild, __KERNEL__ defined), the emulator (userspace, DPDK or not) and the
 * unit tests / fuzzers. Everything it needs from its surroundings is here:
 * fixed-width integers, bool, size_t, memcpy/memset/memcmp, and byte-order
 * helpers. Nothing else: no allocation, no floating point, no locks, no
 * clocks (time is always passed in by the caller as nanoseconds), no 64-bit
 * division (so it links on 32-bit kernels without do_div()).
 */
#ifndef FP_PLATFORM_H
#define FP_PLATFORM_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/string.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#endif

#define fp_memcpy memcpy
#define fp_memset memset
#define fp_memcmp memcmp

/* "No deadline": the largest time value. */
#define FP_TIME_NEVER (~(uint64_t)0)

/* Big-endian (network order) field access, byte by byte: no alignment or
 * host byte-order assumptions. */
static inline void fp_put_u8(uint8_t *p, uint8_t v) { p[0] = v; }

static inline void fp_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void fp_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint8_t fp_get_u8(const uint8_t *p) { return p[0]; }

static inline uint16_t fp_get_be16(const uint8_t *p)
{
	return (uint16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

static inline uint32_t fp_get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* Serial-number arithmetic on 32-bit sequence numbers (RFC 1982 style):
 * a is "before" b when the signed distance from b to a is negative. */
static inline bool fp_seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline bool fp_seq_le(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}

static inline uint64_t fp_min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* a + b, saturating at FP_TIME_NEVER (so "never + x" stays never). */
static inline uint64_t fp_time_add(uint64_t a, uint64_t b)
{
	return (a > FP_TIME_NEVER - b) ? FP_TIME_NEVER : a + b;
}

#endif /* FP_PLATFORM_H */
