/* tests/unit/handoff_test.c — the blocks between the decompressor thread and
 * the extracting thread (rootfs/unpack/handoff.c): blocks arrive whole and in the
 * order they were filled, a writer can run a whole pool ahead of the reader
 * and then waits, a block given back is the next one filled (so a reader
 * that keeps up touches only the first blocks of the mapping), a block's
 * mark reaches the reader with it, also on an empty block, and either side's
 * end releases the other.
 *
 *   handoff_test --list     the names of the cases
 *   handoff_test CASE       run one case: exit 0, or 1 with what was wrong
 *
 * tests/unit.bats runs every case; `make unit` builds this under ASan and
 * UBSan. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../rootfs/unpack/unpack.h"
#include "unit.h"

/* Block n of a stream: n + 1 bytes times 97 (never a whole block, never
 * empty), byte i being (n * 31 + i) mod 253. */
static size_t block_len(unsigned n)
{
	return (size_t)(n + 1) * 97 % HANDOFF_BLOCK + 1;
}

static void fill(unsigned char *b, unsigned n)
{
	size_t len = block_len(n);
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)((n * 31 + i) % 253);
}

static int intact(const unsigned char *b, size_t len, unsigned n)
{
	if (len != block_len(n))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (b[i] != (unsigned char)((n * 31 + i) % 253))
			return 0;
	return 1;
}

static void init_or_die(struct handoff *h)
{
	if (handoff_init(h) < 0) {
		perror("handoff_init");
		exit(2);
	}
}

static void nap(void)
{
	nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
}

struct writer {
	struct handoff *h;
	unsigned blocks; /* how many to publish, then close */
	unsigned done;   /* published so far (atomic) */
	int stopped;     /* handoff_slot() said the reader has gone */
};

static void *write_blocks(void *arg)
{
	struct writer *w = arg;
	for (unsigned n = 0; n < w->blocks; n++) {
		unsigned char *b = handoff_slot(w->h);
		if (!b) {
			w->stopped = 1;
			break;
		}
		fill(b, n);
		handoff_publish(w->h, block_len(n), 0);
		__atomic_store_n(&w->done, n + 1, __ATOMIC_RELEASE);
	}
	handoff_close_writer(w->h);
	return NULL;
}

/* h, initialised, and a thread publishing blocks blocks into it. */
static void start_writer(struct handoff *h, struct writer *w, unsigned blocks, pthread_t *t)
{
	init_or_die(h);
	*w = (struct writer){.h = h, .blocks = blocks};
	pthread_create(t, NULL, write_blocks, w);
}

/* Up to 10 s for the writer to have published n blocks. */
static unsigned wait_published(struct writer *w, unsigned n)
{
	for (int i = 0; i < 500 && __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) < n; i++)
		nap();
	return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
}

/* Three pools' worth through a reader slower than the writer: every block
 * once, whole, in order, and then the end. */
static void case_in_order(void)
{
	struct handoff h;
	struct writer w;
	pthread_t t;
	start_writer(&h, &w, 3 * HANDOFF_SLOTS, &t);
	const void *data;
	ssize_t len;
	unsigned n = 0;
	while ((len = handoff_take(&h, &data, NULL)) > 0) {
		CHECK(intact(data, (size_t)len, n), "block %u arrived whole (%zd bytes)", n, len);
		if (n % 50 == 0)
			nap(); /* let the writer run ahead, the pool fill up */
		n++;
	}
	CHECK(len == 0, "the end is 0, not %zd", len);
	CHECK(n == 3 * HANDOFF_SLOTS, "%u blocks of %u", n, 3 * HANDOFF_SLOTS);
	CHECK(handoff_take(&h, &data, NULL) == 0, "still the end after the end");
	pthread_join(t, NULL);
	handoff_destroy(&h);
}

/* A reader that keeps up gets its blocks back into use at once: the writer
 * alternates between the first two blocks of the mapping, so a small image
 * touches 512 KiB of it, not the whole pool. */
