// porta fuzz — forced into kernels/cpu/custom_vmath.cpp in the PORTA_FUZZ build only. clang
// 14 does not know gcc 12's "x86-64-vN" names of __builtin_cpu_supports (and ignores
// "#pragma GCC target"), so that file takes its baseline loops when built for fuzzing.
#pragma once
#define __builtin_cpu_supports(feature) 0
