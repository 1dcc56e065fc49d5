/* tests/fakedriver/tool.c — stand-in for the driver's other utilities
 * (nvidia-debugdump, nvidia-persistenced, nvidia-cuda-mps-control, ...):
 * prints its own name, so a test can see which file a path resolved to. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	(void)argc;
	const char *slash = strrchr(argv[0], '/');
	printf("fake %s\n", slash ? slash + 1 : argv[0]);
	return 0;
}
