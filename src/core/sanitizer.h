/*
 * sanitizer.h — which sanitizer this translation unit is compiled for:
 * RUMA_ASAN is 1 under AddressSanitizer and RUMA_TSAN is 1 under
 * ThreadSanitizer, 0 otherwise.  GCC says so with __SANITIZE_ADDRESS__ /
 * __SANITIZE_THREAD__, Clang with __has_feature(address_sanitizer) /
 * __has_feature(thread_sanitizer); both are read here and nowhere else.
 * Code that tells a sanitizer about a benign race or poisons free memory
 * tests these with #if.  Internal: not installed.
 */
#ifndef RUMA_CORE_SANITIZER_H
#define RUMA_CORE_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define RUMA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUMA_ASAN 1
#endif
#endif
#ifndef RUMA_ASAN
#define RUMA_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define RUMA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RUMA_TSAN 1
#endif
#endif
#ifndef RUMA_TSAN
#define RUMA_TSAN 0
#endif

#endif
