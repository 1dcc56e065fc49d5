/* rootfs/unpack/handoff.c — the blocks passed between the decompressor thread
 * (the writer) and the thread that makes the files (the reader).
 *
 * Three things make it cheap on a small virtual machine, where waking a
 * thread on the other vCPU is an interprocessor interrupt and a page fault
 * costs microseconds:
 *   - a thread is woken only when it sleeps, outside the lock (a wake-up
 *     under the lock made the woken thread sleep again on the mutex: a
 *     second futex round trip per block), and a writer waiting for room is
 *     woken only once half the blocks are free, so it refills many blocks
 *     per wake-up instead of one;
 *   - the blocks are one mapping that asks for transparent huge pages, so
 *     each 2 MiB of it costs one page fault instead of 512.  Without THP
 *     it is plain memory: only its first touch of each page costs more;
 *   - free blocks are a stack: the writer refills the block the reader
 *     gave back last, still in the cache, and goes deeper into the mapping
 *     (touching new pages) only while the reader has a backlog. */
#include "unpack.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define POOL_BYTES ((size_t)HANDOFF_SLOTS * HANDOFF_BLOCK)
#define HUGE_PAGE (2UL << 20)
/* One huge page's worth of extra room, to start the blocks on a 2 MiB
 * boundary: a huge page is only used for an aligned 2 MiB range. */
#define MAP_BYTES (POOL_BYTES + HUGE_PAGE)

int handoff_init(struct handoff *h)
{
	memset(h, 0, sizeof *h);
	void *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	h->map = p;
	h->blocks = (unsigned char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	/* Advice only: EINVAL on a kernel without THP changes nothing. */
	(void)madvise(h->blocks, POOL_BYTES, MADV_HUGEPAGE);
	/* Block 0 on top: the first blocks used are the first in memory. */
	for (unsigned i = 0; i < HANDOFF_SLOTS; i++)
		h->spare[i] = (unsigned short)(HANDOFF_SLOTS - 1 - i);
	h->nspare = HANDOFF_SLOTS;
	h->held = h->filling = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->filled, NULL);
	pthread_cond_init(&h->freed, NULL);
	return 0;
}

void handoff_destroy(struct handoff *h)
{
	if (!h->map)
		return;
	pthread_cond_destroy(&h->freed);
	pthread_cond_destroy(&h->filled);
	pthread_mutex_destroy(&h->lock);
	munmap(h->map, MAP_BYTES);
	h->map = NULL;
}

ssize_t handoff_take(struct handoff *h, const void **data, unsigned long long *mark)
{
	ssize_t n = 0;
	int wake_writer = 0;
	pthread_mutex_lock(&h->lock);
	if (h->held >= 0) {
		h->spare[h->nspare++] = (unsigned short)h->held;
		h->held = -1;
		/* A writer waits with no block free, so the reader passes half
		 * free, and wakes it, long before its own queue runs dry. */
		wake_writer = h->writer_waits && h->nspare >= HANDOFF_SLOTS / 2;
	}
	while (h->qhead == h->qtail && !h->writer_done) {
		h->reader_waits = 1;
		pthread_cond_wait(&h->filled, &h->lock);
	}
	h->reader_waits = 0;
	unsigned long long m = 0;
	if (h->qhead != h->qtail) {
		h->held = h->queue[h->qtail++ % HANDOFF_SLOTS];
		*data = h->blocks + (size_t)h->held * HANDOFF_BLOCK;
		n = (ssize_t)h->len[h->held];
		m = h->mark[h->held];
	}
	pthread_mutex_unlock(&h->lock);
	if (wake_writer)
		pthread_cond_signal(&h->freed);
	if (mark)
		*mark = m;
	return n;
}

void handoff_close_reader(struct handoff *h)
{
	pthread_mutex_lock(&h->lock);
	h->reader_gone = 1;
	pthread_mutex_unlock(&h->lock);
	pthread_cond_broadcast(&h->freed);
}

unsigned char *handoff_slot(struct handoff *h)
{
	unsigned char *b = NULL;
	pthread_mutex_lock(&h->lock);
	while (!h->nspare && !h->reader_gone) {
		h->writer_waits = 1;
		pthread_cond_wait(&h->freed, &h->lock);
	}
	h->writer_waits = 0;
	if (!h->reader_gone) {
		h->filling = h->spare[--h->nspare];
		b = h->blocks + (size_t)h->filling * HANDOFF_BLOCK;
	}
	pthread_mutex_unlock(&h->lock);
	return b;
}

void handoff_publish(struct handoff *h, size_t len, unsigned long long mark)
{
	pthread_mutex_lock(&h->lock);
	h->len[h->filling] = len;
	h->mark[h->filling] = mark;
	h->queue[h->qhead++ % HANDOFF_SLOTS] = (unsigned short)h->filling;
	h->filling = -1;
	int wake = h->reader_waits;
	pthread_mutex_unlock(&h->lock);
	/* The reader set reader_waits under the lock before its wait began,
	 * so it is already a waiter of the condition: the signal reaches it. */
	if (wake)
		pthread_cond_signal(&h->filled);
}

void handoff_close_writer(struct handoff *h)
{
	pthread_mutex_lock(&h->lock);
	h->writer_done = 1;
	pthread_mutex_unlock(&h->lock);
	pthread_cond_broadcast(&h->filled);
}
