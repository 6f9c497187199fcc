/* porta — the stable C ABI.
 *
 * Contracts that hold for every function declared here:
 * - Every function returns a porta_status (or a plain value where it cannot fail). On an
 *   error, porta_last_error() returns "[component] what was expected, what was got" for the
 *   calling thread until that thread's next failing call. No C++ exception crosses this ABI.
 * - Handles are opaque. porta keeps a registry of live handles, so a NULL handle, a freed
 *   (stale) handle or a handle of another kind (a model where a tensor is expected) is reported
 *   as PORTA_ERROR_INVALID_HANDLE without being dereferenced. (A freed address that the
 *   allocator hands out again for a new handle of the same kind cannot be told apart.)
 * - Sizes given with buffers are checked: a byte count that differs from the tensor's size,
 *   or a capacity too small for the answer, is PORTA_ERROR_INVALID_ARGUMENT.
 * - Output handles are written only on success (a failed call leaves them as given or NULL);
 *   each must be freed with its *_free function.
 *
 * Versioning: PORTA_ABI_VERSION changes whenever a declaration below changes incompatibly;
 * porta_abi_version() says which version the loaded library implements. Structs passed in carry
 * their own size first, so fields may be appended without a version change.
 */
#ifndef PORTA_PORTA_H
#define PORTA_PORTA_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define PORTA_API __declspec(dllimport)
#else
#define PORTA_API __attribute__((visibility("default")))
#endif

#ifndef PORTA_ABI_VERSION
/** The ABI version these declarations describe. */
#define PORTA_ABI_VERSION 4u
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, version, errors ------------------------------------------------------------ */

typedef enum porta_status {
  PORTA_OK = 0,
  PORTA_ERROR_INVALID_ARGUMENT = 1, /**< bad pointer, name, size or value */
  PORTA_ERROR_INVALID_HANDLE = 2,   /**< NULL, freed, or of another kind */
  PORTA_ERROR_SHAPE = 3,
  PORTA_ERROR_DTYPE = 4,
  PORTA_ERROR_DEVICE_MISMATCH = 5,
  PORTA_ERROR_UNSUPPORTED = 6,
  PORTA_ERROR_OUT_OF_MEMORY = 7,
  PORTA_ERROR_BACKEND_UNAVAILABLE = 8,
  PORTA_ERROR_BACKEND = 9,
  PORTA_ERROR_INVALID_MODEL = 10,
  PORTA_ERROR_ABI_MISMATCH = 11,    /**< a plugin built for another PORTA_ABI_VERSION */
  PORTA_ERROR_ALREADY_EXISTS = 12,  /**< an op or kernel of that name/backend/dtype exists */
  PORTA_ERROR_INTERNAL = 13
} porta_status;

/** The ABI version of the loaded library (compare with PORTA_ABI_VERSION). */
PORTA_API uint32_t porta_abi_version(void);
/** Library version, "0.1.0". */
PORTA_API const char* porta_version(void);
/** Message of the calling thread's last failed call ("" when none). Valid until the next
 *  porta call on this thread. */
PORTA_API const char* porta_last_error(void);
/** "PORTA_OK", "PORTA_ERROR_SHAPE", ... */
PORTA_API const char* porta_status_name(porta_status status);
/** Sets the calling thread's error message; for kernel, inference and composite callbacks,
 *  which then return a non-OK status. Returns `status`. */
PORTA_API porta_status porta_set_error(porta_status status, const char* message);

/* ---- element types and devices ---------------------------------------------------------- */

typedef enum porta_dtype {
  PORTA_F32 = 0, PORTA_F16 = 1, PORTA_BF16 = 2, PORTA_F64 = 3, PORTA_I64 = 4,
  PORTA_I32 = 5, PORTA_I8 = 6, PORTA_U8 = 7, PORTA_BOOL = 8
} porta_dtype;
/** Bit of a dtype in a dtype set (porta_kernel_def.dtypes). */
#define PORTA_DTYPE_BIT(dtype) (1u << (unsigned)(dtype))

