// The dashboard's own page files (src/server/dashboard_assets/), embedded in
// the binary at build time by cmake/embed_assets.cmake.
//
// Thread-safety: returns views of immutable static data.

#ifndef ZEUS_SRC_SERVER_DASHBOARD_ASSETS_H_
#define ZEUS_SRC_SERVER_DASHBOARD_ASSETS_H_

#include <string_view>

namespace zeus::server_internal {

// The contents of the asset file `name` (e.g. "dashboard.js"); empty when
// there is no such asset.
std::string_view DashboardAsset(std::string_view name);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_DASHBOARD_ASSETS_H_
