/* base/base.h — the helpers every directory of gpurun shares and that
 * depend on nothing else in the tree: errors as values, checked allocation,
 * string buffers and vectors, shell quoting for the teaching view, small-file
 * reading, the one in-root open, and cleanup attributes.
 *
 *   err.c   struct gerr, and the lines gpurun prints on stderr
 *   mem.c   allocation that cannot return NULL
 *   str.c   sbuf, strv, shell quoting, decimal parsing, sizes in words
 *   file.c  reading small files, writing all of a buffer, openat2 in a root
 *   check.c the verdicts `gpurun doctor` collects
 *   cpu.c   starting a child on another CPU than its parent's
 *   trust.c as root, whether a path is root's alone (docs/security.md)
 *   progress.c  progress lines redrawn in place on a terminal
 *
 * Layering (checked by `make layering`, tests/layering.sh): base/ includes
 * nothing of gpurun; base/plan/ uses only this header; rootfs/ and gpu/ use
 * base/, base/plan/ and ns/userns/; ns/ uses those and rootfs/ and gpu/;
 * gpurun.c and cli/ use everything.
 *
 * Library-like code (rootfs/, gpu/, parsers, the plan executor) reports
 * failure through a `struct gerr` and never exits; only the command line
 * (gpurun.c, cli/) decides to die, and the processes that ns/ starts end
 * themselves with _exit().  The
 * one exception is running out of memory (mem.c): there is no caller that
 * could do anything better than stop. */
#ifndef GPURUN_BASE_H
#define GPURUN_BASE_H

#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* The number of elements of an array (not of a pointer). */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#define GPURUN_EXIT_FAIL 125   /* gpurun itself failed */
#define GPURUN_EXIT_NOEXEC 126 /* the command exists but cannot be run */
#define GPURUN_EXIT_NOTFOUND 127

/* ---- err.c -------------------------------------------------------------- */

/* An error as a value.  A message reads "<what failed>: <object>: <strerror>". */
struct gerr {
	int code;       /* exit status to use when this error ends the run */
	int errnum;     /* the errno behind it, 0 when none: callers test this,
			 * never errno, which cleanup may have changed since */
	char msg[1024]; /* one line, no "gpurun: " prefix, no newline */
	char hint[256]; /* optional second line, "" when none */
};

/* Fill err; errnum != 0 appends ": strerror(errnum)" and is kept in
 * err->errnum.  Returns -1 so that callers can write
 * `return gerr_set(err, errno, "open %s", path);`. */