/** The built-in device kinds. The set is open: a backend registered at run time (a plugin's,
 *  see porta/plugin.h) adds a kind with the next id, found by name with porta_device_type_find. */
typedef enum porta_device_type {
  PORTA_DEVICE_CPU = 0, PORTA_DEVICE_CUDA = 1, PORTA_DEVICE_HIP = 2, PORTA_DEVICE_VULKAN = 3
} porta_device_type;

/** A device by value: a kind and an index. */
typedef struct porta_device {
  int32_t type;  /**< a device kind id: porta_device_type or one from porta_device_type_find */
  int32_t index;
} porta_device;

/** The id of the device kind named `name` ("cpu", "vulkan", a plugin's "hostsim"); unknown
 *  names are PORTA_ERROR_INVALID_ARGUMENT with the known kinds in the message. */
PORTA_API porta_status porta_device_type_find(const char* name, int32_t* type);
/** The name of a device kind id; the string stays valid for the life of the process. */
PORTA_API porta_status porta_device_type_name(int32_t type, const char** name);

/** Every device of every built backend, available or not. `devices` may be NULL to ask for
 *  the count only; otherwise `capacity` must be at least the count. */
PORTA_API porta_status porta_device_list(porta_device* devices, size_t capacity, size_t* count);
/** Parses "cpu", "vulkan:0", "cuda:1", "<registered kind>:N", "auto". */
PORTA_API porta_status porta_device_parse(const char* text, porta_device* device);
/** Whether a device is usable; `detail` (optional, NUL-terminated, truncated to capacity)
 *  receives its name or the reason it is not. */
PORTA_API porta_status porta_device_available(porta_device device, int* available, char* detail,
                                              size_t detail_capacity);

/* ---- tensors ---------------------------------------------------------------------------- */

typedef struct porta_tensor_s* porta_tensor;

/** Uninitialised contiguous tensor on a device. */
PORTA_API porta_status porta_tensor_create(porta_device device, porta_dtype dtype,
                                           const int64_t* shape, size_t rank, porta_tensor* out);
/** Wraps caller-owned host memory (C order) without copying; `bytes` must equal the size the
 *  shape and dtype need. The caller keeps the memory alive until the tensor (and every result
 *  that aliases it) is freed. */
PORTA_API porta_status porta_tensor_wrap_host(void* data, size_t bytes, porta_dtype dtype,
                                              const int64_t* shape, size_t rank, porta_tensor* out);
/** Copies host memory into / out of the tensor (C order); `bytes` must equal its size. */
PORTA_API porta_status porta_tensor_copy_from_host(porta_tensor tensor, const void* src, size_t bytes);
PORTA_API porta_status porta_tensor_copy_to_host(porta_tensor tensor, void* dst, size_t bytes);
/** A copy on another device (or a new handle to the same data when already there). */
PORTA_API porta_status porta_tensor_to_device(porta_tensor tensor, porta_device device, porta_tensor* out);
PORTA_API porta_status porta_tensor_rank(porta_tensor tensor, size_t* rank);
/** Writes rank() dimensions; `capacity` must be at least the rank. */
PORTA_API porta_status porta_tensor_shape(porta_tensor tensor, int64_t* dims, size_t capacity);
PORTA_API porta_status porta_tensor_dtype(porta_tensor tensor, porta_dtype* dtype);
PORTA_API porta_status porta_tensor_device(porta_tensor tensor, porta_device* device);
PORTA_API porta_status porta_tensor_nbytes(porta_tensor tensor, size_t* bytes);
/** Pointer to the first element for a kernel of the tensor's backend: the host pointer on cpu;
 *  on a plugin backend whose handles are pointers (porta_backend_def.pointer_handles), its
 *  handle plus the tensor's byte offset. Other devices: PORTA_ERROR_DEVICE_MISMATCH. Inside a
 *  kernel callback this is how a cpu or plugin kernel reaches its data. */
