/* gpu/nvml.h — the one copy of NVML's ABI in gpurun: the subset of
 * NVIDIA's nvml.h that the helpers (nvmlmig.c's MIG UUIDs, doctor.c's
 * --gpus check) and the smoke probe (gpu/probe/smoke.c) call through
 * dlsym.  Types and values as nvml.h defines them; the probe, linked
 * against the C library only, includes nothing else of gpurun. */
#ifndef GPURUN_GPU_NVML_H
#define GPURUN_GPU_NVML_H

typedef void *nvml_dev;       /* nvmlDevice_t */
typedef void *nvml_event_set; /* nvmlEventSet_t */

/* nvmlPciInfo_t, version 3 (nvmlDeviceGetPciInfo_v3). */
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvml_pci;

/* nvmlEventData_t as nvmlEventSetWait_v2 fills it (NVML 11.0 on): for an
 * Xid event, eventData is the Xid number (999 when NVML does not know it);
 * the instance ids are 0xffffffff unless MIG can blame one. */
typedef struct {
	nvml_dev device;
	unsigned long long eventType;
	unsigned long long eventData;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvml_event;

#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL /* nvmlEventTypeXidCriticalError */

#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_TIMEOUT 10

#endif
