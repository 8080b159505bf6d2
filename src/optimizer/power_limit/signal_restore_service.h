// Process-wide signal handling behind PowerLimitRestorer (private).
//
// Signal dispositions are process-wide, so this is the one piece of global
// state of the optimizer: the registry of live restorers, the two pipes and
// the service thread. See power_limit_restorer.h for the design.
//
// Thread-safety: Register/Unregister may be called from any thread.

#ifndef ZEUS_SRC_OPTIMIZER_POWER_LIMIT_SIGNAL_RESTORE_SERVICE_H_
#define ZEUS_SRC_OPTIMIZER_POWER_LIMIT_SIGNAL_RESTORE_SERVICE_H_

#include "zeus/optimizer/power_limit/power_limit_restorer.h"
#include "zeus/status.h"

namespace zeus::internal {

// Adds `restorer` to the set restored on a fatal signal; the first
// registration installs the handlers and starts the service thread.
Status RegisterForSignalRestore(PowerLimitRestorer* restorer);
// Removes `restorer`; the last removal puts back the previous dispositions
// and stops the thread.
void UnregisterFromSignalRestore(PowerLimitRestorer* restorer);

}  // namespace zeus::internal

#endif  // ZEUS_SRC_OPTIMIZER_POWER_LIMIT_SIGNAL_RESTORE_SERVICE_H_
