/* rootfs/handoff.c — the ring of blocks between the decompressor thread
 * (the writer) and the thread that makes the files (the reader).
 *
 * Two things make it cheap on a small virtual machine, where waking a
 * thread on the other vCPU is an interprocessor interrupt and a page fault
 * costs microseconds:
 *   - a thread is woken only when it sleeps, outside the lock (a wake-up
 *     under the lock made the woken thread sleep again on the mutex: a
 *     second futex round trip per block), and a writer waiting for room is
 *     woken only once half the ring is free, so it refills several blocks
 *     per wake-up instead of one (Debian minbase: about 2,400 futex calls
 *     per launch before);
 *   - the ring is one 2 MiB mapping that asks for a transparent huge page,
 *     so it costs one page fault instead of 512.  Without THP it is plain
 *     memory: only its first touch of each page costs more. */
#include "rootfs_int.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define RING_BYTES ((size_t)HANDOFF_SLOTS * HANDOFF_BLOCK)
#define HUGE_PAGE (2UL << 20)
/* One huge page's worth of extra room, to start the ring on a 2 MiB
 * boundary: a huge page is only used for an aligned 2 MiB range. */
#define MAP_BYTES (RING_BYTES + HUGE_PAGE)

int handoff_init(struct handoff *h)
{
	memset(h, 0, sizeof *h);
	void *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	h->map = p;
	unsigned char *ring = (unsigned char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	/* Advice only: EINVAL on a kernel without THP changes nothing. */
	(void)madvise(ring, RING_BYTES, MADV_HUGEPAGE);
	for (int i = 0; i < HANDOFF_SLOTS; i++)
		h->buf[i] = ring + (size_t)i * HANDOFF_BLOCK;
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

ssize_t handoff_take(struct handoff *h, const void **data)
{
	ssize_t n = 0;
	int wake_writer = 0;
	pthread_mutex_lock(&h->lock);
	if (h->holding) {
		h->tail++;
		h->holding = 0;
		/* A writer waits on a full ring, so the reader passes half
		 * full, and wakes it, before the ring can run empty. */
		wake_writer = h->writer_waits && h->head - h->tail <= HANDOFF_SLOTS / 2;
	}
	while (h->head == h->tail && !h->writer_done) {
		h->reader_waits = 1;
		pthread_cond_wait(&h->filled, &h->lock);
	}
	h->reader_waits = 0;
	if (h->head != h->tail) {
		*data = h->buf[h->tail % HANDOFF_SLOTS];
		n = (ssize_t)h->len[h->tail % HANDOFF_SLOTS];
		h->holding = 1;
	}
	pthread_mutex_unlock(&h->lock);
	if (wake_writer)
		pthread_cond_signal(&h->freed);
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
	while (h->head - h->tail >= HANDOFF_SLOTS && !h->reader_gone) {
		h->writer_waits = 1;
		pthread_cond_wait(&h->freed, &h->lock);
	}
	h->writer_waits = 0;
	if (!h->reader_gone)
		b = h->buf[h->head % HANDOFF_SLOTS];
	pthread_mutex_unlock(&h->lock);
	return b;
}

void handoff_publish(struct handoff *h, size_t len)
{
	pthread_mutex_lock(&h->lock);
	h->len[h->head % HANDOFF_SLOTS] = len;
	h->head++;
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
