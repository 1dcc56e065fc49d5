/* rootfs/unpack/xz.c — liblzma for libarchive's xz, lzma and lzip readers,
 * loaded with dlopen() on the first such archive.
 *
 * Linked statically, liblzma would run a constructor on every start of
 * gpurun, a warm launch included: it picks its CRC-64 code with cpuid,
 * which a hypervisor that traps the instruction makes cost tens of
 * microseconds, and most images are gzip or zstd.  So gpurun defines the
 * entry points libarchive's xz filter calls, with liblzma's own
 * declarations, and each forwards to liblzma.so.5, loaded the first time
 * one is called (dpkg depends on liblzma5: every Debian system has it).
 * Nothing else in gpurun calls liblzma. */
#include "unpack.h"

#include <dlfcn.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>

static struct {
	pthread_once_t once;
	char why[160]; /* dlopen's words, when it failed */
	lzma_ret (*code)(lzma_stream *, lzma_action);
	void (*end)(lzma_stream *);
	lzma_ret (*stream_decoder)(lzma_stream *, uint64_t, uint32_t);
	lzma_ret (*alone_decoder)(lzma_stream *, uint64_t);
	lzma_ret (*raw_decoder)(lzma_stream *, const lzma_filter *);
	lzma_ret (*properties_decode)(lzma_filter *, const lzma_allocator *, const uint8_t *, size_t);
	uint32_t (*crc32)(const uint8_t *, size_t, uint32_t);
	int ready;
} xz = {.once = PTHREAD_ONCE_INIT};

/* A call of this thread's reader found no library: xz_refusal() says why.
 * Per thread because a reader runs in one, and a pull's layers in several:
 * another layer's failure keeps its own words. */
static __thread int refused;

#define XZ_LIB "liblzma.so.5"

static void xz_load(void)
{
	void *h = dlopen(XZ_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(xz.why, sizeof xz.why, "cannot load " XZ_LIB " (%s)", e ? e : "no reason given");
		return;
	}
	xz.code = (lzma_ret(*)(lzma_stream *, lzma_action))dlsym(h, "lzma_code");
	xz.end = (void (*)(lzma_stream *))dlsym(h, "lzma_end");
	xz.stream_decoder = (lzma_ret(*)(lzma_stream *, uint64_t, uint32_t))dlsym(h, "lzma_stream_decoder");
	xz.alone_decoder = (lzma_ret(*)(lzma_stream *, uint64_t))dlsym(h, "lzma_alone_decoder");
	xz.raw_decoder = (lzma_ret(*)(lzma_stream *, const lzma_filter *))dlsym(h, "lzma_raw_decoder");
	xz.properties_decode = (lzma_ret(*)(lzma_filter *, const lzma_allocator *, const uint8_t *, size_t))dlsym(
		h, "lzma_properties_decode");
	xz.crc32 = (uint32_t(*)(const uint8_t *, size_t, uint32_t))dlsym(h, "lzma_crc32");
	xz.ready = xz.code && xz.end && xz.stream_decoder && xz.alone_decoder && xz.raw_decoder &&
		   xz.properties_decode && xz.crc32;
	if (!xz.ready)
		snprintf(xz.why, sizeof xz.why, "cannot load " XZ_LIB " (it lacks a function libarchive calls)");
}

static int xz_ready(void)
{
	if (pthread_once(&xz.once, xz_load) == 0 && xz.ready)
		return 1;
	refused = 1;
	return 0;
}

const char *xz_refusal(void)
{
	return refused ? xz.why : NULL;
}

void xz_refusal_clear(void)
{
	refused = 0;
}

/* Without the library, setting a stream up "succeeds" and its first
 * lzma_code() fails, which libarchive reports as a failed read, in words
 * that reader_error() replaces with xz_refusal()'s.  A failed setup would
 * not do: libarchive 3.6 frees the reader's state on it and then reads it
 * again when the reader is closed. */
lzma_ret lzma_code(lzma_stream *strm, lzma_action action)
{
	return xz_ready() ? xz.code(strm, action) : LZMA_PROG_ERROR;
}

void lzma_end(lzma_stream *strm)
{
	/* Only a stream that a loaded library set up has anything to free. */
	if (xz_ready())
		xz.end(strm);
}

lzma_ret lzma_stream_decoder(lzma_stream *strm, uint64_t memlimit, uint32_t flags)
{
	return xz_ready() ? xz.stream_decoder(strm, memlimit, flags) : LZMA_OK;
}

lzma_ret lzma_alone_decoder(lzma_stream *strm, uint64_t memlimit)
{
	return xz_ready() ? xz.alone_decoder(strm, memlimit) : LZMA_OK;
}

lzma_ret lzma_raw_decoder(lzma_stream *strm, const lzma_filter *filters)
{
	return xz_ready() ? xz.raw_decoder(strm, filters) : LZMA_OK;
}

lzma_ret lzma_properties_decode(lzma_filter *filter, const lzma_allocator *allocator, const uint8_t *props,
				size_t props_size)
{
	if (xz_ready())
		return xz.properties_decode(filter, allocator, props, props_size);
	filter->options = NULL; /* what the caller frees */
	return LZMA_OK;
}

uint32_t lzma_crc32(const uint8_t *buf, size_t size, uint32_t crc)
{
	/* Only called on what lzma_code() decoded. */
	return xz_ready() ? xz.crc32(buf, size, crc) : crc;
}
