/* User-space stand-in for <linux/types.h>: the unit test of dp_stream.c. */
#ifndef DP_USHIM_TYPES_H
#define DP_USHIM_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#endif
