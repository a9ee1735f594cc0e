// Disk-fault injection for tests: an LD_PRELOAD library that makes chosen fsync, fdatasync,
// write and positioned read calls fail, by the path of the file they act on and by call count.
//
//   cc -shared -fPIC -O2 -o faultshim.so faultshim.c -ldl -lpthread
//   HOMEPWNER_FAULTS_FILE=/tmp/rules LD_PRELOAD=./faultshim.so image-service ...
//
// The rules file is read again whenever it changes (size or mtime), so a test can start a
// service healthy and make its disk fail at the moment it chooses; an absent or empty file
// fails nothing. One rule per line, '#' comments:
//
//   CALL PATH-SUBSTRING ERRNO [after=N] [count=M]
//
//   CALL            fsync | fdatasync | sync (both) | write (write, pwrite, pwrite64, writev, pwritev)
//                   | read (pread, pread64, preadv: the positioned reads blob and database reads use;
//                   plain read is left alone, as the shim reads its own rules file with it)
//   PATH-SUBSTRING  matched against the file the descriptor names (/proc/self/fd/N)
//   ERRNO           EIO | ENOSPC | EDQUOT
//   after=N         let the first N matching calls through (default 0)
//   count=M         fail M calls, then let the rest through (default: all)
//
// A failing call does nothing and returns -1 with that errno. Each rule counts its matching
// calls from when the file was (re)read. Every failure is reported on stderr as
// "faultshim: CALL PATH -> ERRNO", so a test can see that its fault happened.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum call { CALL_FSYNC = 1, CALL_FDATASYNC = 2, CALL_WRITE = 4, CALL_READ = 8 };

struct rule {
    int calls;        // a mask of enum call
    char path[256];
    int error;
    long after;
    long count;       // -1: every call
    long seen;        // matching calls so far
};

#define MAX_RULES 32
static struct rule rules[MAX_RULES];
static int rule_count;
static int rule_calls;  // the union of the rules' calls: a call no rule names costs one compare
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct timespec loaded_mtime;
static off_t loaded_size = -1;
static ino_t loaded_inode;

static int parse_errno(const char *name) {
    if (strcmp(name, "EIO") == 0) return EIO;
    if (strcmp(name, "ENOSPC") == 0) return ENOSPC;
    if (strcmp(name, "EDQUOT") == 0) return EDQUOT;
    return 0;
}

static int parse_call(const char *name) {
    if (strcmp(name, "fsync") == 0) return CALL_FSYNC;
    if (strcmp(name, "fdatasync") == 0) return CALL_FDATASYNC;
    if (strcmp(name, "sync") == 0) return CALL_FSYNC | CALL_FDATASYNC;
    if (strcmp(name, "write") == 0) return CALL_WRITE;
    if (strcmp(name, "read") == 0) return CALL_READ;
    return 0;
}

// Reads the rules again when the file changed; call holding `lock`. The file is read with
// raw system calls on a fixed buffer: no stdio (which writes) from inside a write.
static void reload(void) {
    const char *file = getenv("HOMEPWNER_FAULTS_FILE");
    if (file == NULL) return;
    struct stat info;
    if (stat(file, &info) != 0) {
        if (loaded_size != -1) { rule_count = 0; rule_calls = 0; loaded_size = -1; }
        return;
    }
    if (info.st_size == loaded_size && info.st_ino == loaded_inode && info.st_mtim.tv_sec == loaded_mtime.tv_sec
        && info.st_mtim.tv_nsec == loaded_mtime.tv_nsec) return;
    char text[8192];
    FILE *in = fopen(file, "re");
    size_t length = 0;
    if (in != NULL) {
        length = fread(text, 1, sizeof text - 1, in);
        fclose(in);
    }
    text[length] = 0;
    loaded_size = info.st_size;
    loaded_inode = info.st_ino;
    loaded_mtime = info.st_mtim;
    rule_count = 0;
    rule_calls = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL && rule_count < MAX_RULES; line = strtok_r(NULL, "\n", &save)) {
        char call[32], path[256], error[32], extra1[64] = "", extra2[64] = "";
        if (line[0] == '#') continue;
        int fields = sscanf(line, "%31s %255s %31s %63s %63s", call, path, error, extra1, extra2);
        if (fields < 3) continue;
        struct rule rule = {.calls = parse_call(call), .error = parse_errno(error), .after = 0, .count = -1, .seen = 0};
        if (rule.calls == 0 || rule.error == 0) {
            fprintf(stderr, "faultshim: ignoring the rule '%s'\n", line);
            continue;
        }
        snprintf(rule.path, sizeof rule.path, "%s", path);
        const char *extras[2] = {extra1, extra2};
        for (int i = 0; i < 2; i++) {
            if (strncmp(extras[i], "after=", 6) == 0) rule.after = atol(extras[i] + 6);
            if (strncmp(extras[i], "count=", 6) == 0) rule.count = atol(extras[i] + 6);
        }
        rules[rule_count++] = rule;
        rule_calls |= rule.calls;
    }
}

