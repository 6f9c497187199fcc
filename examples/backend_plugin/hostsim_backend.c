/* example_hostsim — the device side: one "hostsim" device whose memory is host memory that
 * this plugin owns. Each allocation carries a header (a magic number and its size) in front of
 * the bytes handed to porta, and the device accounts every byte against a capacity
 * (HOSTSIM_MEMORY_BYTES at load, default 1 GiB; hostsim_set_capacity at run time), so it can
 * run out of memory the way a real device does. Handles are plain addresses
 * (pointer_handles = 1), so porta's tensor_data gives kernels handle + offset.
 * Everything porta does with this memory goes through the functions below. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostsim.h"

#define HOSTSIM_MAGIC 0x686f737473696d21ull /* "hostsim!" */
#define HOSTSIM_HEADER 64                    /* keeps the data 64-byte aligned */

typedef struct header {
  uint64_t magic;
  uint64_t bytes;
} header;

static _Atomic uint64_t g_capacity = 1ull << 30;
static _Atomic uint64_t g_in_use;
static _Atomic uint64_t g_peak;
static _Atomic uint64_t g_live;

/* ---- what a test or tool may ask the loaded plugin (dlsym) ---------------------------------- */

PORTA_PLUGIN_EXPORT void hostsim_set_capacity(uint64_t bytes);
PORTA_PLUGIN_EXPORT void hostsim_stats(uint64_t* in_use, uint64_t* peak, uint64_t* live_allocations);

void hostsim_set_capacity(uint64_t bytes) { atomic_store(&g_capacity, bytes); }

void hostsim_stats(uint64_t* in_use, uint64_t* peak, uint64_t* live_allocations) {
  if (in_use) *in_use = atomic_load(&g_in_use);
  if (peak) *peak = atomic_load(&g_peak);
  if (live_allocations) *live_allocations = atomic_load(&g_live);
}

/* ---- the backend ------------------------------------------------------------------------------ */

static porta_status bad_index(const char* what, int32_t index) {
  char msg[128];
  snprintf(msg, sizeof msg, "[hostsim] %s: no device %d (there is one, hostsim:0)", what, (int)index);
  return hostsim_porta->set_error(PORTA_ERROR_INVALID_ARGUMENT, msg);
}

static int32_t device_count(void* user) {
  (void)user;
  return 1;
}

static porta_status availability(void* user, int32_t index, int* available, char* detail, size_t capacity) {
  (void)user;
  if (index != 0) return bad_index("availability", index);
  *available = 1;
  snprintf(detail, capacity, "hostsim host-memory device (%llu MiB)",
           (unsigned long long)(atomic_load(&g_capacity) >> 20));
  return PORTA_OK;
}

static porta_status capabilities(void* user, int32_t index, porta_backend_caps* caps) {
  (void)user;
  if (index != 0) return bad_index("capabilities", index);
  caps->name = "porta example host-memory device";
  caps->type = "simulator";
  caps->total_memory = atomic_load(&g_capacity);
  caps->max_buffer_bytes = 0;
  caps->dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  caps->subgroup_size = 1;
  caps->preference = 0; /* a simulator: "auto" never picks it */
  return PORTA_OK;
}

