//go:build cgo

// shim.c: bitvk's own C code over <vulkan/vulkan_core.h>, for what
// vulkan-go's 1.1 headers cannot express. See shim.h. The header is Khronos'
// Vulkan-Headers carried in third_party/vulkan-headers (cgo's -I in
// instance.go), never the system's, so no Vulkan SDK is needed to build.

#include "shim.h"
#include "shim_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *bvk_load(const char *name, const char **err) {
	*err = NULL;
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		*err = dlerror();
		return NULL;
	}
	void *gipa = dlsym(lib, "vkGetInstanceProcAddr");
	if (gipa == NULL) {
		*err = dlerror();
		dlclose(lib);
	}
	return gipa;
}

uint32_t bvk_instance_version(void *gipa) {
	PFN_vkEnumerateInstanceVersion f = LOAD(gipa, NULL, vkEnumerateInstanceVersion);
	uint32_t v = VK_API_VERSION_1_0;
	if (f != NULL && f(&v) != VK_SUCCESS) v = VK_API_VERSION_1_0;
	return v;
}

int bvk_has_layer(void *gipa, const char *name) {
	PFN_vkEnumerateInstanceLayerProperties f = LOAD(gipa, NULL, vkEnumerateInstanceLayerProperties);
	uint32_t n = 0;
	if (f == NULL || f(&n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkLayerProperties *p = calloc(n, sizeof *p);
	if (p == NULL) return 0;
	int found = 0;
	if (f(&n, p) >= 0)
		for (uint32_t i = 0; i < n; i++)
			if (strcmp(p[i].layerName, name) == 0) found = 1;
	free(p);
	return found;
}

int bvk_has_instance_extension(void *gipa, const char *name) {
	PFN_vkEnumerateInstanceExtensionProperties f = LOAD(gipa, NULL, vkEnumerateInstanceExtensionProperties);
	uint32_t n = 0;
	if (f == NULL || f(NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkExtensionProperties *p = calloc(n, sizeof *p);
	if (p == NULL) return 0;
	int found = 0;
	if (f(NULL, &n, p) >= 0)
		for (uint32_t i = 0; i < n; i++)
			if (strcmp(p[i].extensionName, name) == 0) found = 1;
	free(p);
	return found;
}

// ---- debug-utils messages ----

struct bvk_msgs {
	pthread_mutex_t mu;
	char **items;
	size_t head, n, cap;
};

bvk_msgs *bvk_msgs_new(void) {
	bvk_msgs *m = calloc(1, sizeof *m);
	if (m != NULL) pthread_mutex_init(&m->mu, NULL);
	return m;
}

static void msgs_push(bvk_msgs *m, char *s) {
	pthread_mutex_lock(&m->mu);
	if (m->head + m->n == m->cap) {
		if (m->head > 0) { // compact before growing
			memmove(m->items, m->items + m->head, m->n * sizeof *m->items);
			m->head = 0;
		}
		if (m->n == m->cap) {
			size_t cap = m->cap ? 2 * m->cap : 16;
			char **items = realloc(m->items, cap * sizeof *items);
			if (items == NULL) {
				pthread_mutex_unlock(&m->mu);
				free(s);
				return;
			}
			m->items = items;
			m->cap = cap;
		}
	}
	m->items[m->head + m->n++] = s;
	pthread_mutex_unlock(&m->mu);
}

char *bvk_msgs_pop(bvk_msgs *m) {
	char *s = NULL;
	pthread_mutex_lock(&m->mu);
	if (m->n > 0) {
		s = m->items[m->head++];
		m->n--;
		if (m->n == 0) m->head = 0;
	}
	pthread_mutex_unlock(&m->mu);
	return s;
}

void bvk_msgs_free(bvk_msgs *m) {
	if (m == NULL) return;
	char *s;
	while ((s = bvk_msgs_pop(m)) != NULL) free(s);
	free(m->items);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
	const char *sev = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning";
	const char *kind = (types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT)    ? "validation"
	                   : (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) ? "performance"
	                                                                              : "general";
	const char *id = data && data->pMessageIdName ? data->pMessageIdName : "";
	const char *msg = data && data->pMessage ? data->pMessage : "";
	size_t len = strlen(sev) + strlen(kind) + strlen(id) + strlen(msg) + 16;
	char *s = malloc(len);
	if (s != NULL) {
		snprintf(s, len, "%s %s [%s] %s", kind, sev, id, msg);
		msgs_push((bvk_msgs *)user, s);
	}
	return VK_FALSE;
}

static void messenger_info(VkDebugUtilsMessengerCreateInfoEXT *ci, bvk_msgs *msgs) {
	memset(ci, 0, sizeof *ci);
	ci->sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
	ci->messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
	ci->messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
	                  VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
	ci->pfnUserCallback = on_message;
	ci->pUserData = msgs;
}

int32_t bvk_create_instance(void *gipa, uint32_t api_version, bvk_msgs *msgs, int sync, const char *const *extra,
                            uint32_t nextra, void **instance) {
	PFN_vkCreateInstance create = LOAD(gipa, NULL, vkCreateInstance);
	if (create == NULL) return VK_ERROR_INITIALIZATION_FAILED;
	VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
	app.pApplicationName = "bitvk";
	app.pEngineName = "bitvk";
	app.apiVersion = api_version;
	const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
	const char *exts[2 + BVK_MAX_EXTRA];
	uint32_t n = 0;
	if (nextra > BVK_MAX_EXTRA) return VK_ERROR_TOO_MANY_OBJECTS;
	VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
	// The layer's handle wrapping replaces every non-dispatchable handle
	// with an id made from a counter, (n << 40) | n: where the Go heap
	// starts at n << 40 (0x2c0000000000 in a test run that failed), the
	// handle of the n-th object is an address in it, and cgo's pointer
	// check, reading the Go object there when the handle is passed to C,
	// panicked ("Go pointer to unpinned Go pointer"). With the wrapping
	// off, handles are the driver's own.
	VkValidationFeatureDisableEXT disables[] = {VK_VALIDATION_FEATURE_DISABLE_UNIQUE_HANDLES_EXT};
	VkValidationFeaturesEXT features = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
	VkDebugUtilsMessengerCreateInfoEXT dbg;
	VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
	ci.pApplicationInfo = &app;
	if (msgs != NULL) {
		messenger_info(&dbg, msgs);
		ci.pNext = &dbg;
		ci.enabledLayerCount = 1;
		ci.ppEnabledLayerNames = layers;
		exts[n++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
		features.disabledValidationFeatureCount = 1;
		features.pDisabledValidationFeatures = disables;
		if (sync) {
			features.enabledValidationFeatureCount = 1;
			features.pEnabledValidationFeatures = enables;
		}
		dbg.pNext = &features;
		exts[n++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
	}
	for (uint32_t i = 0; i < nextra; i++) exts[n++] = extra[i];
	ci.enabledExtensionCount = n;
	ci.ppEnabledExtensionNames = n > 0 ? exts : NULL;
	VkInstance inst = VK_NULL_HANDLE;
	VkResult r = create(&ci, NULL, &inst);
	*instance = r == VK_SUCCESS ? (void *)inst : NULL;
	return r;
}

void bvk_destroy_instance(void *gipa, void *instance) {
	PFN_vkDestroyInstance f = LOAD(gipa, instance, vkDestroyInstance);
	if (f != NULL && instance != NULL) f((VkInstance)instance, NULL);
}

int32_t bvk_create_messenger(void *gipa, void *instance, bvk_msgs *msgs, void **messenger) {
	PFN_vkCreateDebugUtilsMessengerEXT f = LOAD(gipa, instance, vkCreateDebugUtilsMessengerEXT);
	if (f == NULL) return VK_ERROR_EXTENSION_NOT_PRESENT;
	VkDebugUtilsMessengerCreateInfoEXT ci;
	messenger_info(&ci, msgs);
	VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
	VkResult r = f((VkInstance)instance, &ci, NULL, &m);
	*messenger = r == VK_SUCCESS ? (void *)m : NULL;
	return r;
}

void bvk_destroy_messenger(void *gipa, void *instance, void *messenger) {
	PFN_vkDestroyDebugUtilsMessengerEXT f = LOAD(gipa, instance, vkDestroyDebugUtilsMessengerEXT);
	if (f != NULL && messenger != NULL) f((VkInstance)instance, (VkDebugUtilsMessengerEXT)messenger, NULL);
}

// ---- physical devices ----

// minor_version returns major*100+minor of v, for comparisons.
static uint32_t minor_version(uint32_t v) { return VK_API_VERSION_MAJOR(v) * 100 + VK_API_VERSION_MINOR(v); }

static uint32_t device_extensions(void *gipa, void *instance, VkPhysicalDevice phys) {
	PFN_vkEnumerateDeviceExtensionProperties f = LOAD(gipa, instance, vkEnumerateDeviceExtensionProperties);
	uint32_t n = 0, bits = 0;
	if (f == NULL || f(phys, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkExtensionProperties *p = calloc(n, sizeof *p);
	if (p == NULL) return 0;
	static const struct {
		const char *name;
		uint32_t bit;
	} known[] = {
	    {"VK_KHR_driver_properties", BVK_EXT_DRIVER_PROPERTIES},
	    {"VK_KHR_16bit_storage", BVK_EXT_16BIT_STORAGE},
	    {"VK_KHR_8bit_storage", BVK_EXT_8BIT_STORAGE},
	    {"VK_KHR_shader_float16_int8", BVK_EXT_FLOAT16_INT8},
	    {"VK_KHR_shader_integer_dot_product", BVK_EXT_INTEGER_DOT},
	    {"VK_EXT_subgroup_size_control", BVK_EXT_SUBGROUP_SIZE_CONTROL},
	    {"VK_KHR_cooperative_matrix", BVK_EXT_COOPMAT_KHR},
	    {"VK_NV_cooperative_matrix", BVK_EXT_COOPMAT_NV},
	    {"VK_KHR_storage_buffer_storage_class", BVK_EXT_STORAGE_BUFFER_CLASS},
	    {"VK_KHR_vulkan_memory_model", BVK_EXT_VULKAN_MEMORY_MODEL},
	};
	if (f(phys, NULL, &n, p) >= 0)
		for (uint32_t i = 0; i < n; i++)
			for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
				if (strcmp(p[i].extensionName, known[k].name) == 0) bits |= known[k].bit;
	free(p);
	return bits;
}

// chains holds every feature structure bitvk asks about; link() builds the
// pNext chain of those the device may be asked about.
typedef struct chains {
	VkPhysicalDeviceFeatures2 f2;
	VkPhysicalDevice16BitStorageFeatures s16;
	VkPhysicalDevice8BitStorageFeatures s8;
	VkPhysicalDeviceShaderFloat16Int8Features f16i8;
	VkPhysicalDeviceShaderIntegerDotProductFeatures dot;
	VkPhysicalDeviceSubgroupSizeControlFeatures sgsc;
	VkPhysicalDeviceCooperativeMatrixFeaturesNV cm;
	VkPhysicalDeviceVulkanMemoryModelFeatures vmm;
	int has_s16, has_s8, has_f16i8, has_dot, has_sgsc, has_cm, has_vmm;
} chains;

static void chains_init(chains *c, uint32_t api, uint32_t ext) {
	memset(c, 0, sizeof *c);
	c->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
	c->s16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
	c->s8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
	c->f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
	c->dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
	c->sgsc.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES;
	c->cm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
	c->vmm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
	uint32_t v = minor_version(api);
	c->has_s16 = v >= 101 || (ext & BVK_EXT_16BIT_STORAGE);
	c->has_s8 = v >= 102 || (ext & BVK_EXT_8BIT_STORAGE);
	c->has_f16i8 = v >= 102 || (ext & BVK_EXT_FLOAT16_INT8);
	c->has_dot = v >= 103 || (ext & BVK_EXT_INTEGER_DOT);
	c->has_sgsc = v >= 103 || (ext & BVK_EXT_SUBGROUP_SIZE_CONTROL);
	c->has_cm = v >= 101 && (ext & BVK_EXT_COOPMAT_NV);
	// The memory model: SPIR-V that declares it (GL_NV_cooperative_matrix
	// requires it) may run only where vulkanMemoryModel is enabled.
	c->has_vmm = v >= 102 || (v >= 101 && (ext & BVK_EXT_VULKAN_MEMORY_MODEL));
}

static void chains_link(chains *c, int all) {
	void **next = &c->f2.pNext;
#define LINK(cond, s)            \
	if (cond) {                  \
		*next = &c->s;           \
		next = &c->s.pNext;      \
	}
	LINK(c->has_s16, s16);
	LINK(c->has_s8, s8);
	LINK(c->has_f16i8, f16i8);
	LINK(c->has_dot, dot);
	LINK(all && c->has_sgsc, sgsc);
	LINK(c->has_cm, cm);
	LINK(c->has_vmm, vmm);
#undef LINK
	*next = NULL;
}

int32_t bvk_query_device(void *gipa, void *instance, void *physp, uint32_t instance_api, bvk_device_info *info) {
	VkPhysicalDevice phys = (VkPhysicalDevice)physp;
	memset(info, 0, sizeof *info);
	PFN_vkGetPhysicalDeviceProperties props1 = LOAD(gipa, instance, vkGetPhysicalDeviceProperties);
	PFN_vkGetPhysicalDeviceProperties2 props2 = LOAD(gipa, instance, vkGetPhysicalDeviceProperties2);
	PFN_vkGetPhysicalDeviceFeatures2 feats2 = LOAD(gipa, instance, vkGetPhysicalDeviceFeatures2);
	PFN_vkGetPhysicalDeviceMemoryProperties mem = LOAD(gipa, instance, vkGetPhysicalDeviceMemoryProperties);
	PFN_vkGetPhysicalDeviceQueueFamilyProperties qf = LOAD(gipa, instance, vkGetPhysicalDeviceQueueFamilyProperties);
	if (props1 == NULL || props2 == NULL || feats2 == NULL || mem == NULL || qf == NULL) return VK_ERROR_INITIALIZATION_FAILED;

	VkPhysicalDeviceProperties p1;
	props1(phys, &p1);
	uint32_t api = minor_version(p1.apiVersion) < minor_version(instance_api) ? p1.apiVersion : instance_api;
	uint32_t v = minor_version(api);
	uint32_t ext = device_extensions(gipa, instance, phys);
	info->extensions = ext;

	VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	VkPhysicalDeviceSubgroupProperties sub = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceMaintenance3Properties m3 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
	VkPhysicalDeviceDriverProperties drv = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
	VkPhysicalDeviceShaderIntegerDotProductProperties dotp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
	chains c;
	chains_init(&c, api, ext);
	if (v >= 101) {
		void **next = &p2.pNext;
		*next = &sub;
		next = &sub.pNext;
		*next = &m3;
		next = &m3.pNext;
		if (v >= 102 || (ext & BVK_EXT_DRIVER_PROPERTIES)) {
			*next = &drv;
			next = &drv.pNext;
			info->has_driver_props = 1;
		}
		if (c.has_dot) {
			*next = &dotp;
			next = &dotp.pNext;
		}
		props2(phys, &p2);
		chains_link(&c, 1);
		feats2(phys, &c.f2);
	} else {
		p2.properties = p1;
		PFN_vkGetPhysicalDeviceFeatures f1 = LOAD(gipa, instance, vkGetPhysicalDeviceFeatures);
		if (f1 != NULL) f1(phys, &c.f2.features);
	}
	VkPhysicalDeviceProperties *p = &p2.properties;
	info->api_version = p->apiVersion;
	info->driver_version = p->driverVersion;
	info->vendor_id = p->vendorID;
	info->device_id = p->deviceID;
	info->device_type = p->deviceType;
	snprintf(info->name, sizeof info->name, "%s", p->deviceName);
	if (info->has_driver_props) {
		snprintf(info->driver_name, sizeof info->driver_name, "%s", drv.driverName);
		snprintf(info->driver_info, sizeof info->driver_info, "%s", drv.driverInfo);
	}
	info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
	info->max_memory_allocation_size = v >= 101 ? m3.maxMemoryAllocationSize : 0;
	info->min_storage_buffer_offset_alignment = p->limits.minStorageBufferOffsetAlignment;
	info->max_wg_invocations = p->limits.maxComputeWorkGroupInvocations;
	info->max_shared = p->limits.maxComputeSharedMemorySize;
	info->max_push = p->limits.maxPushConstantsSize;
	info->max_storage_buffers = p->limits.maxPerStageDescriptorStorageBuffers;
	for (int i = 0; i < 3; i++) info->max_wg_count[i] = p->limits.maxComputeWorkGroupCount[i];
	info->timestamp_period = p->limits.timestampPeriod;
	if (v >= 101) {
		info->subgroup_size = sub.subgroupSize;
		info->subgroup_stages = sub.supportedStages;
		info->subgroup_ops = sub.supportedOperations;
	}

	uint32_t f = 0;
	if (c.f2.features.shaderInt64) f |= BVK_F_INT64;
	if (c.has_s16 && c.s16.storageBuffer16BitAccess) f |= BVK_F_STORAGE16;
	if (c.has_s8 && c.s8.storageBuffer8BitAccess) f |= BVK_F_STORAGE8;
	if (c.has_f16i8 && c.f16i8.shaderInt8) f |= BVK_F_INT8;
	if (c.has_f16i8 && c.f16i8.shaderFloat16) f |= BVK_F_FLOAT16;
	if (c.has_dot && c.dot.shaderIntegerDotProduct) f |= BVK_F_INTEGER_DOT;
	if (c.has_dot && dotp.integerDotProduct4x8BitPackedSignedAccelerated) f |= BVK_F_INTEGER_DOT_ACCEL;
	if (c.has_sgsc && c.sgsc.subgroupSizeControl && c.sgsc.computeFullSubgroups) f |= BVK_F_SUBGROUP_SIZE_CONTROL;
	if (c.has_cm && c.cm.cooperativeMatrix) f |= BVK_F_COOPMAT_NV;
	// With the memory model on, shaders that use Device scope (every
	// memoryBarrierBuffer of the GLSL450 kernels) need its device scope
	// too: bitvk takes the two together.
	if (c.has_vmm && c.vmm.vulkanMemoryModel && c.vmm.vulkanMemoryModelDeviceScope) f |= BVK_F_VULKAN_MEMORY_MODEL;
	info->features = f;

	if (ext & BVK_EXT_COOPMAT_NV) {
		PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV cm = LOAD(gipa, instance, vkGetPhysicalDeviceCooperativeMatrixPropertiesNV);
		uint32_t n = 0;
		if (cm != NULL && cm(phys, &n, NULL) == VK_SUCCESS && n > 0) {
			VkCooperativeMatrixPropertiesNV cp[BVK_MAX_COOPMAT];
			if (n > BVK_MAX_COOPMAT) n = BVK_MAX_COOPMAT;
			for (uint32_t i = 0; i < n; i++) {
				memset(&cp[i], 0, sizeof cp[i]);
				cp[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
			}
			VkResult r = cm(phys, &n, cp); // VK_INCOMPLETE when it has more: the first ones
			if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
				info->coopmat_count = n;
				for (uint32_t i = 0; i < n; i++) {
					uint32_t *s = info->coopmat[i];
					s[0] = cp[i].MSize, s[1] = cp[i].NSize, s[2] = cp[i].KSize;
					s[3] = cp[i].AType, s[4] = cp[i].BType, s[5] = cp[i].CType, s[6] = cp[i].DType, s[7] = cp[i].scope;
				}
			}
		}
	}

	VkPhysicalDeviceMemoryProperties mp;
	mem(phys, &mp);
	info->heap_count = mp.memoryHeapCount < BVK_MAX_HEAPS ? mp.memoryHeapCount : BVK_MAX_HEAPS;
	for (uint32_t i = 0; i < info->heap_count; i++) {
		info->heap_size[i] = mp.memoryHeaps[i].size;
		info->heap_flags[i] = mp.memoryHeaps[i].flags;
	}
	info->type_count = mp.memoryTypeCount < BVK_MAX_TYPES ? mp.memoryTypeCount : BVK_MAX_TYPES;
	for (uint32_t i = 0; i < info->type_count; i++) {
		info->type_flags[i] = mp.memoryTypes[i].propertyFlags;
		info->type_heap[i] = mp.memoryTypes[i].heapIndex;
	}
	uint32_t nf = 0;
	qf(phys, &nf, NULL);
	if (nf > BVK_MAX_FAMILIES) nf = BVK_MAX_FAMILIES;
	VkQueueFamilyProperties fams[BVK_MAX_FAMILIES];
	qf(phys, &nf, fams);
	info->family_count = nf;
	for (uint32_t i = 0; i < nf; i++) {
		info->family_flags[i] = fams[i].queueFlags;
		info->family_timestamp_bits[i] = fams[i].timestampValidBits;
	}
	return VK_SUCCESS;
}

// ---- logical device ----

int32_t bvk_create_device(void *gipa, void *instance, void *physp, uint32_t instance_api, uint32_t family, uint32_t enable,
                          const char *const *extra, uint32_t nextra, bvk_device **out) {
	VkPhysicalDevice phys = (VkPhysicalDevice)physp;
	*out = NULL;
	PFN_vkGetPhysicalDeviceProperties props1 = LOAD(gipa, instance, vkGetPhysicalDeviceProperties);
	PFN_vkCreateDevice create = LOAD(gipa, instance, vkCreateDevice);
	PFN_vkGetDeviceProcAddr gdpa = LOAD(gipa, instance, vkGetDeviceProcAddr);
	if (props1 == NULL || create == NULL || gdpa == NULL) return VK_ERROR_INITIALIZATION_FAILED;
	VkPhysicalDeviceProperties p1;
	props1(phys, &p1);
	uint32_t api = minor_version(p1.apiVersion) < minor_version(instance_api) ? p1.apiVersion : instance_api;
	uint32_t v = minor_version(api);
	uint32_t ext = device_extensions(gipa, instance, phys);

	chains c;
	chains_init(&c, api, ext);
	c.f2.features.shaderInt64 = (enable & BVK_F_INT64) != 0;
	c.s16.storageBuffer16BitAccess = (enable & BVK_F_STORAGE16) != 0;
	c.s8.storageBuffer8BitAccess = (enable & BVK_F_STORAGE8) != 0;
	c.f16i8.shaderInt8 = (enable & BVK_F_INT8) != 0;
	c.f16i8.shaderFloat16 = (enable & BVK_F_FLOAT16) != 0;
	c.dot.shaderIntegerDotProduct = (enable & BVK_F_INTEGER_DOT) != 0;
	c.cm.cooperativeMatrix = (enable & BVK_F_COOPMAT_NV) != 0;
	c.has_cm = c.has_cm && c.cm.cooperativeMatrix;
	c.vmm.vulkanMemoryModel = (enable & BVK_F_VULKAN_MEMORY_MODEL) != 0;
	c.vmm.vulkanMemoryModelDeviceScope = c.vmm.vulkanMemoryModel;
	c.has_vmm = c.has_vmm && c.vmm.vulkanMemoryModel;
	c.has_s16 = c.has_s16 && c.s16.storageBuffer16BitAccess;
	c.has_s8 = c.has_s8 && c.s8.storageBuffer8BitAccess;
	c.has_f16i8 = c.has_f16i8 && (c.f16i8.shaderInt8 || c.f16i8.shaderFloat16);
	c.has_dot = c.has_dot && c.dot.shaderIntegerDotProduct;
	chains_link(&c, 0);

	const char *exts[8 + BVK_MAX_EXTRA];
	uint32_t n = 0;
	if (nextra > BVK_MAX_EXTRA) return VK_ERROR_TOO_MANY_OBJECTS;
	for (uint32_t i = 0; i < nextra; i++) exts[n++] = extra[i];
	if (c.has_s16 && v < 101) exts[n++] = "VK_KHR_16bit_storage";
	if ((c.has_s16 || c.has_s8) && v < 101 && (ext & BVK_EXT_STORAGE_BUFFER_CLASS)) exts[n++] = "VK_KHR_storage_buffer_storage_class";
	if (c.has_s8 && v < 102) exts[n++] = "VK_KHR_8bit_storage";
	if (c.has_f16i8 && v < 102) exts[n++] = "VK_KHR_shader_float16_int8";
	if (c.has_dot && v < 103) exts[n++] = "VK_KHR_shader_integer_dot_product";
	if (c.has_cm) exts[n++] = "VK_NV_cooperative_matrix";
	if (c.has_vmm && v < 102) exts[n++] = "VK_KHR_vulkan_memory_model";

	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
	q.queueFamilyIndex = family;
	q.queueCount = 1;
	q.pQueuePriorities = &prio;
	VkDeviceCreateInfo ci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
	ci.queueCreateInfoCount = 1;
	ci.pQueueCreateInfos = &q;
	ci.enabledExtensionCount = n;
	ci.ppEnabledExtensionNames = n ? exts : NULL;
	if (v >= 101) ci.pNext = &c.f2;
	else ci.pEnabledFeatures = &c.f2.features;

	VkDevice dev = VK_NULL_HANDLE;
	VkResult r = create(phys, &ci, NULL, &dev);
	if (r != VK_SUCCESS) return r;
	bvk_device *d = calloc(1, sizeof *d);
	if (d == NULL) {
		PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)gdpa(dev, "vkDestroyDevice");
		if (destroy) destroy(dev, NULL);
		return VK_ERROR_OUT_OF_HOST_MEMORY;
	}
	d->dev = dev;
	d->gdpa = gdpa;
	d->family = family;
	d->DestroyDevice = (PFN_vkDestroyDevice)gdpa(dev, "vkDestroyDevice");
	d->ResetFences = (PFN_vkResetFences)gdpa(dev, "vkResetFences");
	d->QueueSubmit = (PFN_vkQueueSubmit)gdpa(dev, "vkQueueSubmit");
	d->WaitForFences = (PFN_vkWaitForFences)gdpa(dev, "vkWaitForFences");
	d->CreateComputePipelines = (PFN_vkCreateComputePipelines)gdpa(dev, "vkCreateComputePipelines");
	d->CreateDescriptorPool = (PFN_vkCreateDescriptorPool)gdpa(dev, "vkCreateDescriptorPool");
	d->AllocateDescriptorSets = (PFN_vkAllocateDescriptorSets)gdpa(dev, "vkAllocateDescriptorSets");
	d->UpdateDescriptorSets = (PFN_vkUpdateDescriptorSets)gdpa(dev, "vkUpdateDescriptorSets");
	PFN_vkGetDeviceQueue getq = (PFN_vkGetDeviceQueue)gdpa(dev, "vkGetDeviceQueue");
	if (!d->DestroyDevice || !d->ResetFences || !d->QueueSubmit || !d->WaitForFences || !d->CreateComputePipelines ||
	    !d->CreateDescriptorPool || !d->AllocateDescriptorSets || !d->UpdateDescriptorSets || !getq) {
		if (d->DestroyDevice) d->DestroyDevice(dev, NULL);
		free(d);
		return VK_ERROR_INITIALIZATION_FAILED;
	}
	getq(dev, family, 0, &d->queue);
	*out = d;
	return VK_SUCCESS;
}

void *bvk_device_handle(bvk_device *d) { return (void *)d->dev; }
void *bvk_device_queue(bvk_device *d) { return (void *)d->queue; }

void bvk_destroy_device(bvk_device *d) {
	if (d == NULL) return;
	d->DestroyDevice(d->dev, NULL);
	free(d);
}

int32_t bvk_create_compute_pipeline(bvk_device *d, void *module, void *layout, const uint32_t *spec, uint32_t nspec,
                                    void **out) {
	*out = NULL;
	if (nspec > BVK_MAX_SPEC) return VK_ERROR_INITIALIZATION_FAILED;
	VkSpecializationMapEntry entries[BVK_MAX_SPEC];
	uint32_t data[BVK_MAX_SPEC];
	for (uint32_t i = 0; i < nspec; i++) {
		entries[i].constantID = i;
		entries[i].offset = 4 * i;
		entries[i].size = 4;
		data[i] = spec[i];
	}
	VkSpecializationInfo si = {nspec, entries, 4 * (size_t)nspec, data};
	VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
	ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	ci.stage.module = (VkShaderModule)module;
	ci.stage.pName = "main";
	ci.stage.pSpecializationInfo = nspec > 0 ? &si : NULL;
	ci.layout = (VkPipelineLayout)layout;
	VkPipeline p = VK_NULL_HANDLE;
	VkResult r = d->CreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p);
	if (r == VK_SUCCESS) *out = (void *)p;
	return r;
}

int32_t bvk_descriptor_pool(bvk_device *d, uint32_t nsets, uint32_t ndesc, void **out) {
	*out = NULL;
	VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, ndesc};
	VkDescriptorPoolCreateInfo ci = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
	ci.maxSets = nsets;
	ci.poolSizeCount = 1;
	ci.pPoolSizes = &size;
	VkDescriptorPool pool = VK_NULL_HANDLE;
	VkResult r = d->CreateDescriptorPool(d->dev, &ci, NULL, &pool);
	if (r == VK_SUCCESS) *out = (void *)pool;
	return r;
}

int32_t bvk_descriptor_set(bvk_device *d, void *pool, void *layout, const uint64_t *bufs, const uint64_t *offs,
                           const uint64_t *sizes, uint32_t n, void **out) {
	*out = NULL;
	if (n == 0 || n > BVK_MAX_BINDINGS) return VK_ERROR_INITIALIZATION_FAILED;
	VkDescriptorSetLayout lay = (VkDescriptorSetLayout)layout;
	VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
	ai.descriptorPool = (VkDescriptorPool)pool;
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &lay;
	VkDescriptorSet set = VK_NULL_HANDLE;
	VkResult r = d->AllocateDescriptorSets(d->dev, &ai, &set);
	if (r != VK_SUCCESS) return r;
	VkDescriptorBufferInfo infos[BVK_MAX_BINDINGS];
	for (uint32_t i = 0; i < n; i++) {
		infos[i].buffer = (VkBuffer)bufs[i];
		infos[i].offset = offs[i];
		infos[i].range = sizes[i];
	}
	VkWriteDescriptorSet w = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
	w.dstSet = set;
	w.dstBinding = 0;
	w.descriptorCount = n;
	w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
	w.pBufferInfo = infos;
	d->UpdateDescriptorSets(d->dev, 1, &w, 0, NULL);
	*out = (void *)set;
	return VK_SUCCESS;
}

int32_t bvk_submit(bvk_device *d, void *cmdp, void *fencep, uint64_t timeout_ns) {
	VkCommandBuffer cmd = (VkCommandBuffer)cmdp;
	VkFence fence = (VkFence)fencep;
	VkResult r = d->ResetFences(d->dev, 1, &fence);
	if (r != VK_SUCCESS) return r;
	VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
	si.commandBufferCount = 1;
	si.pCommandBuffers = &cmd;
	r = d->QueueSubmit(d->queue, 1, &si, fence);
	if (r != VK_SUCCESS) return r;
	// Wait in one-second slices so that a hung device ends in VK_TIMEOUT
	// after timeout_ns instead of blocking forever.
	const uint64_t slice = 1000000000ull;
	for (uint64_t waited = 0;; waited += slice) {
		r = d->WaitForFences(d->dev, 1, &fence, VK_TRUE, slice);
		if (r != VK_TIMEOUT || waited + slice >= timeout_ns) return r;
	}
}
