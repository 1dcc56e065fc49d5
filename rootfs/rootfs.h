/* rootfs/rootfs.h — what rootfs/, where the container's root file system
 * comes from, offers the rest of gpurun.  rootfs/ has four parts, a folder
 * each with one header for the other parts (the lower first: a part uses
 * only those before it):
 *
 *   unpack/    safe unpacking of tar archives with libarchive, and the
 *              decompressor thread (unpack/unpack.h)
 *   cache/     the image cache: its directory, locks, layers and records,
 *              `cache ls|rm|prune` and doctor's check (cache/cache.h)
 *   image/     images as users hold them: archives and layouts, their
 *              manifests and configs, platforms, --user (image/image.h)
 *   registry/  images pulled from a registry (registry/registry.h)
 *
 * and open.c beside them: what IMAGE on the command line names.  Here, by
 * the file that defines it:
 *
 *   unpack/unpack.c   rootfs_unpack, and in two steps; the check of an
 *                     entry's path
 *   unpack/room.c     the cap on an image's size
 *   unpack/probe.c    rootfs_probe: is a file an archive gpurun accepts
 *   image/user.c      --user lookup in the image's own /etc/passwd and
 *                     /etc/group, and its pure parsers
 *   image/image.c     image_prepare: an image file or layout, into the
 *                     cache (struct image; image_free is
 *                     cache/cacherecord.c's)
 *   cache/cache.c     opening and closing the cache (struct cache)
 *   registry/registry.c  registry_prepare: an image pulled from a registry
 *   open.c            image_open: what IMAGE on the command line names
 *   image/hostlibc.c  image_host_libc: the host's C library as a root,
 *                     for `gpurun smoke` without an IMAGE
 *   cache/cacheadmin.c   `gpurun cache ls|rm|prune`
 *   cache/cachedoctor.c  `gpurun doctor`'s check of the cache
 *   cache/kept.c      kept containers (--name): their writable layers
 *
 * The caller's subordinate id ranges (struct subids) are ns/userns/'s.
 * Errors come back as values (struct gerr); nothing here exits. */
#ifndef GPURUN_ROOTFS_H
#define GPURUN_ROOTFS_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "../base/base.h"
#include "../ns/userns/userns.h"

/* rootfs_unpack() flags */
#define UNPACK_CLEAR_SUID 0x1 /* clear setuid/setgid bits (unprivileged runs) */
#define UNPACK_KEEP_OWNER 0x2 /* chown to the archive's uid/gid (root runs, private tmpfs) */
#define UNPACK_LAYER 0x4      /* an image layer: .wh. entries become overlayfs whiteouts */

#define WHITEOUT_PREFIX ".wh."
#define WHITEOUT_OPAQUE ".wh..wh..opq"
#define OVERLAY_OPAQUE_XATTR "user.overlay.opaque"

struct unpack_stats {
	size_t entries;           /* entries written */
	size_t devices_skipped;   /* char/block device, fifo and socket entries not created
				 * (outside dev/: worth a warning) */
	size_t dev_skipped;       /* entries below dev/ not created: the container gets
				 * gpurun's own /dev, so these are expected */
	unsigned long long bytes; /* file data written */
	size_t whiteouts;         /* UNPACK_LAYER: whiteouts and opaque markers made */
};

/* Unpack the tar archive read from in_fd (plain, gzip, xz, zstd or bzip2,
 * detected by content) into the directory dirfd.  `name` is only used in
 * messages.  Any entry that would land outside dirfd (.., absolute paths,
 * paths through a symlink, hard links pointing outside) is refused with an
 * error naming the entry; any libarchive status other than OK is an error;
 * an archive with no entries is an error.  Device nodes, FIFOs and sockets
 * are never created, nor anything below dev/.  With UNPACK_CLEAR_SUID the
 * setuid/setgid bits are dropped; directories are at least u+rwx.
 * Caps: 2,000,000 entries, 4096-byte paths, 64 GiB of data, and
 * rootfs_max_image_size() (the archive is the whole image).
 * Errors read "unpack <name>: <problem>", e.g. "unpack a.tar: entry
 * '../evil': path contains '..'", "unpack a.tar: truncated archive".
 * Changes the process's cwd (libarchive works relative to it) and, for a
 * compressed archive, runs a decompressor thread for the duration of the
 * call.  On error the partial tree is left for the caller to discard. */
int rootfs_unpack(int in_fd, const char *name, int dirfd, unsigned flags, struct unpack_stats *st, struct gerr *err);
/* The same in two steps, so that a launch decompresses while it does the
 * rest of its setup: _start begins reading and decompressing in_fd (in a
 * thread), _finish makes the entries in dirfd and frees the job.  A job
 * that will not be finished is given to _abandon. */
