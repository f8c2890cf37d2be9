//go:build cgo

// present.c: window surfaces and swapchains (VK_KHR_surface,
// VK_KHR_swapchain) for bitvk view. A frame is a compute recording that
// draws into a storage buffer of pixels, then a copy of that buffer into the
// acquired swapchain image (and, for a screenshot, of the image back into a
// host buffer), submitted together and presented. Every create-info lives
// on the C stack for the whole call (see bvk_create_compute_pipeline for
// why not vulkan-go).

#include "shim.h"
#include "shim_internal.h"

#include <stdlib.h>
#include <string.h>

int bvk_has_device_extension(void *gipa, void *instance, void *phys, const char *name) {
	PFN_vkEnumerateDeviceExtensionProperties f = LOAD(gipa, instance, vkEnumerateDeviceExtensionProperties);
	uint32_t n = 0;
	if (f == NULL || f((VkPhysicalDevice)phys, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkExtensionProperties *p = calloc(n, sizeof *p);
	if (p == NULL) return 0;
	int found = 0;
	if (f((VkPhysicalDevice)phys, NULL, &n, p) >= 0)
		for (uint32_t i = 0; i < n; i++)
			if (strcmp(p[i].extensionName, name) == 0) found = 1;
	free(p);
	return found;
}

int32_t bvk_present_family(void *gipa, void *instance, void *phys, void *surface, int32_t *family) {
	*family = -1;
	PFN_vkGetPhysicalDeviceQueueFamilyProperties qf = LOAD(gipa, instance, vkGetPhysicalDeviceQueueFamilyProperties);
	PFN_vkGetPhysicalDeviceSurfaceSupportKHR support = LOAD(gipa, instance, vkGetPhysicalDeviceSurfaceSupportKHR);
	if (qf == NULL || support == NULL) return VK_ERROR_EXTENSION_NOT_PRESENT;
	uint32_t n = 0;
	qf((VkPhysicalDevice)phys, &n, NULL);
	if (n > BVK_MAX_FAMILIES) n = BVK_MAX_FAMILIES;
	VkQueueFamilyProperties fams[BVK_MAX_FAMILIES];
	qf((VkPhysicalDevice)phys, &n, fams);
	for (uint32_t i = 0; i < n; i++) {
		if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
		VkBool32 ok = VK_FALSE;
		VkResult r = support((VkPhysicalDevice)phys, i, (VkSurfaceKHR)surface, &ok);
		if (r != VK_SUCCESS) return r;
		if (ok) {
			*family = (int32_t)i;
			return VK_SUCCESS;
		}
	}
	return VK_SUCCESS;
}

void bvk_destroy_surface(void *gipa, void *instance, void *surface) {
	PFN_vkDestroySurfaceKHR f = LOAD(gipa, instance, vkDestroySurfaceKHR);
	if (f != NULL && surface != NULL) f((VkInstance)instance, (VkSurfaceKHR)surface, NULL);
}

struct bvk_swapchain {
	bvk_device *d;
	VkSwapchainKHR sc;
	uint32_t width, height, count;
	VkImage images[BVK_MAX_IMAGES];
	VkSemaphore acquired;                 // signalled by the acquire, waited by the frame's submit
	VkSemaphore rendered[BVK_MAX_IMAGES]; // per image: signalled by the submit, waited by its present
	VkCommandPool pool;
	VkCommandBuffer copy;
	VkFence fence;
	PFN_vkDestroySwapchainKHR DestroySwapchain;
	PFN_vkAcquireNextImageKHR Acquire;
	PFN_vkQueuePresentKHR Present;
	PFN_vkDestroySemaphore DestroySemaphore;
	PFN_vkDestroyCommandPool DestroyCommandPool;
	PFN_vkDestroyFence DestroyFence;
	PFN_vkResetCommandBuffer ResetCommandBuffer;
	PFN_vkBeginCommandBuffer BeginCommandBuffer;
	PFN_vkEndCommandBuffer EndCommandBuffer;
	PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
	PFN_vkCmdCopyBufferToImage CmdCopyBufferToImage;
	PFN_vkCmdCopyImageToBuffer CmdCopyImageToBuffer;
};

#define DLOAD(d, name) ((PFN_##name)(d)->gdpa((d)->dev, #name))

// pick_format prefers 8-bit RGBA layouts the copy can fill byte for byte.
static int pick_format(const VkSurfaceFormatKHR *f, uint32_t n, VkSurfaceFormatKHR *out) {
	static const VkFormat want[] = {VK_FORMAT_B8G8R8A8_UNORM, VK_FORMAT_R8G8B8A8_UNORM, VK_FORMAT_B8G8R8A8_SRGB,
	                                VK_FORMAT_R8G8B8A8_SRGB};
	for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
		for (uint32_t i = 0; i < n; i++)
			if (f[i].format == want[w]) {
				*out = f[i];
				return 1;
			}
	return 0;
}

void bvk_destroy_swapchain(bvk_swapchain *s) {
	if (s == NULL) return;
	VkDevice dev = s->d->dev;
	if (s->fence) s->DestroyFence(dev, s->fence, NULL);
	if (s->pool) s->DestroyCommandPool(dev, s->pool, NULL);
	if (s->acquired) s->DestroySemaphore(dev, s->acquired, NULL);
	for (uint32_t i = 0; i < BVK_MAX_IMAGES; i++)
		if (s->rendered[i]) s->DestroySemaphore(dev, s->rendered[i], NULL);
	if (s->sc) s->DestroySwapchain(dev, s->sc, NULL);
	free(s);
}

int32_t bvk_create_swapchain(void *gipa, void *instance, void *phys, bvk_device *d, void *surface, uint32_t width,
                             uint32_t height, bvk_swapchain *old, bvk_swapchain_info *info, bvk_swapchain **out) {
	*out = NULL;
	memset(info, 0, sizeof *info);
	PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR caps_f = LOAD(gipa, instance, vkGetPhysicalDeviceSurfaceCapabilitiesKHR);
	PFN_vkGetPhysicalDeviceSurfaceFormatsKHR formats_f = LOAD(gipa, instance, vkGetPhysicalDeviceSurfaceFormatsKHR);
	PFN_vkCreateSwapchainKHR create = DLOAD(d, vkCreateSwapchainKHR);
	PFN_vkGetSwapchainImagesKHR images_f = DLOAD(d, vkGetSwapchainImagesKHR);
	PFN_vkCreateSemaphore sem_f = DLOAD(d, vkCreateSemaphore);
	PFN_vkCreateCommandPool pool_f = DLOAD(d, vkCreateCommandPool);
	PFN_vkAllocateCommandBuffers alloc_f = DLOAD(d, vkAllocateCommandBuffers);
	PFN_vkCreateFence fence_f = DLOAD(d, vkCreateFence);
	if (!caps_f || !formats_f || !create || !images_f || !sem_f || !pool_f || !alloc_f || !fence_f)
		return VK_ERROR_EXTENSION_NOT_PRESENT;

	VkSurfaceCapabilitiesKHR caps;
	VkResult r = caps_f((VkPhysicalDevice)phys, (VkSurfaceKHR)surface, &caps);
	if (r != VK_SUCCESS) return r;
	info->usage = caps.supportedUsageFlags;
	if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT)) return BVK_NO_TRANSFER_DST;
	VkExtent2D ext = caps.currentExtent;
	if (ext.width == 0xFFFFFFFFu) { // the surface takes the swapchain's size
		ext.width = width < caps.minImageExtent.width ? caps.minImageExtent.width : width;
		ext.height = height < caps.minImageExtent.height ? caps.minImageExtent.height : height;
		if (ext.width > caps.maxImageExtent.width) ext.width = caps.maxImageExtent.width;
		if (ext.height > caps.maxImageExtent.height) ext.height = caps.maxImageExtent.height;
	}
	if (ext.width == 0 || ext.height == 0) return VK_ERROR_OUT_OF_DATE_KHR; // minimized
	uint32_t n = 0;
	if ((r = formats_f((VkPhysicalDevice)phys, (VkSurfaceKHR)surface, &n, NULL)) != VK_SUCCESS) return r;
	VkSurfaceFormatKHR fmts[64];
	if (n > 64) n = 64;
	if ((r = formats_f((VkPhysicalDevice)phys, (VkSurfaceKHR)surface, &n, fmts)) < 0) return r;
	VkSurfaceFormatKHR fmt;
	if (!pick_format(fmts, n, &fmt)) return BVK_NO_FORMAT;

	uint32_t count = caps.minImageCount + 1;
	if (caps.maxImageCount > 0 && count > caps.maxImageCount) count = caps.maxImageCount;
	if (count > BVK_MAX_IMAGES) count = BVK_MAX_IMAGES;
	VkImageUsageFlags usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
	if (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) usage |= VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
	VkCompositeAlphaFlagBitsKHR alpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
	if (!(caps.supportedCompositeAlpha & alpha)) {
		for (uint32_t b = 1; b <= VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR; b <<= 1)
			if (caps.supportedCompositeAlpha & b) {
				alpha = (VkCompositeAlphaFlagBitsKHR)b;
				break;
			}
	}

	bvk_swapchain *s = calloc(1, sizeof *s);
	if (s == NULL) return VK_ERROR_OUT_OF_HOST_MEMORY;
	s->d = d;
	s->DestroySwapchain = DLOAD(d, vkDestroySwapchainKHR);
	s->Acquire = DLOAD(d, vkAcquireNextImageKHR);
	s->Present = DLOAD(d, vkQueuePresentKHR);
	s->DestroySemaphore = DLOAD(d, vkDestroySemaphore);
	s->DestroyCommandPool = DLOAD(d, vkDestroyCommandPool);
	s->DestroyFence = DLOAD(d, vkDestroyFence);
	s->ResetCommandBuffer = DLOAD(d, vkResetCommandBuffer);
	s->BeginCommandBuffer = DLOAD(d, vkBeginCommandBuffer);
	s->EndCommandBuffer = DLOAD(d, vkEndCommandBuffer);
	s->CmdPipelineBarrier = DLOAD(d, vkCmdPipelineBarrier);
	s->CmdCopyBufferToImage = DLOAD(d, vkCmdCopyBufferToImage);
	s->CmdCopyImageToBuffer = DLOAD(d, vkCmdCopyImageToBuffer);
	if (!s->DestroySwapchain || !s->Acquire || !s->Present || !s->DestroySemaphore || !s->DestroyCommandPool ||
	    !s->DestroyFence || !s->ResetCommandBuffer || !s->BeginCommandBuffer || !s->EndCommandBuffer ||
	    !s->CmdPipelineBarrier || !s->CmdCopyBufferToImage || !s->CmdCopyImageToBuffer) {
		free(s);
		return VK_ERROR_EXTENSION_NOT_PRESENT;
	}

	VkSwapchainCreateInfoKHR ci = {VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
	ci.surface = (VkSurfaceKHR)surface;
	ci.minImageCount = count;
	ci.imageFormat = fmt.format;
	ci.imageColorSpace = fmt.colorSpace;
	ci.imageExtent = ext;
	ci.imageArrayLayers = 1;
	ci.imageUsage = usage;
	ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE; // one queue computes, copies and presents
	ci.preTransform = caps.currentTransform;
	ci.compositeAlpha = alpha;
	ci.presentMode = VK_PRESENT_MODE_FIFO_KHR; // always supported: vsync pace
	ci.clipped = VK_TRUE;
	ci.oldSwapchain = old != NULL ? old->sc : VK_NULL_HANDLE;
	if ((r = create(d->dev, &ci, NULL, &s->sc)) != VK_SUCCESS) goto fail;
	s->width = ext.width;
	s->height = ext.height;
	n = BVK_MAX_IMAGES;
	if ((r = images_f(d->dev, s->sc, &n, s->images)) < 0) goto fail;
	s->count = n;

	VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
	if ((r = sem_f(d->dev, &si, NULL, &s->acquired)) != VK_SUCCESS) goto fail;
	for (uint32_t i = 0; i < s->count; i++)
		if ((r = sem_f(d->dev, &si, NULL, &s->rendered[i])) != VK_SUCCESS) goto fail;
	VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
	pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
	pi.queueFamilyIndex = d->family;
	if ((r = pool_f(d->dev, &pi, NULL, &s->pool)) != VK_SUCCESS) goto fail;
	VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
	ai.commandPool = s->pool;
	ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
	ai.commandBufferCount = 1;
	if ((r = alloc_f(d->dev, &ai, &s->copy)) != VK_SUCCESS) goto fail;
	VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	if ((r = fence_f(d->dev, &fi, NULL, &s->fence)) != VK_SUCCESS) goto fail;

	info->width = s->width;
	info->height = s->height;
	info->images = s->count;
	info->format = fmt.format;
	info->bgra = fmt.format == VK_FORMAT_B8G8R8A8_UNORM || fmt.format == VK_FORMAT_B8G8R8A8_SRGB;
	info->readable = (usage & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
	*out = s;
	return VK_SUCCESS;
fail:
	bvk_destroy_swapchain(s);
	return r;
}

int32_t bvk_swapchain_acquire(bvk_swapchain *s, uint64_t timeout_ns, uint32_t *index) {
	return s->Acquire(s->d->dev, s->sc, timeout_ns, s->acquired, VK_NULL_HANDLE, index);
}

// image_barrier records one layout transition of a swapchain image.
static void image_barrier(bvk_swapchain *s, VkImage img, VkPipelineStageFlags src, VkPipelineStageFlags dst,
                          VkAccessFlags src_access, VkAccessFlags dst_access, VkImageLayout from, VkImageLayout to,
                          const VkMemoryBarrier *mem) {
	VkImageMemoryBarrier b = {VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
	b.srcAccessMask = src_access;
	b.dstAccessMask = dst_access;
	b.oldLayout = from;
	b.newLayout = to;
	b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
	b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
	b.image = img;
	b.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
	b.subresourceRange.levelCount = 1;
	b.subresourceRange.layerCount = 1;
	s->CmdPipelineBarrier(s->copy, src, dst, 0, mem != NULL ? 1 : 0, mem, 0, NULL, 1, &b);
}

int32_t bvk_swapchain_present(bvk_swapchain *s, uint32_t index, void *draw, void *pixels, void *readback,
                              uint64_t timeout_ns) {
	bvk_device *d = s->d;
	if (index >= s->count) return VK_ERROR_UNKNOWN;
	VkImage img = s->images[index];
	VkResult r = s->ResetCommandBuffer(s->copy, 0);
	if (r != VK_SUCCESS) return r;
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	if ((r = s->BeginCommandBuffer(s->copy, &bi)) != VK_SUCCESS) return r;
	// The draw's pixels become readable by the copy; the image, once the
	// acquire semaphore (waited at the transfer stage) has let go of it,
	// moves to a layout a copy writes (its old contents are not needed).
	VkMemoryBarrier drawn = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	drawn.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
	drawn.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
	image_barrier(s, img, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
	              VK_PIPELINE_STAGE_TRANSFER_BIT, 0, VK_ACCESS_TRANSFER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED,
	              VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &drawn);
	VkBufferImageCopy region;
	memset(&region, 0, sizeof region);
	region.imageSubresource.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
	region.imageSubresource.layerCount = 1;
	region.imageExtent.width = s->width;
	region.imageExtent.height = s->height;
	region.imageExtent.depth = 1;
	s->CmdCopyBufferToImage(s->copy, (VkBuffer)pixels, img, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, &region);
	VkImageLayout last = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL;
	VkAccessFlags last_access = VK_ACCESS_TRANSFER_WRITE_BIT;
	if (readback != NULL) {
		// The screenshot: what the swapchain image holds, copied back out.
		image_barrier(s, img, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
		              VK_ACCESS_TRANSFER_READ_BIT, last, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, NULL);
		s->CmdCopyImageToBuffer(s->copy, img, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, (VkBuffer)readback, 1, &region);
		last = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
		last_access = VK_ACCESS_TRANSFER_READ_BIT;
	}
	VkMemoryBarrier host = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
	host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
	image_barrier(s, img, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT | VK_PIPELINE_STAGE_HOST_BIT,
	              last_access, 0, last, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, readback != NULL ? &host : NULL);
	if ((r = s->EndCommandBuffer(s->copy)) != VK_SUCCESS) return r;

	VkCommandBuffer cmds[2];
	uint32_t ncmd = 0;
	if (draw != NULL) cmds[ncmd++] = (VkCommandBuffer)draw;
	cmds[ncmd++] = s->copy;
	VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
	si.waitSemaphoreCount = 1;
	si.pWaitSemaphores = &s->acquired;
	si.pWaitDstStageMask = &wait_stage;
	si.commandBufferCount = ncmd;
	si.pCommandBuffers = cmds;
	si.signalSemaphoreCount = 1;
	si.pSignalSemaphores = &s->rendered[index];
	if ((r = d->ResetFences(d->dev, 1, &s->fence)) != VK_SUCCESS) return r;
	if ((r = d->QueueSubmit(d->queue, 1, &si, s->fence)) != VK_SUCCESS) return r;
	const uint64_t slice = 1000000000ull;
	for (uint64_t waited = 0;; waited += slice) {
		r = d->WaitForFences(d->dev, 1, &s->fence, VK_TRUE, slice);
		if (r != VK_TIMEOUT || waited + slice >= timeout_ns) break;
	}
	if (r != VK_SUCCESS) return r;

	VkPresentInfoKHR pi = {VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
	pi.waitSemaphoreCount = 1;
	pi.pWaitSemaphores = &s->rendered[index];
	pi.swapchainCount = 1;
	pi.pSwapchains = &s->sc;
	pi.pImageIndices = &index;
	return s->Present(d->queue, &pi);
}
