#ifndef CPIDFD_H
#define CPIDFD_H

#include <sys/types.h>

/// A file descriptor for child process `pid` that poll(2) reports readable (POLLIN) once the
/// child has exited: pidfd_open(2), Linux 5.3 and later. -1 with errno set when it cannot be
/// had (ENOSYS on an older kernel, or where the build's headers do not know the call); the
/// caller then waits another way. Swift cannot call syscall(2) (it is variadic), and glibc
/// wraps pidfd_open only from 2.36.
int hp_pidfd_open(pid_t pid);

#endif
