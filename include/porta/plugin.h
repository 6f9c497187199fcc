/* porta — run-time kernel plugins.
 *
 * A plugin is a shared library exporting one function:
 *
 *   PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api,
 *                                                      porta_plugin_info* info);
 *
 * porta calls it once when the library is loaded (from PORTA_PLUGIN_PATH — colon-separated
 * files or folders of *.so, read when the registry is first used — or by porta_load_plugin /
 * porta::load_plugin). The plugin first fills `info` (its name and the PORTA_ABI_VERSION it was
 * built with; porta_plugin_begin does both) and returns PORTA_ERROR_ABI_MISMATCH without touching
 * anything else when api->abi_version differs. It then registers ops and kernels through `api`,
 * so it need not link libporta. Its registrations are kept only if it returns PORTA_OK, its
 * ABI version matches and every registration was accepted; otherwise none of them stays and
 * porta carries on without the plugin. Kernels it registers report the plugin's name as their
 * source (`porta devices --kernels`, `porta ops`).
 *
 * A plugin may also bring a whole device kind: register_backend with a porta_backend_def
 * (below) adds a kind of that name (a new id), and porta reaches the plugin's memory only
 * through the def's functions. Kernels for the new kind register as usual, naming the kind
 * in porta_kernel_def.backend_name; ops without such a kernel run as their composite on the
 * new device, or on the cpu with copies.
 *
 * Lifetime: an accepted plugin is never unloaded (dlclose is never called on it), so its
 * kernels, its backend and the memory its devices handed out stay valid until the process
 * exits; porta may free such memory during exit. A refused plugin is closed before any of
 * its registrations became visible, so no porta object refers to it.
 *
 * The first two fields of porta_plugin_api and porta_plugin_info never move, in any version.
 * Fields are appended at the end of porta_plugin_api, with a new PORTA_ABI_VERSION. Since the
 * table only grows, porta also loads plugins built for older versions back to
 * PORTA_ABI_VERSION_OLDEST: a plugin whose porta_plugin_begin refused the table (returning
 * PORTA_ERROR_ABI_MISMATCH with info->abi_version set and nothing registered, as the contract
 * above requires) has its init called once more with api->abi_version set to its version.
 */
#ifndef PORTA_PLUGIN_H
#define PORTA_PLUGIN_H

#include "porta/porta.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define PORTA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define PORTA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/** The oldest plugin ABI version this porta loads (see above). */
#define PORTA_ABI_VERSION_OLDEST 3u

typedef struct porta_plugin_info {
  uint32_t abi_version;  /**< PORTA_ABI_VERSION the plugin was built with */
  const char* name;      /**< short name, e.g. "example_swish"; must stay valid (static) */
} porta_plugin_info;

/* ---- backends from a plugin -------------------------------------------------------------- */

/** What a device of a plugin backend can do (porta_backend_def.capabilities fills it). Strings
 *  are copied by porta before the call returns. */
typedef struct porta_backend_caps {
  size_t struct_size;         /**< set by porta: sizeof(porta_backend_caps) */
  const char* name;           /**< human-readable device name */
  const char* type;           /**< "cpu", "discrete", "integrated", "accelerator", ... */
  uint64_t total_memory;      /**< bytes; 0 = unknown */
  uint64_t max_buffer_bytes;  /**< largest single allocation a kernel may use; 0 = no limit */
  uint32_t dtypes;            /**< PORTA_DTYPE_BIT set the device computes with */
  int32_t subgroup_size;      /**< 1 when the notion does not apply */
  int32_t preference;         /**< how strongly "auto" picks it: highest wins, <= 0 never */
} porta_backend_caps;

/** A device backend implemented by a plugin: every device of kind `name` is served by these
 *  functions. `index` is the device index (0 .. device_count-1). Handles are the plugin's own:
 *  porta stores and passes them back, never dereferences them. Functions returning a status
 *  report failures with porta_set_error + a non-OK status (allocate: PORTA_ERROR_OUT_OF_MEMORY
 *  when the memory is not there); porta raises them as its own errors. All are required. */