PORTA_API porta_status porta_tensor_data(porta_tensor tensor, void** data);
/** The backend's own handle of the tensor's allocation (what its allocate returned; the host
 *  pointer on cpu) and the byte offset of the tensor's first element in it. Any device. */
PORTA_API porta_status porta_tensor_device_handle(porta_tensor tensor, void** handle, size_t* byte_offset);
/** Frees the handle (the data goes when nothing else refers to it). NULL is accepted. */
PORTA_API porta_status porta_tensor_free(porta_tensor tensor);

/* ---- attributes ------------------------------------------------------------------------- */

typedef struct porta_attrs_s* porta_attrs;

/** ONNX's attribute types (AttributeProto's INT, FLOAT, STRING, INTS, FLOATS, STRINGS, TENSOR). */
typedef enum porta_attr_type {
  PORTA_ATTR_INT = 0, PORTA_ATTR_FLOAT = 1, PORTA_ATTR_STRING = 2, PORTA_ATTR_INTS = 3,
  PORTA_ATTR_FLOATS = 4, PORTA_ATTR_STRINGS = 5, PORTA_ATTR_TENSOR = 6
} porta_attr_type;

/* An attribute list is checked against the op's schema when it is used (porta_op_call,
 * porta_builder_add): an attribute the op does not declare, or one of another type than
 * declared (an int for a float, a float for ints), is PORTA_ERROR_INVALID_ARGUMENT naming the
 * op, the attribute and what the schema expects. Setting a name again replaces its value. */
PORTA_API porta_status porta_attrs_create(porta_attrs* out);
PORTA_API porta_status porta_attrs_set_int(porta_attrs attrs, const char* name, int64_t value);
PORTA_API porta_status porta_attrs_set_float(porta_attrs attrs, const char* name, double value);
PORTA_API porta_status porta_attrs_set_string(porta_attrs attrs, const char* name, const char* value);
PORTA_API porta_status porta_attrs_set_ints(porta_attrs attrs, const char* name, const int64_t* values,
                                            size_t count);
PORTA_API porta_status porta_attrs_set_floats(porta_attrs attrs, const char* name, const double* values,
                                              size_t count);
/** `values`: `count` NUL-terminated strings, copied. */
PORTA_API porta_status porta_attrs_set_strings(porta_attrs attrs, const char* name, const char* const* values,
                                               size_t count);
/** A cpu tensor (ONNX's TENSOR attribute, e.g. ConstantOfShape's value); its data is shared,
 *  so it must not change while the attributes are in use. */
PORTA_API porta_status porta_attrs_set_tensor(porta_attrs attrs, const char* name, porta_tensor value);
/** Whether the attribute is there (*present) and its porta_attr_type (*type, -1 when absent).
 *  List attributes without a default are absent until given. */
PORTA_API porta_status porta_attrs_type(porta_attrs attrs, const char* name, int* present, int32_t* type);
/** Typed reads (an op's defaults are filled in for kernels): PORTA_ERROR_INVALID_ARGUMENT when
 *  missing or of another type. List reads write up to `capacity` values and the full count
 *  (call with capacity 0 to ask for the count). Strings stay valid while `attrs` lives. */
PORTA_API porta_status porta_attrs_get_int(porta_attrs attrs, const char* name, int64_t* value);
PORTA_API porta_status porta_attrs_get_float(porta_attrs attrs, const char* name, double* value);
PORTA_API porta_status porta_attrs_get_string(porta_attrs attrs, const char* name, const char** value);
PORTA_API porta_status porta_attrs_get_ints(porta_attrs attrs, const char* name, int64_t* values,
                                            size_t capacity, size_t* count);
PORTA_API porta_status porta_attrs_get_floats(porta_attrs attrs, const char* name, double* values,
                                              size_t capacity, size_t* count);
PORTA_API porta_status porta_attrs_get_strings(porta_attrs attrs, const char* name, const char** values,
                                               size_t capacity, size_t* count);
/** A new handle to the tensor (free it with porta_tensor_free; its data stays shared). */
PORTA_API porta_status porta_attrs_get_tensor(porta_attrs attrs, const char* name, porta_tensor* value);
/** NULL is accepted; attribute handles lent to callbacks cannot be freed. */
PORTA_API porta_status porta_attrs_free(porta_attrs attrs);

