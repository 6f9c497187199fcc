// porta cpu kernels — PORTA_CPU_CLONES: a function compiled for AVX-512 (x86-64-v4), AVX2
// (x86-64-v3) and baseline x86-64, picked at load time (GCC target_clones), so the library
// runs on any x86-64 and uses wide vectors where the CPU has them.
//
// Every clone set of the library uses this one macro. Under ThreadSanitizer the clones are left
// out: the resolver of a clone with internal linkage, or whose address the library takes,
// runs while the dynamic loader relocates libporta, before TSan's runtime is initialised, and
// a TSan-instrumented resolver crashes there (porta_tests dies before main). TSan builds check
// threading, not speed, so they take the baseline code. Off x86-64 there is nothing to clone
// for. (kernels/cpu/custom_vmath.cpp picks its levels with its own dispatch instead.)
//
// A kernel with a register blocking per vector width (vector_width.hpp) compiles every width in
// every clone of a set, nine bodies of which three can run. Such a kernel may instead write one
// function per width: PORTA_CPU_V4 before the one of 64-byte vectors, PORTA_CPU_V3 before the one
// of 32, nothing before the one of 16, and calls the one vector_bytes() names. Where the clones
// are left out these are empty too (vector_bytes() is 16 there).
#pragma once

#if defined(__SANITIZE_THREAD__) || !defined(__x86_64__)
#define PORTA_CPU_CLONES
#define PORTA_CPU_V4
#define PORTA_CPU_V3
#else
#define PORTA_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define PORTA_CPU_V4 __attribute__((target("arch=x86-64-v4")))
#define PORTA_CPU_V3 __attribute__((target("arch=x86-64-v3")))
#endif
