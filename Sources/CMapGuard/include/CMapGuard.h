#ifndef CMAPGUARD_H
#define CMAPGUARD_H

#include <stddef.h>
#include <stdint.h>

/// A read-only file map whose pages the kernel cannot supply (a file cut short under it, a
/// disk's read error) raises SIGBUS, which kills the process. While a map is entered here, a
/// SIGBUS inside it instead gets a page of zeros mapped over the faulting page, the fault is
/// recorded, and the read goes on; the caller asks afterwards and refuses what it read. The
/// way systemd's journal reads its maps. A SIGBUS outside every entered map goes to the
/// action that was installed before (the process's default: it dies, as it should).

/// Enters `length` bytes at `start`; returns the slot to pass to the others, or -1 when every
/// slot is taken (then the map is read unguarded) or the handler could not be installed.
int hp_map_guard_enter(const void *start, size_t length);

/// The offset in the map of the first fault absorbed since `enter`, or -1 when none was.
int64_t hp_map_guard_fault(int slot);

/// Leaves the slot (before the map is unmapped).
void hp_map_guard_leave(int slot);

#endif