/* ---- one op ------------------------------------------------------------------------------ */

/** Runs one op on its inputs' device. `op` is "domain::Name", or a plain "Name": ONNX's
 *  default domain, then porta's own (ai.porta), then the only domain with an op of that name
 *  (an error naming the candidates when several have one). A NULL entry in `inputs` is an absent optional input;
 *  `attrs` may be NULL. `num_outputs` must be a count the op can produce; each output is a new
 *  tensor handle. */
PORTA_API porta_status porta_op_call(const char* op, const porta_tensor* inputs, size_t num_inputs,
                                     porta_attrs attrs, porta_tensor* outputs, size_t num_outputs);

/* ---- models ----------------------------------------------------------------------------- */

typedef struct porta_model_s* porta_model;
typedef struct porta_session_s* porta_session;

PORTA_API porta_status porta_model_load(const char* path, porta_model* out);
/** An in-memory ONNX model (external data refused). */
PORTA_API porta_status porta_model_load_bytes(const void* data, size_t size, porta_model* out);
PORTA_API porta_status porta_model_num_inputs(porta_model model, size_t* count);
PORTA_API porta_status porta_model_num_outputs(porta_model model, size_t* count);
/** Names stay valid while the model lives. */
PORTA_API porta_status porta_model_input_name(porta_model model, size_t index, const char** name);
PORTA_API porta_status porta_model_output_name(porta_model model, size_t index, const char** name);
PORTA_API porta_status porta_model_free(porta_model model);

/** A session running `model` on `device`; `strict` refuses CPU fallback. */
PORTA_API porta_status porta_session_create(porta_model model, porta_device device, int strict,
                                            porta_session* out);
/** Session options beyond the device (porta_session_create_with). Zero-initialise, then set
 *  `size` to sizeof(porta_session_options): fields past `size` are read as their defaults, so
 *  callers built against an older header keep working. */
typedef struct porta_session_options {
  size_t size;
  int32_t strict;         /**< nonzero: refuse CPU fallback */
  const char* precision;  /**< compute format for f32 work: "f32" (or NULL), "bf16", "f16", "auto" */
} porta_session_options;
/** A session running `model` on `device` with `options` (NULL: the defaults). */
PORTA_API porta_status porta_session_create_with(porta_model model, porta_device device,
                                                 const porta_session_options* options,
                                                 porta_session* out);
/** Runs with named inputs. `output_names` may be NULL for every graph output in order (then
 *  `num_outputs` must equal the model's output count); each output is a new tensor handle. */
PORTA_API porta_status porta_session_run(porta_session session, const char* const* input_names,
                                         const porta_tensor* inputs, size_t num_inputs,
                                         const char* const* output_names, porta_tensor* outputs,
                                         size_t num_outputs);
PORTA_API porta_status porta_session_free(porta_session session);

/* ---- registering ops and kernels from outside ----------------------------------------- */

/** What a kernel callback receives: valid only during the call. */
typedef struct porta_kernel_context_s porta_kernel_context;
/** What an inference callback receives: valid only during the call. */
typedef struct porta_infer_context_s porta_infer_context;
/** What a composite callback receives: valid only during the call. */
typedef struct porta_builder_s porta_builder;

/** Computes outputs (allocated by porta with the inferred shapes) from inputs. Return
 *  PORTA_OK, or an error after porta_set_error(). */
typedef porta_status (*porta_kernel_fn)(porta_kernel_context* ctx, void* user_data);
/** (optional) Whether a kernel takes a call, asked before it runs (as porta's own kernels'
 *  `supports`). The context gives the call's inputs — shapes and dtypes only: their data cannot
 *  be read — its attributes and device; porta_kernel_output is refused. Return 1 to take the
 *  call, or 0 to decline it after writing the reason (NUL-terminated, at most `capacity` bytes)
 *  to `reason`: porta then tries the op's next kernel on that device, its composite, then the
 *  cpu with copies, and `porta ops` prints the reason. */
