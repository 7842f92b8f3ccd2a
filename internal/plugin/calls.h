// C side of the plugin loader: one trampoline per entry point of
// artest_plugin.h (cgo cannot call a C function pointer itself), and a
// guard that turns a crash inside a plugin call into one line and a
// documented exit code instead of the Go runtime's fatal-signal dump.
#ifndef ARTEST_PLUGIN_CALLS_H
#define ARTEST_PLUGIN_CALLS_H

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artest_device.h"
#include "artest_plugin.h"

// art_where is what the calling thread is doing inside a plugin ("plugin
// example (lib.so): allreduce of example:oneshot"), or NULL outside every
// plugin call; art_rank is prefixed to the crash line.
static __thread const char *art_where;
static int art_rank = -1;
static int art_crash_code = 1;
static struct sigaction art_old[32];

static void art_put(const char *s) {
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(2, s, n);
		if (w <= 0) return;
		s += w;
		n -= (size_t)w;
	}
}

static const char *art_signame(int sig) {
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	}
	return "a signal";
}

// art_on_signal: inside a plugin call, say where and exit; elsewhere the
// signal is the Go runtime's (a nil dereference in Go code), so chain to it.
static void art_on_signal(int sig, siginfo_t *info, void *ctx) {
	const char *where = art_where;
	if (where != NULL) {
		char rank[16] = "?";
		int r = art_rank, i = 15;
		if (r >= 0) {
			rank[i] = 0;
			do { rank[--i] = (char)('0' + r % 10); r /= 10; } while (r > 0 && i > 0);
			memmove(rank, rank + i, (size_t)(16 - i));
		}
		art_put("artest: rank ");
		art_put(rank);
		art_put(": ");
		art_put(where);
		art_put(" crashed with ");
		art_put(art_signame(sig));
		art_put(" (finished cases are in the --jsonl file when one was given)\n");
		_exit(art_crash_code);
	}
	struct sigaction *old = &art_old[sig];
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, info, ctx);
	} else if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
		signal(sig, SIG_DFL);
		raise(sig);
	} else {
		old->sa_handler(sig);
	}
}

// art_guard_install puts art_on_signal in front of the current handlers of
// the signals a crashing plugin raises; once per process.
static int art_guard_install(int crash_code) {
	static int done;
	if (done) return 0;
	art_crash_code = crash_code;
	int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = art_on_signal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
		sigfillset(&sa.sa_mask);
		if (sigaction(sigs[i], &sa, &art_old[sigs[i]]) != 0) return -1;
	}
	done = 1;
	return 0;
}

static void art_set_rank(int rank) { art_rank = rank; }

static const artest_plugin *art_entry(void *fn, const char *where) {
	art_where = where;
	const artest_plugin *p = ((const artest_plugin *(*)(void))fn)();
	art_where = NULL;
	return p;
}

static const artest_device_info *art_device_entry(void *fn, const char *where) {
	art_where = where;
	const artest_device_info *d = ((const artest_device_info *(*)(void))fn)();
	art_where = NULL;
	return d;
}

static const artest_collectives *art_colls_entry(void *fn, const char *where) {
	art_where = where;
	const artest_collectives *d = ((const artest_collectives *(*)(void))fn)();
	art_where = NULL;
	return d;
}
static uint32_t art_colls_mask(const artest_collectives *d, uint32_t i) { return d->colls[i]; }

static const artest_early_return *art_early_entry(void *fn, const char *where) {
	art_where = where;
	const artest_early_return *d = ((const artest_early_return *(*)(void))fn)();
	art_where = NULL;
	return d;
}
static const char *art_early_reason(const artest_early_return *d, uint32_t i) { return d->reasons[i]; }

static void art_call_coll(artest_call *c, uint32_t coll) {
	c->flags |= ARTEST_CALL_COLL;
	c->coll = coll;
}

static const artest_faults *art_faults_entry(void *fn, const char *where) {
	art_where = where;
	const artest_faults *d = ((const artest_faults *(*)(void))fn)();
	art_where = NULL;
	return d;
}
static const artest_fault *art_fault(const artest_faults *d, uint32_t i) { return &d->faults[i]; }

static void art_call_faults(artest_call *c, uint32_t faults) {
	c->flags |= ARTEST_CALL_FAULTS;
	c->faults = faults;
}

// Addresses arrive from Go as integers (device addresses, or host mappings
// outside the Go heap) and become the header's void pointers here.
static void art_world_set(artest_world *w, int r, uintptr_t in, uintptr_t st, uintptr_t ctl) {
	w->input[r] = (void *)in;
	w->staging[r] = (void *)st;
	w->control[r] = (void *)ctl;
}

static void art_call_set(artest_call *c, uintptr_t in, uintptr_t out) {
	c->input = (const void *)in;
	c->output = (void *)out;
}

static void art_call_device(artest_call *c, uintptr_t trace, uintptr_t diag, uint64_t timeout_ns, uint32_t id,
                            uint32_t rank) {
	c->flags |= ARTEST_CALL_DEVICE;
	c->device.trace = (uint32_t *)trace;
	c->device.diag = (uint32_t *)diag;
	c->device.timeout_ns = timeout_ns;
	c->device.trace_id = id;
	c->device.rank = rank;
}

static int art_setup(const artest_plugin *p, const artest_world *w, const char *where) {
	art_where = where;
	int rc = p->setup(w);
	art_where = NULL;
	return rc;
}

static int art_allreduce(const artest_plugin *p, const artest_call *c, const char *where) {
	art_where = where;
	int rc = p->allreduce(c);
	art_where = NULL;
	return rc;
}

static void art_teardown(const artest_plugin *p, const char *where) {
	if (p->teardown == NULL) return;
	art_where = where;
	p->teardown();
	art_where = NULL;
}

static const char *art_last_error(const artest_plugin *p) {
	return p->last_error == NULL ? NULL : p->last_error();
}

// Accessors cgo needs for arrays of structs and function pointers.
static const artest_variant *art_variant(const artest_plugin *p, uint32_t i) { return &p->variants[i]; }
static const artest_device_variant *art_device_variant(const artest_device_info *d, uint32_t i) {
	return &d->variants[i];
}
static const char *art_device_point(const artest_device_variant *v, uint32_t i) { return v->points[i]; }
static int art_has_setup(const artest_plugin *p) { return p->setup != NULL; }
static int art_has_allreduce(const artest_plugin *p) { return p->allreduce != NULL; }

#endif
