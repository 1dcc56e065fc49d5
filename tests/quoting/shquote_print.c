/* tests/quoting/shquote_print.c — prints "printf %s WORD" for the bytes of
 * the file named by its argument, WORD being gpurun's quoting of them, so
 * that tests/quoting.bats can hand the line to dash, bash and busybox sh. */
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>

#include "../../base/base.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	size_t len;
	struct gerr err = {0};
	char *s = read_small_file_at(AT_FDCWD, argv[1], 1 << 20, &len, &err);
	if (!s) {
		fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	struct sbuf b = {0};
	sbuf_shquote(&b, s);
	printf("printf %%s %s", b.s);
	sbuf_free(&b);
	free(s);
	return 0;
}
