/* gpu/models.c — Brand and Architecture for `gpurun info` and for brand=/arch=
 * requirements, derived from the model name in /proc/driver/nvidia.
 *
 * nvidia-container-cli asks NVML for these (nvmlDeviceGetBrand,
 * nvmlDeviceGetCudaComputeCapability).  gpurun does not load NVML into the
 * launcher, so it reads them off the model string instead:
 *   - Brand: the strings nvidia-container-cli prints — Quadro, Tesla, NVS,
 *     GRID, GeForce, TITAN — and "Unknown" for everything else.  That
 *     includes current data-centre parts ("NVIDIA H100 80GB HBM3"): NVML
 *     reports them as brand NVIDIA, which nvidia-container-cli has no name
 *     for, which is why CUDA images carry brand=unknown alternatives.
 *   - Architecture: the CUDA compute capability "major.minor" from a small
 *     table of model tokens; "n/a" when the model is not in it (a missing
 *     value satisfies any arch= requirement, as an unknown NVML value does). */
#include "gpu_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *token;
	const char *brand;
} brands[] = {
	{"Quadro", "Quadro"}, {"Tesla", "Tesla"},     {"NVS", "NVS"},
	{"GRID", "GRID"},     {"GeForce", "GeForce"}, {"TITAN", "TITAN"},
};

static const struct {
	const char *token;
	const char *arch;
} archs[] = {
	{"K80", "3.7"},   {"M60", "5.2"},   {"P100", "6.0"},  {"P40", "6.1"},   {"P4", "6.1"},     {"V100", "7.0"},
	{"V100S", "7.0"}, {"T4", "7.5"},    {"A100", "8.0"},  {"A800", "8.0"},  {"A30", "8.0"},    {"A10", "8.6"},
	{"A10G", "8.6"},  {"A16", "8.6"},   {"A2", "8.6"},    {"A40", "8.6"},   {"A2000", "8.6"},  {"A4000", "8.6"},
	{"A4500", "8.6"}, {"A5000", "8.6"}, {"A5500", "8.6"}, {"A6000", "8.6"}, {"L4", "8.9"},     {"L20", "8.9"},
	{"L40", "8.9"},   {"L40S", "8.9"},  {"Ada", "8.9"},   {"H100", "9.0"},  {"H200", "9.0"},   {"H800", "9.0"},
	{"H20", "9.0"},   {"GH200", "9.0"}, {"B100", "10.0"}, {"B200", "10.0"}, {"GB200", "10.0"},
};

/* GeForce series by the first two digits after RTX/GTX ("RTX 4090"). */
static const struct {
	const char *prefix;
	const char *arch;
} series[] = {
	{"50", "12.0"}, {"40", "8.9"}, {"30", "8.6"}, {"20", "7.5"}, {"16", "7.5"}, {"10", "6.1"},
};

#define MAX_TOKENS 16

/* Split a copy of the model on spaces and dashes. */
static size_t tokens(const char *model, char *buf, size_t cap, char **tok)
{
	size_t n = 0;
	snprintf(buf, cap, "%s", model);
	for (char *save = NULL, *t = strtok_r(buf, " -", &save); t && n < MAX_TOKENS; t = strtok_r(NULL, " -", &save))
		tok[n++] = t;
	return n;
}

const char *model_brand(const char *model)
{
	char buf[128], *tok[MAX_TOKENS];
	size_t n = tokens(model, buf, sizeof buf, tok);
	for (size_t i = 0; i < n; i++)
		for (size_t b = 0; b < COUNT_OF(brands); b++)
			if (!strcasecmp(tok[i], brands[b].token))
				return brands[b].brand;
	return "Unknown";
}

const char *model_arch(const char *model)
{
	char buf[128], *tok[MAX_TOKENS];
	size_t n = tokens(model, buf, sizeof buf, tok);
	for (size_t i = 0; i < n; i++) {
		/* "Quadro RTX 6000" is Turing, unlike "RTX 6000 Ada". */
		if (!strcasecmp(tok[i], "Quadro") && i + 1 < n && !strcasecmp(tok[i + 1], "RTX"))
			return "7.5";
		for (size_t a = 0; a < COUNT_OF(archs); a++)
			if (!strcasecmp(tok[i], archs[a].token))
				return archs[a].arch;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		if (strcasecmp(tok[i], "RTX") && strcasecmp(tok[i], "GTX"))
			continue;
		if (strlen(tok[i + 1]) != 4 || strspn(tok[i + 1], "0123456789") != 4)
			continue;
		for (size_t s = 0; s < COUNT_OF(series); s++)
			if (!strncmp(tok[i + 1], series[s].prefix, 2))
				return series[s].arch;
	}
	return "n/a";
}
