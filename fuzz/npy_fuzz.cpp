// porta fuzz — NumPy .npy bytes (read_npy, `porta run --input`, models' inputs.txt files):
// magic, version, header dict, dtype, shape and the size check against the bytes present.
#include <cstdint>
#include <cstring>

#include "fuzz/fuzz_setup.hpp"
#include "porta/error.hpp"
#include "porta/npy.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  porta::fuzz::limit_resources();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    porta::Tensor t = porta::parse_npy(data, size, "fuzzed npy");
    porta::fuzz::check_accepted(t);
    // An accepted array cannot hold more bytes than the file did.
    if (t.nbytes() > size) __builtin_trap();
  } catch (const porta::Error& e) {
    porta::fuzz::note_refusal(e);
  }
  return 0;
}