typedef struct porta_backend_def {
  size_t struct_size;          /**< sizeof(porta_backend_def) */
  const char* name;            /**< the device kind: lower-case letters, digits, '_'; not a built-in kind */
  void* user_data;             /**< passed to every function */
  int32_t pointer_handles;     /**< nonzero: handles are addresses to which byte offsets add, and
                                    porta_tensor_data returns handle + offset on this kind */
  int32_t (*device_count)(void* user_data);
  /** *available = 1 with the device's name in `detail`, or 0 with the reason (NUL-terminated,
   *  at most `capacity` bytes). */
  porta_status (*availability)(void* user_data, int32_t index, int* available, char* detail,
                               size_t capacity);
  porta_status (*capabilities)(void* user_data, int32_t index, porta_backend_caps* caps);
  /** `bytes` may be 0; the handle may then be anything deallocate accepts. */
  porta_status (*allocate)(void* user_data, int32_t index, size_t bytes, void** handle);
  void (*deallocate)(void* user_data, int32_t index, void* handle, size_t bytes);
  porta_status (*copy_from_host)(void* user_data, int32_t index, void* dst, size_t dst_offset,
                                 const void* src, size_t bytes);
  porta_status (*copy_to_host)(void* user_data, int32_t index, void* dst, const void* src,
                               size_t src_offset, size_t bytes);
  porta_status (*copy_on_device)(void* user_data, int32_t index, void* dst, size_t dst_offset,
                                 const void* src, size_t src_offset, size_t bytes);
  /** Waits for all queued work of the device. */
  porta_status (*synchronize)(void* user_data, int32_t index);
} porta_backend_def;

/** Registers a backend (from a plugin's init: staged with the plugin's other registrations).
 *  Refused with PORTA_ERROR_ALREADY_EXISTS when the kind already has a backend (a built-in
 *  kind, or another plugin's), PORTA_ERROR_INVALID_ARGUMENT for a bad name or a missing
 *  function. */
PORTA_API porta_status porta_register_backend(const porta_backend_def* backend);