static void case_reuses_the_block_given_back(void)
{
	struct handoff h;
	init_or_die(&h);
	unsigned char *first = NULL, *second = NULL;
	const void *data;
	for (unsigned n = 0; n < 4 * HANDOFF_SLOTS; n++) {
		unsigned char *b = handoff_slot(&h);
		CHECK(b != NULL, "a block for %u", n);
		if (!b)
			break;
		if (n == 0)
			first = b;
		else if (n == 1)
			second = b;
		else
			CHECK(b == (n % 2 ? second : first), "block %u reuses the one given back", n);
		fill(b, n);
		handoff_publish(&h, block_len(n), 0);
		ssize_t len = handoff_take(&h, &data, NULL);
		CHECK(data == b && intact(data, (size_t)len, n), "block %u read back", n);
	}
	CHECK(second == first + HANDOFF_BLOCK, "the first two blocks are the mapping's first two");
	CHECK(((uintptr_t)first & ((2u << 20) - 1)) == 0, "the blocks start on a 2 MiB boundary");
	handoff_destroy(&h);
}

/* With nobody reading, the writer fills every block of the pool, each a
 * different one, and then waits; blocks given back let it go on. */
static void case_backlog_then_wait(void)
{
	struct handoff h;
	struct writer w;
	pthread_t t;
	start_writer(&h, &w, HANDOFF_SLOTS + 1, &t);
	CHECK(wait_published(&w, HANDOFF_SLOTS) == HANDOFF_SLOTS, "the whole pool filled ahead");
	nap();
	CHECK(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) == HANDOFF_SLOTS, "no block %u with none free",
	      HANDOFF_SLOTS + 1);

	const void *data, *seen[HANDOFF_SLOTS];
	unsigned n = 0;
	ssize_t len;
	while ((len = handoff_take(&h, &data, NULL)) > 0) {
		CHECK(intact(data, (size_t)len, n), "block %u arrived whole", n);
		if (n < HANDOFF_SLOTS) {
			seen[n] = data;
			for (unsigned i = 0; i < n; i++)
				CHECK(seen[i] != data, "blocks %u and %u are different memory", i, n);
		}
		n++;
	}
	CHECK(n == HANDOFF_SLOTS + 1, "the last block came once others were given back (%u blocks)", n);
	pthread_join(t, NULL);
	handoff_destroy(&h);
}

/* A reader that stops early frees a writer waiting for room: handoff_slot()
 * gives NULL (the extracting side reports its own error). */
static void case_reader_gone_frees_the_writer(void)
{
	struct handoff h;
	struct writer w;
	pthread_t t;
	start_writer(&h, &w, 2 * HANDOFF_SLOTS, &t);
	const void *data;
	CHECK(handoff_take(&h, &data, NULL) > 0, "one block read");
	wait_published(&w, HANDOFF_SLOTS);
	handoff_close_reader(&h);
	pthread_join(t, NULL);
	CHECK(w.stopped, "the writer was told the reader has gone");
	CHECK(w.done < 2 * HANDOFF_SLOTS, "and stopped there (%u blocks)", w.done);
	handoff_destroy(&h);
}

/* Each block's mark comes with it; an empty marked block is not the end,
 * and the end itself carries no mark. */
static void case_marks(void)
{
	struct handoff h;
	init_or_die(&h);
	static const struct {
		size_t len;
		unsigned long long mark;
	} sent[] = {{1000, 0}, {0, FRAME_END | FRAME_SUM | 0xdeadbeef}, {HANDOFF_BLOCK, FRAME_END}, {7, 0}};
	for (size_t i = 0; i < sizeof sent / sizeof sent[0]; i++) {
		unsigned char *b = handoff_slot(&h);
		CHECK(b != NULL, "a block for %zu", i);
		if (b)
			handoff_publish(&h, sent[i].len, sent[i].mark);
	}
	handoff_close_writer(&h);
	const void *data;
	for (size_t i = 0; i < sizeof sent / sizeof sent[0]; i++) {
		unsigned long long mark = 42;
		ssize_t len = handoff_take(&h, &data, &mark);
		CHECK(len == (ssize_t)sent[i].len && mark == sent[i].mark, "block %zu: %zd bytes, mark %llx", i, len,
		      mark);
	}
	unsigned long long mark = 42;
	CHECK(handoff_take(&h, &data, &mark) == 0 && mark == 0, "the end, unmarked (mark %llx)", mark);
	handoff_destroy(&h);
}

int main(int argc, char **argv)
{
	static const struct unit_case cases[] = {
		{"in-order", case_in_order},
		{"reuses-the-block-given-back", case_reuses_the_block_given_back},
		{"backlog-then-wait", case_backlog_then_wait},
		{"reader-gone-frees-the-writer", case_reader_gone_frees_the_writer},
		{"marks", case_marks},
	};
	return unit_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
