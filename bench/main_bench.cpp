// The micro-benchmark program's entry point (bench/CMakeLists.txt links benchmark without
// benchmark_main; every *_bench.cpp only registers benchmarks).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
