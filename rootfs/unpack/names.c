/* rootfs/unpack/names.c — archive entry names in messages and in headers:
 * quote_name() makes a name safe for a one-line message, and
 * locale_utf8_enter() lets pax UTF-8 names convert while headers are read
 * (unpack.h says more of each). */
#include "unpack.h"

#include <locale.h>
#include <string.h>

void quote_name(char *dst, size_t cap, const char *name)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0, limit = cap < QUOTED_NAME_MAX ? cap : QUOTED_NAME_MAX;
	if (!cap)
		return;
	/* Room for one escape and "..." at the end. */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (n + 4 + 4 >= limit) {
			memcpy(dst + n, "...", 3);
			n += 3;
			break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[*p >> 4];
			dst[n++] = hex[*p & 15];
		} else {
			dst[n++] = (char)*p;
		}
	}
	dst[n] = '\0';
}

void *locale_utf8_enter(void)
{
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0), old;
	if (utf8 == (locale_t)0)
		return NULL;
	old = uselocale(utf8);
	if (old == (locale_t)0)
		freelocale(utf8);
	return old;
}

void locale_restore(void *saved)
{
	if (!saved)
		return;
	locale_t cur = uselocale((locale_t)saved);
	if (cur != (locale_t)0 && cur != LC_GLOBAL_LOCALE)
		freelocale(cur);
}
