// Mantissa plugin SDK: the collectives extension's table rule
// (mnt_collectives.h), written once. The loader refuses a plugin whose
// table breaks version 1's (CheckExtensionChain), CollectivesClient::Find
// finds only a table that keeps it, and CollectivesClient::starts() is
// version 2's: so no host calls through a NULL slot or reads one past the
// struct_size the plugin states.
#ifndef MANTISSA_PLUGINS_SDK_COLLECTIVES_TABLE_H_
#define MANTISSA_PLUGINS_SDK_COLLECTIVES_TABLE_H_

#include <cstddef>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// Why an extension of type MNT_EXTENSION_TYPE_COLLECTIVES cannot be used,
// or OK: version 1 or later, a struct_size that covers version 1's table,
// and its four calls (Collectives_GetUniqueId, Communicator_Create,
// Communicator_Destroy, Collectives_Run) set. One INVALID_ARGUMENT line
// naming the extension.
inline Status CheckCollectivesTable(const MNT_Extension_Header& h) {
  const char* name = h.name != nullptr ? h.name : "";
  if (h.version < 1) {
    return InvalidArgument(
        Format("extension '%s' has version %d (versions start at 1)", name, h.version));
  }
  if (h.base.struct_size < MNT_Collectives_Extension_V1_STRUCT_SIZE) {
    return InvalidArgument(Format("extension '%s': struct_size %zu is smaller than the %zu "
                                  "bytes of its version 1",
                                  name, h.base.struct_size,
                                  size_t{MNT_Collectives_Extension_V1_STRUCT_SIZE}));
  }
  const auto& e = reinterpret_cast<const MNT_Collectives_Extension&>(h);
  const char* missing = e.Collectives_GetUniqueId == nullptr ? "Collectives_GetUniqueId"
                        : e.Communicator_Create == nullptr   ? "Communicator_Create"
                        : e.Communicator_Destroy == nullptr  ? "Communicator_Destroy"
                        : e.Collectives_Run == nullptr       ? "Collectives_Run"
                                                             : nullptr;
  if (missing != nullptr) {
    return InvalidArgument(Format("extension '%s': %s is NULL (version 1's four calls are "
                                  "required)",
                                  name, missing));
  }
  return Status::Ok();
}

// Why a table that passed CheckCollectivesTable cannot start collectives
// (version 2: Collectives_Start and Collectives_Wait), or OK: version 2 or
// later, a struct_size that covers them, and both set. A host that gets an
// error runs every collective with Collectives_Run instead; a version-1
// table is not wrong, a version-2 one that breaks this is (conformance
// fails it), and neither slot is read.
inline Status CheckCollectivesStarts(const MNT_Collectives_Extension& e) {
  const char* name = e.header.name != nullptr ? e.header.name : "";
  if (e.header.version < 2) {
    return FailedPrecondition(Format("extension '%s' is version %d: it has no started "
                                     "collectives (Collectives_Start and Collectives_Wait are "
                                     "version 2's)",
                                     name, e.header.version));
  }
  if (e.header.base.struct_size < MNT_Collectives_Extension_STRUCT_SIZE) {
    return InvalidArgument(Format("extension '%s': struct_size %zu is smaller than the %zu "
                                  "bytes of its version 2",
                                  name, e.header.base.struct_size,
                                  size_t{MNT_Collectives_Extension_STRUCT_SIZE}));
  }
  if (e.Collectives_Start == nullptr || e.Collectives_Wait == nullptr) {
    return InvalidArgument(Format("extension '%s': version 2 with Collectives_Start %s, "
                                  "Collectives_Wait %s",
                                  name, e.Collectives_Start == nullptr ? "is NULL" : "set",
                                  e.Collectives_Wait == nullptr ? "is NULL" : "set"));
  }
  return Status::Ok();
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_COLLECTIVES_TABLE_H_
