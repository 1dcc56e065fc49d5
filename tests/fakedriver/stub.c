/* tests/fakedriver/stub.c — the body of every fake driver library that only
 * has to exist: a real ELF shared object, so ldconfig indexes it under the
 * SONAME build.sh links it with.  One exported function lets a test check
 * which file a name resolved to. */
const char *fake_nvidia_stub(void);

const char *fake_nvidia_stub(void)
{
	return FAKE_NAME;
}
