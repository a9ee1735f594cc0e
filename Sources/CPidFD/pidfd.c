#include "CPidFD.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

int hp_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}
