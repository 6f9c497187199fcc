// porta cpu kernels — this CPU's cache sizes, for kernels that choose between streaming data
// from memory and reading it back from cache.
#pragma once
#include <cstdint>

namespace porta::cpu {

/// Bytes of the data (or unified) cache at `level` (1, 2, 3...) of the first cpu, as the
/// kernel lists it under /sys/devices/system/cpu/cpu0/cache, else as sysconf reports it; 0
/// where neither knows. sysfs comes first: in a VM glibc's sysconf can report the host's cache
/// (an AMD EPYC VM: sysconf 256 MB of L3, sysfs 32 MB, the cache its cores share).
int64_t cache_bytes(int level);

/// The last cache level's bytes (the highest level cache_bytes knows), 0 where none is known.
int64_t last_level_cache_bytes();

/// Whether a session whose constants take `bytes` (KernelContext::session_constant_bytes)
/// keeps them in the last cache level from one run to the next: they fit in half of it (the
/// activations, and other processes, share the rest). False for 0 (eager calls) and where the
/// cache's size is unknown. PORTA_CPU_CACHED_CONSTANTS=0 or 1 forces the answer (A/B runs).
bool constants_stay_cached(int64_t bytes);
/// Forces constants_stay_cached's answer: 1 always, 0 never, -1 by the cache's size again
/// (tests run both paths of the kernels that ask).
void force_constants_cached(int mode);

}  // namespace porta::cpu
