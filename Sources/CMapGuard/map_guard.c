#define _GNU_SOURCE
#include "CMapGuard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SLOTS = 256 };

/// One entered map. `start` is 0 while the slot is free; `claimed` guards taking it.
struct slot {
    atomic_int claimed;
    atomic_uintptr_t start;
    atomic_size_t length;
    atomic_int_least64_t fault;  // offset of the first fault, or -1
};

static struct slot slots[SLOTS];
static struct sigaction previous;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int installed;
static uintptr_t page_mask;

static void on_sigbus(int signal, siginfo_t *info, void *context) {
    (void)signal;
    (void)context;
    int saved = errno;
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t start = atomic_load(&slots[i].start);
        if (start == 0 || address < start || address - start >= atomic_load(&slots[i].length)) continue;
        void *page = (void *)(address & page_mask);
        // mmap is a plain system call, safe in a handler; MAP_FIXED replaces the page whose
        // read failed with zeros, so the faulting read runs again and succeeds.
        if (mmap(page, (size_t)(~page_mask + 1), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            int_least64_t none = -1;
            atomic_compare_exchange_strong(&slots[i].fault, &none, (int_least64_t)(address - start));
            errno = saved;
            return;
        }
        break;
    }
    // Not a guarded map (or the page could not be replaced): the fault happens again on
    // return, under the action there was before.
    sigaction(SIGBUS, &previous, NULL);
    errno = saved;
}

static void install(void) {
    long size = sysconf(_SC_PAGESIZE);
    page_mask = ~((uintptr_t)(size > 0 ? size : 4096) - 1);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous) == 0;
}

int hp_map_guard_enter(const void *start, size_t length) {
    pthread_once(&once, install);
    if (!installed || start == NULL || length == 0) return -1;
    for (int i = 0; i < SLOTS; i++) {
        int free = 0;
        if (!atomic_compare_exchange_strong(&slots[i].claimed, &free, 1)) continue;
        atomic_store(&slots[i].fault, -1);
        atomic_store(&slots[i].length, length);
        atomic_store(&slots[i].start, (uintptr_t)start);
        return i;
    }
    return -1;
}

int64_t hp_map_guard_fault(int slot) {
    if (slot < 0 || slot >= SLOTS) return -1;
    return (int64_t)atomic_load(&slots[slot].fault);
}

void hp_map_guard_leave(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    atomic_store(&slots[slot].start, 0);
    atomic_store(&slots[slot].length, 0);
    atomic_store(&slots[slot].claimed, 0);
}
