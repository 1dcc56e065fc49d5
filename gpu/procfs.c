/* gpu/procfs.c — the small text formats the NVIDIA kernel module publishes
 * parsed without NVML:
 *
 *   /proc/driver/nvidia/version            "NVRM version: NVIDIA UNIX x86_64
 *                                           Kernel Module  550.54.14  <date>"
 *   /proc/driver/nvidia/gpus/<bus>/information   "Model: \t\t NVIDIA H100 ..."
 *   /proc/driver/nvidia/params             "ModifyDeviceFiles: 1"
 *   /proc/devices                          "510 nvidia-uvm"
 *
 * Pure functions over (text, len): the buffer may contain NULs and need
 * not be terminated, nothing is read past len, nothing exits.  The fuzz
 * target fuzz_procinfo drives all of them. */
#include "gpu_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct lines {
	const char *p, *end;
};

/* The next line (without its newline) or 0 at the end. */
static int next_line(struct lines *it, const char **line, size_t *n)
{
	if (it->p >= it->end)
		return 0;
	const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
	const char *stop = nl ? nl : it->end;
	*line = it->p;
	*n = (size_t)(stop - it->p);
	it->p = nl ? nl + 1 : it->end;
	return 1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\0';
}

/* Trim [*s, *s+*n) in place. */
static void trim(const char **s, size_t *n)
{
	while (*n && is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_blank((*s)[*n - 1]))
		(*n)--;
}

/* Split "Key:  value" into trimmed key and value; 0 when there is no ':'. */
static int split_key(const char *line, size_t n, const char **k, size_t *kn, const char **v, size_t *vn)
{
	const char *colon = memchr(line, ':', n);
	if (!colon)
		return 0;
	*k = line;
	*kn = (size_t)(colon - line);
	*v = colon + 1;
	*vn = n - *kn - 1;
	trim(k, kn);
	trim(v, vn);
	return 1;
}

static int key_is(const char *k, size_t kn, const char *want)
{
	return kn == strlen(want) && !memcmp(k, want, kn);
}

/* Copy a value, truncated to the buffer, with control characters (and
 * embedded NULs) replaced: these strings end up in messages and files. */
static void copy_value(char *dst, size_t cap, const char *v, size_t vn)
{
	size_t i;
	for (i = 0; i < vn && i + 1 < cap; i++)
		dst[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	dst[i] = '\0';
}

/* Decimal in [0, max], the whole string; -1 otherwise. */
static long parse_small_uint(const char *s, size_t n, long max)
{
	unsigned long v;
	return parse_decimal(s, n, (unsigned long)max, &v) < 0 ? -1 : (long)v;
}

int procfs_parse_information(const char *text, size_t len, struct gpu_information *out)
{
	struct lines it = {text, text + len};
	const char *line, *k, *v;
	size_t n, kn, vn;

	memset(out, 0, sizeof *out);
	out->minor = -1;
	while (next_line(&it, &line, &n)) {
		if (!split_key(line, n, &k, &kn, &v, &vn))
			continue;
		if (key_is(k, kn, "Model"))
			copy_value(out->model, sizeof out->model, v, vn);
		else if (key_is(k, kn, "GPU UUID"))
			copy_value(out->uuid, sizeof out->uuid, v, vn);
		else if (key_is(k, kn, "Bus Location"))
			copy_value(out->bus, sizeof out->bus, v, vn);
		else if (key_is(k, kn, "GPU Excluded"))
			out->excluded = vn == 3 && !memcmp(v, "Yes", 3);
		else if (key_is(k, kn, "Device Minor"))
			/* 254 and 255 are nvidia-modeset and nvidiactl. */
			out->minor = parse_small_uint(v, vn, NV_MODESET_MINOR - 1);
	}
	return out->minor >= 0 ? 0 : -1;
}

/* "550.54.14", "470.57", not "x86_64" or "2.0-beta". */
static int is_version_token(const char *t, size_t n)
{
	size_t dots = 0;
	int digit = 0;
	for (size_t i = 0; i < n; i++) {
		if (t[i] >= '0' && t[i] <= '9') {
			digit = 1;
		} else if (t[i] == '.' && digit) {
			dots++;
			digit = 0;
		} else {
			return 0;
		}
	}
	return digit && dots >= 1 && dots <= 2;
}

int procfs_parse_version(const char *text, size_t len, char *out, size_t cap)
{
	struct lines it = {text, text + len};
	const char *line;
	size_t n;
	if (!next_line(&it, &line, &n))
		return -1;
	for (size_t i = 0; i < n;) {
		while (i < n && is_blank(line[i]))
			i++;
		size_t start = i;
		while (i < n && !is_blank(line[i]))
			i++;
		if (i > start && is_version_token(line + start, i - start) && i - start < cap) {
			memcpy(out, line + start, i - start);
			out[i - start] = '\0';
			return 0;
		}
	}
	return -1;
}

char *procfs_params_no_modify(const char *text, size_t len, size_t *outlen)
{
	struct lines it = {text, text + len};
	struct sbuf b = {0};
	const char *line, *k, *v;
	size_t n, kn, vn;
	int found = 0;

	sbuf_add(&b, "", 0);
	while (next_line(&it, &line, &n)) {
		if (split_key(line, n, &k, &kn, &v, &vn)) {
			/* Some mock drivers write the module parameter name. */
			int nvreg = kn > 6 && !memcmp(k, "NVreg_", 6);
			if (key_is(k + 6 * nvreg, kn - 6 * (size_t)nvreg, "ModifyDeviceFiles")) {
				/* Replace the value: the user-mode driver then never
				 * mknods or chmods /dev/nvidia* for GPUs this
				 * container was not given. */
				sbuf_puts(&b, nvreg ? "NVreg_ModifyDeviceFiles: 0\n" : "ModifyDeviceFiles: 0\n");
				found = 1;
				continue;
			}
		}
		sbuf_add(&b, line, n);
		sbuf_puts(&b, "\n");
	}
	if (!found)
		sbuf_puts(&b, "ModifyDeviceFiles: 0\n");
	*outlen = b.len;
	return b.s;
}

int procfs_devices_major(const char *text, size_t len, const char *name, unsigned *major)
{
	struct lines it = {text, text + len};
	const char *line;
	size_t n;
	int chr = 0;
	while (next_line(&it, &line, &n)) {
		trim(&line, &n);
		if (key_is(line, n, "Character devices:")) {
			chr = 1;
			continue;
		}
		if (key_is(line, n, "Block devices:"))
			chr = 0;
		if (!chr || n == 0)
			continue;
		size_t d = 0;
		while (d < n && isdigit((unsigned char)line[d]))
			d++;
		const char *dev = line + d;
		size_t dn = n - d;
		trim(&dev, &dn);
		long m = parse_small_uint(line, d, 4095);
		if (m >= 0 && d < n && dn == strlen(name) && !memcmp(dev, name, dn)) {
			*major = (unsigned)m;
			return 1;
		}
	}
	return 0;
}