int gerr_set(struct gerr *err, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int gerr_hint(struct gerr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix context onto an existing message: "ctx: old message". */
int gerr_prefix(struct gerr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forget an error that the caller decided to tolerate. */
void gerr_clear(struct gerr *err);
/* "gpurun: msg\n" plus "hint: ...\n" when set, appended to b (defined with
 * the buffer below). */
struct sbuf;
void gerr_format(const struct gerr *err, struct sbuf *b);

__attribute__((format(printf, 1, 2))) void warnx_(const char *fmt, ...);
/* "gpurun: <message>" on stderr, shown as gerr_format shows a message. */
__attribute__((format(printf, 1, 2))) void errorx_(const char *fmt, ...);

/* ---- check.c ------------------------------------------------------------ */

/* `gpurun doctor` collects one verdict per check from ns/, gpu/ and rootfs/;
 * each says in one line what was found and, when it is not "ok", what to
 * change.  cli/doctor.c prints them. */
enum check_level { CHECK_OK, CHECK_WARN, CHECK_FAIL };

struct check_item {
	enum check_level level;
	char *name, *text;
};
struct checks {
	unsigned failed, warned;
	/* Called with each verdict as it comes (its strings are the
	 * caller's only during the call); NULL: the verdicts are kept in
	 * items instead (--json). */
	void (*say)(const struct check_item *it);
	struct check_item *items;
	size_t nitems;
};

void check_say(struct checks *ck, enum check_level level, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void checks_free(struct checks *ck);
/* The stable id of the check named name ("user namespaces" -> "userns"),
 * for JSON documents. */
const char *check_id(const char *name);

/* ---- mem.c -------------------------------------------------------------- */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(size_t *len, const char *fmt, va_list ap);

/* ---- str.c -------------------------------------------------------------- */

/* Growable, always NUL-terminated buffer. */
struct sbuf {
	char *s;
	size_t len, cap;
};
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_puts(struct sbuf *b, const char *s);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s quoted for a POSIX shell (bare when it is safe): the one quoting
 * function for every string from outside that gpurun prints.  dash, bash and
 * busybox sh read back exactly s; no quote can be ended from inside, and no
 * byte a terminal acts on is written raw ("$(printf '\033')" instead), but
 * for newlines that end s, which stay inside single quotes. */
void sbuf_shquote(struct sbuf *b, const char *s);
/* The same for a comment or a one-line message: never a newline either. */
void sbuf_showquote(struct sbuf *b, const char *s);
/* Append s with every byte a terminal would act on written as \ooo: the last
 * guard of what gpurun writes to a terminal (messages, listings). */
void sbuf_add_visible(struct sbuf *b, const char *s);
/* The same, as a new string (for a printf argument). */
char *xvisible(const char *s);
/* Empty it, keeping the memory. */
void sbuf_reset(struct sbuf *b);
/* s past prefix when s starts with it, else NULL: no length to count by hand. */
const char *str_after(const char *s, const char *prefix);
void sbuf_free(struct sbuf *b);

/* A growable list of malloc'ed strings, NULL-terminated (v[n] == NULL) so
 * that v can be handed to execve. */
struct strv {
	char **v;
	size_t n;
};
void strv_add(struct strv *s, char *owned);
void strv_free(struct strv *s);
/* A size as `cache ls` and doctor show it: "512B", "1.5MB" (powers of
 * 1000). */
void size_human(char *buf, size_t cap, unsigned long long b);

/* Parse exactly n decimal digits (no sign, no spaces) into *out, refusing
 * values above max.  Returns 0, or -1 when malformed or too big.  Shared by
 * the parsers of image and /proc files, which must never trust their input. */
int parse_decimal(const char *s, size_t n, unsigned long max, unsigned long *out);

/* ---- file.c ------------------------------------------------------------- */

/* Read a whole small file (at most max bytes) from dirfd/path.  The file must
 * be a regular file: opened O_NOFOLLOW|O_NONBLOCK so a FIFO planted in an
 * image cannot hang us.  Returns a malloc'ed NUL-terminated buffer or NULL
 * with err set (err->errnum is ENOENT when the file is not there). */
char *read_small_file_at(int dirfd, const char *path, size_t max, size_t *len, struct gerr *err);
/* Does this process's user namespace map every uid and gid (the initial
 * one does)?  Root of a smaller namespace, such as inside a rootless
 * container, cannot chown files to the ids an image uses. */
int ids_all_mapped(void);
/* The rest of fd, at most max bytes (what names it in messages). */
char *read_fd_max(int fd, const char *what, size_t max, size_t *len, struct gerr *err);

/* openat2(dirfd, path, flags | O_CLOEXEC) with RESOLVE_IN_ROOT and
 * RESOLVE_NO_MAGICLINKS: ".." stops at dirfd and absolute symlinks restart
 * there, so a tree we do not trust (an image, a driver root) cannot send the
 * lookup elsewhere.  Leading slashes are ignored; "" or "/" is dirfd itself.
 * Retries a bounded number of times on EAGAIN (a concurrent rename in the
 * tree).  Returns the fd, or -1 with errno set. */
int open_in_root(int dirfd, const char *path, int flags);
/* The same with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS: ELOOP as soon as
 * any component (the last one too) is a symlink, EXDEV for "..". */
int open_beneath_nofollow(int dirfd, const char *path, int flags);

/* write(2) all of buf, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t n);

/* Cleanup helpers (GCC/clang cleanup attribute) keep error paths flat. */
void cleanup_fdp(int *fd);
void cleanup_freep(void *p);
#define _cleanup_fd_ __attribute__((cleanup(cleanup_fdp)))
#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))

/* The machine gpurun runs on, as uname -m names it: the driver's
 * libraries, the image and gpurun itself are all of it.  Decided when gpurun
 * is compiled (a gpurun binary only runs on its own architecture). */
#if defined(__x86_64__)
#define HOST_MACHINE "x86_64"
#elif defined(__aarch64__)
#define HOST_MACHINE "aarch64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_MACHINE "ppc64le"
#else
/* Any other: gpurun knows neither its ld.so.cache flags nor its multiarch
 * directory, so no driver library is found (and none is misplaced). */
#define HOST_MACHINE "unknown"
#endif

/* ---- trust.c ------------------------------------------------------------ */

/* Does gpurun run as root (real or effective uid 0, every id mapped: not
 * root of a smaller user namespace)?  Then trust_path() judges the paths
 * it executes, binds from a host tree or reads as policy.  Decided once. */
int trust_applies(void);
/* As root: 0 when every component of path, from / down and through the
 * targets of its symlinks, is owned by root and writable by no one else (a
 * sticky directory such as /tmp may be, as a parent: only an entry's owner
 * can replace it there); else -1 with err "WHAT PATH: not trusted:
 * COMPONENT is owned by uid N (name) (...)", or "... is writable by group
 * N"/"by others", or why it could not be looked at.  Not as root: 0
 * without looking (the user's own trees are fine). */
int trust_path(const char *what, const char *path, struct gerr *err);
/* The directories of a root found trusted by earlier walks, kept open:
 * later walks through them in the same root start there.  Zeroed when new. */
struct trust_memo {
	char **dirs; /* physical paths in the root */
	int *fds;
	size_t n;
};
void trust_memo_free(struct trust_memo *m);
/* The same for path inside a root that was judged already (rootfd, at host
 * path rootpath, "" for /): resolved there as a chroot resolves it
 * (absolute symlinks and ".." stay in it), and named by host path.  memo
 * (optional, for this rootfd only) saves judging a directory twice. */
int trust_path_at(int rootfd, const char *rootpath, struct trust_memo *memo, const char *what, const char *path,
		  struct gerr *err);

/* ---- cpu.c -------------------------------------------------------------- */

/* The caller's CPU mask, and the same less the CPU it runs on now. */
struct cpu_spread {
	cpu_set_t all;
	cpu_set_t others;
	int spread; /* others is not empty */
};
void cpu_spread_init(struct cpu_spread *s);
/* A just-forked child onto s->others.  The child calls cpu_spread_restore()
 * before it execs, and only once the parent has certainly done this (after
 * a message the parent sends later): in the other order it would keep the
 * narrowed mask. */
void cpu_spread_child(const struct cpu_spread *s, pid_t child);
/* The calling thread back on s->all. */
void cpu_spread_restore(const struct cpu_spread *s);

/* base/progress.c: one line of progress on stderr, printed over the line
 * the cursor is on (end: then end it, so that the next one starts below);
 * progress_clear() leaves that line empty for an error message,
 * progress_up() moves up over a block of lines to redraw them.  The clock
 * is CLOCK_MONOTONIC. */
struct timespec;
double seconds_since(const struct timespec *t);
double progress_mb_per_s(unsigned long long bytes, double secs);
void progress_print(int end, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void progress_clear(void);
void progress_up(size_t lines);

#endif
