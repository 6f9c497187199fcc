// porta cpu kernels — constant weights reordered once into a primitive's layout (see
// weights_for in dnn_layout.hpp).
#include <list>
#include <mutex>

#include "kernels/cpu/dnn_layout.hpp"

namespace porta::cpu {
namespace {

// Reordered copies of constant weights: key = storage address + view + target layout; the
// weak pointer proves the storage is still the one the entry was made from (a freed and
// reallocated block at the same address does not match). At most kCapacity entries.
struct WeightCache {
  struct Entry {
    std::string key;
    std::weak_ptr<Storage> storage;
    dnnl::memory reordered;
  };
  static constexpr size_t kCapacity = 256;
  std::mutex mutex;
  std::list<Entry> entries;  // most recent first
};

WeightCache& weight_cache() {
  static WeightCache* c = new WeightCache();
  return *c;
}

}  // namespace

// Weights in the primitive's layout: from the cache when they are a session constant.
dnnl::memory weights_for(const Tensor& w, const dnnl::memory& plain, const dnnl::memory::desc& want, bool constant) {
  if (!constant || plain.get_desc() == want) return reordered(plain, want);
  // Built like dnn_key (no streams): this runs on every call of a kernel with weights.
  std::string key = dnn_key("weights", static_cast<int64_t>(reinterpret_cast<uintptr_t>(w.storage().get())),
                             static_cast<int64_t>(w.offset()), w.shape());
  key.append(reinterpret_cast<const char*>(&want.data), sizeof(dnnl_memory_desc_t));
  WeightCache& c = weight_cache();
  {
    std::lock_guard lock(c.mutex);
    for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
      if (it->key != key) continue;
      if (it->storage.lock() == w.storage()) {
        c.entries.splice(c.entries.begin(), c.entries, it);
        return it->reordered;
      }
      c.entries.erase(it);  // the address was reused by another storage
      break;
    }
  }
  dnnl::memory made = reordered(plain, want);
  if (made.get_data_handle() == plain.get_data_handle()) return made;  // no copy was needed
  std::lock_guard lock(c.mutex);
  c.entries.push_front({key, w.storage(), made});
  if (c.entries.size() > WeightCache::kCapacity) c.entries.pop_back();
  return made;
}

}  // namespace porta::cpu
