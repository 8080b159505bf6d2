// Process-wide signal handling behind the restorers (private).
//
// Signal dispositions are process-wide, so this is the one piece of global
// state of the optimizer: the registry of live restorers, the two pipes and
// the service thread. See restorable.h for the design.
//
// Thread-safety: Register/Unregister may be called from any thread.

#ifndef ZEUS_SRC_OPTIMIZER_JIT_SIGNAL_RESTORE_SERVICE_H_
#define ZEUS_SRC_OPTIMIZER_JIT_SIGNAL_RESTORE_SERVICE_H_

#include "zeus/optimizer/jit/restorable.h"
#include "zeus/status.h"

namespace zeus::internal {

// Adds `restorer` to the set restored on a fatal signal; the first
// registration installs the handlers and starts the service thread.
Status RegisterForSignalRestore(Restorable* restorer);
// Removes `restorer`; the last removal puts back the previous dispositions
// and stops the thread.
void UnregisterFromSignalRestore(Restorable* restorer);

}  // namespace zeus::internal

#endif  // ZEUS_SRC_OPTIMIZER_JIT_SIGNAL_RESTORE_SERVICE_H_
