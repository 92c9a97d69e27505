// The page's files: index.html, app.js and style.css from broker/console,
// and the xterm.js files CMake copies next to them from node_modules (the
// console-assets directory). Only plain file names directly inside the
// assets directory are served; anything else is not found.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_STATIC_ASSETS_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_STATIC_ASSETS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace termbridge::console {

// The files the console cannot work without.
inline constexpr const char* kRequiredAssets[] = {
    "index.html",        "app.js",           "approvals.js",    "format.js", "history.js",
    "history_search.js", "desk_controls.js", "terminal_tab.js", "style.css", "xterm.js",
    "xterm.css",         "addon-fit.js",     "addon-search.js"};

// The asset name for a request path ("/" -> "index.html", "/app.js" ->
// "app.js"), or nullopt for a path that is no plain file name.
std::optional<std::string> AssetName(std::string_view path);

// The Content-Type for an asset name, or nullopt for a type we do not serve.
std::optional<std::string_view> ContentType(std::string_view name);

// Reads `name` from `dir`. NotFound when it is missing or not a regular file.
absl::StatusOr<std::string> ReadAsset(const std::string& dir, const std::string& name);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_STATIC_ASSETS_H_