static const char *call_name(int call) {
    return call == CALL_FSYNC ? "fsync" : call == CALL_FDATASYNC ? "fdatasync" : call == CALL_READ ? "read" : "write";
}

// The errno `call` on `fd` fails with, or 0 to let it through.
static int injected(int call, int fd) {
    if (getenv("HOMEPWNER_FAULTS_FILE") == NULL) return 0;
    int saved = errno;
    pthread_mutex_lock(&lock);
    reload();
    int error = 0;
    if (rule_calls & call) {
        char link[64], path[512];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = 0;
            for (int i = 0; i < rule_count; i++) {
                struct rule *rule = &rules[i];
                if (!(rule->calls & call) || strstr(path, rule->path) == NULL) continue;
                long seen = rule->seen++;
                if (seen < rule->after || (rule->count >= 0 && seen >= rule->after + rule->count)) continue;
                error = rule->error;
                char message[700];
                int length = snprintf(message, sizeof message, "faultshim: %s %s -> %s\n", call_name(call), path,
                                      error == EIO ? "EIO" : error == ENOSPC ? "ENOSPC" : "EDQUOT");
                static ssize_t (*real_write)(int, const void *, size_t);
                if (real_write == NULL) real_write = dlsym(RTLD_NEXT, "write");
                if (length > 0) real_write(2, message, (size_t)length);
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved;
    return error;
}

// The next definition of `name` (libc's), looked up once.
#define REAL(name) \
    static __typeof__(&name) real; \
    if (real == NULL) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int fsync(int fd) {
    REAL(fsync);
    int error = injected(CALL_FSYNC, fd);
    if (error) { errno = error; return -1; }
    return real(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync);
    int error = injected(CALL_FDATASYNC, fd);
    if (error) { errno = error; return -1; }
    return real(fd);
}

ssize_t write(int fd, const void *buffer, size_t count) {
    REAL(write);
    // Standard error is never failed: the shim's own reports go there.
    int error = fd > 2 ? injected(CALL_WRITE, fd) : 0;
    if (error) { errno = error; return -1; }
    return real(fd, buffer, count);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    REAL(pwrite);
    int error = injected(CALL_WRITE, fd);
    if (error) { errno = error; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    REAL(pwrite64);
    int error = injected(CALL_WRITE, fd);
    if (error) { errno = error; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
    REAL(writev);
    int error = fd > 2 ? injected(CALL_WRITE, fd) : 0;
    if (error) { errno = error; return -1; }
    return real(fd, vector, count);
}

ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset) {
    REAL(pwritev);
    int error = injected(CALL_WRITE, fd);
    if (error) { errno = error; return -1; }
    return real(fd, vector, count, offset);
}

ssize_t pread(int fd, void *buffer, size_t count, off_t offset) {
    REAL(pread);
    int error = injected(CALL_READ, fd);
    if (error) { errno = error; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pread64(int fd, void *buffer, size_t count, off_t offset) {
    REAL(pread64);
    int error = injected(CALL_READ, fd);
    if (error) { errno = error; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t preadv(int fd, const struct iovec *vector, int count, off_t offset) {
    REAL(preadv);
    int error = injected(CALL_READ, fd);
    if (error) { errno = error; return -1; }
    return real(fd, vector, count, offset);
}