struct unpack_job;
struct unpack_job *rootfs_unpack_start(int in_fd, const char *name, struct gerr *err);
int rootfs_unpack_finish(struct unpack_job *job, const char *name, int dirfd, unsigned flags, struct unpack_stats *st,
			 struct gerr *err);
void rootfs_unpack_abandon(struct unpack_job *job);

/* The cap on what one image unpacks to: the data of its regular files, all
 * its layers together, counted as it is written, into the cache or (with
 * --no-cache) into the run's tmpfs.  The default bounds a decompression
 * bomb without refusing the largest real images (CUDA development images
 * with a framework unpack to 20-35 GB).  gpurun.c sets it before anything
 * is unpacked: rootfs_max_image_size_from() reads --max-image-size's value,
 * else GPURUN_MAX_IMAGE_SIZE (-1 with err when it is not a size). */
#define IMAGE_MAX_SIZE_DEFAULT 64000000000ULL /* 64G */
int rootfs_max_image_size_from(const char *opt, struct gerr *err);
unsigned long long rootfs_max_image_size(void);

/* rootfs_probe() results */
#define PROBE_FLAT 0  /* a root file system archive */
#define PROBE_IMAGE 1 /* an image archive: docker save, or an OCI layout */

/* Cheap check before any namespace work: is fd an archive gpurun accepts?
 * Returns PROBE_FLAT or PROBE_IMAGE, or -1 with err ("image <name>: empty file", "image <name>: not
 * a tar archive (zip archives are not supported; use tar, ...)", "image
 * <name>: archive has no entries", ...).  Rewinds fd to offset 0. */
int rootfs_probe(int fd, const char *name, struct gerr *err);

/* Lexical check of one archive entry path (also used by the fuzzer):
 * 0 when acceptable (relative, no ".." component, at most 4096 bytes; "./"
 * prefixes are fine), else -1 with err "entry '<path>': <problem>". */
int rootfs_check_entry_path(const char *path, struct gerr *err);

/* Resolve a --user spec ("uid", "uid:gid", "name", "name:group", "uid:group"...)
 * against the image's /etc/passwd and /etc/group under rootfd (read safely:
 * resolved inside the root, regular files only).  Docker's rules: a numeric
 * uid needs no entry; the gid is the one given, else the passwd entry's, else
 * 0.  *home gets the user's home directory (malloc'ed) or NULL when the user
 * has no passwd entry.  Errors: "user 'abc': no such user in the image's
 * /etc/passwd", "group 'x': no such group in the image's /etc/group". */
int rootfs_lookup_user(int rootfd, const char *spec, uid_t *uid, gid_t *gid, char **home, struct gerr *err);

/* The supplementary groups docker's runtimes give the user of a --user spec
 * (or root without one): when the spec names no group and the user has a
 * passwd entry, every group of the image's /etc/group whose member list
 * names that entry, in file order, without duplicates or the primary gid.
 * group_rootfd may differ from rootfd (a layered tree not yet merged keeps
 * /etc/group in its own layer).  An image without either file gives none;
 * more than USER_GROUPS_MAX is an error naming the user. */
#define USER_GROUPS_MAX 256
int rootfs_user_groups(int rootfd, int group_rootfd, const char *spec, gid_t primary, gid_t *groups, size_t *n,
		       struct gerr *err);

/* ---- images and the cache (image.c, cache*.c, registry.c) ---------------- */

/* What an image's config asks for (NULL: it does not say). */
struct image_config {
	char **env;        /* "K=V", NULL-terminated */
	char **entrypoint; /* NULL-terminated; an empty list is not NULL */
	char **cmd;
	char *workdir;
	char *user;
};

struct image {
	char *source;          /* the image as given, without @NAME:TAG */
	char *ref;             /* the NAME:TAG picked, or NULL */
	struct strv layers;    /* host paths of the unpacked layers, lowest first */
	struct strv layer_ids; /* "sha256:<hex>" of each layer (diff_id, or the archive's digest) */
	struct image_config config;
	unsigned long long bytes; /* unpacked size */
	int hit;                  /* found in the cache: nothing was read or unpacked */
	int missing;              /* dry run: layers not in the cache yet */
};
void image_free(struct image *img);