/** The functions a plugin may call, by pointer (same contracts as in porta.h). */
typedef struct porta_plugin_api {
  uint32_t abi_version;  /**< the loading porta's ABI version */
  size_t struct_size;    /**< sizeof(porta_plugin_api) in the loading porta */

  porta_status (*register_op)(const porta_op_schema* schema);
  porta_status (*register_kernel)(const porta_kernel_def* kernel);
  porta_status (*set_error)(porta_status status, const char* message);

  porta_status (*kernel_num_inputs)(porta_kernel_context* ctx, size_t* count);
  porta_status (*kernel_num_outputs)(porta_kernel_context* ctx, size_t* count);
  porta_status (*kernel_input)(porta_kernel_context* ctx, size_t index, porta_tensor* tensor);
  porta_status (*kernel_output)(porta_kernel_context* ctx, size_t index, porta_tensor* tensor);
  porta_status (*kernel_attrs)(porta_kernel_context* ctx, porta_attrs* attrs);
  porta_status (*kernel_device)(porta_kernel_context* ctx, porta_device* device);

  porta_status (*tensor_rank)(porta_tensor tensor, size_t* rank);
  porta_status (*tensor_shape)(porta_tensor tensor, int64_t* dims, size_t capacity);
  porta_status (*tensor_dtype)(porta_tensor tensor, porta_dtype* dtype);
  porta_status (*tensor_nbytes)(porta_tensor tensor, size_t* bytes);
  porta_status (*tensor_data)(porta_tensor tensor, void** data);
  porta_status (*tensor_create)(porta_device device, porta_dtype dtype, const int64_t* shape,
                                size_t rank, porta_tensor* out);
  porta_status (*tensor_copy_from_host)(porta_tensor tensor, const void* src, size_t bytes);
  porta_status (*tensor_free)(porta_tensor tensor);

  porta_status (*attrs_create)(porta_attrs* out);
  porta_status (*attrs_set_int)(porta_attrs attrs, const char* name, int64_t value);
  porta_status (*attrs_set_float)(porta_attrs attrs, const char* name, double value);
  porta_status (*attrs_get_int)(porta_attrs attrs, const char* name, int64_t* value);
  porta_status (*attrs_get_float)(porta_attrs attrs, const char* name, double* value);
  porta_status (*attrs_get_ints)(porta_attrs attrs, const char* name, int64_t* values,
                                 size_t capacity, size_t* count);
  porta_status (*attrs_free)(porta_attrs attrs);

  porta_status (*infer_num_inputs)(porta_infer_context* ctx, size_t* count);
  porta_status (*infer_input)(porta_infer_context* ctx, size_t index, int* present,
                              porta_dtype* dtype, int64_t* dims, size_t capacity, size_t* rank);
  porta_status (*infer_attrs)(porta_infer_context* ctx, porta_attrs* attrs);
  porta_status (*infer_set_output)(porta_infer_context* ctx, size_t index, porta_dtype dtype,
                                   const int64_t* dims, size_t rank);

  porta_status (*builder_add)(porta_builder* builder, const char* op, const int32_t* inputs,
                              size_t num_inputs, porta_attrs attrs, int32_t* outputs,
                              size_t num_outputs);
  porta_status (*builder_constant)(porta_builder* builder, porta_tensor value, int32_t* id);
  porta_status (*builder_value)(porta_builder* builder, int32_t id, porta_dtype* dtype,
                                int64_t* dims, size_t capacity, size_t* rank);

  porta_status (*vulkan_register_shader)(const char* name, const void* spirv, size_t bytes);
  porta_status (*vulkan_dispatch)(porta_kernel_context* ctx, const porta_vulkan_dispatch_desc* desc);

  /* Since ABI version 2. */
  porta_status (*register_backend)(const porta_backend_def* backend);
  porta_status (*device_type_find)(const char* name, int32_t* type);
  porta_status (*tensor_device_handle)(porta_tensor tensor, void** handle, size_t* byte_offset);

  /* Since ABI version 3: every ONNX attribute type, and reading a tensor back. */
  porta_status (*attrs_set_string)(porta_attrs attrs, const char* name, const char* value);
  porta_status (*attrs_set_ints)(porta_attrs attrs, const char* name, const int64_t* values, size_t count);
  porta_status (*attrs_set_floats)(porta_attrs attrs, const char* name, const double* values, size_t count);
  porta_status (*attrs_set_strings)(porta_attrs attrs, const char* name, const char* const* values, size_t count);
  porta_status (*attrs_set_tensor)(porta_attrs attrs, const char* name, porta_tensor value);
  porta_status (*attrs_type)(porta_attrs attrs, const char* name, int* present, int32_t* type);
  porta_status (*attrs_get_string)(porta_attrs attrs, const char* name, const char** value);
  porta_status (*attrs_get_floats)(porta_attrs attrs, const char* name, double* values, size_t capacity,
                                   size_t* count);
  porta_status (*attrs_get_strings)(porta_attrs attrs, const char* name, const char** values, size_t capacity,
                                    size_t* count);
  porta_status (*attrs_get_tensor)(porta_attrs attrs, const char* name, porta_tensor* value);
  porta_status (*tensor_copy_to_host)(porta_tensor tensor, void* dst, size_t bytes);

  /* Since ABI version 4: GPU kernels (device addresses, the stream, scratch; see porta.h and
   * porta/gpu_plugin.hpp). */
  porta_status (*tensor_device_pointer)(porta_tensor tensor, void** pointer);
  porta_status (*kernel_stream)(porta_kernel_context* ctx, void** stream);
  porta_status (*kernel_scratch)(porta_kernel_context* ctx, size_t bytes, void** pointer);
} porta_plugin_api;

typedef porta_status (*porta_plugin_init_fn)(const porta_plugin_api* api, porta_plugin_info* info);

/** Fills `info` and says whether the loading porta speaks this plugin's ABI. A plugin's init
 *  starts with: `if (porta_plugin_begin(api, info, "name") != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;` */
static inline porta_status porta_plugin_begin(const porta_plugin_api* api, porta_plugin_info* info,
                                              const char* name) {
  info->abi_version = PORTA_ABI_VERSION;
  info->name = name;
  return api->abi_version == PORTA_ABI_VERSION && api->struct_size >= sizeof(porta_plugin_api)
             ? PORTA_OK
             : PORTA_ERROR_ABI_MISMATCH;
}

#ifdef __cplusplus
}
#endif

#endif /* PORTA_PLUGIN_H */