typedef int (*porta_supports_fn)(porta_kernel_context* ctx, void* user_data, char* reason, size_t capacity);
/** Sets every output's dtype and shape from the inputs' (porta_infer_*). */
typedef porta_status (*porta_infer_fn)(porta_infer_context* ctx, void* user_data);
/** Emits the op as other ops: `inputs` are value ids (-1 absent); writes `num_outputs` ids. */
typedef porta_status (*porta_composite_fn)(porta_builder* builder, const int32_t* inputs,
                                           size_t num_inputs, porta_attrs attrs, int32_t* outputs,
                                           size_t num_outputs, void* user_data);

/** One declared attribute; scalar defaults are read from the field of its type. List and tensor
 *  attributes have no default: absent until given (porta_attrs_type says). */
typedef struct porta_attr_def {
  const char* name;
  int32_t type;          /**< porta_attr_type */
  int32_t required;      /**< nonzero: absent is an error; else the default applies */
  int64_t default_int;
  double default_float;
  const char* default_string;  /**< NULL: "" */
} porta_attr_def;

/** One input of a test case (porta_op_case). */
typedef struct porta_case_input {
  const int64_t* shape;
  size_t rank;
  int32_t dtype;          /**< a porta_dtype, or -1: the dtype the case runs with */
  int32_t integers;       /**< nonzero: random integers in [lo, hi] */
  double lo, hi;          /**< random values drawn uniformly from [lo, hi); lo == hi: [-2, 2) */
  const double* values;   /**< fixed contents (axes, shapes...) when num_values > 0 */
  size_t num_values;
  int32_t absent;         /**< nonzero: leave this optional input out */
} porta_case_input;

/** One attribute of a test case: `name`, its porta_attr_type, and the field(s) of that type
 *  (`count` entries of ints, floats or strings for the list types; no tensors). */
typedef struct porta_attr_value {
  const char* name;
  int32_t type;
  int64_t i;
  double f;
  const char* s;
  const int64_t* ints;
  const double* floats;
  const char* const* strings;
  size_t count;
} porta_attr_value;

/** A test case of an op: `porta bench --op domain::Name` times it on each device, and
 *  `porta test` checks every device's result against the op's reference (or its composite run
 *  through references) with fresh random inputs. */
typedef struct porta_op_case {
  const char* name;
  const porta_case_input* inputs;
  size_t num_inputs;
  const porta_attr_value* attrs;
  size_t num_attrs;
  uint32_t dtypes;        /**< PORTA_DTYPE_BIT set of the dtypes the case runs with */
  int32_t num_outputs;    /**< 0: as many as the op has */
  int32_t perf;           /**< nonzero: part of `porta bench`'s default suite */
  double tolerance;       /**< relative error bound; 0: the dtype's default */
} porta_op_case;

/** An op's schema. Inputs are named; a trailing "?" marks an optional input. Fields after
 *  `user_data` are read only when struct_size covers them. */
typedef struct porta_op_schema {
  size_t struct_size;          /**< sizeof(porta_op_schema) */
  const char* name;
  const char* domain;          /**< ONNX domain of the op, e.g. "com.example" */
  const char* const* inputs;
  size_t num_inputs;
  const char* const* outputs;
  size_t num_outputs;
  const porta_attr_def* attrs;
  size_t num_attrs;
  porta_infer_fn infer;        /**< required */
  porta_kernel_fn reference;   /**< float64 host reference (optional if composite is given) */
  porta_composite_fn composite;/**< optional */
  void* user_data;             /**< passed to infer, reference and composite */
  const porta_op_case* cases;  /**< (optional) test and benchmark cases, copied at registration */
  size_t num_cases;
  int32_t since_version;       /**< first version of `domain` with this op (0: 1) */
  int32_t until_version;       /**< last version of `domain` with this op (0: every later one) */
} porta_op_schema;

