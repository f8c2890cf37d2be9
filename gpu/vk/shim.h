// shim.h is the boundary between Go and bitvk's own C code for the parts of
// Vulkan newer than 1.1 (pNext feature/property chains, device creation with
// a feature chain, VK_EXT_debug_utils) plus the per-token submit. It exposes
// only plain C types: Vulkan handles travel as void*, so this header never
// includes a Vulkan header and cannot clash with vulkan-go's.
#ifndef BITVK_SHIM_H
#define BITVK_SHIM_H

#include <stdint.h>

#define BVK_MAX_HEAPS 16
#define BVK_MAX_COOPMAT 128
#define BVK_MAX_TYPES 32
#define BVK_MAX_FAMILIES 32
#define BVK_MAX_SPEC 16     // specialization constants of one kernel
#define BVK_MAX_BINDINGS 32 // storage buffers of one dispatch
#define BVK_MAX_EXTRA 8 // extra device extensions asked for (VK_KHR_swapchain)
#define BVK_MAX_IMAGES 8 // swapchain images kept

// Results of bvk_create_swapchain beyond VkResult's (positive, so never a
// Vulkan error code).
enum {
	BVK_NO_TRANSFER_DST = 1000, // the surface's images cannot be copied into
	BVK_NO_FORMAT = 1001,       // no 8-bit RGBA or BGRA surface format
};

// Extension bits reported in bvk_device_info.extensions.
enum {
	BVK_EXT_DRIVER_PROPERTIES = 1 << 0,
	BVK_EXT_16BIT_STORAGE = 1 << 1,
	BVK_EXT_8BIT_STORAGE = 1 << 2,
	BVK_EXT_FLOAT16_INT8 = 1 << 3,
	BVK_EXT_INTEGER_DOT = 1 << 4,
	BVK_EXT_SUBGROUP_SIZE_CONTROL = 1 << 5,
	BVK_EXT_COOPMAT_KHR = 1 << 6,
	BVK_EXT_COOPMAT_NV = 1 << 7,
	BVK_EXT_STORAGE_BUFFER_CLASS = 1 << 8,
	BVK_EXT_VULKAN_MEMORY_MODEL = 1 << 9,
};

// Feature bits, used both for what a device has and what to enable.
enum {
	BVK_F_STORAGE16 = 1 << 0,
	BVK_F_STORAGE8 = 1 << 1,
	BVK_F_INT8 = 1 << 2,
	BVK_F_FLOAT16 = 1 << 3,
	BVK_F_INT64 = 1 << 4,
	BVK_F_INTEGER_DOT = 1 << 5,
	BVK_F_INTEGER_DOT_ACCEL = 1 << 6,
	BVK_F_SUBGROUP_SIZE_CONTROL = 1 << 7,
	BVK_F_COOPMAT_NV = 1 << 8, // VK_NV_cooperative_matrix's cooperativeMatrix
	BVK_F_VULKAN_MEMORY_MODEL = 1 << 9, // vulkanMemoryModel and vulkanMemoryModelDeviceScope (core 1.2 or VK_KHR_vulkan_memory_model)
};

typedef struct bvk_device_info {
	uint32_t api_version, driver_version, vendor_id, device_id, device_type;
	char name[256];
	int has_driver_props;
	char driver_name[256], driver_info[256];
	uint64_t max_storage_buffer_range, max_memory_allocation_size, min_storage_buffer_offset_alignment;
	uint32_t max_wg_invocations, max_shared, max_push, max_wg_count[3], max_storage_buffers;
	uint32_t subgroup_size, subgroup_stages, subgroup_ops;
	uint32_t heap_count;
	uint64_t heap_size[BVK_MAX_HEAPS];
	uint32_t heap_flags[BVK_MAX_HEAPS];
	uint32_t type_count;
	uint32_t type_flags[BVK_MAX_TYPES], type_heap[BVK_MAX_TYPES];
	uint32_t family_count;
	uint32_t family_flags[BVK_MAX_FAMILIES];
	uint32_t family_timestamp_bits[BVK_MAX_FAMILIES]; // timestampValidBits; 0: no timestamps
	float timestamp_period;                            // nanoseconds per timestamp tick
	uint32_t extensions; // BVK_EXT_*
	uint32_t features;   // BVK_F_*
	// VK_NV_cooperative_matrix's shapes (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV):
	// M, N, K, then the component types of A, B, C and D (VkComponentTypeNV) and the scope.
	uint32_t coopmat_count;
	uint32_t coopmat[BVK_MAX_COOPMAT][8];
} bvk_device_info;

