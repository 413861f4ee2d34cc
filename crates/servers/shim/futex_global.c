/*
 * Loaded into every process of a server under test (LD_PRELOAD) when the
 * lab starts servers with the kernel's global futex hash.
 *
 * Since Linux 6.16 a process gets a futex hash of its own once it starts a
 * second thread, sized from the CPUs online: 16 buckets on a machine of up
 * to 4 CPUs. Every thread waiting on one futex sits in one bucket, and a
 * wake of any other futex hashed to that bucket walks all of them. A server
 * that parks a thousand idle threads on one condition variable (Apache's
 * threaded MPMs) then pays that walk on every wake of a hot futex whose
 * address lands there: one start in about six on a 2-CPU machine, decided
 * by where its memory was mapped. Asking for zero slots keeps the process
 * on the global hash the kernel sizes at 256 buckets a CPU, as every
 * kernel before 6.16 did for all processes.
 *
 * A forked child gets a new address space and with it no hash of its own,
 * so the request is made again in every child (servers fork their workers
 * without exec). A kernel without private hashes refuses the request, and
 * nothing changes.
 */
#include <pthread.h>
#include <sys/prctl.h>

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_SET_SLOTS 1
#endif

static void global_hash(void) {
    prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, 0, 0, 0);
}

__attribute__((constructor)) static void at_load(void) {
    global_hash();
    pthread_atfork(0, 0, global_hash);
}
