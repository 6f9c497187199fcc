// porta cpu kernels — host-side data derived from session-constant tensors (the recurrent
// weights LSTM and GRU repack into blocks), made once per storage and shared (contract:
// cached_derived in rnn_common.hpp). The oneDNN-layout counterpart is weights_for
// (weight_cache.cpp); this one holds any object, not a dnnl::memory.
#include <list>
#include <mutex>

#include "kernels/cpu/rnn_common.hpp"

namespace porta::cpu {
namespace {

// key = storage address + view + what; the weak pointer proves the storage is still the one
// the entry was made from (a freed and reallocated block at the same address does not match).
// Entries of freed storages are dropped whenever one is added; at most kCapacity entries.
struct DerivedCache {
  struct Entry {
    std::string key;
    std::weak_ptr<Storage> storage;
    std::shared_ptr<const void> value;
  };
  static constexpr size_t kCapacity = 64;
  std::mutex mutex;
  std::list<Entry> entries;  // most recent first
};

DerivedCache& derived_cache() {
  static DerivedCache* c = new DerivedCache();
  return *c;
}

std::string derived_key(const Tensor& w, const std::string& what) {
  std::string key = what;
  key += '|';
  key += std::to_string(reinterpret_cast<uintptr_t>(w.storage().get()));
  key += '+';
  key += std::to_string(w.offset());
  for (int64_t d : w.shape()) {
    key += ',';
    key += std::to_string(d);
  }
  return key;
}

}  // namespace

std::shared_ptr<const void> cached_derived(const Tensor& w, const std::string& what,
                                           const std::function<std::shared_ptr<const void>()>& make) {
  const std::string key = derived_key(w, what);
  DerivedCache& c = derived_cache();
  auto find = [&]() -> std::shared_ptr<const void> {
    for (auto it = c.entries.begin(); it != c.entries.end(); ++it) {
      if (it->key != key) continue;
      if (it->storage.lock() == w.storage()) {
        c.entries.splice(c.entries.begin(), c.entries, it);
        return it->value;
      }
      c.entries.erase(it);  // the address was reused by another storage
      break;
    }
    return nullptr;
  };
  {
    std::lock_guard lock(c.mutex);
    if (auto v = find()) return v;
  }
  std::shared_ptr<const void> made = make();
  std::lock_guard lock(c.mutex);
  if (auto v = find()) return v;  // another thread made it meanwhile
  c.entries.remove_if([](const DerivedCache::Entry& e) { return e.storage.expired(); });
  c.entries.push_front({key, w.storage(), made});
  if (c.entries.size() > DerivedCache::kCapacity) c.entries.pop_back();
  return made;
}

}  // namespace porta::cpu
