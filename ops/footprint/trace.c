// The first call of each function of an executable, for ops/footprint/order: an LD_PRELOAD
// library (built by that script, never part of the product). At load it reads
// FOOTPRINT_TRACE_FUNCTIONS (the functions' offsets from the executable's load address, sorted,
// 64-bit little-endian), makes the executable's text writable and puts a breakpoint (int3) on
// the first byte of each. The first time one runs, its SIGTRAP handler appends the offset to
// FOOTPRINT_TRACE_OUT, puts the byte back and resumes there, so each function costs one trap
// and the run is otherwise the program's own. Run with SWIFT_BACKTRACE=enable=no (the Swift
// runtime would take SIGTRAP for its backtracer).
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

static uint64_t *offsets;
static uint8_t *original;
static size_t count;
static uintptr_t base;
static int out = -1;

static long find(uintptr_t offset) {
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] < offset) lo = mid + 1; else hi = mid;
    }
    return lo < count && offsets[lo] == offset ? (long)lo : -1;
}

static void on_trap(int sig, siginfo_t *info, void *context) {
    (void)info;
    ucontext_t *uc = context;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
    long index = pc >= base ? find(pc - base) : -1;
    if (index < 0 || original[index] == 0xCC) {  // not one of ours: what SIGTRAP would have done
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    volatile uint8_t *byte = (volatile uint8_t *)pc;
    if (*byte == 0xCC) {  // another thread may have put it back already
        uint64_t offset = offsets[index];
        (void)!write(out, &offset, sizeof offset);
        *byte = original[index];
    }
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

static int executable(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(uintptr_t *)data = info->dlpi_addr;
    return 1;  // the first object is the executable
}

__attribute__((constructor)) static void start(void) {
    const char *functions = getenv("FOOTPRINT_TRACE_FUNCTIONS"), *path = getenv("FOOTPRINT_TRACE_OUT");
    if (!functions || !path) return;
    int fd = open(functions, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !(offsets = malloc(st.st_size)) || read(fd, offsets, st.st_size) != st.st_size) {
        perror("trace: FOOTPRINT_TRACE_FUNCTIONS");
        exit(70);
    }
    close(fd);
    count = st.st_size / sizeof *offsets;
    if (!(original = malloc(count)) || (out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0) {
        perror("trace: FOOTPRINT_TRACE_OUT");
        exit(70);
    }
    dl_iterate_phdr(executable, &base);
    char self[4096] = {0}, line[8192];
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) exit(70);
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) exit(70);
    while (fgets(line, sizeof line, maps)) {
        unsigned long from, to;
        char perms[5], file[4096] = {0};
        if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %4095s", &from, &to, perms, file) >= 3 && perms[2] == 'x' && strcmp(file, self) == 0
            && mprotect((void *)from, to - from, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
            perror("trace: mprotect");
            exit(70);
        }
    }
    fclose(maps);
    struct sigaction action = {0};
    action.sa_sigaction = on_trap;
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
    sigaction(SIGTRAP, &action, NULL);
    for (size_t i = 0; i < count; i++) {
        uint8_t *p = (uint8_t *)(base + offsets[i]);
        original[i] = *p;
        *p = 0xCC;  // (one that starts with an int3 of its own is never recorded)
    }
}
