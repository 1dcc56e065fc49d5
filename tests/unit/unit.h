/* tests/unit/unit.h — the harness every C unit test shares: CHECK() counts
 * a failed condition and says where, and unit_main() runs one named case
 * (or lists them) so that tests/unit.bats can report each as its own test.
 *
 *   X_test --list     the names of the cases
 *   X_test CASE       run one case: exit 0, or 1 with what was wrong */
#ifndef GPURUN_UNIT_H
#define GPURUN_UNIT_H

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
			failures++;                                                 \
		}                                                                   \
	} while (0)

struct unit_case {
	const char *name;
	void (*fn)(void);
};

static inline int unit_main(int argc, char **argv, const struct unit_case *cases, size_t n)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s --list | CASE\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(argv[1], "--list")) {
			puts(cases[i].name);
			continue;
		}
		if (strcmp(argv[1], cases[i].name))
			continue;
		cases[i].fn();
		return failures ? 1 : 0;
	}
	if (!strcmp(argv[1], "--list"))
		return 0;
	fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
	return 2;
}

#endif
