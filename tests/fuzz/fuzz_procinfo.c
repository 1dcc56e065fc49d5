/* tests/fuzz/fuzz_procinfo.c — the /proc/driver/nvidia and /proc/devices
 * parsers of gpu/procfs.c (information, version, params, devices) and the
 * PCI bus id normaliser, on the same arbitrary bytes.  The buffer is not
 * NUL-terminated, as a file read by length is not. */
#include <stdlib.h>
#include <string.h>

#include "../../gpu/gpu_int.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	memcpy(buf, data, size);

	struct gpu_information info;
	if (procfs_parse_information(buf, size, &info) == 0 && (info.minor < 0 || info.minor > 253))
		abort();
	if (strnlen(info.model, sizeof info.model) == sizeof info.model ||
	    strnlen(info.uuid, sizeof info.uuid) == sizeof info.uuid)
		abort();

	char ver[32];
	if (procfs_parse_version(buf, size, ver, sizeof ver) == 0 && !strchr(ver, '.'))
		abort();

	size_t outlen;
	char *params = procfs_params_no_modify(buf, size, &outlen);
	/* The rewrite must always leave the driver unable to create nodes (the
	 * copy may hold NULs from the input: search by length). */
	if (!memmem(params, outlen, "ModifyDeviceFiles: 0\n", 21) || params[outlen] != '\0')
		abort();
	free(params);

	unsigned major;
	(void)procfs_devices_major(buf, size, "nvidia-uvm", &major);

	char *s = malloc(size + 1), bus[32];
	memcpy(s, data, size);
	s[size] = '\0';
	if (busid_normalize(s, bus, sizeof bus) == 0 && strlen(bus) != 16)
		abort();
	free(s);
	free(buf);
	return 0;
}