// bvk_load dlopens the Vulkan loader called name and returns its
// vkGetInstanceProcAddr, or NULL with *err set to dlerror's message (valid
// until the next dl* call) when it cannot be opened.
void *bvk_load(const char *name, const char **err);

// bvk_instance_version returns what vkEnumerateInstanceVersion reports
// (VK_API_VERSION_1_0 when the loader predates it).
uint32_t bvk_instance_version(void *gipa);

// bvk_has_layer and bvk_has_instance_extension report whether the loader
// offers the named layer or instance extension.
int bvk_has_layer(void *gipa, const char *name);
int bvk_has_instance_extension(void *gipa, const char *name);

// bvk_msgs collects debug-utils messages from any thread behind a mutex.
typedef struct bvk_msgs bvk_msgs;
bvk_msgs *bvk_msgs_new(void);
// bvk_msgs_pop returns the oldest message (malloc'd; free it) or NULL.
char *bvk_msgs_pop(bvk_msgs *m);
void bvk_msgs_free(bvk_msgs *m);

// bvk_create_instance creates an instance for api_version. When msgs is not
// NULL it enables the validation layer and VK_EXT_debug_utils, and chains a
// messenger create-info so that instance creation itself is covered; sync
// then also turns on synchronization validation (VK_EXT_validation_features).
// The nextra (≤ BVK_MAX_EXTRA) instance extensions in extra are enabled too
// (a window system's surface extensions).
int32_t bvk_create_instance(void *gipa, uint32_t api_version, bvk_msgs *msgs, int sync, const char *const *extra,
                            uint32_t nextra, void **instance);
void bvk_destroy_instance(void *gipa, void *instance);

// bvk_create_messenger and bvk_destroy_messenger manage the
// VK_EXT_debug_utils messenger that feeds msgs.
int32_t bvk_create_messenger(void *gipa, void *instance, bvk_msgs *msgs, void **messenger);
void bvk_destroy_messenger(void *gipa, void *instance, void *messenger);

// bvk_query_device fills info for one physical device, chaining only the
// structures the device supports at api_version = min(instance, device).
int32_t bvk_query_device(void *gipa, void *instance, void *phys, uint32_t instance_api, bvk_device_info *info);

// bvk_device is a logical device with its queue and the device-level
// function pointers the hot path needs.
typedef struct bvk_device bvk_device;

// bvk_create_device creates a device with one queue from family, enabling
// the BVK_F_* features in enable (enabling extensions where the device's
// API version is below the promoting core version) and the nextra
// (≤ BVK_MAX_EXTRA) device extensions named in extra.
int32_t bvk_create_device(void *gipa, void *instance, void *phys, uint32_t instance_api, uint32_t family, uint32_t enable,
                          const char *const *extra, uint32_t nextra, bvk_device **out);
void *bvk_device_handle(bvk_device *d);
void *bvk_device_queue(bvk_device *d);
void bvk_destroy_device(bvk_device *d);

// bvk_create_compute_pipeline creates the compute pipeline of module's
// "main" with layout and nspec (≤ BVK_MAX_SPEC) 32-bit specialization
// constants, constant i = spec[i], into *out. Every create-info structure
// lives on the C stack for the whole call: vulkan-go's conversion frees the
// C copies of nested slices from a finalizer, which a garbage collection
// can run while the driver is still compiling (a use after free that
// crashed lavapipe now and then).
int32_t bvk_create_compute_pipeline(bvk_device *d, void *module, void *layout, const uint32_t *spec, uint32_t nspec,
                                    void **out);

