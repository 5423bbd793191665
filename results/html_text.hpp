// Internal to results/: text made safe for the HTML pages of mksim report (escaped text, inlined JSON and scripts).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mksim::results::html {

/** @brief Text with &, <, >, " and ' escaped, for element content and attribute values. */
std::string escape(const std::string& text);

/** @brief JSON that may sit inside a <script> element: '<', '>' and '&' only occur in JSON strings, where their
 *  \u escapes mean the same. */
std::string script_safe_json(const nlohmann::json& value);

/** @brief A script made safe to inline: no "</script" or "<!--" that would end or bend the element. */
std::string script_safe_js(std::string js);

}  // namespace mksim::results::html