/** A kernel: `fn` runs `op` on `backend` for dispatch dtypes in `dtypes` (PORTA_DTYPE_BIT set).
 *  `op` is "Name" or "domain::Name"; a plain name means the op of that name the same plugin
 *  registers, else the op porta_op_call would find. `num_inputs`/`num_outputs` state the call
 *  signature the kernel was written for; they must fit the op's schema. `backend_name`, when
 *  not NULL, names the device kind instead of `backend` (any kind registered so far, e.g. the
 *  one the same plugin registered with register_backend); an unknown name is
 *  PORTA_ERROR_INVALID_ARGUMENT. Fields after `backend_name` are read only when struct_size
 *  covers them (a plugin built against an older porta.h leaves them out). */
typedef struct porta_kernel_def {
  size_t struct_size;          /**< sizeof(porta_kernel_def) */
  const char* op;
  int32_t backend;             /**< porta_device_type */
  uint32_t dtypes;
  int32_t num_inputs;
  int32_t num_outputs;
  porta_kernel_fn fn;
  void* user_data;
  const char* backend_name;    /**< NULL: `backend` says the kind */
  porta_supports_fn supports;  /**< (optional) may decline a call with a reason */
  const char* impl_name;       /**< (optional) this implementation's name, e.g. "tiled": one of
                                    several kernels of the op on one backend */
  int32_t priority;            /**< among the op's kernels on the backend: higher is tried first;
                                    kernels whose dtypes overlap must differ */
} porta_kernel_def;

/** Registers an op (refused when an op of that domain and name exists; ops of one name in
 *  different domains are different ops) / a kernel (refused when the op is unknown, the
 *  signature disagrees with the schema, or a kernel for that backend, dtype and priority
 *  exists). Called from a plugin's init, the registration belongs to that plugin. */
PORTA_API porta_status porta_register_op(const porta_op_schema* schema);
PORTA_API porta_status porta_register_kernel(const porta_kernel_def* kernel);

/* Inside a kernel callback. Tensor handles are lent for the call (freeing them is refused). */
PORTA_API porta_status porta_kernel_num_inputs(porta_kernel_context* ctx, size_t* count);
PORTA_API porta_status porta_kernel_num_outputs(porta_kernel_context* ctx, size_t* count);
/** An absent optional input gives a NULL handle and PORTA_OK. */
PORTA_API porta_status porta_kernel_input(porta_kernel_context* ctx, size_t index, porta_tensor* tensor);
PORTA_API porta_status porta_kernel_output(porta_kernel_context* ctx, size_t index, porta_tensor* tensor);
PORTA_API porta_status porta_kernel_attrs(porta_kernel_context* ctx, porta_attrs* attrs);
PORTA_API porta_status porta_kernel_device(porta_kernel_context* ctx, porta_device* device);

/* ---- GPU kernels (cuda, hip, gpu_emu) from outside ------------------------------------- */

/** The address of the tensor's first element as kernels of its device address it: a device
 *  pointer on cuda and hip (pass it to a kernel launched on porta_kernel_stream's stream),
 *  the emulator's on gpu_emu, the host pointer on cpu (as porta_tensor_data), handle + byte
 *  offset on a plugin backend with pointer_handles. Vulkan buffers have no address:
 *  PORTA_ERROR_DEVICE_MISMATCH (bind them with porta_vulkan_dispatch). Valid while the tensor
 *  lives; refused for the shape-only inputs a `supports` callback sees. */
PORTA_API porta_status porta_tensor_device_pointer(porta_tensor tensor, void** pointer);
/** Inside a kernel callback of a kind with a stream (cuda, hip, gpu_emu): the stream porta runs
 *  that device's work on, as a `void*` to cast to cudaStream_t / hipStream_t (the emulator's
 *  cudaStream_t under gpu_emu), with the kernel's device made current on the calling thread.
 *  Queue the kernel's work on it and return without waiting: porta orders everything of the
 *  device on this one stream and waits for it when it reads results. Work queued on another
 *  stream must be finished before the callback returns. From a cpu, Vulkan or other kernel:
 *  PORTA_ERROR_DEVICE_MISMATCH naming the kinds that have a stream. */
