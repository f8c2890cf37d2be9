// shim_internal.h: what shim.c and present.c share and Go never sees. It
// includes <vulkan/vulkan_core.h> (third_party/vulkan-headers), which shim.h
// must not, so that Go files including shim.h never meet two definitions of
// the Vulkan types (vulkan-go has its own).
#ifndef BITVK_SHIM_INTERNAL_H
#define BITVK_SHIM_INTERNAL_H

#include <vulkan/vulkan_core.h>

#define GIPA(gipa) ((PFN_vkGetInstanceProcAddr)(gipa))
#define LOAD(gipa, inst, name) ((PFN_##name)GIPA(gipa)((VkInstance)(inst), #name))

struct bvk_device {
	VkDevice dev;
	VkQueue queue;
	uint32_t family; // of queue
	PFN_vkGetDeviceProcAddr gdpa;
	PFN_vkDestroyDevice DestroyDevice;
	PFN_vkResetFences ResetFences;
	PFN_vkQueueSubmit QueueSubmit;
	PFN_vkWaitForFences WaitForFences;
	PFN_vkCreateComputePipelines CreateComputePipelines;
	PFN_vkCreateDescriptorPool CreateDescriptorPool;
	PFN_vkAllocateDescriptorSets AllocateDescriptorSets;
	PFN_vkUpdateDescriptorSets UpdateDescriptorSets;
};

#endif