static porta_status allocate(void* user, int32_t index, size_t bytes, void** handle) {
  uint64_t used, capacity = atomic_load(&g_capacity);
  char* base;
  (void)user;
  if (index != 0) return bad_index("allocate", index);
  /* Reserve the bytes first, so concurrent allocations never exceed the capacity together. */
  used = atomic_load(&g_in_use);
  do {
    if (bytes > capacity || used > capacity - bytes) {
      char msg[192];
      snprintf(msg, sizeof msg, "[hostsim] %llu bytes requested, %llu of %llu in use, %llu free",
               (unsigned long long)bytes, (unsigned long long)used, (unsigned long long)capacity,
               (unsigned long long)(capacity - (used < capacity ? used : capacity)));
      return hostsim_porta->set_error(PORTA_ERROR_OUT_OF_MEMORY, msg);
    }
  } while (!atomic_compare_exchange_weak(&g_in_use, &used, used + bytes));
  base = aligned_alloc(HOSTSIM_HEADER, HOSTSIM_HEADER + ((bytes + HOSTSIM_HEADER - 1) / HOSTSIM_HEADER) * HOSTSIM_HEADER);
  if (!base) {
    atomic_fetch_sub(&g_in_use, bytes);
    return hostsim_porta->set_error(PORTA_ERROR_OUT_OF_MEMORY, "[hostsim] the host is out of memory");
  }
  ((header*)base)->magic = HOSTSIM_MAGIC;
  ((header*)base)->bytes = bytes;
  atomic_fetch_add(&g_live, 1);
  {
    uint64_t now = used + bytes, peak = atomic_load(&g_peak);
    while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now)) {
    }
  }
  *handle = base + HOSTSIM_HEADER;
  return PORTA_OK;
}

static void deallocate(void* user, int32_t index, void* handle, size_t bytes) {
  header* h;
  (void)user;
  (void)index;
  if (!handle) return;
  h = (header*)((char*)handle - HOSTSIM_HEADER);
  if (h->magic != HOSTSIM_MAGIC || h->bytes != bytes) {
    /* Not ours, or freed with another size: porta broke the contract. Say so, do not free. */
    fprintf(stderr, "hostsim: deallocate of a bad handle %p (%zu bytes)\n", handle, bytes);
    return;
  }
  h->magic = 0;
  atomic_fetch_sub(&g_in_use, h->bytes);
  atomic_fetch_sub(&g_live, 1);
  free(h);
}

static porta_status copy_from_host(void* user, int32_t index, void* dst, size_t dst_offset, const void* src,
                                   size_t bytes) {
  (void)user;
  if (index != 0) return bad_index("copy_from_host", index);
  if (bytes) memcpy((char*)dst + dst_offset, src, bytes);
  return PORTA_OK;
}

static porta_status copy_to_host(void* user, int32_t index, void* dst, const void* src, size_t src_offset,
                                 size_t bytes) {
  (void)user;
  if (index != 0) return bad_index("copy_to_host", index);
  if (bytes) memcpy(dst, (const char*)src + src_offset, bytes);
  return PORTA_OK;
}

static porta_status copy_on_device(void* user, int32_t index, void* dst, size_t dst_offset, const void* src,
                                   size_t src_offset, size_t bytes) {
  (void)user;
  if (index != 0) return bad_index("copy_on_device", index);
  if (bytes) memmove((char*)dst + dst_offset, (const char*)src + src_offset, bytes);
  return PORTA_OK;
}

static porta_status synchronize(void* user, int32_t index) {
  (void)user;
  return index == 0 ? PORTA_OK : bad_index("synchronize", index); /* work runs synchronously */
}

porta_status hostsim_register_backend(void) {
  porta_backend_def def;
  const char* env = getenv("HOSTSIM_MEMORY_BYTES");
  if (env && *env) atomic_store(&g_capacity, strtoull(env, NULL, 10));
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.name = "hostsim";
  def.pointer_handles = 1;
  def.device_count = device_count;
  def.availability = availability;
  def.capabilities = capabilities;
  def.allocate = allocate;
  def.deallocate = deallocate;
  def.copy_from_host = copy_from_host;
  def.copy_to_host = copy_to_host;
  def.copy_on_device = copy_on_device;
  def.synchronize = synchronize;
  return hostsim_porta->register_backend(&def);
}

/* ---- the plugin's entry point ---------------------------------------------------------------- */

const porta_plugin_api* hostsim_porta;

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info);

porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info) {
  porta_status s;
  if (porta_plugin_begin(api, info, "example_hostsim") != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;
  hostsim_porta = api;
  /* The kind must exist before kernels name it. */
  if ((s = hostsim_register_backend()) != PORTA_OK) return s;
  return hostsim_register_kernels();
}