PORTA_API porta_status porta_kernel_stream(porta_kernel_context* ctx, void** stream);
/** Inside a kernel callback: `bytes` (at least 1) of uninitialised memory on the kernel's
 *  device, at an address as porta_tensor_device_pointer gives (device memory on cuda/hip/
 *  gpu_emu, host memory on cpu), aligned to at least 64 bytes (256 on cuda, hip and gpu_emu).
 *  It lives until the callback returns; work queued on porta_kernel_stream's stream before
 *  then may still use it (porta reuses the memory only for later work of that stream). A
 *  call's scratch together may not exceed the device's memory or largest buffer
 *  (PORTA_ERROR_INVALID_ARGUMENT naming both); an allocation the device cannot serve is
 *  PORTA_ERROR_OUT_OF_MEMORY. Vulkan: PORTA_ERROR_DEVICE_MISMATCH (no addresses). */
PORTA_API porta_status porta_kernel_scratch(porta_kernel_context* ctx, size_t bytes, void** pointer);

/* Inside an inference callback. */
PORTA_API porta_status porta_infer_num_inputs(porta_infer_context* ctx, size_t* count);
/** Absent optional input: *present = 0. `dims` receives up to `capacity` dims. */
PORTA_API porta_status porta_infer_input(porta_infer_context* ctx, size_t index, int* present,
                                         porta_dtype* dtype, int64_t* dims, size_t capacity,
                                         size_t* rank);
PORTA_API porta_status porta_infer_attrs(porta_infer_context* ctx, porta_attrs* attrs);
PORTA_API porta_status porta_infer_set_output(porta_infer_context* ctx, size_t index, porta_dtype dtype,
                                              const int64_t* dims, size_t rank);

/* Inside a composite callback. */
/** Adds a node; `attrs` may be NULL; writes `num_outputs` value ids. */
PORTA_API porta_status porta_builder_add(porta_builder* builder, const char* op, const int32_t* inputs,
                                         size_t num_inputs, porta_attrs attrs, int32_t* outputs,
                                         size_t num_outputs);
/** A host tensor as a constant value. */
PORTA_API porta_status porta_builder_constant(porta_builder* builder, porta_tensor value, int32_t* id);
PORTA_API porta_status porta_builder_value(porta_builder* builder, int32_t id, porta_dtype* dtype,
                                           int64_t* dims, size_t capacity, size_t* rank);

/* ---- Vulkan kernels from outside ------------------------------------------------------ */

/** Adds SPIR-V under `name` for porta_vulkan_dispatch. PORTA_ERROR_BACKEND_UNAVAILABLE when
 *  porta was built without Vulkan. */
PORTA_API porta_status porta_vulkan_register_shader(const char* name, const void* spirv, size_t bytes);

/** One dispatch of a registered shader from inside a Vulkan kernel callback. Binding i is
 *  tensors[i] (storage buffer, std430), written when writes[i] is nonzero; `push` holds up to
 *  128 bytes of push constants. Specialization constant 0 is the workgroup size `local_size`. */
typedef struct porta_vulkan_dispatch_desc {
  size_t struct_size;
  const char* shader;
  const porta_tensor* tensors;
  const int* writes;
  size_t num_tensors;
  const void* push;
  size_t push_bytes;
  uint32_t local_size;
  uint32_t groups[3];
} porta_vulkan_dispatch_desc;
PORTA_API porta_status porta_vulkan_dispatch(porta_kernel_context* ctx, const porta_vulkan_dispatch_desc* desc);

/* ---- plugins ---------------------------------------------------------------------------- */

/** Loads a plugin shared library (see porta/plugin.h) now. Refused (with the reason in
 *  porta_last_error) when it is built for another ABI, or registers an op that exists or a
 *  kernel that disagrees with its op; nothing of a refused plugin stays registered. */
PORTA_API porta_status porta_load_plugin(const char* path);

#ifdef __cplusplus
}
#endif

#endif /* PORTA_PORTA_H */
