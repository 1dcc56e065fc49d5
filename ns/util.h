/* ns/util.h — small helpers every part of gpurun shares: errors as values,
 * checked allocation, a growable string buffer and shell quoting for the
 * --dry-run/--verbose view.
 *
 * Library-like code (rootfs/, gpu/, parsers) reports failure through a
 * `struct gerr` and never exits; only gpurun.c and the process glue in ns/
 * decide to die.  A message reads "<what failed>: <object>: <strerror>". */
#ifndef GPURUN_UTIL_H
#define GPURUN_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define GPURUN_EXIT_FAIL 125   /* gpurun itself failed */
#define GPURUN_EXIT_NOEXEC 126 /* the command exists but cannot be run */
#define GPURUN_EXIT_NOTFOUND 127

struct gerr {
	int code;       /* exit status to use when this error ends the run */
	char msg[1024]; /* one line, no "gpurun: " prefix, no newline */
	char hint[256]; /* optional second line, "" when none */
};

/* Fill err; errnum != 0 appends ": strerror(errnum)".  Returns -1 so that
 * callers can write `return gerr_set(err, errno, "open %s", path);`. */
int gerr_set(struct gerr *err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int gerr_hint(struct gerr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix context onto an existing message: "ctx: old message". */
int gerr_prefix(struct gerr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "gpurun: msg" (and "hint: ..." when set) to stderr and exit(code). */
__attribute__((noreturn)) void gerr_die(const struct gerr *err);
__attribute__((noreturn, format(printf, 2, 3))) void die(int code, const char *fmt, ...);
/* Like die(), appending ": strerror(errno)". */
__attribute__((noreturn, format(printf, 1, 2))) void die_errno(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void warnx_(const char *fmt, ...);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Growable, always NUL-terminated buffer. */
struct sbuf {
	char *s;
	size_t len, cap;
};
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s quoted for a POSIX shell (bare when it is safe). */
void sbuf_shquote(struct sbuf *b, const char *s);
void sbuf_free(struct sbuf *b);

/* Read a whole small file (at most max bytes) from dirfd/path.  The file must
 * be a regular file: opened O_NOFOLLOW|O_NONBLOCK so a FIFO planted in an
 * image cannot hang us.  Returns a malloc'ed NUL-terminated buffer or NULL
 * with err set. */
char *read_small_file_at(int dirfd, const char *path, size_t max, size_t *len, struct gerr *err);

/* Parse exactly n decimal digits (no sign, no spaces) into *out, refusing
 * values above max.  Returns 0, or -1 when malformed or too big.  Shared by
 * the parsers of image and /proc files, which must never trust their input. */
int parse_decimal(const char *s, size_t n, unsigned long max, unsigned long *out);

/* write(2) all of buf, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t n);

/* Cleanup helpers (GCC/clang cleanup attribute) keep error paths flat. */
void cleanup_fdp(int *fd);
void cleanup_freep(void *p);
#define _cleanup_fd_ __attribute__((cleanup(cleanup_fdp)))
#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))

#endif
