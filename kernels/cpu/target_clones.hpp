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
#pragma once

#if defined(__SANITIZE_THREAD__) || !defined(__x86_64__)
#define PORTA_CPU_CLONES
#else
#define PORTA_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