struct cache {
	char *root;        /* the area of the launch's id map (rootfs/cache/cache.c) */
	int fd;            /* the root directory; -1 without create when the area is not made yet */
	int lockfd;        /* ROOT/lock, held shared while gpurun runs */
	int keep_owner;    /* unpack with the entries' owners (root outside a user namespace,
			   * or the caller's full id map) */
	char *top;         /* the cache's directory, every area under it (cache_open) */
	int toplockfd;     /* TOP/lock, held shared with an area's */
	struct subids map; /* the area's full id map; uid_count 0: the caller's own ids */
};

/* Open the cache (creating it with create) in the area of the id map a
 * launch of this caller gets; see rootfs/cache/cache.c.  Without create, a
 * missing cache is an error with err->errnum ENOENT, and a missing area of
 * a cache that is there is an open cache with fd -1 (nothing in it). */
int cache_open(struct cache *c, int create, struct gerr *err);
/* The same at an explicit root (--no-cache: a cache in the run's tmpfs). */
int cache_open_at(struct cache *c, const char *root, int create, struct gerr *err);
void cache_close(struct cache *c);

/* The image at path (a file, or an OCI layout directory), picked with
 * selector (NAME:TAG, or NULL), with its layers in the cache: found by the
 * (name, when not NULL, is what messages call it: path may be /proc/self/fd/N)
 * fast path, or read, verified and unpacked now.  flags: IMAGE_DRY_RUN
 * reads what it needs to describe the image and writes nothing (the layers
 * then may be missing: img->missing).  Errors name the image and the part of
 * it that is wrong. */
#define IMAGE_DRY_RUN 0x1
#define IMAGE_QUIET 0x2     /* no progress line */
#define IMAGE_NO_SOURCE 0x4 /* no fast-path record for path (a registry pull's scratch layout) */
int image_prepare(const char *path, const char *name, const char *selector, struct cache *c, unsigned flags,
		  struct image *img, struct gerr *err);
/* 1 when the directory at path is an image: an OCI image layout, or the
 * dir: layout of skopeo, buildah and podman. */
int image_is_layout_dir(const char *path);

/* Registry pulls (rootfs/registry/registry.c): IMAGE is "docker://REF". */
#define REGISTRY_PREFIX "docker://"
struct pull_opts {
	const char *platform; /* "os/arch[/variant]", or NULL: this machine's */
	int insecure;         /* --tls-verify=false: plain HTTP or unverified TLS */
	int tls_verify;       /* --tls-verify=true: never plain HTTP, even on loopback */
	int always;           /* ask the registry even when the reference is cached */
	int never;            /* --pull never: only from the cache, an error when not there */
	int verbose;          /* a line per blob fetched or found in the cache */
};
/* The image that REF names, with its layers in the cache: from the cache
 * when the reference was pulled before (unless o->always), else fetched.
 * flags as for image_prepare (IMAGE_DRY_RUN fetches only the manifest and
 * the config, and writes nothing to the cache). */
int registry_prepare(const char *ref, const struct pull_opts *o, struct cache *c, unsigned flags, struct image *img,
		     struct gerr *err);

/* IMAGE as the command line gives it (rootfs/open.c). */
struct image_open_opts {
	const char *platform; /* --platform: only for a registry image */
	int insecure, verbose, dry_run, quiet, no_cache;
	int pull_always, pull_never; /* --pull always|never (missing: neither) */
	int bare_ref;                /* a name that is no file and parses as a reference is
				      * pulled (docker's reading: ubuntu:22.04) */
	int tls_verify;              /* --tls-verify=true: TLS verified even on loopback */
};
struct opened_image {
	const char *image;           /* for the plan and messages; absolute for a directory */
	int fd;                      /* a directory's tree, or the archive with --no-cache; else -1 */
	int is_dir;                  /* a root file system directory */
	const struct image *layered; /* img, when the layers make the root */
	int import_run;              /* --no-cache with a layered image: unpacked in the run, */
	char *import_sel;            /* ... picking this NAME:TAG (NULL: the only one) */
};
/* Open what arg names, into out (and img, cache when it is layered). */
/* image/hostlibc.c: the root `gpurun smoke` runs its probe in without an
 * IMAGE: the host's dynamic loader and C library as a tar archive in a
 * memfd (an fd, at its start), or -1 with err. */
int image_host_libc(struct gerr *err);

int image_open(const char *arg, const struct image_open_opts *o, struct cache *cache, struct image *img,
	       struct opened_image *out, struct gerr *err);

/* `gpurun cache ls|rm|prune` (rootfs/cache/cacheadmin.c; cli/image.c
 * prints what they give).  cache_list: every image of every area of the
 * cache, the most recently used first, each with every source its record
 * lists (oldest first) and the map its area is unpacked under.  cache_remove
 * removes the image what names (an image file, or 4 or more hex digits of
 * its id) and whatever no record needs any more, and gives its id;
 * cache_prune removes the least recently used images until the rest take at
 * most max_bytes (and what no record needs), and gives how many went.  0,
 * or -1 with err. */