// bvk_descriptor_pool creates a pool of nsets descriptor sets holding
// ndesc storage buffers in all (on the C stack, as bvk_descriptor_set).
int32_t bvk_descriptor_pool(bvk_device *d, uint32_t nsets, uint32_t ndesc, void **out);

// bvk_descriptor_set allocates a descriptor set of layout from pool and
// writes n (≤ BVK_MAX_BINDINGS) storage buffers to bindings 0…n−1: buffer
// bufs[i] (a VkBuffer handle), from offs[i], sizes[i] bytes. As in
// bvk_create_compute_pipeline, every structure lives on the C stack:
// vulkan-go frees its C copies of nested slices (the layouts, the buffer
// infos) from finalizers, which a collection could run during the call
// (a gpu test crashed once in vkUpdateDescriptorSets that way).
int32_t bvk_descriptor_set(bvk_device *d, void *pool, void *layout, const uint64_t *bufs, const uint64_t *offs,
                           const uint64_t *sizes, uint32_t n, void **out);

// bvk_submit resets fence, submits cmd and waits for the fence for at most
// timeout_ns in total. It returns the VkResult (VK_TIMEOUT on timeout).
int32_t bvk_submit(bvk_device *d, void *cmd, void *fence, uint64_t timeout_ns);

// ---- presentation (present.c) ----

// bvk_has_device_extension reports whether phys offers the named extension.
int bvk_has_device_extension(void *gipa, void *instance, void *phys, const char *name);

// bvk_present_family sets *family to the first queue family of phys with
// compute that can present to surface (a VkSurfaceKHR), or -1.
int32_t bvk_present_family(void *gipa, void *instance, void *phys, void *surface, int32_t *family);
void bvk_destroy_surface(void *gipa, void *instance, void *surface);

// bvk_swapchain is a swapchain with what a frame needs: its images, an
// acquire semaphore, a render semaphore per image, a command buffer for the
// copy into the image, and a fence.
typedef struct bvk_swapchain bvk_swapchain;

typedef struct bvk_swapchain_info {
	uint32_t width, height, images;
	uint32_t format;   // VkFormat
	uint32_t bgra;     // 1: bytes B, G, R, A in memory; 0: R, G, B, A
	uint32_t readable; // the images can be copied from (screenshots)
	uint32_t usage;    // the surface's supportedUsageFlags
} bvk_swapchain_info;

// bvk_create_swapchain makes a FIFO (vsync) swapchain of the surface's size
// (width×height where the surface leaves it to the swapchain), replacing
// old (which the caller then destroys), and describes it in info. It
// returns VK_ERROR_OUT_OF_DATE_KHR for a zero-sized (minimized) surface and
// BVK_NO_TRANSFER_DST or BVK_NO_FORMAT when the surface cannot take copies.
int32_t bvk_create_swapchain(void *gipa, void *instance, void *phys, bvk_device *d, void *surface, uint32_t width,
                             uint32_t height, bvk_swapchain *old, bvk_swapchain_info *info, bvk_swapchain **out);
void bvk_destroy_swapchain(bvk_swapchain *s);

// bvk_swapchain_acquire acquires the next image (VkResult; VK_TIMEOUT or
// VK_NOT_READY: none yet).
int32_t bvk_swapchain_acquire(bvk_swapchain *s, uint64_t timeout_ns, uint32_t *index);

// bvk_swapchain_present submits draw (a command buffer writing pixels, or
// NULL) and a copy of pixels (width×height 32-bit texels, rows packed) into
// image index, then, when readback is not NULL, of the image into readback;
// waits for them (at most timeout_ns) and presents the image. It returns the
// first failure, else the present's result (VK_SUBOPTIMAL_KHR or
// VK_ERROR_OUT_OF_DATE_KHR ask for a new swapchain).
int32_t bvk_swapchain_present(bvk_swapchain *s, uint32_t index, void *draw, void *pixels, void *readback,
                              uint64_t timeout_ns);

#endif