struct cache_source {
	char *source, *ref; /* a path or registry reference; the NAME:TAG picked, or NULL */
};
struct cache_listed {
	char hex[64 + 1];
	unsigned long long bytes;
	struct timespec used;
	char *source, *ref; /* the latest source (NULL: unknown) */
	struct strv layer_ids;
	struct subids map; /* uid_count 0: the caller's own ids */
	struct cache_source *sources;
	size_t nsources;
};
int cache_list(struct cache *c, struct cache_listed **v, size_t *n, struct gerr *err);
void cache_list_free(struct cache_listed *v, size_t n);
int cache_remove(struct cache *c, const char *what, char removed[64 + 1], struct gerr *err);
int cache_prune(struct cache *c, unsigned long long max_bytes, size_t *pruned, struct gerr *err);
/* Kept containers (rootfs/cache/kept.c): CACHE/containers/NAME holds the
 * writable layer of the runs named NAME, the image it was made from and
 * the lock of the run that has it mounted.  kept_take: for a run of img,
 * made when missing, its lock taken (-1 with err->errnum EBUSY when a run
 * holds it; refused when it was made from another image); kept_open: as
 * it is, for ps and exec (running: a run holds its lock); kept_remove:
 * `gpurun rm`, refused while it runs; kept_layer_ids: the layers every
 * kept container needs ("sha256:HEX"), which the cache keeps. */
#define KEPT_NAME_MAX 64
#define KEPT_NAME_FIRST "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
struct kept {
	char *name;
	char *dir;              /* absolute: CACHE/containers/NAME */
	int dirfd;              /* that directory, open */
	int lockfd;             /* kept_take: the run lock, held until kept_free */
	char *image;            /* the image it was made from, as given then */
	char *ref;              /* its NAME:TAG, or NULL */
	char chain[7 + 64 + 1]; /* "sha256:<hex>": the OCI chain id of its layers */
	struct strv layer_ids;
	long long created; /* seconds since the epoch */
	int made;          /* kept_take made it */
	int running;       /* kept_open: a run holds its lock */
};
int kept_name_check(const char *name, struct gerr *err);
int kept_take(struct cache *c, const char *name, const struct image *img, struct kept *k, struct gerr *err);
int kept_open(const struct cache *c, const char *name, struct kept *k, struct gerr *err);
/* Whether img is the image k was made from (its layers' chain id). */
int kept_same_image(const struct kept *k, const struct image *img);
/* Whether a run holds the lock of the kept directory dirfd. */
int kept_dir_running(int dirfd);
/* The "joined" lock file of the kept directory dirfd, open (not locked). */
int kept_joined_lock(int dirfd, const char *name, struct gerr *err);
void kept_free(struct kept *k);
int kept_list(const struct cache *c, struct kept **v, size_t *n, struct gerr *err);
void kept_list_free(struct kept *v, size_t n);
/* A name is the caller's in one area of the cache only (TOP's, or one of a
 * subordinate map's: rootfs/cache/cache.c): kept_find looks in every area
 * and opens the one that holds it as *area (cache_close it); kept_list_all
 * lists the containers of every area, for ps. */
int kept_find(const struct cache *c, const char *name, struct cache *area, struct kept *k, struct gerr *err);
int kept_list_all(const struct cache *c, struct kept **v, size_t *n, struct gerr *err);
int kept_remove(const struct cache *c, const char *name, struct gerr *err);
void kept_layer_ids(const struct cache *c, struct strv *ids);

/* `gpurun doctor`'s verdict on the cache directory (rootfs/cache/cachedoctor.c);
 * returns its path (malloc'ed) or NULL when there is none to be had. */
char *cache_doctor(struct checks *ck);

/* Pure parsers behind rootfs_lookup_user (fuzzed): find a passwd/group line
 * by name or numeric id in text.  Return 1 found, 0 not found, -1 malformed spec. */
struct pw_entry {
	char name[256];
	unsigned long uid, gid;
	char home[1024];
};
int passwd_find(const char *text, size_t len, const char *key, struct pw_entry *out);
int group_find(const char *text, size_t len, const char *key, unsigned long *gid);
/* The gids of the lines whose member list (field 3) names name, in file
 * order, without duplicates or skip; at most cap stored, the count of all
 * returned. */
size_t group_memberships(const char *text, size_t len, const char *name, unsigned long skip, unsigned long *gids,
			 size_t cap);

#endif
